// core/graph_digest.h: every attribute a layer was configured with is digested, also those that
// change no shape (issue 42: ranks with dropout 0.3 and 0.5 trained together), while names and
// defaults written out are not.
#include <gtest/gtest.h>

#include "core/graph_digest.h"
#include "io/model_file.h"

namespace vdnn {
namespace test_graph_digest {

using nlohmann::json;

// An image model with a layer of each type that has attributes changing no shape.
json image_model() {
  return json::parse(R"({"name": "img", "input": [3, 8, 8], "classes": 4, "layers": [
      {"name": "c1", "type": "conv", "channels": 8, "kernel": 3, "pad": 1},
      {"name": "bn", "type": "batch_norm"},
      {"name": "r1", "type": "relu"},
      {"name": "n1", "type": "lrn"},
      {"name": "p1", "type": "avg_pool", "kernel": 2, "pad": 1},
      {"name": "d1", "type": "dropout", "rate": 0.3},
      {"name": "fc", "type": "fc", "units": "classes"},
      {"name": "loss", "type": "softmax_cross_entropy"}]})");
}

// A token model: layer norm, attention, GELU, a token loss.
json token_model() {
  return json::parse(R"({"name": "tok", "input": [8], "input_type": "tokens", "classes": 16, "layers": [
      {"name": "wte", "type": "embedding", "vocab": "classes", "dim": 16},
      {"name": "wpe", "type": "position_embedding", "max_positions": 8},
      {"name": "ln", "type": "layer_norm"},
      {"name": "qkv", "type": "linear", "units": 48},
      {"name": "attn", "type": "attention", "heads": 2},
      {"name": "up", "type": "linear", "units": 32},
      {"name": "gelu", "type": "gelu"},
      {"name": "head", "type": "linear", "units": "classes"},
      {"name": "loss", "type": "token_cross_entropy"}]})");
}

std::string digest_of(const json& model) { return graph_digest(parse_model(model, "m.json")); }

// `model` with field `key` of layer `layer` set to `value`.
json with(json model, const std::string& layer, const std::string& key, const json& value) {
  for (json& l : model["layers"])
    if (l["name"] == layer) l[key] = value;
  return model;
}

TEST(GraphDigest, EveryAttributeThatChangesNoShapeIsDigested) {
  const struct {
    json model;
    const char* layer;
    const char* key;
    json value;
  } changes[] = {
      {image_model(), "d1", "rate", 0.5},
      {image_model(), "bn", "eps", 1e-3},
      {image_model(), "bn", "momentum", 0.01},
      {image_model(), "n1", "alpha", 2e-4},
      {image_model(), "n1", "beta", 0.5},
      {image_model(), "n1", "k", 2.0},
      {image_model(), "p1", "exclude_padding", false},
      {token_model(), "attn", "causal", false},
      {token_model(), "ln", "eps", 1e-6},
      {token_model(), "gelu", "approximate", "tanh"},
      {token_model(), "loss", "ignore_index", 0},
  };
  for (const auto& c : changes) {
    const Graph before = parse_model(c.model, "m.json");
    const Graph after = parse_model(with(c.model, c.layer, c.key, c.value), "m.json");
    EXPECT_EQ(after.value(after.find_value(c.layer)).shape, before.value(before.find_value(c.layer)).shape)
        << c.layer << "." << c.key << " changes a shape: not the case this test is about";
    EXPECT_NE(graph_digest(after), graph_digest(before)) << c.layer << "." << c.key << " = " << c.value.dump();
  }
}

TEST(GraphDigest, ADefaultWrittenOutOrAnotherNameDigestsAlike) {
  const std::string base = digest_of(image_model());
  EXPECT_EQ(digest_of(with(image_model(), "bn", "eps", 1e-5)), base) << "batch_norm's default eps, written";
  EXPECT_EQ(digest_of(with(image_model(), "c1", "stride", 1)), base) << "a stride of 1 as 1 or [1, 1]";
  EXPECT_EQ(digest_of(with(image_model(), "c1", "stride", json::array({1, 1}))), base);
  json renamed = image_model();
  renamed["name"] = "other";
  EXPECT_EQ(digest_of(renamed), base) << "the model's name computes nothing";
  EXPECT_EQ(digest_of(with(token_model(), "attn", "causal", true)), digest_of(token_model()));
}

TEST(GraphDigest, ShapesStillTellGraphsApart) {
  EXPECT_NE(digest_of(with(image_model(), "c1", "channels", 16)), digest_of(image_model()));
  EXPECT_NE(digest_of(with(image_model(), "c1", "kernel", 1)), digest_of(image_model()));
}

}  // namespace test_graph_digest
}  // namespace vdnn
