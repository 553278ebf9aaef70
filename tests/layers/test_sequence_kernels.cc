// The sequence layers' oneDNN kernels (embedding, position_embedding, layer_norm, gelu, linear,
// token_cross_entropy; add and dropout on [T, C]) against the float64 reference, every backward
// by finite differences, and the bad inputs each refuses.
#include <cmath>

#include "backends/cpu/dnnl_util.h"
#include "layers/layer_test_util.h"
#include "vdnn/error.h"

namespace vdnn::test {
namespace test_sequence_kernels {

using tag = dnnl::memory::format_tag;

// Token ids as the host holds them (exact floats) and as the reference takes them.
struct Tokens {
  std::vector<float> as_floats;
  std::vector<int64_t> ids;
};

Tokens random_tokens(size_t count, int64_t vocab, uint64_t seed) {
  Tokens t;
  for (float u : ref::random_vector(count, seed, 0.0f, 1.0f)) {
    const int64_t id = std::min<int64_t>(vocab - 1, static_cast<int64_t>(u * static_cast<float>(vocab)));
    t.ids.push_back(id);
    t.as_floats.push_back(static_cast<float>(id));
  }
  return t;
}

TEST(EmbeddingKernel, GathersRowsAndScatterAddsGradients) {
  auto layer = layer_from({{"type", "embedding"}, {"vocab", 7}, {"dim", 5}});
  KernelHarness h(*layer, 3, {Shape{4}}, tag::undef);
  const auto table = ref::random_vector(35, 1);
  h.set_params({table});
  Tokens t = random_tokens(12, 7, 2);
  t.ids[3] = t.ids[5] = 6, t.as_floats[3] = t.as_floats[5] = 6.0f;  // a repeated id: its gradient rows add
  const auto y = h.forward({t.as_floats});
  EXPECT_TRUE(ref::values_close(y, ref::embedding_forward(t.ids, ref::Tensor4(7, 5, 1, 1, table)).v, 0, 0));
  const auto dy = ref::random_vector(60, 3);
  const auto g = h.backward(dy);
  EXPECT_TRUE(
      ref::values_close(g.d_params[0], ref::embedding_backward(t.ids, ref::Tensor4(12, 5, 1, 1, dy), 7).v, 1e-6, 1e-6));
  check_gradients(h, {t.as_floats}, 1e-2, 1e-3, 1e-4, /*inputs_too=*/false);
}

TEST(EmbeddingKernel, RefusesAnIdOutsideTheVocabularyNamingLayerSamplePositionAndSize) {
  auto layer = layer_from({{"name", "wte"}, {"type", "embedding"}, {"num_embeddings", 8}, {"dim", 4}});
  KernelHarness h(*layer, 2, {Shape{3}}, tag::undef);
  h.set_params({ref::random_vector(32, 4)});
  for (float bad : {8.0f, -1.0f}) {
    std::vector<float> ids{0, 1, 2, 3, 4, bad};
    try {
      h.forward({ids});
      ADD_FAILURE() << "id " << bad << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer 'wte' (embedding)"), std::string::npos) << what;
      EXPECT_NE(what.find(VDNN_MSG("token id " << static_cast<int>(bad) << " at sample 1, position 2")),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("[0, 8)"), std::string::npos) << what;
    }
  }
}

TEST(EmbeddingLayer, ReadsOnlyTheTokenInputAndNamesBothVocabularyFields) {
  EXPECT_THROW(layer_from({{"type", "embedding"}, {"vocab", 8}, {"num_embeddings", 8}, {"dim", 4}}), Error);
  EXPECT_EQ(layer_from({{"type", "embedding"}, {"vocab", 8}, {"dim", 4}})->infer_shape({Shape{5}}), (Shape{5, 4}));
}

TEST(PositionEmbeddingKernel, AddsTheFirstTRowsAndSumsTheirGradientOverTheBatch) {
  for (int64_t batch : {3, 1}) {  // batch 1: no reduction (oneDNN refuses one over nothing), dW = dy
    SCOPED_TRACE(batch);
    auto layer = layer_from({{"type", "position_embedding"}, {"max_positions", 6}});
    KernelHarness h(*layer, batch, {Shape{4, 5}}, tag::undef);
    const auto table = ref::random_vector(30, 5);
    h.set_params({table});
    const auto x = ref::random_vector(batch * 20, 6);
    const ref::Tensor4 rx(batch * 4, 5, 1, 1, x);
    EXPECT_TRUE(ref::values_close(
        h.forward({x}), ref::position_embedding_forward(rx, 4, ref::Tensor4(6, 5, 1, 1, table)).v, 1e-6, 1e-6));
    const auto dy = ref::random_vector(batch * 20, 7);
    const auto g = h.backward(dy);
    EXPECT_TRUE(ref::values_close(g.d_in[0], dy, 0, 0));
    EXPECT_TRUE(ref::values_close(
        g.d_params[0], ref::position_embedding_backward(ref::Tensor4(batch * 4, 5, 1, 1, dy), 4, 6).v, 1e-6, 1e-6));
    check_gradients(h, {x}, 1e-2, 1e-3, 1e-4);
  }
}

TEST(PositionEmbeddingLayer, RefusesMorePositionsThanItsTableAtShapeInference) {
  auto layer = layer_from({{"name", "wpe"}, {"type", "position_embedding"}, {"max_positions", 4}});
  try {
    layer->infer_shape({Shape{5, 8}});
    ADD_FAILURE() << "T = 5 > max_positions = 4 was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'wpe' (position_embedding)"), std::string::npos) << what;
    EXPECT_NE(what.find("5 positions but max_positions is 4"), std::string::npos) << what;
  }
  EXPECT_THROW(layer->infer_shape({Shape{4, 2, 2}}), Error);  // not a sequence
}

TEST(LayerNormKernel, MatchesReferenceWithAndWithoutAffine) {
  for (bool affine : {true, false}) {
    auto layer = layer_from({{"type", "layer_norm"}, {"eps", 1e-5}, {"affine", affine}});
    KernelHarness h(*layer, 2, {Shape{3, 16}}, tag::undef);
    const auto gamma = ref::random_vector(16, 8, 0.5f, 1.5f), beta = ref::random_vector(16, 9);
    if (affine) h.set_params({gamma, beta});
    const auto x = ref::random_vector(96, 10, -2.0f, 2.0f);
    const ref::Tensor4 rx(6, 16, 1, 1, x);
    const std::vector<float> no;
    EXPECT_TRUE(ref::values_close(
        h.forward({x}), ref::layer_norm_forward(rx, affine ? gamma : no, affine ? beta : no, 1e-5).v, 1e-4, 1e-5))
        << "affine " << affine;
    const auto dy = ref::random_vector(96, 11);
    const auto g = h.backward(dy);
    const auto rg = ref::layer_norm_backward(rx, ref::Tensor4(6, 16, 1, 1, dy), affine ? gamma : no, 1e-5);
    EXPECT_TRUE(ref::values_close(g.d_in[0], rg.dx.v, 1e-3, 1e-4)) << "affine " << affine;
    if (affine) {
      EXPECT_TRUE(ref::values_close(g.d_params[0], rg.dgamma, 1e-4, 1e-4));
      EXPECT_TRUE(ref::values_close(g.d_params[1], rg.dbeta, 1e-4, 1e-4));
    }
    check_gradients(h, {x}, 1e-2, 2e-2, 2e-3);
  }
}

TEST(GeluKernel, ExactAndTanhMatchReference) {
  for (const char* approximate : {"none", "tanh"}) {
    const bool tanh = std::string(approximate) == "tanh";
    auto layer = layer_from({{"type", "gelu"}, {"approximate", approximate}});
    KernelHarness h(*layer, 2, {Shape{5, 8}}, tag::undef);
    const auto x = ref::random_vector(80, 12, -4.0f, 4.0f);
    const ref::Tensor4 rx(10, 8, 1, 1, x);
    EXPECT_TRUE(ref::values_close(h.forward({x}), ref::gelu_forward(rx, tanh).v, 1e-5, 1e-6)) << approximate;
    const auto dy = ref::random_vector(80, 13);
    EXPECT_TRUE(ref::values_close(h.backward(dy).d_in[0], ref::gelu_backward(rx, ref::Tensor4(10, 8, 1, 1, dy), tanh).v,
                                  1e-4, 1e-5))
        << approximate;
    check_gradients(h, {x}, 1e-2, 1e-2, 1e-3);
  }
  EXPECT_THROW(layer_from({{"type", "gelu"}, {"approximate", "fast"}}), Error);
}

TEST(LinearKernel, MapsEveryTokenAloneAsFcOverTheRows) {
  for (bool bias : {true, false}) {
    auto layer = layer_from({{"type", "linear"}, {"units", 6}, {"bias", bias}});
    KernelHarness h(*layer, 2, {Shape{5, 7}}, tag::undef);
    const auto w = ref::random_vector(42, 14, -0.5f, 0.5f), b = ref::random_vector(6, 15);
    const std::vector<float> no_bias(6, 0.0f);
    if (bias)
      h.set_params({w, b});
    else
      h.set_params({w});
    const auto x = ref::random_vector(70, 16);
    const ref::Tensor4 rx(10, 7, 1, 1, x);
    EXPECT_TRUE(ref::values_close(h.forward({x}), ref::fc_forward(rx, w, bias ? b : no_bias).v, 1e-5, 1e-5));
    const auto dy = ref::random_vector(60, 17);
    const auto g = h.backward(dy);
    const auto rg = ref::fc_backward(rx, w, ref::Tensor4(10, 6, 1, 1, dy));
    EXPECT_TRUE(ref::values_close(g.d_in[0], rg.dx.v, 1e-5, 1e-5));
    EXPECT_TRUE(ref::values_close(g.d_params[0], rg.dw, 1e-5, 1e-5));
    if (bias) EXPECT_TRUE(ref::values_close(g.d_params[1], rg.db, 1e-5, 1e-5));
    check_gradients(h, {x}, 1e-2, 1e-2, 1e-3);
  }
}

TEST(LinearKernel, TakesAVectorToo) {
  auto layer = layer_from({{"type", "linear"}, {"units", 3}});
  KernelHarness h(*layer, 4, {Shape{5}}, tag::undef);
  h.set_params({ref::random_vector(15, 18), ref::random_vector(3, 19)});
  check_gradients(h, {ref::random_vector(20, 20)}, 1e-2, 1e-2, 1e-3);
}

TEST(TokenCrossEntropyKernel, MeanOverTokensNotIgnoredMatchesReference) {
  auto layer = layer_from({{"type", "token_cross_entropy"}});  // ignore_index -100, PyTorch's default
  KernelHarness h(*layer, 2, {Shape{3, 5}}, tag::undef);
  const std::vector<int32_t> labels{4, -100, 0, 2, 2, -100};
  h.set_labels(labels);
  const auto x = ref::random_vector(30, 21, -3.0f, 3.0f);
  const std::vector<int64_t> labels64(labels.begin(), labels.end());
  const ref::Tensor4 rx(6, 5, 1, 1, x);
  EXPECT_NEAR(h.forward({x})[0], ref::token_cross_entropy(rx, labels64, -100), 1e-5);
  const auto g = h.backward({});
  EXPECT_TRUE(ref::values_close(g.d_in[0], ref::token_cross_entropy_backward(rx, labels64, -100).v, 1e-5, 1e-6));
  for (int k = 0; k < 5; ++k) EXPECT_EQ(g.d_in[0][5 + k], 0.0f) << "an ignored token has no gradient";
  auto f = [&](const std::vector<float>& v) { return static_cast<double>(h.forward({v})[0]); };
  EXPECT_TRUE(ref::gradients_close(g.d_in[0], ref::numeric_gradient(f, x, 1e-2), 1e-2, 1e-4));
}

TEST(TokenCrossEntropyKernel, EveryTokenIgnoredGivesZeroLossAndGradient) {
  auto layer = layer_from({{"type", "token_cross_entropy"}, {"ignore_index", -1}});
  KernelHarness h(*layer, 1, {Shape{2, 3}}, tag::undef);
  h.set_labels({-1, -1});
  EXPECT_EQ(h.forward({ref::random_vector(6, 22)})[0], 0.0f);
  const KernelHarness::Grads g = h.backward({});
  for (float d : g.d_in[0]) EXPECT_EQ(d, 0.0f);
}

TEST(TokenCrossEntropyKernel, RefusesALabelOutsideTheVocabularyNamingIt) {
  auto layer = layer_from({{"name", "loss"}, {"type", "token_cross_entropy"}});
  KernelHarness h(*layer, 2, {Shape{2, 4}}, tag::undef);
  for (int32_t bad : {4, -1}) {
    h.set_labels({0, 1, 2, bad});
    try {
      h.forward({ref::random_vector(16, 23)});
      ADD_FAILURE() << "label " << bad << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer 'loss' (token_cross_entropy)"), std::string::npos) << what;
      EXPECT_NE(what.find(VDNN_MSG("label " << bad << " at sample 1, position 1 is outside [0, 4)")), std::string::npos)
          << what;
    }
  }
}

TEST(SequenceJoins, AddAndDropoutTakeSequencesInThePlainLayout) {
  auto add = layer_from({{"type", "add"}});
  KernelHarness h(*add, 2, {Shape{3, 4}, Shape{3, 4}}, tag::undef);
  const auto a = ref::random_vector(24, 24), b = ref::random_vector(24, 25);
  EXPECT_EQ(h.kernel().out_md, plain_md({2, 3, 4}));
  EXPECT_TRUE(
      ref::values_close(h.forward({a, b}), ref::add(ref::Tensor4(6, 4, 1, 1, a), ref::Tensor4(6, 4, 1, 1, b)).v, 0, 0));
  check_gradients(h, {a, b}, 1e-2, 1e-3, 1e-4);

  auto drop = layer_from({{"type", "dropout"}, {"rate", 0.25}});
  KernelHarness d(*drop, 2, {Shape{3, 4}}, tag::undef);
  const auto x = ref::random_vector(24, 26, 0.5f, 1.5f);  // never 0: a kept element is never 0
  const auto y = d.forward({x});
  const auto dy = ref::random_vector(24, 27);
  const auto dx = d.backward(dy).d_in[0];
  int dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float mask = y[i] / x[i];
    EXPECT_TRUE(y[i] == 0.0f || std::fabs(mask - 1.0f / 0.75f) < 1e-6) << i;
    EXPECT_FLOAT_EQ(dx[i], y[i] == 0.0f ? 0.0f : dy[i] / 0.75f) << i;
    dropped += y[i] == 0.0f;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 24);
}

}  // namespace test_sequence_kernels
}  // namespace vdnn::test
