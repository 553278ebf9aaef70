// backends/cuda/nccl_communicator.h — the ranks of a data-parallel run on GPUs: gradient
// all-reduce with NCCL on the device's comm stream, host collectives over MPI.
//
// Model: one rank per process and GPU (CudaDevice picks the GPU by local rank). The NCCL
// communicator is bootstrapped over the host communicator it wraps: rank 0 makes the NCCL unique
// id (ncclGetUniqueId), broadcast_host hands it to the others, every rank calls ncclCommInitRank.
// all_reduce_sum enqueues one ncclGroupStart / ncclAllReduce per buffer / ncclGroupEnd onto the
// CUDA stream of StreamKind::kComm, in place, and returns at once (the executor orders the comm
// stream against the compute stream with events). The scale is NCCL's pre-multiplied sum
// (ncclRedOpCreatePreMulSum: every rank's buffer times `scale`, then summed), the semantics of
// Communicator::all_reduce_sum for any scale; ncclAvg is the same operation for floats (NCCL
// turns it into a pre-multiplied sum by 1/nranks, src/enqueue.cc hostToDevRedOp) but only for
// that one scale; a scale of 1 is plain ncclSum. sum_host, broadcast_host, gather_strings and
// abort go to the host communicator (they run between steps, on host memory).
//
// Lost peers: an NCCL collective whose peer died or hangs never completes on the GPU, and the
// host then blocks in a stream synchronize. As PyTorch's ProcessGroupNCCL watchdog does
// (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: work completion by CUDA event query, the
// timeout check, ncclCommGetAsyncError, then ncclCommAbort and ending the process), a watchdog
// thread records a CUDA event after each enqueued all-reduce and every 100 ms checks the oldest
// that has not completed and the communicator's asynchronous error. When one has been pending
// longer than CommOptions::timeout_seconds (measured from its enqueueing, which includes the time
// the comm stream waits for the gradients), or NCCL reports an error, it prints one line naming
// this rank, the collective and the NCCL error, aborts the NCCL communicator (the kernels return)
// and ends the whole job through the host communicator (MPI_Abort). The same bound covers
// ncclCommInitRank. NCCL cannot say which peer is lost; the MPI communicator names ranks that
// stop joining host collectives.
//
//   CudaDevice device;                                                      // the local rank's GPU
//   std::unique_ptr<Communicator> host = make_communicator({});           // MPI under mpirun
//   std::unique_ptr<Communicator> nccl = make_nccl_communicator(device, *host, {.timeout_seconds = 60});
//   device.launch(StreamKind::kComm, [&] { nccl->all_reduce_sum(bucket, 1.0f / nccl->size()); });
//   device.synchronize(StreamKind::kComm);
#pragma once

#include <memory>
#include <string>

#include "backends/cuda/cuda_device.h"
#include "comm/communicator.h"

namespace vdnn {

// A collective over every rank of `host` (each calls it, in the same order as its other
// collectives). `device` and `host` must outlive the result. Throws vdnn::Error naming the NCCL
// error when NCCL cannot start (its text, e.g. no GPU peer access, no network).
std::unique_ptr<Communicator> make_nccl_communicator(CudaDevice& device, Communicator& host,
                                                     const CommOptions& options);

// NCCL's version, "2.28.9" (the library linked, ncclGetVersion).
std::string nccl_version();

}  // namespace vdnn
