// The forward pass's order (plan/forward_order.h): on branches written in a bad order the greedy
// scheduler finds a lower peak of live activations, keeps the model's order when it cannot beat
// it, and the reordered graph (Graph::reordered) computes the same logits from the same weights.
#include <gtest/gtest.h>

#include <cstring>

#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/forward_order.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_forward_order {

// Two branches off one stem, each a wide convolution narrowed by a second one; the model lists both
// wide ones first, so both are live at once.
Graph interleaved_branches() {
  return parse_model_text(R"({"name": "interleaved", "input": [1, 16, 16], "classes": 10, "layers": [
    {"name": "stem", "type": "conv", "channels": 8, "kernel": 3, "pad": 1},
    {"name": "a_wide", "type": "conv", "channels": 64, "kernel": 3, "pad": 1, "inputs": ["stem"]},
    {"name": "b_wide", "type": "conv", "channels": 64, "kernel": 3, "pad": 1, "inputs": ["stem"]},
    {"name": "a_narrow", "type": "conv", "channels": 4, "kernel": 1, "inputs": ["a_wide"]},
    {"name": "b_narrow", "type": "conv", "channels": 4, "kernel": 1, "inputs": ["b_wide"]},
    {"name": "mix", "type": "concat", "inputs": ["a_narrow", "b_narrow"]},
    {"name": "fc", "type": "fc", "units": "classes"},
    {"name": "loss", "type": "softmax_cross_entropy"}]})",
                          "interleaved.json");
}

TEST(ForwardOrder, RunsABranchToItsEndBeforeTheNextWhenThatLowersThePeak) {
  const Graph g = interleaved_branches();
  const int64_t batch = 4;
  const ForwardOrder o = forward_order(g, batch);
  const size_t wide = batch * 64 * 16 * 16 * 4, stem = batch * 8 * 16 * 16 * 4, narrow = batch * 4 * 16 * 16 * 4;
  // The model's order holds the stem and both wide maps at once; the greedy one a single wide map.
  EXPECT_EQ(o.model_peak_bytes, stem + 2 * wide);
  EXPECT_EQ(o.peak_bytes, stem + wide + narrow);
  EXPECT_GT(o.moved, 0);
  EXPECT_EQ(o.order.back(), static_cast<int>(g.nodes().size()) - 1);  // the loss stays last
  EXPECT_EQ(forward_peak(g, batch, o.order), o.peak_bytes);
}

TEST(ForwardOrder, KeepsTheModelsOrderWhenItCannotBeatIt) {
  for (const std::string model : {"fmnist_cnn", "fmnist_dag"}) {
    SCOPED_TRACE(model);
    const Graph g = load_model(model);
    const ForwardOrder o = forward_order(g, 8);
    EXPECT_LE(o.peak_bytes, o.model_peak_bytes);
    if (o.peak_bytes == o.model_peak_bytes) EXPECT_EQ(o.moved, 0);
  }
}

TEST(ForwardOrder, TheReorderedGraphComputesTheSameLogits) {
  const int64_t batch = 4;
  Net before(interleaved_branches(), {.batch = batch, .seed = 2, .inference = true});
  const ForwardOrder o = forward_order(before.graph(), batch);
  Net after(interleaved_branches().reordered(o.order), {.batch = batch, .seed = 2, .inference = true});
  EXPECT_EQ(after.graph().nodes()[1].layer->name(), "a_wide");
  EXPECT_EQ(after.graph().nodes()[2].layer->name(), "a_narrow");
  const Net seeded(interleaved_branches(), {.batch = batch, .seed = 2});  // an inference Net's weights start at zero
  for (size_t i = 0; i < seeded.params().size(); ++i) {
    before.import_param(i, seeded.export_param(i));
    for (size_t j = 0; j < after.params().size(); ++j)
      if (after.params()[j].name == seeded.params()[i].name) after.import_param(j, seeded.export_param(i));
  }
  const Dataset d = make_synthetic(batch, 1, 16, 16, 10, 7);
  before.set_batch(d.images.data(), d.labels.data(), batch);
  after.set_batch(d.images.data(), d.labels.data(), batch);
  EXPECT_EQ(before.forward(false), after.forward(false));
  EXPECT_EQ(std::memcmp(before.logits().data(), after.logits().data(), before.logits().size() * sizeof(float)), 0);
  EXPECT_LT(after.arena_bytes(), before.arena_bytes());
}

TEST(ForwardOrder, AnOrderThatIsNotTopologicalIsRefusedNamingTheLayer) {
  const std::string e = test::error_of([] { interleaved_branches().reordered({0, 3, 1, 2, 4, 5, 6, 7}); });
  EXPECT_NE(e.find("a_narrow"), std::string::npos) << e;
  EXPECT_NE(e.find("a_wide"), std::string::npos) << e;
  const std::string twice = test::error_of([] { interleaved_branches().reordered({0, 0, 1, 2, 3, 4, 5, 7}); });
  EXPECT_NE(twice.find("twice"), std::string::npos) << twice;
}

}  // namespace test_forward_order
}  // namespace vdnn
