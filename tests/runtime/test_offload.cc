// The vDNN memory runtime end to end: offloading never changes the math (bit-identical weights
// under every policy, sync mode and link model, on a linear net, a DAG and a dilated ReLU6 net), the Program's
// offload/prefetch structure, the memory it saves, and budgets refused before training.
#include <gtest/gtest.h>

#include "io/model_file.h"
#include "memory/residency.h"
#include "plan/program_builder.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_offload {

Graph linear_net() { return load_model("fmnist_cnn"); }

Graph dag_net() { return test::offload_test_dag("offload_dag"); }

// A linear net whose peak the policy moves on every CPU: six convolutions at full resolution and no
// pooling, so `none` holds six maps at the end of forward where `all` holds the last one or two.
// (fmnist_cnn's peak sits where `none` and `all` hold the same maps on some CPUs' kernels since the
// ReLU fusion: its two budgets are equal on an AMD EPYC.)
Graph deep_linear_net() {
  ModelBuilder b("deep_linear", {3, 24, 24}, 10);
  for (int i = 1; i <= 6; ++i)
    b.layer("conv", "c" + std::to_string(i), {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
        .layer("relu", "r" + std::to_string(i));
  b.layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 10}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

Graph atrous_net() { return test::atrous_net(); }

std::string train_hash(Graph g, Policy policy, SyncMode sync, LinkModel link, size_t budget = 0, bool ahead = false) {
  NetOptions o;
  o.batch = 16;
  o.seed = 4;
  o.policy = policy;
  o.sync = sync;
  o.link = link;
  o.device_memory = budget;
  o.prefetch_ahead = ahead;
  return test::train_for_hash(std::move(g), o, /*iterations=*/6);
}

TEST(Offload, BitIdenticalWeightsUnderEveryPolicySyncModeAndLink) {
  for (auto make : {linear_net, dag_net, atrous_net}) {
    const std::string expected = train_hash(make(), Policy::kNone, SyncMode::kEvent, {});
    for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
      for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer})
        for (LinkModel link : {LinkModel{}, LinkModel{2e9, 20e-6}})
          EXPECT_EQ(train_hash(make(), policy, sync, link), expected)
              << to_string(policy) << " " << to_string(sync) << " link " << link.bandwidth_bytes_per_second;
  }
}

Program program_for(Graph& g, Policy policy, int64_t batch = 4) {
  NetOptions o;
  o.batch = batch;
  o.policy = policy;
  Net net(std::move(g), o);
  return net.train_program();
}

TEST(Offload, EveryOffloadedTensorLeavesOnceAndIsBackBeforeItsBackwardRead) {
  Graph g = dag_net();
  const Program p = program_for(g, Policy::kAll);
  int offloaded = 0;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (!p.tensors[t].offloaded) continue;
    ++offloaded;
    int offloads = 0, prefetches = 0, prefetch_event = -1, offload_event = -1;
    bool waited = false, phase_end_seen = false, h2d_waited_for_offload = false;
    for (const Step& s : p.steps) {
      if (s.op == Op::kPhaseEnd) phase_end_seen = true;
      if (s.op == Op::kOffload && s.tensor == static_cast<int>(t)) {
        ++offloads;
        offload_event = s.event;
        EXPECT_FALSE(phase_end_seen) << p.tensors[t].name << " offloaded in the backward pass";
      }
      if (s.op == Op::kPrefetch && s.tensor == static_cast<int>(t)) {
        ++prefetches;
        prefetch_event = s.event;
        EXPECT_TRUE(h2d_waited_for_offload) << p.tensors[t].name << " read back before its host copy is complete";
        EXPECT_TRUE(phase_end_seen) << p.tensors[t].name << " prefetched in the forward pass";
      }
      if (s.op == Op::kWait && s.stream == StreamKind::kCompute && s.event == prefetch_event) waited = true;
      if (s.op == Op::kWait && s.stream == StreamKind::kH2D && s.event == offload_event) h2d_waited_for_offload = true;
      if (s.op == Op::kBackward && phase_end_seen) {
        const NodeBinding& b = p.nodes[s.node];
        bool reads = false;
        if (b.backward_reads_in)
          for (int in : b.in) reads |= in == static_cast<int>(t);
        if (b.backward_reads_out) reads |= b.out == static_cast<int>(t);
        for (int sv : b.saved) reads |= sv == static_cast<int>(t);
        if (reads)
          EXPECT_TRUE(waited) << p.node_names[s.node] << " reads " << p.tensors[t].name << " before it is back";
      }
    }
    EXPECT_EQ(offloads, 1) << p.tensors[t].name;
    EXPECT_EQ(prefetches, 1) << p.tensors[t].name;
  }
  EXPECT_GE(offloaded, 5);
}

TEST(Offload, PoliciesChooseTheirTensors) {
  Graph g1 = dag_net(), g2 = dag_net(), g3 = dag_net();
  const Program none = program_for(g1, Policy::kNone), conv = program_for(g2, Policy::kConv),
                all = program_for(g3, Policy::kAll);
  EXPECT_EQ(none.offloaded_bytes(), 0u);
  auto offloaded = [](const Program& p, const std::string& name) {
    for (const auto& t : p.tensors)
      if (t.name == name) return t.offloaded;
    ADD_FAILURE() << "no tensor " << name;
    return false;
  };
  // conv reads: data (stem), bn:out via relu (a, b), pool:out (c). bn reads stem:out.
  EXPECT_TRUE(offloaded(conv, "bn:out"));
  EXPECT_TRUE(offloaded(conv, "pool:out"));
  EXPECT_FALSE(offloaded(conv, "stem:out"));  // read only by batch norm's backward
  EXPECT_TRUE(offloaded(all, "stem:out"));
  EXPECT_TRUE(offloaded(all, "cat:out"));  // read by LRN's backward
  EXPECT_FALSE(offloaded(all, "fc:out"));  // the logits stay for the host
  EXPECT_LT(conv.offloaded_bytes(), all.offloaded_bytes());
}

TEST(Offload, VggShapedNetSavesFeatureMapMemory) {
  ModelOptions mo{Shape{3, 32, 32}, 10};
  size_t fm[3], total[3], held[3];
  int i = 0;
  for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll}) {
    NetOptions o;
    o.batch = 8;
    o.policy = policy;
    Net net(load_model("vgg16", mo), o);
    fm[i] = net.train_plan().by_class.peak(MemoryClass::kFeatureMaps);
    held[i] = net.train_plan().at_forward_end.current(MemoryClass::kFeatureMaps);
    total[i] = net.train_plan().peak_bytes;
    ++i;
  }
  EXPECT_LT(fm[2], fm[1]);
  EXPECT_LT(fm[1], fm[0]);
  EXPECT_LE(fm[2] * 2, fm[0]) << "all keeps at most half of none's feature maps";
  // Held across the forward/backward boundary: everything under none (its peak), only what is
  // not offloaded under conv, next to nothing under all (the logits and the loss's output).
  EXPECT_EQ(held[0], fm[0]);
  EXPECT_LT(held[1], held[0]);
  EXPECT_LE(held[2] * 100, held[0]) << "all holds at most 1% of none's feature maps for backward";
  EXPECT_LT(total[2], total[1]);
  EXPECT_LT(total[1], total[0]);
}

TEST(Offload, TooSmallBudgetIsRefusedBeforeTrainingWithTheSmallestThatWorks) {
  NetOptions o;
  o.batch = 16;
  o.policy = Policy::kAll;
  o.device_memory = 1 << 20;
  o.conv_algo_asked = true;  // kept: no convolution goes direct to fit (runtime/net.h)
  try {
    Net net(deep_linear_net(), o);
    ADD_FAILURE() << "1 MiB accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const char* f : {"--device-memory", "too small", "policy all", "needs at least", "none ", "conv ", "all "})
      EXPECT_NE(what.find(f), std::string::npos) << f << " not in: " << what;
  }
  // The smallest budget of `all` trains, and gives the same weights.
  o.device_memory = 0;
  const size_t smallest = Net(deep_linear_net(), o).arena_bytes();
  EXPECT_EQ(train_hash(deep_linear_net(), Policy::kAll, SyncMode::kEvent, {}, smallest),
            train_hash(deep_linear_net(), Policy::kNone, SyncMode::kEvent, {}));
  o.policy = Policy::kNone;
  EXPECT_GT(Net(deep_linear_net(), o).arena_bytes(), smallest) << "the budget fits all but not none";
  o.device_memory = smallest;
  EXPECT_THROW(Net(deep_linear_net(), o), Error);
}

TEST(Offload, LookAheadPrefetchGoesAsFarAsTheBudgetAllows) {
  NetOptions o;
  o.batch = 16;
  o.policy = Policy::kAll;
  o.prefetch_ahead = true;
  Net tight(dag_net(), o);  // no budget: what vDNN's rule needs
  o.device_memory = 256 << 20;
  Net roomy(dag_net(), o);
  EXPECT_EQ(roomy.prefetch_depth(), static_cast<int>(roomy.graph().nodes().size()));
  EXPECT_LE(tight.prefetch_depth(), roomy.prefetch_depth());
  EXPECT_LE(tight.arena_bytes(), Net(dag_net(), {.batch = 16, .policy = Policy::kAll}).arena_bytes());
  const std::string expected = train_hash(dag_net(), Policy::kNone, SyncMode::kEvent, {});
  EXPECT_EQ(train_hash(dag_net(), Policy::kAll, SyncMode::kEvent, {2e9, 0}, 0, true), expected);
  EXPECT_EQ(train_hash(dag_net(), Policy::kConv, SyncMode::kLayer, {}, 256 << 20, true), expected);
}

TEST(Residency, IllegalTransitionsFailLoudly) {
  Residency r("x");
  EXPECT_THROW(r.to(Residency::kHost), InternalError);
  r.to(Residency::kDevice);
  EXPECT_THROW(r.to(Residency::kPrefetching), InternalError);
  r.to(Residency::kOffloading);
  EXPECT_THROW(r.to(Residency::kDevice), InternalError);
  r.to(Residency::kHost);
  r.to(Residency::kPrefetching);
  r.to(Residency::kDevice);
  r.to(Residency::kAbsent);
}

}  // namespace test_offload
}  // namespace vdnn
