// Concat along channels (or vectors) and elementwise add (residual joins). In NCHW, input i of a
// concat is, per sample, one contiguous run of C_i*H*W floats (K_i for a vector) at offset
// sum(C_<i): each direction is one strided 2-D copy per input (cudaMemcpy2DAsync). Add is a copy
// and cuBLAS axpy per further input; its backward hands the gradient to every input.
#include "backends/cuda/cuda_kernels.h"

namespace vdnn {
namespace {

class CudaConcatKernel : public CudaKernel {
 public:
  explicit CudaConcatKernel(const CudaKernelSetup& s) : batch_(static_cast<size_t>(s.batch)) {
    const size_t row = static_cast<size_t>(s.out_shape.elements()) * sizeof(float);  // one sample
    size_t offset = 0;
    for (const Shape& in : s.in_shapes) {
      const size_t bytes = static_cast<size_t>(in.elements()) * sizeof(float);
      parts_.push_back({offset, bytes});
      offset += bytes;
    }
    VDNN_CHECK(offset == row,
               "concat '" << s.layer.name() << "': inputs " << offset << " B, output " << row << " B per sample");
    row_bytes_ = row;
    declare_sizes(s);
    implementation = "cudaMemcpy2DAsync";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    for (size_t i = 0; i < parts_.size(); ++i)
      VDNN_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(a.out) + parts_[i].offset, row_bytes_, a.in[i],
                                        parts_[i].bytes, parts_[i].bytes, batch_, cudaMemcpyDeviceToDevice,
                                        ctx.stream));
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    for (size_t i = 0; i < parts_.size(); ++i)
      if (a.d_in[i])
        VDNN_CUDA_CHECK(cudaMemcpy2DAsync(a.d_in[i], parts_[i].bytes,
                                          static_cast<const char*>(a.d_out) + parts_[i].offset, row_bytes_,
                                          parts_[i].bytes, batch_, cudaMemcpyDeviceToDevice, ctx.stream));
  }

 private:
  struct Part {
    size_t offset, bytes;  // within one sample of the output
  };
  size_t batch_, row_bytes_ = 0;
  std::vector<Part> parts_;
};

class CudaAddKernel : public CudaKernel {
 public:
  explicit CudaAddKernel(const CudaKernelSetup& s)
      : inputs_(s.in_shapes.size()), count_(to_int(s.batch * s.out_shape.elements(), "add elements")) {
    declare_sizes(s);
    implementation = "cublas saxpy";
  }

  // y = ((x0 + x1) + x2) ...: each sum rounded once (axpy with alpha 1), as oneDNN's sum.
  // In place, y is x0's buffer: the sum starts there, and dx0 is dy itself.
  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    if (a.out != a.in[0]) copy_on_stream(ctx, a.out, a.in[0], out_bytes);
    for (size_t i = 1; i < inputs_; ++i)
      VDNN_CUDA_CHECK(
          cublasSaxpy(ctx.cublas, count_, &kOne, static_cast<const float*>(a.in[i]), 1, static_cast<float*>(a.out), 1));
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    for (size_t i = 0; i < inputs_; ++i)
      if (a.d_in[i] && a.d_in[i] != a.d_out) copy_on_stream(ctx, a.d_in[i], a.d_out, out_bytes);
  }

 private:
  size_t inputs_;
  int count_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cuda_concat_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaConcatKernel>(s);
}
std::unique_ptr<CudaKernel> make_cuda_add_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaAddKernel>(s);
}

}  // namespace vdnn
