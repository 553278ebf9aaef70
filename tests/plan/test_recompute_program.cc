// Recompute in the Program (issue 17): explicit decisions reproduce vDNN's policies exactly, a
// recomputed storage leaves the device after its last forward reader and comes back by kRecompute
// steps before its first backward reader, the simulator charges each recompute one forward kernel,
// the text and the timeline name it, and impossible decisions are refused in one line.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cpu/compiled_graph.h"
#include "plan/memory_plan.h"
#include "plan/program_builder.h"
#include "plan/simulator.h"
#include "plan/step_timeline.h"
#include "runtime/decisions_by_layer.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

struct FixedCosts : CostModel {
  double forward_seconds(int node) const override { return 1e-3 * (1 + node % 3); }
  double backward_seconds(int node) const override { return 2e-3 * (1 + node % 3); }
  double copy_seconds(size_t) const override { return 0.0; }
};

class RecomputeProgram : public ::testing::Test {
 protected:
  RecomputeProgram() : graph_(test::cheap_layers_net()), compiled_(graph_, 8, 1, engine_) {}
  Program build(Policy policy, StepDecisions d, SyncMode sync = SyncMode::kEvent) {
    ProgramOptions o{policy, sync};
    o.decisions = std::move(d);
    return build_program(graph_, compiled_.value_bytes(), compiled_.facts(), o);
  }
  Program build(const std::map<std::string, StorageAction>& by_layer) {
    return build(Policy::kNone, test::decisions_by_layer(graph_, by_layer));
  }
  int node(const std::string& name) const {
    for (size_t i = 0; i < graph_.nodes().size(); ++i)
      if (graph_.nodes()[i].layer->name() == name) return static_cast<int>(i);
    return -1;
  }
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  Graph graph_;
  CompiledGraph compiled_;
};

TEST_F(RecomputeProgram, ExplicitDecisionsReproduceEachPolicyExactly) {
  for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
    for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer}) {
      const Program reference = build(policy, {}, sync);
      StepDecisions d;  // what the policy chose, said per value and per saved buffer
      d.values.assign(graph_.values().size(), {});
      for (size_t v = 0; v < graph_.values().size(); ++v) {
        const int writer = v == 0 ? -1 : [&] {
          for (size_t i = 0; i < graph_.nodes().size(); ++i)
            if (graph_.nodes()[i].output == static_cast<int>(v)) return static_cast<int>(i);
          return -1;
        }();
        const int t = writer < 0 ? reference.input_tensor : reference.nodes[writer].out;
        if (reference.tensors[t].offloaded) d.values[v].action = StorageAction::kOffload;
      }
      d.saved.resize(graph_.nodes().size());
      for (size_t i = 0; i < graph_.nodes().size(); ++i)
        for (int t : reference.nodes[i].saved)
          d.saved[i].push_back({reference.tensors[t].offloaded ? StorageAction::kOffload : StorageAction::kKeep});
      EXPECT_EQ(build(policy, d, sync).to_text(), reference.to_text()) << to_string(policy) << " " << to_string(sync);
    }
}

TEST_F(RecomputeProgram, RecomputedStorageLeavesAfterItsLastForwardReaderAndReturnsBeforeItsFirstBackwardReader) {
  const Program p = build({{"pool1", StorageAction::kRecompute}, {"bn2", StorageAction::kRecompute}});
  const int pool = node("pool1"), bn = node("bn2"), conv3 = node("conv3");
  const int pool_out = p.nodes[pool].out, bn_out = p.nodes[bn].out;
  EXPECT_TRUE(p.tensors[pool_out].recomputed && p.tensors[bn_out].recomputed);
  EXPECT_EQ(p.recomputed_bytes(), p.tensors[pool_out].bytes + p.tensors[bn_out].bytes);
  EXPECT_EQ(p.recomputed_nodes(), (std::vector<int>{pool, bn}));  // a chain, in forward order
  bool backward = false, pool_back = false, bn_back = false;
  int pool_allocs = 0;
  for (const Step& s : p.steps) {
    if (s.op == Op::kPhaseEnd) {
      backward = true;
      EXPECT_FALSE(pool_back || bn_back);  // neither kept through the forward pass's end
    }
    if (s.op == Op::kAlloc && s.tensor == pool_out) ++pool_allocs, pool_back = backward;
    if (s.op == Op::kAlloc && s.tensor == bn_out) bn_back = backward;
    if (s.op == Op::kFree && s.tensor == pool_out) pool_back = false;
    if (s.op == Op::kFree && s.tensor == bn_out) bn_back = false;
    if (s.op == Op::kRecompute) {
      EXPECT_TRUE(backward);
      EXPECT_TRUE(s.node == pool ? pool_back : bn_back && pool_back) << p.node_names[s.node];
    }
    if (s.op == Op::kBackward && s.node == conv3) EXPECT_TRUE(bn_back);   // conv3 reads bn2's output
    if (s.op == Op::kBackward && s.node == bn) EXPECT_TRUE(pool_back);    // bn2 reads pool1's output
  }
  EXPECT_EQ(pool_allocs, 2);
  const std::string text = p.to_text();
  EXPECT_NE(text.find("recompute pool1 pool1:out"), std::string::npos) << text;
  EXPECT_NE(text.find(", recompute " + std::to_string(p.recomputed_bytes()) + " B"), std::string::npos);
  const auto step = std::find_if(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.op == Op::kRecompute; });
  const TimelineOp op = timeline_op(p, step - p.steps.begin(), Pass::kBackward);
  EXPECT_EQ(op.name, "recompute pool1");
  EXPECT_EQ(op.node, pool);
}

TEST_F(RecomputeProgram, TheSimulatorChargesOneForwardKernelPerRecompute) {
  const FixedCosts costs;
  Program none = build(Policy::kNone, {});
  Program p = build({{"bn1", StorageAction::kRecompute}, {"lrn1", StorageAction::kRecompute},
                     {"apool", StorageAction::kRecompute}, {"drop1", StorageAction::kRecompute}});
  ASSERT_TRUE(plan_memory(none, minimum_budget(none)).fits);
  ASSERT_TRUE(plan_memory(p, minimum_budget(p)).fits);
  double extra = 0;
  for (int n : p.recomputed_nodes()) extra += costs.forward_seconds(n);
  EXPECT_EQ(p.recomputed_nodes().size(), 5u);  // bn1 and its in-place relu1, lrn1, apool, drop1
  const SimResult a = simulate(none, costs), b = simulate(p, costs);
  EXPECT_EQ(a.recompute_seconds, 0.0);
  EXPECT_NEAR(b.recompute_seconds, extra, 1e-12);
  EXPECT_NEAR(b.iteration_seconds, a.iteration_seconds + extra, 1e-12);
  EXPECT_NEAR(b.forward_seconds, a.forward_seconds, 1e-12);
}

TEST_F(RecomputeProgram, ImpossibleDecisionsAreRefusedInOneLine) {
  auto refused = [&](StepDecisions d, const std::string& says) {
    try {
      build(Policy::kNone, std::move(d));
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  StepDecisions in_place = test::decisions_by_layer(graph_, {{"relu1", StorageAction::kRecompute}});
  refused(in_place, "decide on 'bn1:out'");
  StepDecisions prefetch = test::decisions_by_layer(graph_, {{"pool1", StorageAction::kOffload}});
  prefetch.values[graph_.nodes()[node("pool1")].output].prefetch_at = 3;
  refused(prefetch, "prefetch point");
  StepDecisions saved;
  saved.saved.resize(graph_.nodes().size());
  saved.saved[node("pool1")] = {{StorageAction::kRecompute}};
  refused(saved, "kernel-saved state is kept or offloaded");
  refused(test::decisions_by_layer(graph_, {{"fc2", StorageAction::kOffload}}), "the logits and the loss");
  StepDecisions input;
  input.values.assign(graph_.values().size(), {});
  input.values[0].action = StorageAction::kRecompute;
  refused(input, "the graph input has no layer to re-run");
}

}  // namespace
}  // namespace vdnn
