// Max and average pooling on the backend's own CUDA kernels (device_kernels.cu). Not cuDNN: its
// pooling backward reads the input and output (the layer promises max pooling's backward reads
// only its argmax, so vDNN need not keep POOL inputs) and its padding is symmetric (no ceil mode).
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_kernels.h"
#include "layers/pool.h"

namespace vdnn {
namespace {

class CudaPoolKernel : public CudaKernel {
 public:
  explicit CudaPoolKernel(const CudaKernelSetup& s) : max_(static_cast<const PoolLayer&>(s.layer).p().max) {
    const auto& layer = static_cast<const PoolLayer&>(s.layer);
    const Shape& x = s.in_shapes[0];
    const PoolLayer::Window w = layer.window(x);
    window_ = {w.kh, w.kw, w.sh, w.sw, w.pt, w.pl, x.height(), x.width(), w.oh, w.ow, layer.p().exclude_padding};
    planes_ = s.batch * x.channels();
    declare_sizes(s);  // max: an int32 argmax per output
    implementation = max_ ? "cuda max_pool" : "cuda avg_pool";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    const auto* x = static_cast<const float*>(a.in[0]);
    auto* y = static_cast<float*>(a.out);
    if (max_)
      launch_max_pool_forward(x, y, static_cast<int32_t*>(a.saved[0]), planes_, window_, ctx.stream);
    else
      launch_avg_pool_forward(x, y, planes_, window_, ctx.stream);
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    const auto* dy = static_cast<const float*>(a.d_out);
    auto* dx = static_cast<float*>(a.d_in[0]);
    if (max_)
      launch_max_pool_backward(dy, static_cast<const int32_t*>(a.saved[0]), dx, planes_, window_, ctx.stream);
    else
      launch_avg_pool_backward(dy, dx, planes_, window_, ctx.stream);
  }

 private:
  bool max_;
  PoolWindow window_{};
  int64_t planes_ = 0;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cuda_pool_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaPoolKernel>(s);
}

}  // namespace vdnn
