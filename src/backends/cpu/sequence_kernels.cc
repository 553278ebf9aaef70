// The per-token layers of a sequence model on oneDNN, all in the plain [N, T, C] layout:
// layer_norm (layer_normalization over the last axis), gelu (eltwise gelu_erf / gelu_tanh) and
// linear (matmul over the N·T rows: y = x W^T + b; dx = dy W; dW = dy^T x by a matmul over the
// transposed view of dy; db a reduction of dy over the rows).
#include <algorithm>

#include "backends/cpu/kernels.h"
#include "backends/cpu/sequence_kernel.h"
#include "layers/gelu.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"

namespace vdnn {
namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

class LayerNormKernel : public CpuKernel {
 public:
  LayerNormKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    require_plain_f32(s);
    const auto& p = static_cast<const LayerNormLayer&>(s.layer).p();
    affine_ = p.affine;
    md_ = s.in_mds[0];
    const flags f = affine_ ? flags::use_scale | flags::use_shift : flags::none;
    const auto attr = user_scratchpad();
    const float eps = static_cast<float>(p.eps);
    fwd_pd_ = dnnl::layer_normalization_forward::primitive_desc(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_training, md_, eps, f), attr, engine);
    bwd_pd_ = dnnl::layer_normalization_backward::primitive_desc(
        dnnl::layer_normalization_backward::desc(affine_ ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data,
                                                 md_, md_, eps, f),
        attr, engine, fwd_pd_);
    fwd_ = dnnl::layer_normalization_forward(fwd_pd_);
    bwd_ = dnnl::layer_normalization_backward(bwd_pd_);
    out_md = md_;
    if (affine_) param_mds = {plain_md({s.in_shapes[0].dims.back()}), plain_md({s.in_shapes[0].dims.back()})};
    saved_mds = {fwd_pd_.mean_desc(), fwd_pd_.variance_desc()};
    forward_scratch_bytes = scratch_of(fwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    // An input that needs no gradient (the graph input): the data gradient goes to scratch.
    if (!s.input_needs_grad.empty() && !s.input_needs_grad[0]) {
      dx_offset_ = scratch_offset_after(scratch_bytes);
      scratch_bytes = dx_offset_ + md_.get_size();
    }
    implementation = fwd_pd_.impl_info_str();
  }

  // A recompute normalizes with statistics it computes again: the same values from the same input.
  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    auto args = shared_args(a, fwd_pd_.scratchpad_desc());
    args[DNNL_ARG_DST] = bind(md_, engine_, a.out);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0] && !affine_) return;
    auto args = shared_args(a, bwd_pd_.scratchpad_desc());
    args[DNNL_ARG_DIFF_DST] = bind(md_, engine_, a.d_out);
    args[DNNL_ARG_DIFF_SRC] = bind(md_, engine_, a.d_in[0] ? a.d_in[0] : static_cast<char*>(a.scratch) + dx_offset_);
    if (affine_) {
      args[DNNL_ARG_DIFF_SCALE] = bind(param_mds[0], engine_, a.d_params[0]);
      args[DNNL_ARG_DIFF_SHIFT] = bind(param_mds[1], engine_, a.d_params[1]);
    }
    bwd_.execute(stream, args);
  }

 private:
  dnnl::engine engine_;
  bool affine_ = true;
  memory::desc md_;
  size_t dx_offset_ = 0;
  dnnl::layer_normalization_forward::primitive_desc fwd_pd_;
  dnnl::layer_normalization_backward::primitive_desc bwd_pd_;
  dnnl::layer_normalization_forward fwd_;
  dnnl::layer_normalization_backward bwd_;

  // What both passes bind: the input, its statistics, weight and bias (oneDNN 2.6's backward asks
  // for the bias too, unread), and `scratchpad`.
  std::unordered_map<int, memory> shared_args(const KernelArgs& a, const memory::desc& scratchpad) const {
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, bind(md_, engine_, a.in[0])},
                                         {DNNL_ARG_MEAN, bind(saved_mds[0], engine_, a.saved[0])},
                                         {DNNL_ARG_VARIANCE, bind(saved_mds[1], engine_, a.saved[1])},
                                         {DNNL_ARG_SCRATCHPAD, bind(scratchpad, engine_, a.scratch)}};
    if (affine_) {
      args[DNNL_ARG_SCALE] = bind(param_mds[0], engine_, a.params[0]);
      args[DNNL_ARG_SHIFT] = bind(param_mds[1], engine_, a.params[1]);
    }
    return args;
  }
};

class GeluKernel : public CpuKernel {
 public:
  GeluKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    require_plain_f32(s);
    const auto algo = static_cast<const GeluLayer&>(s.layer).tanh_approximation() ? dnnl::algorithm::eltwise_gelu_tanh
                                                                                  : dnnl::algorithm::eltwise_gelu_erf;
    out_md = s.in_mds[0];
    const auto attr = user_scratchpad();
    fwd_pd_ = dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algo, out_md, 0.f, 0.f), attr, engine);
    bwd_pd_ = dnnl::eltwise_backward::primitive_desc(dnnl::eltwise_backward::desc(algo, out_md, out_md, 0.f, 0.f), attr,
                                                     engine, fwd_pd_);
    fwd_ = dnnl::eltwise_forward(fwd_pd_);
    bwd_ = dnnl::eltwise_backward(bwd_pd_);
    forward_scratch_bytes = scratch_of(fwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    fwd_.execute(stream, {{DNNL_ARG_SRC, bind(out_md, engine_, a.in[0])},
                          {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    bwd_.execute(stream, {{DNNL_ARG_SRC, bind(out_md, engine_, a.in[0])},
                          {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                          {DNNL_ARG_DIFF_SRC, bind(out_md, engine_, a.d_in[0])},
                          {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  dnnl::engine engine_;
  dnnl::eltwise_forward::primitive_desc fwd_pd_;
  dnnl::eltwise_backward::primitive_desc bwd_pd_;
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
};

// Every operand plain: x [M, C], W [units, C] (read as its transpose [C, units] for the forward),
// y and dy [M, units], M = N·T rows.
class LinearKernel : public CpuKernel {
 public:
  LinearKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    require_plain_f32(s);
    const auto& p = static_cast<const LinearLayer&>(s.layer).p();
    const int64_t rows = token_rows(s), c = s.in_shapes[0].dims.back(), units = p.units;
    has_bias_ = p.bias;
    x_md_ = rows_md(s, c);
    y_md_ = rows_md(s, units);
    w_md_ = plain_md({units, c});
    const memory::desc wt_md({c, units}, dt::f32, tag::ba);      // W^T over W's bytes
    const memory::desc dyt_md({units, rows}, dt::f32, tag::ba);  // dy^T over dy's bytes
    const memory::desc bias_md = has_bias_ ? plain_md({1, units}) : memory::desc();
    const auto attr = user_scratchpad();
    fwd_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md_, wt_md, bias_md, y_md_), attr, engine);
    data_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(y_md_, w_md_, x_md_), attr, engine);
    weights_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(dyt_md, x_md_, w_md_), attr, engine);
    fwd_ = dnnl::matmul(fwd_pd_);
    data_ = dnnl::matmul(data_pd_);
    weights_ = dnnl::matmul(weights_pd_);
    wt_md_ = wt_md, dyt_md_ = dyt_md, bias_md_ = bias_md;
    size_t backward = std::max(scratch_of(data_pd_), scratch_of(weights_pd_));
    if (has_bias_) {
      bias_pd_ = dnnl::reduction::primitive_desc(
          dnnl::reduction::desc(dnnl::algorithm::reduction_sum, y_md_, bias_md, 0.f, 0.f), attr, engine);
      bias_sum_ = dnnl::reduction(bias_pd_);
      backward = std::max(backward, scratch_of(bias_pd_));
    }
    out_md = plain_md(s.out_shape.with_batch(s.batch));
    param_mds = {w_md_};
    if (has_bias_) param_mds.push_back(plain_md({units}));
    forward_scratch_bytes = scratch_of(fwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), backward);
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, bind(x_md_, engine_, a.in[0])},
                                         {DNNL_ARG_WEIGHTS, bind(wt_md_, engine_, a.params[0])},
                                         {DNNL_ARG_DST, bind(y_md_, engine_, a.out)},
                                         {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (has_bias_) args[DNNL_ARG_BIAS] = bind(bias_md_, engine_, a.params[1]);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (a.d_params[0])
      weights_.execute(stream, {{DNNL_ARG_SRC, bind(dyt_md_, engine_, a.d_out)},
                                {DNNL_ARG_WEIGHTS, bind(x_md_, engine_, a.in[0])},
                                {DNNL_ARG_DST, bind(w_md_, engine_, a.d_params[0])},
                                {DNNL_ARG_SCRATCHPAD, bind(weights_pd_.scratchpad_desc(), engine_, a.scratch)}});
    if (has_bias_ && a.d_params[1])
      bias_sum_.execute(stream, {{DNNL_ARG_SRC, bind(y_md_, engine_, a.d_out)},
                                 {DNNL_ARG_DST, bind(bias_md_, engine_, a.d_params[1])},
                                 {DNNL_ARG_SCRATCHPAD, bind(bias_pd_.scratchpad_desc(), engine_, a.scratch)}});
    if (!a.d_in[0]) return;
    data_.execute(stream, {{DNNL_ARG_SRC, bind(y_md_, engine_, a.d_out)},
                           {DNNL_ARG_WEIGHTS, bind(w_md_, engine_, a.params[0])},
                           {DNNL_ARG_DST, bind(x_md_, engine_, a.d_in[0])},
                           {DNNL_ARG_SCRATCHPAD, bind(data_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  dnnl::engine engine_;
  bool has_bias_ = true;
  memory::desc x_md_, y_md_, w_md_, wt_md_, dyt_md_, bias_md_;
  dnnl::matmul::primitive_desc fwd_pd_, data_pd_, weights_pd_;
  dnnl::reduction::primitive_desc bias_pd_;
  dnnl::matmul fwd_, data_, weights_;
  dnnl::reduction bias_sum_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_layer_norm_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<LayerNormKernel>(s, e);
}

std::unique_ptr<CpuKernel> make_gelu_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<GeluKernel>(s, e);
}

std::unique_ptr<CpuKernel> make_linear_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<LinearKernel>(s, e);
}

}  // namespace vdnn
