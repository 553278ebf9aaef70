// tests/cuda/cuda_kernel_harness.h — runs one layer's CUDA kernel on plain NCHW test data.
//
// Model: the GPU twin of tests/layers/kernel_harness.h with the same calls, so a test feeds both
// the same plain vectors and compares: builds the layer's CudaKernel on its own CudaDevice and
// cuDNN/cuBLAS handles, gives every declared buffer its own zero-filled device allocation, uploads
// inputs and parameters, runs the kernel on the compute stream, waits, and downloads (every CUDA
// layout is plain already). Needs a GPU: construct it only after VDNN_REQUIRE_GPU().
//
//   CudaKernelHarness g(*layer, /*batch=*/2, {Shape{3, 7, 5}}, ConvAlgo::kDirect);
//   g.set_params({w, b});
//   std::vector<float> y = g.forward({x});
//   CudaKernelHarness::Grads d = g.backward(dy);   // d.d_in[0], d.d_params[0], ...
#pragma once

#include <memory>
#include <vector>

#include "backend_api/backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_descriptors.h"

namespace vdnn::test {

class CudaKernelHarness {
 public:
  CudaKernelHarness(const Layer& layer, int64_t batch, std::vector<Shape> in_shapes, ConvAlgo algo = ConvAlgo::kDirect,
                    bool training = true);

  void set_params(const std::vector<std::vector<float>>& plain);
  std::vector<std::vector<float>> params() const;
  std::vector<float> forward(const std::vector<std::vector<float>>& inputs);
  struct Grads {
    std::vector<std::vector<float>> d_in, d_params;
  };
  Grads backward(const std::vector<float>& dy);
  std::vector<float> saved(size_t i) const;  // a saved buffer as floats (masks, probabilities)

  void set_labels(std::vector<int32_t> labels) { labels_ = std::move(labels); }
  void set_step(uint64_t step) { step_ = step; }
  void set_training(bool training) { training_ = training; }
  const CudaKernel& kernel() const { return *kernel_; }

 private:
  std::unique_ptr<DeviceBuffer> buffer(size_t bytes) const;
  KernelArgs args() const;
  void run(bool backward);

  const Layer& layer_;
  int64_t batch_;
  std::vector<Shape> in_shapes_;
  Shape out_shape_;
  std::vector<ParamSpec> specs_;
  CudaDevice device_;
  CudaLibraries libraries_;
  std::unique_ptr<CudaKernel> kernel_;
  std::vector<std::unique_ptr<DeviceBuffer>> in_, d_in_, params_, d_params_, saved_;
  std::unique_ptr<DeviceBuffer> out_, d_out_, scratch_;
  std::vector<int32_t> labels_;
  uint64_t step_ = 0;
  bool training_;
};

}  // namespace vdnn::test
