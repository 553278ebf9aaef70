// The attention layer (layers/attention.h) and its two CPU kernels: materialized and fused
// (FlashAttention-2) against the float64 reference (tests/reference), causal and not, sequence
// lengths that are not a multiple of the fused kernel's 64-row tile; backward by finite
// differences; the two implementations against each other; their saved bytes; dropout (the same
// mask for the same step, finite differences under it, the reference with the kernel's draw);
// shape errors and the CUDA target's sizes. PyTorch float64: tests/reference/test_torch_reference.cc.
#include <chrono>
#include <cstdio>

#include "backends/cpu/attention_common.h"
#include "backends/cuda_target/cuda_sizes.h"
#include "error_of.h"
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_attention_kernel {

using tag = dnnl::memory::format_tag;

struct Case {
  int64_t n, t, c, heads;
  bool causal;
  std::string implementation;
  double dropout = 0.0;
};

std::unique_ptr<Layer> attention(const Case& k) {
  return layer_from({{"type", "attention"},
                     {"heads", k.heads},
                     {"causal", k.causal},
                     {"dropout", k.dropout},
                     {"implementation", k.implementation}});
}

ref::AttentionParams params_of(const Case& k) { return {k.n, k.t, k.c, k.heads, k.causal}; }

std::string name_of(const Case& k) {
  return k.implementation + (k.causal ? " causal" : " full") + " N=" + std::to_string(k.n) +
         " T=" + std::to_string(k.t) + " C=" + std::to_string(k.c) + " H=" + std::to_string(k.heads) +
         " dropout=" + std::to_string(k.dropout);
}

// The dropout factors the kernels draw for `step` (KernelHarness's seed is 99), for the reference.
std::vector<float> kernel_mask(const Case& k, uint64_t step) {
  const AttentionDropout drop(99, step, k.dropout);
  std::vector<float> f(static_cast<size_t>(k.n * k.heads * k.t * k.t));
  for (size_t i = 0; i < f.size(); ++i) f[i] = drop.factor(i);
  return f;
}

struct Result {
  std::vector<float> y, dx;
};

Result run(const Case& k, const std::vector<float>& x, const std::vector<float>& dy, uint64_t step = 0) {
  auto layer = attention(k);
  KernelHarness h(*layer, k.n, {Shape{k.t, 3 * k.c}}, tag::abc);
  h.set_step(step);
  Result r;
  r.y = h.forward({x});
  r.dx = h.backward(dy).d_in[0];
  return r;
}

TEST(AttentionLayer, ShapesFlopsAndWhatBackwardReads) {
  auto m = attention({1, 1, 1, 4, true, "materialized"});
  auto f = attention({1, 1, 1, 4, true, "fused"});
  EXPECT_EQ(m->infer_shape({Shape{10, 3 * 16}}), (Shape{10, 16}));
  EXPECT_EQ(m->kind(), LayerKind::kAttention);
  EXPECT_EQ(to_string(m->kind()), "ATTN");
  EXPECT_TRUE(m->params({Shape{10, 48}}).empty());
  EXPECT_TRUE(m->backward_reads_input());
  EXPECT_FALSE(m->backward_reads_output());
  EXPECT_TRUE(f->backward_reads_output());  // D = rowsum(dO * O)
  EXPECT_DOUBLE_EQ(m->forward_flops({Shape{10, 48}}, Shape{10, 16}), 4.0 * 10 * 10 * 16);
  EXPECT_DOUBLE_EQ(f->forward_flops({Shape{10, 48}}, Shape{10, 16}), 2.0 * 10 * 10 * 16);  // causal tiles skipped
  EXPECT_DOUBLE_EQ(f->backward_flops({Shape{10, 48}}, Shape{10, 16}), 2.5 * 2.0 * 10 * 10 * 16);
}

TEST(AttentionLayer, BadShapesAndFieldsAreRefusedByName) {
  auto layer = layer_from({{"name", "attn7"}, {"type", "attention"}, {"heads", 5}});
  expect_error([&] { layer->infer_shape({Shape{10, 48}}); }, {"attn7", "heads = 5 must divide the channels C = 16"});
  expect_error([&] { layer->infer_shape({Shape{10, 47}}); }, {"attn7", "[T, 3C]", "10x47"});
  expect_error([&] { layer->infer_shape({Shape{3, 8, 8}}); }, {"attn7", "[T, 3C]"});
  expect_error(
      [&] {
        layer_from({{"type", "attention"}, {"heads", 2}, {"implementation", "flash"}});
      },
      {"implementation", "fused", "materialized"});
  expect_error([&] { layer_from({{"type", "attention"}}); }, {"heads"});
}

TEST(AttentionKernel, BothImplementationsMatchTheReference) {
  // T = 5 and 37 (one ragged tile), 70 and 150 (full tiles of 64 and a ragged last one).
  for (const std::string impl : {"materialized", "fused"})
    for (bool causal : {true, false})
      for (const Case& shape : {Case{2, 5, 8, 2}, Case{1, 37, 12, 3}, Case{2, 70, 8, 1}, Case{1, 150, 8, 2}}) {
        Case k = shape;
        k.causal = causal;
        k.implementation = impl;
        SCOPED_TRACE(name_of(k));
        const auto x = ref::random_vector(static_cast<size_t>(k.n * k.t * 3 * k.c), 7, -1.5f, 1.5f);
        const auto dy = ref::random_vector(static_cast<size_t>(k.n * k.t * k.c), 8);
        const Result r = run(k, x, dy);
        EXPECT_TRUE(ref::values_close(r.y, ref::attention_forward(x, params_of(k)), 1e-4, 1e-5)) << "forward";
        EXPECT_TRUE(ref::values_close(r.dx, ref::attention_backward(x, dy, params_of(k)), 1e-3, 1e-5)) << "dx";
      }
}

TEST(AttentionKernel, BackwardMatchesFiniteDifferences) {
  for (const std::string impl : {"materialized", "fused"})
    for (bool causal : {true, false}) {
      const Case k{1, impl == "fused" ? 70 : 6, 4, 2, causal, impl};  // fused: a full tile and a ragged one
      SCOPED_TRACE(name_of(k));
      auto layer = attention(k);
      KernelHarness h(*layer, k.n, {Shape{k.t, 3 * k.c}}, tag::abc);
      check_gradients(h, {ref::random_vector(static_cast<size_t>(k.t * 3 * k.c), 21, -1.f, 1.f)}, 1e-2, 1e-2, 2e-3);
    }
}

TEST(AttentionKernel, MaterializedAndFusedAgree) {
  for (bool causal : {true, false}) {
    const Case m{2, 70, 16, 4, causal, "materialized"};
    Case f = m;
    f.implementation = "fused";
    SCOPED_TRACE(name_of(f));
    const auto x = ref::random_vector(static_cast<size_t>(m.n * m.t * 3 * m.c), 31, -2.f, 2.f);
    const auto dy = ref::random_vector(static_cast<size_t>(m.n * m.t * m.c), 32);
    const Result a = run(m, x, dy), b = run(f, x, dy);
    EXPECT_TRUE(ref::values_close(a.y, b.y, 1e-4, 1e-5));
    EXPECT_TRUE(ref::values_close(a.dx, b.dx, 1e-3, 1e-5));
  }
}

TEST(AttentionKernel, SavedBytesAreTheProbabilitiesOrTheLogSumExp) {
  const int64_t n = 3, t = 100, c = 12, heads = 3;
  auto m = attention({n, t, c, heads, true, "materialized"});
  auto f = attention({n, t, c, heads, true, "fused"});
  auto md = attention({n, t, c, heads, true, "materialized", 0.1});
  KernelHarness hm(*m, n, {Shape{t, 3 * c}}, tag::abc), hf(*f, n, {Shape{t, 3 * c}}, tag::abc),
      hd(*md, n, {Shape{t, 3 * c}}, tag::abc);
  ASSERT_EQ(hm.kernel().saved_mds.size(), 1u);
  EXPECT_EQ(hm.kernel().saved_mds[0].get_size(), static_cast<size_t>(n * heads * t * t * 4));
  ASSERT_EQ(hf.kernel().saved_mds.size(), 1u);
  EXPECT_EQ(hf.kernel().saved_mds[0].get_size(), static_cast<size_t>(n * heads * t * 4));
  ASSERT_EQ(hd.kernel().saved_mds.size(), 2u);  // + the byte mask
  EXPECT_EQ(hd.kernel().saved_mds[1].get_size(), static_cast<size_t>(n * heads * t * t));
  // The fused kernel's scratch is a few tiles, independent of T*T; the materialized one holds dP.
  EXPECT_LT(hf.kernel().scratch_bytes, static_cast<size_t>(n * heads * t * t * 4));
  EXPECT_GE(hm.kernel().scratch_bytes, static_cast<size_t>(n * heads * t * t * 4));
  // The CUDA target sizes both the same way.
  for (const Layer* layer : {m.get(), f.get()}) {
    const CudaSizes s = cuda_kernel_sizes(*layer, n, {Shape{t, 3 * c}}, Shape{t, c}, true, ConvAlgo::kAuto);
    EXPECT_EQ(s.out_bytes, static_cast<size_t>(n * t * c * 4));
    ASSERT_EQ(s.saved_bytes.size(), 1u);
    EXPECT_EQ(s.saved_bytes[0], (layer == f.get() ? hf : hm).kernel().saved_mds[0].get_size());
  }
}

TEST(AttentionKernel, DropoutIsOneMaskPerStepMatchingTheReferenceAndFiniteDifferences) {
  for (const std::string impl : {"materialized", "fused"}) {
    const Case k{2, 70, 8, 2, true, impl, 0.3};
    SCOPED_TRACE(name_of(k));
    auto layer = attention(k);
    KernelHarness h(*layer, k.n, {Shape{k.t, 3 * k.c}}, tag::abc);
    const auto x = ref::random_vector(static_cast<size_t>(k.n * k.t * 3 * k.c), 41, -1.5f, 1.5f);
    const auto dy = ref::random_vector(static_cast<size_t>(k.n * k.t * k.c), 42);
    h.set_step(5);
    const auto y = h.forward({x});
    EXPECT_EQ(h.forward({x}), y) << "the same step draws the same mask";
    const auto dx = h.backward(dy).d_in[0];
    const auto mask = kernel_mask(k, 5);
    const auto dropped = std::count(mask.begin(), mask.end(), 0.f);
    EXPECT_GT(dropped, static_cast<long>(mask.size() / 5));  // rate 0.3: about 30% dropped
    EXPECT_LT(dropped, static_cast<long>(mask.size() * 2 / 5));
    EXPECT_TRUE(ref::values_close(y, ref::attention_forward(x, params_of(k), mask), 1e-4, 1e-5));
    EXPECT_TRUE(ref::values_close(dx, ref::attention_backward(x, dy, params_of(k), mask), 1e-3, 1e-5));
    h.set_step(6);
    EXPECT_NE(h.forward({x}), y) << "another step, another mask";
    const Case small{1, 6, 4, 2, true, impl, 0.3};
    auto small_layer = attention(small);
    KernelHarness hs(*small_layer, 1, {Shape{small.t, 3 * small.c}}, tag::abc);
    hs.set_step(3);
    check_gradients(hs, {ref::random_vector(static_cast<size_t>(small.t * 3 * small.c), 43)}, 1e-2, 1e-2, 2e-3);
  }
}

TEST(AttentionKernel, DropoutMasksAgreeAcrossImplementationsAndEvaluationHasNone) {
  Case m{1, 40, 8, 2, false, "materialized", 0.2};
  Case f = m;
  f.implementation = "fused";
  const auto x = ref::random_vector(static_cast<size_t>(m.t * 3 * m.c), 51);
  const auto dy = ref::random_vector(static_cast<size_t>(m.t * m.c), 52);
  const Result a = run(m, x, dy, 9), b = run(f, x, dy, 9);
  EXPECT_TRUE(ref::values_close(a.y, b.y, 1e-4, 1e-5));
  EXPECT_TRUE(ref::values_close(a.dx, b.dx, 1e-3, 1e-5));
  for (const Case& k : {m, f}) {
    auto layer = attention(k);
    KernelHarness eval(*layer, k.n, {Shape{k.t, 3 * k.c}}, tag::abc, /*training=*/false);
    EXPECT_TRUE(ref::values_close(eval.forward({x}), ref::attention_forward(x, params_of(k)), 1e-4, 1e-5))
        << k.implementation;
  }
}

TEST(AttentionKernel, Bf16RunsTheFp32KernelWithCastsAround) {
  for (const std::string impl : {"materialized", "fused"}) {
    const Case k{2, 37, 8, 2, true, impl};
    SCOPED_TRACE(name_of(k));
    auto layer = attention(k);
    KernelHarness h(*layer, k.n, {Shape{k.t, 3 * k.c}}, tag::abc, true, Precision::kBf16);
    EXPECT_NE(h.kernel().implementation.find("f32 (bf16 cast around it)"), std::string::npos)
        << h.kernel().implementation;
    const auto x = ref::random_vector(static_cast<size_t>(k.n * k.t * 3 * k.c), 61);
    const auto dy = ref::random_vector(static_cast<size_t>(k.n * k.t * k.c), 62);
    // bf16 keeps 8 bits of mantissa: the inputs and dy are rounded on the way in.
    EXPECT_TRUE(ref::values_close(h.forward({x}), ref::attention_forward(x, params_of(k)), 3e-2, 3e-2));
    EXPECT_TRUE(ref::values_close(h.backward(dy).d_in[0], ref::attention_backward(x, dy, params_of(k)), 5e-2, 5e-2));
  }
}

// No product or softmax of either kernel is left on oneDNN's reference kernels (strided views
// included); prints one forward + backward's time of each at a small GPT-like size.
TEST(AttentionKernel, NeitherImplementationRunsOneDnnReferenceKernels) {
  const int64_t n = 2, t = 256, c = 192, heads = 6;
  const auto x = ref::random_vector(static_cast<size_t>(n * t * 3 * c), 71);
  const auto dy = ref::random_vector(static_cast<size_t>(n * t * c), 72);
  for (const std::string impl : {"materialized", "fused"}) {
    auto layer = attention({n, t, c, heads, true, impl});
    KernelHarness h(*layer, n, {Shape{t, 3 * c}}, tag::abc);
    EXPECT_TRUE(h.kernel().slow_kernels.empty()) << impl << ": " << h.kernel().slow_kernels.front();
    h.forward({x});
    const auto start = std::chrono::steady_clock::now();
    h.forward({x});
    h.backward(dy);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s, N=%ld T=%ld C=%ld H=%ld causal: forward + backward %.1f ms (with the harness's reorders); %s\n",
                impl.c_str(), static_cast<long>(n), static_cast<long>(t), static_cast<long>(c),
                static_cast<long>(heads), ms, h.kernel().implementation.c_str());
  }
}

}  // namespace test_attention_kernel
}  // namespace vdnn::test
