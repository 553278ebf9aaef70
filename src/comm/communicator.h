// comm/communicator.h — the ranks of a data-parallel run and the collectives between them.
//
// Model: N processes (ranks) train one model on disjoint shards of every global batch; after each
// backward pass their gradients are summed with all-reduce, so every rank applies the same update
// and holds bit-identical weights. A Communicator is one rank's view of that group. Two kinds of
// collective:
//   - gradient all-reduce (`all_reduce_sum`) runs on the device's communication stream
//     (StreamKind::kComm) on the tensors of one gradient bucket, in place, in device memory;
//   - small host-side collectives (loss and accuracy sums, checkpoint agreement, replica hashes)
//     run on the calling thread, between steps, when the comm stream is idle.
// Implementations: SingleRank (one process, no library), MpiCommunicator (Open MPI; host buffers:
// the CPU backend's device memory is host memory) and NcclCommunicator (CUDA, bootstrapped over
// MPI; backends/cuda). Every rank must issue the same collectives in the same order. A collective
// that a peer does not join within the timeout throws vdnn::Error naming the ranks that stopped
// answering (comm/mpi_communicator.h), so a lost rank never makes the others hang.
//
//   std::unique_ptr<vdnn::Communicator> comm = vdnn::make_communicator({});  // MPI when under mpirun
//   std::vector<vdnn::ReduceBuffer> bucket{{grad0, n0}, {grad1, n1}};
//   comm->all_reduce_sum(bucket, 1.0f / comm->size());   // every rank now holds the mean
//   double sums[2] = {loss * count, double(count)};
//   comm->sum_host(sums, 2);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vdnn {

// `count` floats at `data` (device memory of the communicator's device).
struct ReduceBuffer {
  float* data = nullptr;
  size_t count = 0;
};

struct CommOptions {
  // A collective that has not completed after this long: the peers that never reached it are
  // named and the run stops (vdnn::Error). 0: wait forever.
  double timeout_seconds = 300;
};

class Communicator {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* name() const = 0;  // "single", "mpi", "nccl"

  // Every rank's buffers, each first multiplied by `scale`, summed element by element; the result
  // is written back on every rank, identical to the bit on all of them, and (for a given world
  // size and buffer sizes) the same from run to run. Called on the comm stream (CPU: its worker
  // thread; CUDA: enqueues onto it). With one rank: multiplies by `scale` (skipped when it is 1).
  virtual void all_reduce_sum(std::span<const ReduceBuffer> buffers, float scale) = 0;

  // Sums `count` doubles over the ranks in place (host memory, the calling thread).
  virtual void sum_host(double* values, int count) = 0;
  // Copies `bytes` bytes from rank `root`'s `data` to every rank's (host memory).
  virtual void broadcast_host(void* data, size_t bytes, int root) = 0;
  // Every rank's `text`, in rank order.
  virtual std::vector<std::string> gather_strings(const std::string& text) = 0;

  // Ends the whole run at once, every rank (after an error on this one that the others cannot
  // see: they would wait for it in the next collective until their timeout).
  [[noreturn]] virtual void abort(int exit_code) = 0;

  // This rank will issue no further collective of this run, though its process lives on (a Python
  // rank whose vdnn.train callback raised): the others, waiting in a collective it will never
  // reach, end the job at once as they do for a rank that has ended, instead of at their timeout.
  // One rank alone: nothing to tell.
  virtual void leave_run() {}
};

// The communicator of this process: MPI when it was started by mpirun (or another MPI launcher;
// see launched_by_mpi()), else SingleRank. The first call initialises MPI; one per process.
std::unique_ptr<Communicator> make_communicator(const CommOptions& options);

// True when the environment says this process is one rank of an MPI job (Open MPI, PMIx, MPICH).
bool launched_by_mpi();

// A communicator of one rank, for a run without MPI.
std::unique_ptr<Communicator> make_single_rank();

// Multiplies every buffer by `scale` (host memory): a single rank's all_reduce_sum.
void scale_buffers(std::span<const ReduceBuffer> buffers, float scale);

}  // namespace vdnn
