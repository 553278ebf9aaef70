// backends/cuda/cuda_device.h — the Device interface on a GPU: CUDA streams, events and copies.
//
// Model: each of the four streams (compute, d2h, h2d, comm) is a cudaStream_t (non-blocking: no implicit order with the
// legacy default stream); record() is cudaEventRecord on a fresh cudaEvent_t (timing disabled)
// that lives as long as some Event handle does; wait() is cudaStreamWaitEvent; copy_async() is
// cudaMemcpyAsync (direction inferred from unified addressing) followed by a record. launch() runs
// the function on the calling host thread at once: it is expected to enqueue kernels onto the
// stream (cuDNN/cuBLAS handles bound to it, or <<<..., stream>>> launches). As on the CPU device,
// a work item that throws is kept (the first one) and every later work item and copy is skipped
// until synchronize_all() rethrows and clears it; synchronize(s) rethrows and keeps it. A failing
// CUDA call outside a work item (record, wait, a sticky context error at synchronize) throws at
// once. Stream statistics count work items, copies and bytes; times are not measured (0).
//
// Which GPU: the constructor's index, or by default the process's local rank among the ranks of
// its node modulo the visible devices (one GPU per rank under `mpirun -np N`, as PyTorch's
// torchrun convention LOCAL_RANK -> cuda:LOCAL_RANK), device 0 outside a launcher. The device is
// made current (cudaSetDevice) on the constructing thread; every CUDA call of the runtime comes
// from that thread (launch() runs work on the caller), other threads must set it themselves.
//
//   if (std::string why = cuda_unavailable_reason(); !why.empty()) skip(why);
//   CudaDevice dev;                      // the local rank's GPU (0 alone); throws Error without one
//   dev.launch(StreamKind::kCompute, [&] { my_kernel<<<g, b, 0,
//   dev.stream(StreamKind::kCompute)>>>(); }); dev.wait(StreamKind::kD2H,
//   dev.record(StreamKind::kCompute)); Event saved = dev.copy_async(StreamKind::kD2H, pinned_host,
//   device_ptr, bytes); dev.synchronize_all();
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <exception>
#include <memory>
#include <string>

#include "device/device.h"

namespace vdnn {

// Empty when a CUDA device answers, else the runtime's reason in one line, e.g.
// "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version
// (cudaErrorInsufficientDriver, error 35)".
std::string cuda_unavailable_reason();

// This process's rank among the ranks of its node, from the launcher's environment: Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's SLURM_LOCALID, torchrun's
// LOCAL_RANK (the first set); -1 when none is. A value that is not a number is a vdnn::Error.
int local_rank_from_environment();

// The GPU a CudaDevice uses when none is named: the local rank modulo `device_count`, else 0.
int default_cuda_device(int device_count);

class CudaDevice final : public Device {
 public:
  // `index` < 0: default_cuda_device(). Throws vdnn::Error naming the CUDA error when no GPU
  // answers, or the visible devices when `index` is not one of them.
  explicit CudaDevice(int index = -1);
  ~CudaDevice() override;

  void launch(StreamKind s, std::function<void()> work) override;
  Event record(StreamKind s) override;
  void wait(StreamKind s, const Event& e) override;
  Event copy_async(StreamKind s, void* dst, const void* src, size_t bytes) override;
  void synchronize(StreamKind s) override;
  void synchronize_all() override;
  const char* name() const override { return "cuda"; }

  StreamStats stats(StreamKind s) const override { return stats_[static_cast<int>(s)]; }
  void reset_stats() override { stats_ = {}; }

  cudaStream_t stream(StreamKind s) const { return streams_[static_cast<int>(s)]; }
  int index() const { return index_; }  // the CUDA device ordinal (cudaSetDevice)

 private:
  void keep_error(std::exception_ptr error);
  void rethrow_kept(bool clear);

  int index_ = 0;
  std::array<cudaStream_t, kStreamCount> streams_{};
  std::array<StreamStats, kStreamCount> stats_{};
  std::exception_ptr error_;  // the first exception a work item threw
};

}  // namespace vdnn
