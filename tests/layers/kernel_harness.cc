#include "layers/kernel_harness.h"

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "vdnn/error.h"

namespace vdnn::test {

KernelHarness::KernelHarness(const Layer& layer, int64_t batch, std::vector<Shape> in_shapes,
                             dnnl::memory::format_tag in_tag, bool training, Precision precision, bool f32_island,
                             bool applies_relu)
    : layer_(layer),
      batch_(batch),
      in_shapes_(std::move(in_shapes)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      training_(training) {
  out_shape_ = layer.infer_shape(in_shapes_);
  specs_ = layer.params(in_shapes_);
  KernelSetup setup{layer, batch, in_shapes_, out_shape_, {}, false, {}, 99};
  setup.precision = precision;
  setup.applies_relu = applies_relu;
  for (const Shape& s : in_shapes_) {
    auto dims = s.with_batch(batch);
    const dt type = layer.takes_tokens() ? dt::s32 : setup.act_dt();  // token ids: int32, as the Net holds them
    in_mds_.push_back(dims.size() == 4 ? dnnl::memory::desc(dims, type, in_tag) : plain_md(dims, type));
    setup.input_needs_grad.push_back(true);
  }
  setup.in_mds = in_mds_;
  kernel_ = f32_island ? make_f32_island_kernel(setup, engine_, make_cpu_kernel) : make_cpu_kernel(setup, engine_);
  VDNN_CHECK(kernel_, "no f32 island for layer '" << layer.name() << "': its f32 kernel is a reference kernel too");
  for (const auto& md : in_mds_) {
    in_.emplace_back(md.get_size());
    d_in_.emplace_back(md.get_size());
  }
  for (const auto& md : kernel_->param_mds) {
    params_.emplace_back(md.get_size());
    d_params_.emplace_back(md.get_size());
  }
  for (const auto& md : kernel_->saved_mds) saved_.emplace_back(md.get_size());
  out_ = AlignedBuffer(kernel_->out_md.get_size());
  d_out_ = AlignedBuffer(kernel_->out_md.get_size());
  scratch_ = AlignedBuffer(kernel_->scratch_bytes);
  labels_.assign(static_cast<size_t>(batch), 0);
}

std::vector<float> KernelHarness::to_plain(const dnnl::memory::desc& md, const void* data,
                                           const std::vector<int64_t>& dims) const {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<float> plain(static_cast<size_t>(n));
  dnnl::memory src(md, engine_, const_cast<void*>(data));
  dnnl::memory dst(plain_md(dims), engine_, plain.data());
  dnnl::reorder(src, dst).execute(stream_, src, dst);
  stream_.wait();
  return plain;
}

void KernelHarness::from_plain(const std::vector<float>& plain, const std::vector<int64_t>& dims,
                               const dnnl::memory::desc& md, void* data) const {
  dnnl::memory src(plain_md(dims), engine_, const_cast<float*>(plain.data()));
  dnnl::memory dst(md, engine_, data);
  dnnl::reorder(src, dst).execute(stream_, src, dst);
  stream_.wait();
}

void KernelHarness::set_params(const std::vector<std::vector<float>>& plain) {
  for (size_t i = 0; i < plain.size(); ++i)
    from_plain(plain[i], specs_[i].dims, kernel_->param_mds[i], params_[i].data());
}

std::vector<std::vector<float>> KernelHarness::params() const {
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < specs_.size(); ++i)
    out.push_back(to_plain(kernel_->param_mds[i], params_[i].data(), specs_[i].dims));
  return out;
}

KernelArgs KernelHarness::args() const {
  KernelArgs a;
  for (size_t i = 0; i < in_.size(); ++i) {
    a.in.push_back(in_[i].data());
    a.d_in.push_back(d_in_[i].data());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    a.params.push_back(params_[i].data());
    a.d_params.push_back(specs_[i].trainable ? d_params_[i].data() : nullptr);
  }
  for (const auto& s : saved_) a.saved.push_back(s.data());
  a.out = out_.data();
  a.d_out = d_out_.data();
  a.scratch = scratch_.data();
  a.labels = labels_.data();
  a.valid = batch_;
  a.step = step_;
  a.training = training_;
  return a;
}

std::vector<float> KernelHarness::forward(const std::vector<std::vector<float>>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    from_plain(inputs[i], in_shapes_[i].with_batch(batch_), in_mds_[i], in_[i].data());
  kernel_->forward(stream_, args());
  stream_.wait();
  return to_plain(kernel_->out_md, out_.data(), out_dims());
}

KernelHarness::Grads KernelHarness::backward(const std::vector<float>& dy) {
  if (layer_.kind() != LayerKind::kLoss) from_plain(dy, out_dims(), kernel_->out_md, d_out_.data());
  kernel_->backward(stream_, args());
  stream_.wait();
  Grads g;
  for (size_t i = 0; i < in_.size(); ++i)
    g.d_in.push_back(to_plain(in_mds_[i], d_in_[i].data(), in_shapes_[i].with_batch(batch_)));
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].trainable) g.d_params.push_back(to_plain(kernel_->param_mds[i], d_params_[i].data(), specs_[i].dims));
  return g;
}

}  // namespace vdnn::test
