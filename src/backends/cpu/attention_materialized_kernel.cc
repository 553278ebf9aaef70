// Attention with the probabilities materialized: S = QK^T/sqrt(D) by one batched oneDNN matmul over
// N*H heads into the saved [N, H, T, T] buffer, the causal mask (-inf above the diagonal), oneDNN
// softmax in place, dropout (a byte mask, saved), O = PV. q, k, v are read in place from the packed
// input and O is written in place into the merged output (attention_common.h's strided views).
//
// Backward: dV = P^T dO, dP = dO V^T (dropout: times the mask), dS = P * (dP - rowsum(dP * P))
// (oneDNN softmax backward, in place), dQ = dS K/sqrt(D), dK = dS^T Q/sqrt(D), into the packed
// gradient. Masked entries have P = 0, so dS is 0 there without a mask of its own.
//
// Scratch: [matmul/softmax scratchpads][dropout: P * mask, N*H*T*T floats] in forward;
// [scratchpads][dP, N*H*T*T floats][dropout: P * mask] in backward.
#include <algorithm>
#include <limits>

#include "backends/cpu/attention_common.h"

namespace vdnn {
namespace {

using dnnl::memory;

class MaterializedAttentionKernel : public CpuKernel {
 public:
  MaterializedAttentionKernel(const KernelSetup& s, const dnnl::engine& engine)
      : engine_(engine), a_(AttentionShape::of(s)), seed_(s.seed), rate_(a_.layer->p().dropout) {
    out_md = plain_md({a_.n, a_.t, a_.c});
    saved_mds = {a_.scores()};
    if (rate_ > 0) saved_mds.push_back(plain_md({a_.n, a_.heads, a_.t, a_.t}, dt::u8));
    forward_writes_saved = true;  // P from the inputs; the mask from (seed, step) alone
    const memory::desc qkv = a_.packed_view(), kt = a_.packed_view_transposed(), o = a_.merged_view();
    const memory::desc p = a_.scores(), pt = a_.scores(true);
    qk_ = AttentionMatmul(engine, qkv, kt, p, a_.scale);    // S = Q K^T / sqrt(D)
    pv_ = AttentionMatmul(engine, p, qkv, o);               // O = P V
    dv_ = AttentionMatmul(engine, pt, o, qkv);              // dV = P^T dO
    dp_ = AttentionMatmul(engine, o, kt, p);                // dP = dO V^T
    dq_ = AttentionMatmul(engine, p, qkv, qkv, a_.scale);   // dQ = dS K / sqrt(D)
    dk_ = AttentionMatmul(engine, pt, qkv, qkv, a_.scale);  // dK = dS^T Q / sqrt(D)
    const auto attr = user_scratchpad();
    softmax_pd_ = dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, p, 3), attr, engine);
    softmax_bwd_pd_ =
        dnnl::softmax_backward::primitive_desc(dnnl::softmax_backward::desc(p, p, 3), attr, engine, softmax_pd_);
    softmax_ = dnnl::softmax_forward(softmax_pd_);
    softmax_bwd_ = dnnl::softmax_backward(softmax_bwd_pd_);

    const size_t pads =
        std::max({qk_.scratch_bytes(), pv_.scratch_bytes(), dv_.scratch_bytes(), dp_.scratch_bytes(),
                  dq_.scratch_bytes(), dk_.scratch_bytes(), scratch_of(softmax_pd_), scratch_of(softmax_bwd_pd_)});
    const size_t scores_bytes = p.get_size();
    dropped_fwd_ = scratch_offset_after(pads);
    forward_scratch_bytes = rate_ > 0 ? dropped_fwd_ + scores_bytes : pads;
    dp_offset_ = scratch_offset_after(pads);
    dropped_bwd_ = scratch_offset_after(dp_offset_ + scores_bytes);
    scratch_bytes =
        std::max(*forward_scratch_bytes, rate_ > 0 ? dropped_bwd_ + scores_bytes : dp_offset_ + scores_bytes);

    implementation = std::string("materialized: ") + qk_.pd.impl_info_str() + ", softmax " + softmax_pd_.impl_info_str();
    qk_.note_if_slow("forward QK^T", slow_kernels);
    pv_.note_if_slow("forward PV", slow_kernels);
    dv_.note_if_slow("backward dV", slow_kernels);
    dp_.note_if_slow("backward dP", slow_kernels);
    dq_.note_if_slow("backward dQ", slow_kernels);
    dk_.note_if_slow("backward dK", slow_kernels);
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    float* p = static_cast<float*>(a.saved[0]);
    qk_.run(stream, engine_, a_.q(a.in[0]), a_.k(a.in[0]), p, a.scratch);
    if (a_.layer->p().causal) {
      stream.wait();
      mask_above_diagonal(p);
    }
    const memory sm = bind(a_.scores(), engine_, p);
    softmax_.execute(stream, {{DNNL_ARG_SRC, sm},
                              {DNNL_ARG_DST, sm},
                              {DNNL_ARG_SCRATCHPAD, bind(softmax_pd_.scratchpad_desc(), engine_, a.scratch)}});
    const float* probs = p;
    if (rate_ > 0 && a.training) {
      stream.wait();
      draw_mask(static_cast<uint8_t*>(a.saved[1]), a.step);
      probs = drop(p, static_cast<const uint8_t*>(a.saved[1]), static_cast<char*>(a.scratch) + dropped_fwd_);
    }
    pv_.run(stream, engine_, probs, a_.v(a.in[0]), a.out, a.scratch);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    const float* p = static_cast<const float*>(a.saved[0]);
    void* x = a.in[0];
    void* dx = a.d_in[0];
    float* dp = reinterpret_cast<float*>(static_cast<char*>(a.scratch) + dp_offset_);
    const uint8_t* mask = rate_ > 0 ? static_cast<const uint8_t*>(a.saved[1]) : nullptr;
    const float* probs = mask ? drop(p, mask, static_cast<char*>(a.scratch) + dropped_bwd_) : p;
    dv_.run(stream, engine_, probs, a.d_out, a_.v(dx), a.scratch);
    dp_.run(stream, engine_, a.d_out, a_.v(x), dp, a.scratch);
    if (mask) {
      stream.wait();
      const float factor = AttentionDropout::kept_factor(rate_);
      const size_t count = a_.scores().get_size() / sizeof(float);
      for (size_t i = 0; i < count; ++i) dp[i] *= mask[i] ? factor : 0.f;
    }
    const memory dpm = bind(a_.scores(), engine_, dp);
    softmax_bwd_.execute(stream, {{DNNL_ARG_DST, bind(a_.scores(), engine_, const_cast<float*>(p))},
                                  {DNNL_ARG_DIFF_DST, dpm},
                                  {DNNL_ARG_DIFF_SRC, dpm},
                                  {DNNL_ARG_SCRATCHPAD, bind(softmax_bwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
    dq_.run(stream, engine_, dp, a_.k(x), a_.q(dx), a.scratch);
    dk_.run(stream, engine_, dp, a_.q(x), a_.k(dx), a.scratch);
  }

 private:
  void mask_above_diagonal(float* s) const {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const int64_t t = a_.t;
    for (int64_t m = 0; m < a_.n * a_.heads; ++m)
      for (int64_t i = 0; i < t; ++i) std::fill(s + (m * t + i) * t + i + 1, s + (m * t + i + 1) * t, minus_inf);
  }

  void draw_mask(uint8_t* mask, uint64_t step) const {
    const AttentionDropout drop(seed_, step, rate_);
    const size_t count = a_.scores().get_size() / sizeof(float);
    for (size_t i = 0; i < count; ++i) mask[i] = drop.factor(i) > 0 ? 1 : 0;
  }

  // P times the mask, scaled by 1 / (1 - rate), into `into`.
  const float* drop(const float* p, const uint8_t* mask, void* into) const {
    float* out = static_cast<float*>(into);
    const float factor = AttentionDropout::kept_factor(rate_);
    const size_t count = a_.scores().get_size() / sizeof(float);
    for (size_t i = 0; i < count; ++i) out[i] = mask[i] ? p[i] * factor : 0.f;
    return out;
  }

  dnnl::engine engine_;
  AttentionShape a_;
  uint64_t seed_;
  double rate_;
  size_t dropped_fwd_ = 0, dp_offset_ = 0, dropped_bwd_ = 0;
  AttentionMatmul qk_, pv_, dv_, dp_, dq_, dk_;
  dnnl::softmax_forward::primitive_desc softmax_pd_;
  dnnl::softmax_backward::primitive_desc softmax_bwd_pd_;
  dnnl::softmax_forward softmax_;
  dnnl::softmax_backward softmax_bwd_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_materialized_attention_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<MaterializedAttentionKernel>(s, e);
}

}  // namespace vdnn
