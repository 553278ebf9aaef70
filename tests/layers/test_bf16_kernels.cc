// Every layer's bf16 kernel against its fp32 kernel on the same bf16-rounded data: forward,
// input gradients and parameter gradients at bf16's tolerance. The fp32 kernels are the reference
// (each checked against tests/reference and by finite differences in the other kernel tests);
// finite differences mean nothing at bf16's 8-bit significand. Also: no bf16 kernel here is one of
// oneDNN's reference kernels, and the f32 island (a layer's f32 kernel with casts around it)
// gives its f32 kernel's results.
#include "backends/cpu/bf16.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/layer_test_util.h"
#include "util/aligned_buffer.h"

namespace vdnn::test {
namespace test_bf16_kernels {

using tag = dnnl::memory::format_tag;

std::vector<float> rounded_to_bf16(std::vector<float> v) {
  for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  return v;
}

// bf16 keeps 8 significant bits (relative rounding 2^-9 = 0.2% per value): an element may be off
// by 2% of itself plus 1% of the largest element (sums of hundreds of rounded products, and batch
// norm's and LRN's differences of nearly equal terms).
::testing::AssertionResult close_at_bf16(const std::vector<float>& bf16, const std::vector<float>& f32) {
  float largest = 0;
  for (float x : f32) largest = std::max(largest, std::abs(x));
  return ref::values_close(bf16, f32, 2e-2, 1e-2 * largest);
}

struct Case {
  nlohmann::json layer;
  std::vector<Shape> inputs;
};

std::vector<Case> cases() {
  const Shape image{16, 6, 6};
  return {
      // Outputs of 10x10: bf16 kernels; below 8x8 a convolution runs as an f32 island (conv_kernel.cc).
      {{{"type", "conv"}, {"channels", 32}, {"kernel", 3}, {"pad", 1}}, {Shape{16, 10, 10}}},
      {{{"type", "conv"}, {"channels", 32}, {"kernel", 3}, {"pad", 1}}, {image}},
      {{{"type", "conv"}, {"channels", 16}, {"kernel", 3}, {"stride", 2}, {"groups", 4}, {"bias", false}}, {image}},
      {{{"type", "fc"}, {"units", 10}}, {image}},
      {{{"type", "max_pool"}, {"kernel", 2}}, {image}},
      {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}}, {image}},
      {{{"type", "relu"}}, {image}},
      {{{"type", "relu6"}}, {image}},
      {{{"type", "lrn"}, {"size", 5}}, {image}},
      {{{"type", "batch_norm"}}, {image}},
      {{{"type", "dropout"}, {"rate", 0.3}}, {image}},
      {{{"type", "concat"}}, {image, image}},
      {{{"type", "add"}}, {image, image}},
      {{{"type", "flatten"}}, {image}},
  };
}

void compare(const Case& c, tag layout, bool f32_island) {
  auto layer = layer_from(c.layer);
  const std::string what =
      c.layer.dump() + (layout == tag::nhwc ? " nhwc" : " blocked") + (f32_island ? " island" : "");
  KernelHarness f32(*layer, 4, c.inputs, layout);
  KernelHarness bf16(*layer, 4, c.inputs, layout, true, Precision::kBf16, f32_island);
  EXPECT_TRUE(bf16.kernel().slow_kernels.empty()) << what << ": " << bf16.kernel().implementation;
  std::vector<std::vector<float>> x;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    x.push_back(rounded_to_bf16(ref::random_vector(4 * c.inputs[i].elements(), 70 + i, -2.0f, 8.0f)));
  auto params = f32.params();
  for (size_t p = 0; p < params.size(); ++p)
    if (layer->type() != "batch_norm" || p < 2) params[p] = ref::random_vector(params[p].size(), 80 + p, 0.5f, 1.5f);
  f32.set_params(params);
  bf16.set_params(params);
  EXPECT_TRUE(close_at_bf16(bf16.forward(x), f32.forward(x))) << what << " forward";
  const auto dy = rounded_to_bf16(ref::random_vector(static_cast<size_t>(f32.out_elements()), 90));
  const KernelHarness::Grads g16 = bf16.backward(dy), g32 = f32.backward(dy);
  for (size_t i = 0; i < g32.d_in.size(); ++i)
    EXPECT_TRUE(close_at_bf16(g16.d_in[i], g32.d_in[i])) << what << " input gradient " << i;
  ASSERT_EQ(g16.d_params.size(), g32.d_params.size());
  for (size_t p = 0; p < g32.d_params.size(); ++p)
    EXPECT_TRUE(close_at_bf16(g16.d_params[p], g32.d_params[p])) << what << " parameter gradient " << p;
}

TEST(Bf16Kernels, EveryLayerFollowsItsFp32KernelAtBf16Tolerance) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  for (const Case& c : cases())
    for (tag layout : {tag::aBcd16b, tag::nhwc}) compare(c, layout, false);
}

TEST(Bf16Kernels, AnF32IslandGivesItsFp32KernelsResults) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  for (const Case& c : cases()) {
    const std::string type = c.layer["type"];
    if (type == "lrn" || type == "relu6" || type == "batch_norm" || type == "concat" || type == "max_pool")
      compare(c, tag::nhwc, /*f32_island=*/true);
  }
}

// Plain f32 values into a buffer described by `md`, and back (oneDNN reorders convert bf16).
void write_plain(const std::vector<float>& plain, const dnnl::memory::desc& md, void* data, dnnl::stream& s) {
  const dnnl::engine& e = s.get_engine();
  dnnl::memory from(plain_md(md.dims()), e, const_cast<float*>(plain.data())), to(md, e, data);
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
}

std::vector<float> read_plain(const dnnl::memory::desc& md, void* data, size_t count, dnnl::stream& s) {
  std::vector<float> plain(count);
  const dnnl::engine& e = s.get_engine();
  dnnl::memory from(md, e, data), to(plain_md(md.dims()), e, plain.data());
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
  return plain;
}

// An in-place layer's backward gets no input (the executor passes null where the backward does not
// read it, as for ReLU6): the island must take it from the output. ReLU6 is exact in bf16.
TEST(Bf16Kernels, AnInPlaceIslandTakesItsInputFromItsOutputInBackward) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  auto layer = layer_from({{"type", "relu6"}});
  const Shape shape{16, 6, 6};
  const dnnl::memory::desc md({4, 16, 6, 6}, dt::bf16, tag::nhwc);
  KernelSetup setup{*layer, 4, {shape}, shape, {md}, /*in_place=*/true, {true}, 0};
  setup.precision = Precision::kBf16;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const auto island = make_f32_island_kernel(setup, engine, make_cpu_kernel);
  ASSERT_TRUE(island);
  const size_t n = 4 * shape.elements();
  const auto x = rounded_to_bf16(ref::random_vector(n, 71, -3.0f, 9.0f));
  const auto dy = rounded_to_bf16(ref::random_vector(n, 72));
  AlignedBuffer values(md.get_size()), d_out(md.get_size()), d_in(md.get_size()), scratch(island->scratch_bytes);
  write_plain(x, md, values.data(), stream);
  write_plain(dy, md, d_out.data(), stream);
  KernelArgs a;
  a.in = {values.data()};
  a.out = values.data();
  a.scratch = scratch.data();
  island->forward(stream, a);
  stream.wait();
  const std::vector<float> y = read_plain(md, values.data(), n, stream);
  a.in = {nullptr};  // gone: overwritten in place by the output
  a.d_out = d_out.data();
  a.d_in = {d_in.data()};
  island->backward(stream, a);
  stream.wait();
  const std::vector<float> dx = read_plain(md, d_in.data(), n, stream);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], std::min(std::max(x[i], 0.0f), 6.0f)) << i;
    ASSERT_EQ(dx[i], y[i] > 0 && y[i] < 6 ? dy[i] : 0.0f) << i;
  }
}

}  // namespace test_bf16_kernels
}  // namespace vdnn::test
