// tools/data_parallel.h — `vdnn train` as one rank of `mpirun -np N vdnn train ...`.
//
// Model: every rank runs the same command. `--batch` is per rank (PyTorch DDP's convention: its
// DataLoader's batch_size is per process), so the global batch is N x --batch; both are printed.
// Rank 0 alone prints (the other ranks' stdout goes to /dev/null; their stderr stays, each line
// naming its rank) and writes checkpoints, weights, the trace and the report, which gains the
// per-rank figures and the measured all-reduce overlap. An error on one rank ends every rank at
// once (MPI_Abort), so no rank is left waiting in a collective.
//
//   std::unique_ptr<Communicator> comm = start_ranks(timeout_seconds);   // before any output
//   print_ranks(*comm, net, batch);
//   check_replicas(*comm, net, step);                                    // --verify-replicas
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "runtime/net.h"
#include "runtime/step_recorder.h"
#include "runtime/trainer.h"

namespace vdnn::cli {

// The communicator of this process (MPI under mpirun, else one rank). Ranks other than 0 stop
// printing to stdout.
std::unique_ptr<Communicator> start_ranks(double timeout_seconds);

// "data parallel: 2 ranks (mpi), --batch 64 per rank, global batch 128, 3 gradient buckets ...".
void print_ranks(const Communicator& comm, const Net& net, int64_t batch);

// --verify-replicas: throws vdnn::Error naming the step and the ranks when their weights differ.
void check_replicas(Communicator& comm, const Net& net, int64_t step);

// The report's "data_parallel" section (every rank must call it: it gathers per-rank figures).
nlohmann::json ranks_report(Communicator& comm, Net& net, const TrainResult& result, const StepRecorder& recorder,
                            bool replicas_verified);

// After an error on this rank: prints it naming the rank and ends every rank.
[[noreturn]] void stop_every_rank(Communicator& comm, const std::string& what);

}  // namespace vdnn::cli
