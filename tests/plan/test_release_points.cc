// Release points (issue 17): StorageDecision::release_at = k holds an offloaded tensor's device
// copy until node k's forward kernel has been issued, instead of freeing it after its last forward
// reader. The free moves to that point in the Program, the placement then puts nothing over the
// tensor before it (so no kernel waits for the link to reuse the range), the smallest budget can
// only grow, the run report names them, and bad points are refused in one line naming the tensor
// and the valid range. Training with release points (and prefetch points) is bit-identical to
// `none`: PrefetchPoints.TrainingWithEarlyPointsIsBitIdenticalToNone.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/memory_plan.h"
#include "plan/prefetch_points.h"
#include "plan/program_builder.h"
#include "report/report.h"
#include "runtime/train_for_hash.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_release_points {

struct Model {
  explicit Model(const std::string& name, int64_t batch = 2)
      : graph(load_model(name)), facts(backend_target("cuda").facts(graph, batch, {})) {}
  Program build(StepDecisions d, SyncMode sync = SyncMode::kEvent) const {
    ProgramOptions o{Policy::kNone, sync};
    o.decisions = std::move(d);
    return build_program(graph, facts.value_bytes, facts.facts, o);
  }
  int node(const std::string& name) const {
    for (size_t i = 0; i < graph.nodes().size(); ++i)
      if (graph.nodes()[i].layer->name() == name) return static_cast<int>(i);
    return -1;
  }
  int last() const { return static_cast<int>(graph.nodes().size()) - 1; }
  Graph graph;
  TargetFacts facts;
};

// The index of the first step of `p` that `match` accepts, or -1.
int step_of(const Program& p, const std::function<bool(const Step&)>& match) {
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (match(p.steps[i])) return static_cast<int>(i);
  return -1;
}

TEST(ReleasePoints, AHeldCopyIsFreedAfterThatForwardKernelAndNothingIsPlacedOverItBefore) {
  const Model m("vgg16");
  ProgramOptions all{Policy::kAll, SyncMode::kEvent};
  const Program rule = build_program(m.graph, m.facts.value_bytes, m.facts.facts, all);
  StepDecisions d = decisions_of(rule, m.graph);
  const int pool1 = m.node("pool1"), conv2_2 = m.node("conv2_2");
  d.values[m.graph.nodes()[pool1].output].release_at = conv2_2;
  Program held = m.build(d);
  const int t = held.nodes[pool1].out;
  ASSERT_TRUE(held.tensors[t].offloaded);
  // The forward free of pool1:out follows conv2_2's forward kernel, before the next one.
  const int free = step_of(held, [&](const Step& s) { return s.op == Op::kFree && s.tensor == t; });
  const int after = step_of(held, [&](const Step& s) { return s.op == Op::kForward && s.node == conv2_2; });
  const int next = step_of(held, [&](const Step& s) { return s.op == Op::kForward && s.node == conv2_2 + 1; });
  ASSERT_GE(free, 0);
  EXPECT_LT(after, free);
  EXPECT_LT(free, next);
  // Without the point it is freed right after its last forward reader (conv2_1), before conv2_2 runs.
  const Program now = m.build(decisions_of(rule, m.graph));
  const int free_now = step_of(now, [&](const Step& s) { return s.op == Op::kFree && s.tensor == t; });
  EXPECT_LT(free_now, step_of(now, [&](const Step& s) { return s.op == Op::kForward && s.node == conv2_2; }));
  // Placed: every tensor allocated while it is held lies outside its range; it costs memory, never less.
  const size_t smallest = minimum_budget(held);
  EXPECT_GE(smallest, minimum_budget(now));
  ASSERT_TRUE(plan_memory(held, smallest).fits);
  const int alloc = step_of(held, [&](const Step& s) { return s.op == Op::kAlloc && s.tensor == t; });
  const int freed = step_of(held, [&](const Step& s) { return s.op == Op::kFree && s.tensor == t; });
  const size_t begin = held.steps[alloc].offset, end = begin + held.tensors[t].bytes;
  int overlapping = 0, placed_meanwhile = 0;
  for (int i = alloc + 1; i < freed; ++i) {
    const Step& s = held.steps[i];
    if (s.op != Op::kAlloc) continue;
    ++placed_meanwhile;
    overlapping += s.offset < end && begin < s.offset + held.tensors[s.tensor].bytes;
  }
  EXPECT_GE(placed_meanwhile, 2);  // conv2_1's and conv2_2's outputs at least
  EXPECT_EQ(overlapping, 0);
}

TEST(ReleasePoints, TheRunReportNamesEachOffloadsOwnPoints) {
  const Graph dag = test::offload_test_dag();
  NetOptions o;
  o.batch = 8;
  o.policy = Policy::kAll;
  const Program all = Net(test::offload_test_dag(), o).train_program();
  const int last = static_cast<int>(dag.nodes().size()) - 1;
  StepDecisions d = decisions_of(all, dag);
  const std::vector<PrefetchSlot> slots = prefetch_slots(all);
  const auto slot = std::find_if(slots.begin(), slots.end(), [](const PrefetchSlot& s) { return s.node >= 0; });
  ASSERT_NE(slot, slots.end());
  decision_for(d, dag, *slot).release_at = last;
  decision_for(d, dag, *slot).prefetch_at = last;
  o.policy = Policy::kNone;
  o.decisions = d;
  Net net(test::offload_test_dag(), o);
  const std::string tensor = net.train_program().tensors[slot->tensor].name, name = dag.nodes()[last].layer->name();
  int named = 0, offloaded = 0;
  const nlohmann::json report = decisions_report(net, "");
  for (const auto& layer : report["layers"])
    for (const auto& entry : layer["offloaded"]) {
      ++offloaded;
      if (entry["tensor"] != tensor) {
        EXPECT_FALSE(entry.contains("held_until_forward_of")) << entry.dump();
        continue;
      }
      ++named;
      EXPECT_EQ(entry["held_until_forward_of"], name) << entry.dump();
      EXPECT_EQ(entry["prefetched_in_backward_slot_of"], name) << entry.dump();
    }
  EXPECT_EQ(named, 1);
  EXPECT_GT(offloaded, 2);
}

TEST(ReleasePoints, BadPointsAreRefusedInOneLineNamingTheTensorAndTheValidRange) {
  const Model m("fmnist_dag");
  ProgramOptions all{Policy::kAll, SyncMode::kEvent};
  const Program rule = build_program(m.graph, m.facts.value_bytes, m.facts.facts, all);
  const std::vector<PrefetchSlot> slots = prefetch_slots(rule);
  const auto slot =
      std::find_if(slots.begin(), slots.end(), [](const PrefetchSlot& s) { return s.saved < 0 && s.node >= 0; });
  ASSERT_NE(slot, slots.end());
  const std::string tensor = "'" + rule.tensors[slot->tensor].name + "'";
  // Its last forward reader: the node whose forward kernel its free follows without a point.
  int last_reader = -1;
  for (const Step& s : rule.steps) {
    if (s.op == Op::kPhaseEnd) break;
    if (s.op == Op::kForward) last_reader = s.node;
    if (s.op == Op::kFree && s.tensor == slot->tensor) break;
  }
  ASSERT_GE(last_reader, slot->node);
  auto at = [&](int k, StorageAction a = StorageAction::kOffload) {
    StepDecisions d = decisions_of(rule, m.graph);
    decision_for(d, m.graph, *slot) = {a, -1, k};
    return d;
  };
  auto refused = [&](StepDecisions d, const std::vector<std::string>& says) {
    const std::string e = test::error_of([&] { m.build(std::move(d)); });
    for (const std::string& s : says) EXPECT_NE(e.find(s), std::string::npos) << "expected '" << s << "' in: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  const std::string range = std::to_string(last_reader) + ".." + std::to_string(m.last());
  refused(at(last_reader - 1), {tensor, "release point", "out of range", range});
  refused(at(m.last() + 1), {tensor, "out of range", range});
  refused(at(m.last(), StorageAction::kKeep), {tensor, "keep", "only an offloaded tensor"});
  refused(at(m.last(), StorageAction::kRecompute), {tensor, "recompute", "only an offloaded tensor"});
  StepDecisions saved = decisions_of(rule, m.graph);
  for (size_t i = 0; i < saved.saved.size(); ++i)
    if (!saved.saved[i].empty()) {
      saved.saved[i][0] = {StorageAction::kKeep, -1, m.last()};
      refused(saved, {"'" + rule.tensors[rule.nodes[i].saved[0]].name + "'", "release point", "it is kept"});
      break;
    }
  // Its last forward reader (as soon as it may) and the last node are both accepted.
  EXPECT_NO_THROW(m.build(at(last_reader)));
  EXPECT_NO_THROW(m.build(at(m.last())));
}

}  // namespace test_release_points
}  // namespace vdnn
