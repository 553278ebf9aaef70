#include "cuda/cuda_kernel_harness.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_memory.h"

namespace vdnn::test {
namespace {

void upload(void* dst, const std::vector<float>& src) {
  VDNN_CUDA_CHECK(cudaMemcpy(dst, src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice));
}

std::vector<float> download(const void* src, size_t bytes) {
  std::vector<float> out(bytes / sizeof(float));
  VDNN_CUDA_CHECK(cudaMemcpy(out.data(), src, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace

CudaKernelHarness::CudaKernelHarness(const Layer& layer, int64_t batch, std::vector<Shape> in_shapes, ConvAlgo algo,
                                     bool training)
    : layer_(layer),
      batch_(batch),
      in_shapes_(std::move(in_shapes)),
      libraries_(device_.stream(StreamKind::kCompute)),
      training_(training) {
  out_shape_ = layer.infer_shape(in_shapes_);
  specs_ = layer.params(in_shapes_);
  CudaKernelSetup setup{layer, batch, in_shapes_, out_shape_};
  setup.seed = 99;
  setup.conv_algo = algo;
  kernel_ = make_cuda_kernel(setup, libraries_.context());
  for (const Shape& s : in_shapes_) {
    in_.push_back(buffer(float_bytes(batch, s)));
    d_in_.push_back(buffer(float_bytes(batch, s)));
  }
  for (size_t bytes : kernel_->param_bytes) {
    params_.push_back(buffer(bytes));
    d_params_.push_back(buffer(bytes));
  }
  for (size_t bytes : kernel_->saved_bytes) saved_.push_back(buffer(bytes));
  out_ = buffer(kernel_->out_bytes);
  d_out_ = buffer(kernel_->out_bytes);
  scratch_ = buffer(kernel_->scratch_bytes);
  labels_.assign(static_cast<size_t>(batch), 0);
}

std::unique_ptr<DeviceBuffer> CudaKernelHarness::buffer(size_t bytes) const {
  return allocate_cuda_arena(bytes);  // zero-filled; null data for 0 bytes
}

void CudaKernelHarness::set_params(const std::vector<std::vector<float>>& plain) {
  for (size_t i = 0; i < plain.size(); ++i) upload(params_[i]->data(), plain[i]);
}

std::vector<std::vector<float>> CudaKernelHarness::params() const {
  std::vector<std::vector<float>> out;
  for (const auto& p : params_) out.push_back(download(p->data(), p->bytes()));
  return out;
}

std::vector<float> CudaKernelHarness::saved(size_t i) const {
  return download(saved_.at(i)->data(), saved_.at(i)->bytes());
}

KernelArgs CudaKernelHarness::args() const {
  KernelArgs a;
  for (size_t i = 0; i < in_.size(); ++i) {
    a.in.push_back(in_[i]->data());
    a.d_in.push_back(d_in_[i]->data());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    a.params.push_back(params_[i]->data());
    a.d_params.push_back(specs_[i].trainable ? d_params_[i]->data() : nullptr);
  }
  for (const auto& s : saved_) a.saved.push_back(s->data());
  a.out = out_->data();
  a.d_out = d_out_->data();
  a.scratch = scratch_->data();
  a.labels = labels_.data();
  a.valid = batch_;
  a.step = step_;
  a.training = training_;
  return a;
}

void CudaKernelHarness::run(bool backward) {
  device_.launch(StreamKind::kCompute, [&] {
    if (backward)
      kernel_->backward(libraries_.context(), args());
    else
      kernel_->forward(libraries_.context(), args());
  });
  device_.synchronize_all();  // rethrows what the kernel threw
}

std::vector<float> CudaKernelHarness::forward(const std::vector<std::vector<float>>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) upload(in_[i]->data(), inputs[i]);
  run(/*backward=*/false);
  return download(out_->data(), out_->bytes());
}

CudaKernelHarness::Grads CudaKernelHarness::backward(const std::vector<float>& dy) {
  if (layer_.kind() != LayerKind::kLoss) upload(d_out_->data(), dy);
  run(/*backward=*/true);
  Grads g;
  for (const auto& d : d_in_) g.d_in.push_back(download(d->data(), d->bytes()));
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].trainable) g.d_params.push_back(download(d_params_[i]->data(), d_params_[i]->bytes()));
  return g;
}

}  // namespace vdnn::test
