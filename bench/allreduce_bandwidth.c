/* bench/allreduce_bandwidth.c — the all-reduce of this machine's MPI, as vdnn's network profiles
 * state it: the per-direction bandwidth a ring all-reduce would need to take the measured time,
 * bytes x 2(N-1)/N / seconds (NCCL's "bus bandwidth"), and the latency of a tiny all-reduce.
 * Built and run by bench/data_parallel.sh:
 *   mpicc -O2 bench/allreduce_bandwidth.c -o allreduce_bandwidth && mpirun -np 2 ./allreduce_bandwidth */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double seconds_per_allreduce(float* x, int count, int repeats) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < repeats; ++i) MPI_Allreduce(MPI_IN_PLACE, x, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return (MPI_Wtime() - start) / repeats;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int sizes_mib[] = {1, 4, 25};
  float* x = calloc((size_t)25 << 18, sizeof(float));
  seconds_per_allreduce(x, 1 << 18, 3); /* warm up */
  const double tiny = seconds_per_allreduce(x, 1, 1000);
  if (rank == 0) printf("{\"ranks\": %d, \"latency_seconds\": %.3g, \"sizes\": [", ranks, tiny);
  for (int i = 0; i < 3; ++i) {
    const int count = sizes_mib[i] << 18;
    const double s = seconds_per_allreduce(x, count, 10);
    const double bus = (double)count * sizeof(float) * 2.0 * (ranks - 1) / ranks / s;
    if (rank == 0) printf("%s{\"mib\": %d, \"seconds\": %.4g, \"bus_bytes_per_second\": %.4g}", i ? ", " : "",
                          sizes_mib[i], s, bus);
  }
  if (rank == 0) printf("]}\n");
  free(x);
  MPI_Finalize();
  return 0;
}
