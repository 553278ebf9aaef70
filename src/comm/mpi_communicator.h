// comm/mpi_communicator.h — the ranks of an MPI job (Open MPI), collectives on host memory.
//
// Model: one rank per process, started by `mpirun -np N`. Gradient buckets are summed with
// MPI_Allreduce in place, packed into one staging buffer per bucket (each rank's share scaled on
// the way in), on the comm stream's thread; the small host collectives run on the calling thread.
// MPI's own algorithm choice for a given world size and message size is fixed, so the sum is the
// same on every rank and from run to run (the replica check, train --verify-replicas, proves it
// on every step).
//
// Lost ranks: a watchdog thread sends every peer, every 250 ms, a note "I have reached collective
// #k, a gradient all-reduce" (a few bytes, on a communicator of its own) and collects theirs: a
// heartbeat that a stopped, dead or wholly hung process no longer sends. A rank that ends early
// (interrupted by Ctrl-C or SIGTERM, stopped on an error, or given fewer steps) reaches the final
// barrier of its destructor and says so in its notes: a peer waiting in another collective then
// ends the job at once, naming it. When a collective has not completed after
// CommOptions::timeout_seconds, it names the peers that fell silent (else the live ones that never
// reached that collective, else those that reached another kind of collective), prints that on
// stderr and ends the whole job with MPI_Abort: no rank waits forever. A rank that dies outright
// is usually seen first by mpirun, which stops the others and names it.
// Needs MPI_THREAD_MULTIPLE (the watchdog polls while a collective blocks).
//
//   std::unique_ptr<vdnn::Communicator> comm = vdnn::make_mpi_communicator({.timeout_seconds = 60});
//   comm->rank(); comm->size();
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace vdnn {

// Initialises MPI (once per process) and returns this rank's communicator; finalises MPI when
// destroyed. Throws vdnn::Error when MPI cannot start or lacks MPI_THREAD_MULTIPLE.
std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options);

}  // namespace vdnn
