// backends/cpu/bn_slice_kernels.cc — bn_stats, bn_combine and bn_apply (layers/batch_norm_slices.h):
// batch normalization over slices of the batch, on oneDNN's batch-norm primitives.
//
// bn_stats: oneDNN's training forward over the slice gives mean_s and var_s (its normalized output
// goes to scratch, unused); backward adds dmean_s/m + 2 dvar_s (x - mean_s)/m, a per-channel affine
// map of x, run as oneDNN's batch norm with mean mean_s, variance 1 and eps 0: y = b (x - mean_s) + a.
// bn_combine: 2C floats from k slices' (host loops in double). bn_apply: oneDNN's batch norm with
// the given statistics (use_global_stats) forward and backward; the backward's scale and shift
// gradients (this slice's sums of dy * xhat and dy) give the statistics' gradient per channel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/batch_norm_slices.h"

namespace vdnn {
namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

class BnStatsKernel : public CpuKernel {
 public:
  BnStatsKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const Shape& x = s.in_shapes[0];
    channels_ = x.channels();
    samples_ = static_cast<float>(s.batch * x.height() * x.width());
    src_md_ = s.in_mds[0];
    const auto attr = user_scratchpad();
    const float eps = static_cast<float>(static_cast<const BnStatsLayer&>(s.layer).batch_norm().p().eps);
    dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, src_md_, eps, flags::none);
    stats_pd_ = dnnl::batch_normalization_forward::primitive_desc(fd, attr, engine);
    dnnl::batch_normalization_forward::desc ad(dnnl::prop_kind::forward_inference, src_md_, 0.0f,
                                               flags::use_global_stats | flags::use_scale | flags::use_shift);
    affine_pd_ = dnnl::batch_normalization_forward::primitive_desc(ad, attr, engine);
    stats_ = dnnl::batch_normalization_forward(stats_pd_);
    affine_ = dnnl::batch_normalization_forward(affine_pd_);
    c_md_ = plain_md({channels_});
    out_md = plain_md({2 * channels_});
    dst_offset_ = scratch_offset_after(std::max(scratch_of(stats_pd_), scratch_of(affine_pd_)));
    scratch_bytes = dst_offset_ + stats_pd_.dst_desc().get_size();
    ones_.assign(channels_, 1.0f);
    implementation = stats_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.training) return;  // evaluation normalizes with the running averages (bn_apply)
    float* out = static_cast<float*>(a.out);
    stats_.execute(stream,
                   {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                    {DNNL_ARG_DST, bind(stats_pd_.dst_desc(), engine_, static_cast<char*>(a.scratch) + dst_offset_)},
                    {DNNL_ARG_MEAN, bind(c_md_, engine_, out)},
                    {DNNL_ARG_VARIANCE, bind(c_md_, engine_, out + channels_)},
                    {DNNL_ARG_SCRATCHPAD, bind(stats_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    stream.wait();
    const float* d_mean = static_cast<const float*>(a.d_out);
    const float* d_var = d_mean + channels_;
    scale_.resize(channels_);
    shift_.resize(channels_);
    for (int64_t c = 0; c < channels_; ++c) {  // centred on mean_s: no cancellation when |mean_s| >> spread
      scale_[c] = 2.0f * d_var[c] / samples_;
      shift_[c] = d_mean[c] / samples_;
    }
    affine_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                             {DNNL_ARG_DST, bind(src_md_, engine_, a.d_in[0])},
                             {DNNL_ARG_SCALE, bind(c_md_, engine_, scale_.data())},
                             {DNNL_ARG_SHIFT, bind(c_md_, engine_, shift_.data())},
                             {DNNL_ARG_MEAN, bind(c_md_, engine_, a.out)},
                             {DNNL_ARG_VARIANCE, bind(c_md_, engine_, ones_.data())},
                             {DNNL_ARG_SCRATCHPAD, bind(affine_pd_.scratchpad_desc(), engine_, a.scratch)}});
    stream.wait();  // scale_ and shift_ are read by the primitive
  }

 private:
  dnnl::engine engine_;
  int64_t channels_ = 0;
  float samples_ = 1;
  size_t dst_offset_ = 0;
  memory::desc src_md_, c_md_;
  dnnl::batch_normalization_forward::primitive_desc stats_pd_, affine_pd_;
  dnnl::batch_normalization_forward stats_, affine_;
  std::vector<float> ones_, scale_, shift_;
};

class BnCombineKernel : public CpuKernel {
 public:
  explicit BnCombineKernel(const KernelSetup& s) : channels_(s.in_shapes[0].channels() / 2) {
    out_md = plain_md({2 * channels_});
    implementation = "host";
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.training) return;
    stream.wait();
    const double k = static_cast<double>(a.in.size());
    float* out = static_cast<float*>(a.out);
    for (int64_t c = 0; c < channels_; ++c) {
      double mean = 0, var = 0;
      for (void* p : a.in) mean += static_cast<const float*>(p)[c];
      mean /= k;
      for (void* p : a.in) {
        const float* part = static_cast<const float*>(p);
        const double spread = part[c] - mean;
        var += part[channels_ + c] + spread * spread;
      }
      out[c] = static_cast<float>(mean);
      out[channels_ + c] = static_cast<float>(var / k);
    }
  }

  // mean = avg mean_s, var = avg var_s + avg (mean_s - mean)^2: dmean_s = dmean/k +
  // dvar * 2 (mean_s - mean)/k (the terms through mean cancel), dvar_s = dvar/k.
  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    stream.wait();
    const float k = static_cast<float>(a.in.size());
    const float* mean = static_cast<const float*>(a.out);
    const float* d_mean = static_cast<const float*>(a.d_out);
    const float* d_var = d_mean + channels_;
    for (size_t s = 0; s < a.in.size(); ++s) {
      if (!a.d_in[s]) continue;
      const float* part = static_cast<const float*>(a.in[s]);
      float* d_part = static_cast<float*>(a.d_in[s]);
      for (int64_t c = 0; c < channels_; ++c) {
        d_part[c] = d_mean[c] / k + d_var[c] * 2.0f * (part[c] - mean[c]) / k;
        d_part[channels_ + c] = d_var[c] / k;
      }
    }
  }

 private:
  int64_t channels_;
};

class BnApplyKernel : public CpuKernel {
 public:
  BnApplyKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& layer = static_cast<const BnApplyLayer&>(s.layer);
    const auto& p = layer.batch_norm().p();
    updates_running_ = layer.updates_running();
    momentum_ = static_cast<float>(p.momentum);
    eps_ = static_cast<float>(p.eps);
    const Shape& x = s.in_shapes[0];
    channels_ = x.channels();
    const int64_t m = s.batch * layer.count() * x.height() * x.width();  // the whole batch's values per channel
    unbias_ = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
    src_md_ = s.in_mds[0];
    const auto attr = user_scratchpad();
    const flags f = flags::use_global_stats | flags::use_scale | flags::use_shift;
    dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, src_md_, eps_, f);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(fd, attr, engine);
    dnnl::batch_normalization_backward::desc bd(dnnl::prop_kind::backward, src_md_, src_md_, eps_, f);
    bwd_pd_ = dnnl::batch_normalization_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    fwd_ = dnnl::batch_normalization_forward(fwd_pd_);
    bwd_ = dnnl::batch_normalization_backward(bwd_pd_);
    out_md = fwd_pd_.dst_desc();
    c_md_ = plain_md({channels_});
    param_mds = {c_md_, c_md_, c_md_, c_md_};  // scale, shift, running_mean, running_var
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    forward_scratch_bytes = scratch_of(fwd_pd_);
    if (!s.input_needs_grad[0]) {  // the scale/shift gradients need the full backward: diff_src to scratch
      dsrc_offset_ = scratch_offset_after(scratch_bytes);
      scratch_bytes = dsrc_offset_ + src_md_.get_size();
    }
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    // Training: the whole batch's statistics; evaluation: the running averages.
    void* mean = a.training ? a.in[1] : a.params[2];
    void* var = a.training ? static_cast<float*>(a.in[1]) + channels_ : a.params[3];
    fwd_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                          {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_SCALE, bind(c_md_, engine_, a.params[0])},
                          {DNNL_ARG_SHIFT, bind(c_md_, engine_, a.params[1])},
                          {DNNL_ARG_MEAN, bind(c_md_, engine_, mean)},
                          {DNNL_ARG_VARIANCE, bind(c_md_, engine_, var)},
                          {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
    if (!a.training || a.recompute || !updates_running_) return;
    // Running averages, as BatchNormKernel's (unbiased variance, weight `momentum` on the new value).
    float* running_mean = static_cast<float*>(a.params[2]);
    float* running_var = static_cast<float*>(a.params[3]);
    const float* stats = static_cast<const float*>(a.in[1]);
    for (int64_t c = 0; c < channels_; ++c) {
      running_mean[c] = (1.0f - momentum_) * running_mean[c] + momentum_ * stats[c];
      running_var[c] = (1.0f - momentum_) * running_var[c] + momentum_ * stats[channels_ + c] * unbias_;
    }
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    const float* stats = static_cast<const float*>(a.in[1]);
    void* d_src = a.d_in[0] ? a.d_in[0] : static_cast<char*>(a.scratch) + dsrc_offset_;
    bwd_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                          {DNNL_ARG_MEAN, bind(c_md_, engine_, a.in[1])},
                          {DNNL_ARG_VARIANCE, bind(c_md_, engine_, static_cast<float*>(a.in[1]) + channels_)},
                          {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                          {DNNL_ARG_SCALE, bind(c_md_, engine_, a.params[0])},
                          {DNNL_ARG_SHIFT, bind(c_md_, engine_, a.params[1])},
                          {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, d_src)},
                          {DNNL_ARG_DIFF_SCALE, bind(c_md_, engine_, a.d_params[0])},
                          {DNNL_ARG_DIFF_SHIFT, bind(c_md_, engine_, a.d_params[1])},
                          {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
    if (!a.d_in[1]) return;
    stream.wait();
    // This slice's share of the statistics' gradient, from its sums of dy * xhat and dy.
    const float* weight = static_cast<const float*>(a.params[0]);
    const float* d_weight = static_cast<const float*>(a.d_params[0]);
    const float* d_bias = static_cast<const float*>(a.d_params[1]);
    float* d_stats = static_cast<float*>(a.d_in[1]);
    for (int64_t c = 0; c < channels_; ++c) {
      const float var_eps = stats[channels_ + c] + eps_;
      d_stats[c] = -weight[c] / std::sqrt(var_eps) * d_bias[c];
      d_stats[channels_ + c] = -0.5f * weight[c] / var_eps * d_weight[c];
    }
  }

 private:
  dnnl::engine engine_;
  int64_t channels_ = 0;
  size_t dsrc_offset_ = 0;
  bool updates_running_ = false;
  float momentum_ = 0.1f, eps_ = 1e-5f, unbias_ = 1.0f;
  memory::desc src_md_, c_md_;
  dnnl::batch_normalization_forward::primitive_desc fwd_pd_;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd_;
  dnnl::batch_normalization_forward fwd_;
  dnnl::batch_normalization_backward bwd_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_bn_stats_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<BnStatsKernel>(s, e);
}

std::unique_ptr<CpuKernel> make_bn_combine_kernel(const KernelSetup& s, const dnnl::engine&) {
  return std::make_unique<BnCombineKernel>(s);
}

std::unique_ptr<CpuKernel> make_bn_apply_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<BnApplyKernel>(s, e);
}

}  // namespace vdnn
