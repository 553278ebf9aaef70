// Recompute end to end (issue 17): storages dropped in the forward pass and re-made by their
// forward kernels in the backward pass never change the math — weights (and BN running
// statistics, which the weights hash covers) bit-identical to `none` for every cheap layer kind,
// chains, DAG joins (residual add, concat), mixed with offload, in both sync modes — and they lower
// the peak where the dropped storage would have been live at the forward pass's end.
#include <gtest/gtest.h>

#include "report/report.h"
#include "runtime/decisions_by_layer.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"
#include "stress/random_network.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_recompute {

using Decide = std::map<std::string, StorageAction>;
constexpr StorageAction kRecompute = StorageAction::kRecompute;
constexpr StorageAction kOffload = StorageAction::kOffload;

NetOptions options(const Graph& g, const Decide& decide, SyncMode sync = SyncMode::kEvent, LinkModel link = {}) {
  NetOptions o;
  o.batch = 16;
  o.seed = 4;
  o.sync = sync;
  o.link = link;
  if (!decide.empty()) o.decisions = test::decisions_by_layer(g, decide);
  return o;
}

std::string hash(Graph g, const Decide& decide, SyncMode sync = SyncMode::kEvent, LinkModel link = {}) {
  const NetOptions o = options(g, decide, sync, link);
  return test::train_for_hash(std::move(g), o, /*iterations=*/5);
}

// The Program the Net runs for these decisions, and what it recomputes.
Program program(Graph g, const Decide& decide) {
  const NetOptions o = options(g, decide);
  Net net(std::move(g), o);
  return net.train_program();
}

TEST(Recompute, EachCheapLayerKindAloneIsBitIdenticalToNone) {
  const std::string none = hash(test::cheap_layers_net(), {});
  for (const char* layer : {"bn1", "lrn1", "pool1", "bn2", "apool", "drop1"}) {
    const Decide d{{layer, kRecompute}};
    EXPECT_GT(program(test::cheap_layers_net(), d).recomputed_bytes(), 0u) << layer << " is not recomputed";
    EXPECT_EQ(hash(test::cheap_layers_net(), d), none) << "recompute " << layer;
  }
}

TEST(Recompute, BatchNormUsesTheForwardStatisticsAndUpdatesRunningStatisticsOnce) {
  // bn1's storage holds its in-place ReLU: the recompute re-runs both. A second running-average
  // update, or statistics other than the forward's, would change the running_mean/var exported here.
  Graph g = test::cheap_layers_net();
  NetOptions none = options(g, {}), bn = options(g, {{"bn1", kRecompute}, {"bn2", kRecompute}});
  Net a(test::cheap_layers_net(), none), b(test::cheap_layers_net(), bn);
  ASSERT_EQ(b.train_program().recomputed_nodes().size(), 3u);  // bn1, relu1, bn2
  std::vector<float> images(16 * 3 * 12 * 12);
  std::vector<int32_t> labels(16);
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>((i * 7919) % 101) / 50.0f - 1.0f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 5);
  for (Net* net : {&a, &b}) {
    net->set_batch(images.data(), labels.data(), 16);
    for (int step = 0; step < 2; ++step) {
      net->forward(true);
      net->backward();
    }
  }
  for (size_t i = 0; i < a.params().size(); ++i) {
    EXPECT_EQ(a.export_param(i), b.export_param(i)) << a.params()[i].name;
    if (a.params()[i].grad) EXPECT_EQ(a.export_grad(i), b.export_grad(i)) << a.params()[i].name;
  }
}

TEST(Recompute, DropoutReusesItsMask) {
  // The backward pass runs with the step counter already advanced: a fresh mask would differ.
  const std::string none = hash(test::cheap_layers_net(), {});
  EXPECT_EQ(hash(test::cheap_layers_net(), {{"drop1", kRecompute}}), none);
  EXPECT_EQ(hash(test::offload_test_dag(), {{"drop", kRecompute}}), hash(test::offload_test_dag(), {}));
}

TEST(Recompute, ChainsAreIssuedInForwardOrderAndStayBitIdentical) {
  // pool1 -> bn2 and lrn1 -> conv2(+relu2) -> pool1 -> bn2: each input of a recompute is itself
  // recomputed, in the same backward slot, oldest first.
  const std::string none = hash(test::cheap_layers_net(), {});
  const Decide chain{{"lrn1", kRecompute}, {"conv2", kRecompute}, {"pool1", kRecompute}, {"bn2", kRecompute}};
  const Program p = program(test::cheap_layers_net(), chain);
  const std::vector<int> nodes = p.recomputed_nodes();
  ASSERT_EQ(nodes.size(), 5u);  // lrn1, conv2, relu2, pool1, bn2
  EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
  EXPECT_EQ(hash(test::cheap_layers_net(), chain), none);
  EXPECT_EQ(hash(test::cheap_layers_net(), {{"pool1", kRecompute}, {"bn2", kRecompute}}), none);
}

TEST(Recompute, DagJoinsAndConcatMixedWithOffloadInBothSyncModes) {
  const std::string none = hash(test::offload_test_dag(), {});
  // bn (+relu) feeds two branches that join in a concat; cat -> lrn -> pool chain; res (+res_relu)
  // is a residual add of the conv c and the pool, in place over c's output: recomputing that
  // storage re-runs c, then the add over it (reading the pool), then nothing for the fused ReLU.
  const Decide dag{{"bn", kRecompute}, {"cat", kRecompute}, {"pool", kRecompute}, {"c", kRecompute}};
  EXPECT_GT(program(test::offload_test_dag(), dag).recomputed_bytes(), 0u);
  const Decide mixed{{"bn", kRecompute}, {"cat", kOffload}, {"pool", kRecompute},
                     {"stem", kOffload}, {"c", kRecompute}, {"gap", kOffload}};
  for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer}) {
    EXPECT_EQ(hash(test::offload_test_dag(), dag, sync), none) << to_string(sync);
    EXPECT_EQ(hash(test::offload_test_dag(), mixed, sync, LinkModel{2e9, 20e-6}), none) << to_string(sync);
  }
}

// Four conv -> BN -> ReLU blocks at one resolution: under `none` every block's two storages are live
// at the end of the forward pass, the peak. Recomputing the BN(+ReLU) storages leaves one of them
// live at a time in the backward pass.
Graph conv_bn_chain() {
  ModelBuilder b("conv_bn_chain", {4, 16, 16}, 5);
  for (int i = 1; i <= 4; ++i) {
    const std::string k = std::to_string(i);
    b.layer("conv", "conv" + k, {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
        .layer("batch_norm", "bn" + k)
        .layer("relu", "relu" + k);
  }
  b.layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

TEST(Recompute, DroppingBatchNormOutputsLowersThePeak) {
  const Decide bns{{"bn1", kRecompute}, {"bn2", kRecompute}, {"bn3", kRecompute}, {"bn4", kRecompute}};
  NetOptions o = options(conv_bn_chain(), bns);
  o.batch = 32;
  Net recompute(conv_bn_chain(), o);
  NetOptions base = options(conv_bn_chain(), {});
  base.batch = 32;
  Net none(conv_bn_chain(), base);
  const size_t saved = recompute.train_program().recomputed_bytes();
  EXPECT_GT(saved, 0u);
  EXPECT_LT(recompute.train_plan().at_forward_end.total_current + saved / 2,
            none.train_plan().at_forward_end.total_current);
  EXPECT_LT(recompute.train_plan().peak_bytes, none.train_plan().peak_bytes);
  EXPECT_EQ(test::train_for_hash(conv_bn_chain(), o, 3), test::train_for_hash(conv_bn_chain(), base, 3));
}

TEST(Recompute, TheRunReportSaysWhatWasRecomputed) {
  const Decide d{{"bn1", kRecompute}, {"pool1", kRecompute}};
  Net net(test::cheap_layers_net(), options(test::cheap_layers_net(), d));
  const nlohmann::json r = decisions_report(net, "");
  EXPECT_EQ(r["recomputed_bytes_per_step"].get<size_t>(), net.train_program().recomputed_bytes());
  EXPECT_EQ(r["recompute_kernels_per_step"].get<size_t>(), 3u);  // bn1, its in-place relu1, pool1
  int layers = 0;
  for (const auto& layer : r["layers"])
    if (layer.contains("recomputed")) {
      ++layers;
      EXPECT_TRUE(layer["layer"] == "bn1" || layer["layer"] == "pool1") << layer.dump();
    }
  EXPECT_EQ(layers, 2);
  Net none(test::cheap_layers_net(), options(test::cheap_layers_net(), {}));
  EXPECT_FALSE(decisions_report(none, "").contains("recomputed_bytes_per_step"));
}

TEST(Recompute, WhatCannotBeRecomputedIsRefusedInOneLine) {
  for (const char* layer : {"loss", "fc2"}) {  // the loss and the logits stay on the device
    Graph g = test::cheap_layers_net();
    try {
      program(test::cheap_layers_net(), {{layer, kRecompute}});
      ADD_FAILURE() << layer << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("logits and the loss"), std::string::npos) << e.what();
    }
  }
  Graph g = test::cheap_layers_net();
  NetOptions o = options(g, {});
  o.decisions.values.assign(g.values().size(), {});
  o.decisions.values[0].action = kRecompute;  // the graph input
  EXPECT_THROW(Net(test::cheap_layers_net(), o), Error);
  o.decisions.values.resize(3);
  EXPECT_THROW(Net(test::cheap_layers_net(), o), Error);
}

// Random DAGs (the stress test's generator) with a random keep/offload/recompute per storage: every
// decision that can be taken trains to `none`'s weights. In-place values, the logits and the loss
// stay kept (their decisions belong to their storage, or are refused: see the test above).
TEST(Recompute, RandomNetworksWithRandomDecisionsTrainBitIdentically) {
  int recomputed = 0;
  for (uint64_t seed = 1; seed <= 14; ++seed) {
    const stress::RandomNetwork n = stress::random_network(seed);
    NetOptions o;
    o.batch = n.batch;
    o.seed = seed;
    Program base;
    try {
      base = Net(n.graph(), o).train_program();
    } catch (const Error&) {
      continue;  // refused under `none` already (the stress test checks those refusals)
    }
    const Graph g = n.graph();
    Rng rng(seed, 17);
    o.decisions.values.assign(g.values().size(), {});
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& node = g.nodes()[i];
      const bool own_storage = base.tensors[base.nodes[i].out].name == node.layer->name() + ":out";
      const int storage = base.nodes[i].out;  // the logits' storage may start before an add in place on it
      if (!own_storage || storage == base.loss_tensor || storage == base.logits_tensor) continue;
      const float u = rng.uniform();
      o.decisions.values[node.output].action = u < 0.4f ? kRecompute : u < 0.6f ? kOffload : StorageAction::kKeep;
    }
    Net probe(n.graph(), o);
    recomputed += probe.train_program().recomputed_bytes() > 0;
    const std::string expected = test::train_for_hash(n.graph(), {.batch = n.batch, .seed = seed}, 2, 0.05, 16);
    EXPECT_EQ(test::train_for_hash(n.graph(), o, 2, 0.05, 16), expected) << "seed " << seed << "\n" << n.model.dump();
  }
  EXPECT_GE(recomputed, 7) << "networks that recomputed something";
}

}  // namespace test_recompute
}  // namespace vdnn
