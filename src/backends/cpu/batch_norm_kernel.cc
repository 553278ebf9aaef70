// Batch normalization on oneDNN: batch statistics in training (saved for backward, folded into the
// running averages), running averages in evaluation. A recompute (KernelArgs::recompute) normalizes
// with the saved batch statistics (the global-statistics primitive fed the forward's mean and
// variance) and leaves the running averages alone.
//
// A ReLU in place on the output (KernelSetup::applies_relu) is applied here, by oneDNN's
// fuse_norm_relu, in every forward (training, evaluation, recompute), and its backward too: the
// training forward writes a mask of the ReLU's zeros (oneDNN's workspace, one bit per element),
// kept as a third saved buffer until this backward, which zeroes the gradient where the ReLU did
// before normalizing it back. The ReLU's own backward does nothing then (its gradient is this
// layer's, in place). A recompute leaves the mask alone: it rewrites the same output.
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/batch_norm.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

class BatchNormKernel : public CpuKernel {
 public:
  BatchNormKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& p = static_cast<const BatchNormLayer&>(s.layer).p();
    momentum_ = static_cast<float>(p.momentum);
    const Shape& x = s.in_shapes[0];
    channels_ = x.channels();
    const int64_t m = s.batch * x.height() * x.width();
    unbias_ = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
    src_md_ = s.in_mds[0];
    const float eps = static_cast<float>(p.eps);
    const auto attr = user_scratchpad();
    const flags f = flags::use_scale | flags::use_shift;
    const flags relu = s.applies_relu ? flags::fuse_norm_relu : flags::none;
    VDNN_CHECK(!s.applies_relu || s.relu_ceiling == 0.f, "batch norm fuses ReLU only, not a clip");
    dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, src_md_, eps, f | relu);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(fd, attr, engine);
    dnnl::batch_normalization_forward::desc id(dnnl::prop_kind::forward_inference, src_md_, eps,
                                               f | relu | flags::use_global_stats);
    infer_pd_ = dnnl::batch_normalization_forward::primitive_desc(id, attr, engine);
    dnnl::batch_normalization_backward::desc bd(dnnl::prop_kind::backward, src_md_, src_md_, eps, f | relu);
    bwd_pd_ = dnnl::batch_normalization_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    out_md = fwd_pd_.dst_desc();
    const memory::desc c_md = plain_md({channels_});
    param_mds = {c_md, c_md, c_md, c_md};  // scale, shift, running_mean, running_var
    saved_mds = {fwd_pd_.mean_desc(), fwd_pd_.variance_desc()};
    fuses_relu_ = s.applies_relu;
    if (fuses_relu_) saved_mds.push_back(fwd_pd_.workspace_desc());  // the ReLU's mask
    fwd_ = dnnl::batch_normalization_forward(fwd_pd_);
    infer_ = dnnl::batch_normalization_forward(infer_pd_);
    bwd_ = dnnl::batch_normalization_backward(bwd_pd_);
    scratch_bytes = std::max({scratch_of(fwd_pd_), scratch_of(infer_pd_), scratch_of(bwd_pd_)});
    forward_scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(infer_pd_));  // dsrc_offset_: backward only
    if (!s.input_needs_grad[0]) {  // diff_src still has to go somewhere: after the scratchpad
      dsrc_offset_ = scratch_offset_after(scratch_of(bwd_pd_));
      scratch_bytes = std::max(scratch_bytes, dsrc_offset_ + src_md_.get_size());
    }
    implementation = std::string(fwd_pd_.impl_info_str()) + (s.applies_relu ? " + relu (forward and backward)" : "");
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    const memory::desc& c_md = param_mds[0];
    if (!a.training || a.recompute) {  // given statistics: the running ones, or the forward's
      void* mean = a.recompute ? a.saved[0] : a.params[2];
      void* var = a.recompute ? a.saved[1] : a.params[3];
      infer_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                              {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                              {DNNL_ARG_SCALE, bind(c_md, engine_, a.params[0])},
                              {DNNL_ARG_SHIFT, bind(c_md, engine_, a.params[1])},
                              {DNNL_ARG_MEAN, bind(c_md, engine_, mean)},
                              {DNNL_ARG_VARIANCE, bind(c_md, engine_, var)},
                              {DNNL_ARG_SCRATCHPAD, bind(infer_pd_.scratchpad_desc(), engine_, a.scratch)}});
      return;
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                                         {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                                         {DNNL_ARG_SCALE, bind(c_md, engine_, a.params[0])},
                                         {DNNL_ARG_SHIFT, bind(c_md, engine_, a.params[1])},
                                         {DNNL_ARG_MEAN, bind(saved_mds[0], engine_, a.saved[0])},
                                         {DNNL_ARG_VARIANCE, bind(saved_mds[1], engine_, a.saved[1])},
                                         {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (fuses_relu_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[2], engine_, a.saved[2]);
    fwd_.execute(stream, args);
    stream.wait();
    // Running averages (PyTorch's convention: unbiased variance, weight `momentum` on the new value).
    float* running_mean = static_cast<float*>(a.params[2]);
    float* running_var = static_cast<float*>(a.params[3]);
    const float* mean = static_cast<const float*>(a.saved[0]);
    const float* var = static_cast<const float*>(a.saved[1]);
    for (int64_t c = 0; c < channels_; ++c) {
      running_mean[c] = (1.0f - momentum_) * running_mean[c] + momentum_ * mean[c];
      running_var[c] = (1.0f - momentum_) * running_var[c] + momentum_ * var[c] * unbias_;
    }
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    const memory::desc& c_md = param_mds[0];
    void* d_src = a.d_in[0];
    // The scale/shift gradients need the full backward even when the input needs no gradient.
    if (!d_src) d_src = static_cast<char*>(a.scratch) + dsrc_offset_;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                                         {DNNL_ARG_MEAN, bind(saved_mds[0], engine_, a.saved[0])},
                                         {DNNL_ARG_VARIANCE, bind(saved_mds[1], engine_, a.saved[1])},
                                         {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                                         {DNNL_ARG_SCALE, bind(c_md, engine_, a.params[0])},
                                         {DNNL_ARG_SHIFT, bind(c_md, engine_, a.params[1])},
                                         {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, d_src)},
                                         {DNNL_ARG_DIFF_SCALE, bind(c_md, engine_, a.d_params[0])},
                                         {DNNL_ARG_DIFF_SHIFT, bind(c_md, engine_, a.d_params[1])},
                                         {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (fuses_relu_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[2], engine_, a.saved[2]);
    bwd_.execute(stream, args);
  }

 private:
  dnnl::engine engine_;
  int64_t channels_ = 0;
  size_t dsrc_offset_ = 0;
  bool fuses_relu_ = false;  // applies the ReLU after it and that ReLU's backward (mask: saved[2])
  float momentum_ = 0.1f, unbias_ = 1.0f;
  memory::desc src_md_;
  dnnl::batch_normalization_forward::primitive_desc fwd_pd_, infer_pd_;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd_;
  dnnl::batch_normalization_forward fwd_, infer_;
  dnnl::batch_normalization_backward bwd_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_batch_norm_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<BatchNormKernel>(s, e);
}

}  // namespace vdnn
