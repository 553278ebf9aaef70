// tests/layers/kernel_harness.h — runs one layer's oneDNN kernel on plain NCHW test data.
//
// Model: builds the layer's kernel with inputs in a chosen layout (plain nchw or blocked nChw16c /
// nChw8c, as a producing kernel would hand them over; sequences [N, T, C] plain; token ids as int32
// for a layer that takes tokens), reorders plain data in and results out, so
// tests compare against tests/reference on plain vectors. Parameters go in and out plain.
//
//   KernelHarness h(*layer, /*batch=*/2, {Shape{3, 7, 5}}, dnnl::memory::format_tag::nchw);
//   h.set_params({w, b});
//   std::vector<float> y = h.forward({x});
//   KernelHarness::Grads g = h.backward(dy);     // g.d_in[0], g.d_params[0], ...
//   KernelHarness b(*layer, 2, {Shape{3, 7, 5}}, tag::nhwc, true, Precision::kBf16);  // bf16 values
//   KernelHarness f(*layer, 2, {Shape{3, 7, 5}}, tag::nchw, true, Precision::kFp32, false, true);  // + ReLU
//
// In bf16 the inputs, output and their gradients are bf16 (plain data is rounded on the way in);
// parameters stay f32. `f32_island`: the layer's f32 kernel with the casts around it
// (make_f32_island_kernel) instead of its bf16 kernel. `applies_relu`: the kernel applies the ReLU
// after it (KernelSetup::applies_relu, as when kernel_setup fuses one).
#pragma once

#include <memory>
#include <vector>

#include "backends/cpu/kernel.h"
#include "core/layer.h"
#include "util/aligned_buffer.h"

namespace vdnn::test {

class KernelHarness {
 public:
  KernelHarness(const Layer& layer, int64_t batch, std::vector<Shape> in_shapes, dnnl::memory::format_tag in_tag,
                bool training = true, Precision precision = Precision::kFp32, bool f32_island = false,
                bool applies_relu = false);

  void set_params(const std::vector<std::vector<float>>& plain);
  std::vector<std::vector<float>> params() const;
  std::vector<float> forward(const std::vector<std::vector<float>>& inputs);
  struct Grads {
    std::vector<std::vector<float>> d_in, d_params;
  };
  Grads backward(const std::vector<float>& dy);

  void set_labels(std::vector<int32_t> labels) { labels_ = std::move(labels); }
  void set_step(uint64_t step) { step_ = step; }
  const CpuKernel& kernel() const { return *kernel_; }
  // The loss produces one scalar; every other layer batch x its per-sample shape.
  std::vector<int64_t> out_dims() const {
    return layer_.kind() == LayerKind::kLoss ? std::vector<int64_t>{1} : out_shape_.with_batch(batch_);
  }
  int64_t out_elements() const {
    int64_t n = 1;
    for (int64_t d : out_dims()) n *= d;
    return n;
  }

 private:
  std::vector<float> to_plain(const dnnl::memory::desc& md, const void* data, const std::vector<int64_t>& dims) const;
  void from_plain(const std::vector<float>& plain, const std::vector<int64_t>& dims, const dnnl::memory::desc& md,
                  void* data) const;
  KernelArgs args() const;

  const Layer& layer_;
  int64_t batch_;
  std::vector<Shape> in_shapes_;
  Shape out_shape_;
  std::vector<ParamSpec> specs_;
  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  std::unique_ptr<CpuKernel> kernel_;
  std::vector<dnnl::memory::desc> in_mds_;
  std::vector<AlignedBuffer> in_, d_in_, params_, d_params_, saved_;
  AlignedBuffer out_, d_out_, scratch_;
  std::vector<int32_t> labels_;
  uint64_t step_ = 0;
  bool training_;
};

}  // namespace vdnn::test
