// backends/cpu/attention_common.h — what the two attention kernels share: the dimensions, the
// strided views of the packed [N, T, 3C] input and the merged [N, T, C] output, and the dropout draw.
//
// Model: q, k and v of head h are read in place from the packed input as [N, H, T, D] views with
// strides {T*3C, D, 3C, 1} (q at element 0, k at C, v at 2C); the output and its gradient are
// [N, H, T, D] views of [N, T, C] with strides {T*C, D, C, 1}. No copy either way.
// Dropout on the probabilities is a counter-based draw: element (n, h, i, j) is kept when
// uniform(seed, step, ((n*H + h)*T + i)*T + j) < 1 - rate, so the fused kernel regenerates in
// backward exactly the mask its forward used, and both implementations draw the same mask.
//
//   AttentionShape a = AttentionShape::of(setup);           // n, t, c, heads, d, scale = 1/sqrt(d)
//   dnnl::memory::desc q = a.packed_view();                 // bind at x, x + c, x + 2c
//   AttentionDropout drop(setup.seed, args.step, 0.1);
//   float factor = drop.factor(index);                      // 0 or 1 / (1 - rate)
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernel.h"
#include "layers/attention.h"

namespace vdnn {

struct AttentionShape {
  int64_t n = 0, t = 0, c = 0, heads = 0, d = 0;
  float scale = 1.f;  // 1 / sqrt(d)
  const AttentionLayer* layer = nullptr;

  // Checks the setup: fp32, the input plain [N, T, 3C]. Throws naming the layer otherwise.
  static AttentionShape of(const KernelSetup& s);

  // [N, H, T, D] views: of q, k or v in the packed input; of the output or its gradient.
  dnnl::memory::desc packed_view() const { return view({t * 3 * c, d, 3 * c, 1}); }
  dnnl::memory::desc merged_view() const { return view({t * c, d, c, 1}); }
  // [N, H, D, T]: k (or v) of each head transposed, read in place.
  dnnl::memory::desc packed_view_transposed() const {
    return dnnl::memory::desc({n, heads, d, t}, dt::f32, dnnl::memory::dims{t * 3 * c, d, 1, 3 * c});
  }
  // [N, H, T, T] scores or probabilities, dense; `transposed`: the same bytes read as their transpose.
  dnnl::memory::desc scores(bool transposed = false) const {
    return transposed ? dnnl::memory::desc({n, heads, t, t}, dt::f32, dnnl::memory::dims{heads * t * t, t * t, 1, t})
                      : plain_md({n, heads, t, t});
  }
  float* q(void* x) const { return static_cast<float*>(x); }
  float* k(void* x) const { return static_cast<float*>(x) + c; }
  float* v(void* x) const { return static_cast<float*>(x) + 2 * c; }

 private:
  dnnl::memory::desc view(const dnnl::memory::dims& strides) const {
    return dnnl::memory::desc({n, heads, t, d}, dt::f32, strides);
  }
};

class AttentionDropout {
 public:
  AttentionDropout(uint64_t seed, uint64_t step, double rate)
      : stream_(mix(seed ^ mix(step + kGolden))), keep_(static_cast<float>(1.0 - rate)), factor_(kept_factor(rate)) {}
  // What a kept probability is multiplied by: 1 / (1 - rate).
  static float kept_factor(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }
  // 0 (dropped) or 1 / (1 - rate) for the probability at flat index ((n*H + h)*T + i)*T + j.
  float factor(uint64_t index) const {
    const float u = static_cast<float>(mix(stream_ + index * kGolden) >> 40) * (1.0f / 16777216.0f);
    return u < keep_ ? factor_ : 0.f;
  }

 private:
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  static uint64_t mix(uint64_t z) {  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t stream_;
  float keep_, factor_;
};

// One oneDNN matmul of the attention kernels: dst = scale * src x wei (+ dst when `accumulate`),
// over strided views; its scratchpad is the kernel's scratch at offset 0.
struct AttentionMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  AttentionMatmul() = default;
  AttentionMatmul(const dnnl::engine& engine, const dnnl::memory::desc& src, const dnnl::memory::desc& wei,
                  const dnnl::memory::desc& dst, float scale = 1.f, bool accumulate = false);
  void run(dnnl::stream& stream, const dnnl::engine& engine, const void* src, const void* wei, void* dst,
           void* scratch) const;
  size_t scratch_bytes() const { return scratch_of(pd); }
  // Adds "<what>: <impl>" to `slow` when oneDNN runs its reference kernel for it.
  void note_if_slow(const char* what, std::vector<std::string>& slow) const;
};

std::unique_ptr<CpuKernel> make_materialized_attention_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_fused_attention_kernel(const KernelSetup& s, const dnnl::engine& e);

}  // namespace vdnn
