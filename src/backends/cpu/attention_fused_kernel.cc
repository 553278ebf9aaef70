// Attention fused as FlashAttention-2 (Dao 2023): per head, tiles of B query rows against tiles of B
// key/value rows with an online softmax (a running max m and sum l per row), so no T x T matrix is
// ever stored. Forward saves only LSE = m + log(l) per row, [N, H, T]. Backward recomputes each
// score tile from Q, K and LSE (P = exp(S - LSE)) and accumulates dQ, dK, dV in place in the packed
// gradient, with D = rowsum(dO * O) per row (so it reads the output). A causal layer skips the key
// tiles wholly above the diagonal.
//
// The tile products are oneDNN matmuls over strided 2-D views of the packed input, the output and
// the gradient, created once: one per product and pair of tile extents (B, or the ragged last tile
// T mod B). The elementwise parts (the online softmax, masks, dropout) are plain loops. Dropout
// regenerates its mask from the counter-based draw (attention_common.h), nothing saved.
//
// Scratch: [matmul scratchpads][S or P tile][dP/dS tile][dropped P tile][m, l or D: B floats each].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/attention_common.h"

namespace vdnn {
namespace {

using dnnl::memory;

constexpr int64_t kTile = 64;

class FusedAttentionKernel : public CpuKernel {
 public:
  FusedAttentionKernel(const KernelSetup& s, const dnnl::engine& engine)
      : engine_(engine), a_(AttentionShape::of(s)), seed_(s.seed), rate_(a_.layer->p().dropout) {
    out_md = plain_md({a_.n, a_.t, a_.c});
    saved_mds = {plain_md({a_.n, a_.heads, a_.t})};  // LSE
    forward_writes_saved = true;
    extents_ = {std::min(kTile, a_.t)};
    if (a_.t > kTile && a_.t % kTile != 0) extents_.push_back(a_.t % kTile);
    const int64_t d = a_.d, row = 3 * a_.c, c = a_.c;
    auto md = [](int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
      return memory::desc({rows, cols}, dt::f32, memory::dims{row_stride, col_stride});
    };
    size_t pads = 0;
    for (size_t ri = 0; ri < extents_.size(); ++ri)
      for (size_t ci = 0; ci < extents_.size(); ++ci) {
        const int64_t r = extents_[ri], k = extents_[ci];  // query rows, key rows
        Products& p = products_[ri][ci];
        p.qk = AttentionMatmul(engine, md(r, d, row, 1), md(d, k, 1, row), md(r, k, k, 1), a_.scale);
        p.pv = AttentionMatmul(engine, md(r, k, k, 1), md(k, d, row, 1), md(r, d, c, 1), 1.f, true);
        p.dv = AttentionMatmul(engine, md(k, r, 1, k), md(r, d, c, 1), md(k, d, row, 1), 1.f, true);
        p.dp = AttentionMatmul(engine, md(r, d, c, 1), md(d, k, 1, row), md(r, k, k, 1));
        p.dq = AttentionMatmul(engine, md(r, k, k, 1), md(k, d, row, 1), md(r, d, row, 1), a_.scale, true);
        p.dk = AttentionMatmul(engine, md(k, r, 1, k), md(r, d, row, 1), md(k, d, row, 1), a_.scale, true);
        for (const AttentionMatmul* m : {&p.qk, &p.pv, &p.dv, &p.dp, &p.dq, &p.dk})
          pads = std::max(pads, m->scratch_bytes());
        p.qk.note_if_slow("forward QK^T tile", slow_kernels);
        p.pv.note_if_slow("forward PV tile", slow_kernels);
        p.dv.note_if_slow("backward dV tile", slow_kernels);
        p.dp.note_if_slow("backward dP tile", slow_kernels);
        p.dq.note_if_slow("backward dQ tile", slow_kernels);
        p.dk.note_if_slow("backward dK tile", slow_kernels);
      }
    const size_t tile = kTile * kTile * sizeof(float), rows = kTile * sizeof(float);
    s_at_ = scratch_offset_after(pads);
    dp_at_ = scratch_offset_after(s_at_ + tile);
    dropped_at_ = scratch_offset_after(dp_at_ + tile);
    stats_at_ = scratch_offset_after(dropped_at_ + tile);
    scratch_bytes = stats_at_ + 2 * rows;
    implementation =
        "fused (FlashAttention-2, " + std::to_string(kTile) + "-row tiles): " + products_[0][0].qk.pd.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& args) override {
    const Tiles t(*this, args);
    const bool dropout = rate_ > 0 && args.training;
    const AttentionDropout drop(seed_, args.step, rate_);
    float* m = t.at(stats_at_);
    float* l = m + kTile;
    float* lse = static_cast<float*>(args.saved[0]);
    for (int64_t nh = 0; nh < a_.n * a_.heads; ++nh) {
      const int64_t n = nh / a_.heads, h = nh % a_.heads;
      for (int64_t i0 = 0; i0 < a_.t; i0 += kTile) {
        const int64_t r = std::min(kTile, a_.t - i0);
        float* o = static_cast<float*>(args.out) + (n * a_.t + i0) * a_.c + h * a_.d;
        for (int64_t i = 0; i < r; ++i) std::fill(o + i * a_.c, o + i * a_.c + a_.d, 0.f);
        std::fill(m, m + r, -std::numeric_limits<float>::infinity());
        std::fill(l, l + r, 0.f);
        for (int64_t j0 = 0; j0 < key_end(i0, r); j0 += kTile) {
          const int64_t k = std::min(kTile, a_.t - j0);
          const Products& p = products(r, k);
          float* s = t.at(s_at_);
          p.qk.run(stream, engine_, t.q(n, i0, h), t.k(n, j0, h), s, args.scratch);
          stream.wait();
          for (int64_t i = 0; i < r; ++i) {
            float* si = s + i * k;
            const int64_t valid = valid_keys(i0 + i, j0, k);
            const float top = std::max(m[i], *std::max_element(si, si + valid));
            const float alpha = std::exp(m[i] - top);  // 0 for the first tile (m = -inf)
            float sum = 0.f;
            for (int64_t j = 0; j < valid; ++j) sum += (si[j] = std::exp(si[j] - top));
            std::fill(si + valid, si + k, 0.f);
            l[i] = l[i] * alpha + sum;
            m[i] = top;
            for (int64_t e = 0; e < a_.d; ++e) o[i * a_.c + e] *= alpha;
            if (dropout)
              for (int64_t j = 0; j < valid; ++j) si[j] *= drop.factor(index(nh, i0 + i, j0 + j));
          }
          p.pv.run(stream, engine_, s, t.v(n, j0, h), o, args.scratch);
        }
        stream.wait();
        for (int64_t i = 0; i < r; ++i) {
          const float inv = 1.f / l[i];
          for (int64_t e = 0; e < a_.d; ++e) o[i * a_.c + e] *= inv;
          lse[nh * a_.t + i0 + i] = m[i] + std::log(l[i]);
        }
      }
    }
  }

  void backward(dnnl::stream& stream, const KernelArgs& args) override {
    if (!args.d_in[0]) return;
    const Tiles t(*this, args);
    const bool dropout = rate_ > 0;
    const AttentionDropout drop(seed_, args.step, rate_);
    std::memset(args.d_in[0], 0, static_cast<size_t>(a_.n * a_.t * 3 * a_.c) * sizeof(float));
    const float* lse = static_cast<const float*>(args.saved[0]);
    float* rowdot = t.at(stats_at_);  // D = rowsum(dO * O) of the query tile
    for (int64_t nh = 0; nh < a_.n * a_.heads; ++nh) {
      const int64_t n = nh / a_.heads, h = nh % a_.heads;
      for (int64_t i0 = 0; i0 < a_.t; i0 += kTile) {
        const int64_t r = std::min(kTile, a_.t - i0);
        const float* o = t.o(n, i0, h);
        const float* dout = t.dout(n, i0, h);
        for (int64_t i = 0; i < r; ++i) {
          float dot = 0.f;
          for (int64_t e = 0; e < a_.d; ++e) dot += o[i * a_.c + e] * dout[i * a_.c + e];
          rowdot[i] = dot;
        }
        for (int64_t j0 = 0; j0 < key_end(i0, r); j0 += kTile) {
          const int64_t k = std::min(kTile, a_.t - j0);
          const Products& p = products(r, k);
          float *s = t.at(s_at_), *dp = t.at(dp_at_), *dropped = dropout ? t.at(dropped_at_) : s;
          p.qk.run(stream, engine_, t.q(n, i0, h), t.k(n, j0, h), s, args.scratch);
          p.dp.run(stream, engine_, dout, t.v(n, j0, h), dp, args.scratch);
          stream.wait();
          for (int64_t i = 0; i < r; ++i) {
            float *si = s + i * k, *dpi = dp + i * k;
            const int64_t valid = valid_keys(i0 + i, j0, k);
            const float row_lse = lse[nh * a_.t + i0 + i];
            for (int64_t j = 0; j < k; ++j) {
              const float prob = j < valid ? std::exp(si[j] - row_lse) : 0.f;
              const float factor = dropout && j < valid ? drop.factor(index(nh, i0 + i, j0 + j)) : 1.f;
              si[j] = prob;
              if (dropout) dropped[i * k + j] = prob * factor;
              dpi[j] = prob * (dpi[j] * factor - rowdot[i]);  // dS
            }
          }
          p.dv.run(stream, engine_, dropped, dout, t.dv(n, j0, h), args.scratch);
          p.dq.run(stream, engine_, dp, t.k(n, j0, h), t.dq(n, i0, h), args.scratch);
          p.dk.run(stream, engine_, dp, t.q(n, i0, h), t.dk(n, j0, h), args.scratch);
        }
      }
    }
    stream.wait();
  }

 private:
  struct Products {
    AttentionMatmul qk, pv, dv, dp, dq, dk;
  };

  // Pointers to row t0 of head h of sample n in the packed input, the output and their gradients.
  struct Tiles {
    Tiles(const FusedAttentionKernel& kernel, const KernelArgs& args) : a(kernel.a_), args(args) {}
    const AttentionShape& a;
    const KernelArgs& args;
    float* packed(void* base, int64_t n, int64_t t0, int64_t h, int64_t part) const {
      return static_cast<float*>(base) + (n * a.t + t0) * 3 * a.c + part * a.c + h * a.d;
    }
    float* merged(void* base, int64_t n, int64_t t0, int64_t h) const {
      return static_cast<float*>(base) + (n * a.t + t0) * a.c + h * a.d;
    }
    float* q(int64_t n, int64_t t0, int64_t h) const { return packed(args.in[0], n, t0, h, 0); }
    float* k(int64_t n, int64_t t0, int64_t h) const { return packed(args.in[0], n, t0, h, 1); }
    float* v(int64_t n, int64_t t0, int64_t h) const { return packed(args.in[0], n, t0, h, 2); }
    float* dq(int64_t n, int64_t t0, int64_t h) const { return packed(args.d_in[0], n, t0, h, 0); }
    float* dk(int64_t n, int64_t t0, int64_t h) const { return packed(args.d_in[0], n, t0, h, 1); }
    float* dv(int64_t n, int64_t t0, int64_t h) const { return packed(args.d_in[0], n, t0, h, 2); }
    float* o(int64_t n, int64_t t0, int64_t h) const { return merged(args.out, n, t0, h); }
    float* dout(int64_t n, int64_t t0, int64_t h) const { return merged(args.d_out, n, t0, h); }
    float* at(size_t offset) const { return reinterpret_cast<float*>(static_cast<char*>(args.scratch) + offset); }
  };

  const Products& products(int64_t r, int64_t k) const {
    return products_[r == extents_[0] ? 0 : 1][k == extents_[0] ? 0 : 1];
  }
  // The key rows a query tile [i0, i0 + r) reads: all, or (causal) those up to its last row.
  int64_t key_end(int64_t i0, int64_t r) const { return a_.layer->p().causal ? i0 + r : a_.t; }
  // How many keys of the tile at j0 (k wide) query row i attends to.
  int64_t valid_keys(int64_t i, int64_t j0, int64_t k) const {
    return a_.layer->p().causal ? std::min(k, i - j0 + 1) : k;
  }
  uint64_t index(int64_t nh, int64_t i, int64_t j) const { return static_cast<uint64_t>((nh * a_.t + i) * a_.t + j); }

  dnnl::engine engine_;
  AttentionShape a_;
  uint64_t seed_;
  double rate_;
  std::vector<int64_t> extents_;  // the tile extents: B (or T when shorter), and T mod B
  Products products_[2][2];
  size_t s_at_ = 0, dp_at_ = 0, dropped_at_ = 0, stats_at_ = 0;
};

}  // namespace

std::unique_ptr<CpuKernel> make_fused_attention_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<FusedAttentionKernel>(s, e);
}

}  // namespace vdnn
