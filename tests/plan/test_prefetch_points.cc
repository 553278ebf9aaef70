// Per-tensor prefetch points (issue 17): StorageDecision::prefetch_at = k issues an offloaded
// tensor's prefetch in node k's backward slot. Points equal to the ones the Program's rule chose
// give the rule's Program exactly (zoo models, vDNN's rule and look-ahead); an early point shows in
// the text where it was asked for, holds the tensor longer (the peak grows) and hides a slow copy
// (the stall drops); training with early points (and release points) is bit-identical to `none`;
// bad points are refused in one line that names the tensor and the valid range.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/fixed_costs.h"
#include "plan/memory_plan.h"
#include "plan/prefetch_points.h"
#include "plan/program_builder.h"
#include "plan/simulator.h"
#include "runtime/decisions_by_layer.h"
#include "runtime/train_for_hash.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_prefetch_points {

using SlowLink = test::FixedCosts;

struct Model {
  explicit Model(const std::string& name, int64_t batch = 2)
      : graph(load_model(name)), facts(backend_target("cuda").facts(graph, batch, {})) {}
  Program build(Policy policy, int depth = 0, StepDecisions d = {}, SyncMode sync = SyncMode::kEvent) const {
    ProgramOptions o{policy, sync};
    o.prefetch_depth = depth;
    o.decisions = std::move(d);
    return build_program(graph, facts.value_bytes, facts.facts, o);
  }
  int last() const { return static_cast<int>(graph.nodes().size()) - 1; }
  Graph graph;
  TargetFacts facts;
};

// Decisions equal to what `p` offloads, each prefetch point where `point` puts it.
template <class Point>
StepDecisions with_points(const Program& p, const Graph& g, Point point) {
  StepDecisions d = decisions_of(p, g);
  for (const PrefetchSlot& s : prefetch_slots(p)) decision_for(d, g, s).prefetch_at = point(s);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PrefetchPoints, PointsEqualToTheRulesGiveTheRulesProgramExactly) {
  for (const char* name : {"fmnist_dag", "alexnet", "googlenet", "resnet50", "vgg16"}) {
    const Model m(name);
    for (Policy policy : {Policy::kConv, Policy::kAll})
      for (int depth : {0, 2, 1000}) {
        SCOPED_TRACE(std::string(name) + " " + to_string(policy) + " depth " + std::to_string(depth));
        const Program rule = m.build(policy, depth);
        const std::vector<PrefetchSlot> slots = prefetch_slots(rule);
        ASSERT_FALSE(slots.empty());
        int early = 0;
        for (const PrefetchSlot& s : slots) {
          ASSERT_TRUE(rule.tensors[s.tensor].offloaded);
          ASSERT_GE(s.reader, 0);
          ASSERT_GE(s.issued_at, s.reader);  // never after its first backward reader
          ASSERT_TRUE(s.saved < 0 ? (s.node < 0 ? rule.input_tensor : rule.nodes[s.node].out) == s.tensor
                                  : rule.nodes[s.node].saved[s.saved] == s.tensor);
          early += s.issued_at > s.reader;
        }
        if (depth > 0 || policy == Policy::kAll) EXPECT_GT(early, 0);  // the rule does prefetch early
        // The same offloads with no point of their own: the existing rule, and the same Program.
        const StepDecisions rule_points = decisions_of(rule, m.graph);
        EXPECT_EQ(m.build(policy, depth, rule_points).to_text(), rule.to_text());
        // Each point said explicitly where the rule put it: the same Program again.
        const StepDecisions same = with_points(rule, m.graph, [](const PrefetchSlot& s) { return s.issued_at; });
        EXPECT_EQ(m.build(policy, depth, same).to_text(), rule.to_text());
      }
  }
}

TEST(PrefetchPoints, DecisionsOfAProgramRebuildIt) {
  const Graph g = test::cheap_layers_net();
  const TargetFacts f = backend_target("cuda").facts(g, 4, {});
  StepDecisions mixed = test::decisions_by_layer(g, {{"pool1", StorageAction::kRecompute},
                                                     {"conv2", StorageAction::kOffload},
                                                     {"apool", StorageAction::kRecompute},
                                                     {"relu3", StorageAction::kKeep}});
  mixed.saved.resize(g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    mixed.saved[i].assign(f.facts[i].saved_bytes.size(), {StorageAction::kOffload});
  ProgramOptions o{Policy::kNone, SyncMode::kEvent};
  o.decisions = mixed;
  const Program p = build_program(g, f.value_bytes, f.facts, o);
  ASSERT_GT(p.recomputed_bytes(), 0u);
  ASSERT_GT(p.offloaded_bytes(), 0u);
  o.decisions = decisions_of(p, g);
  EXPECT_EQ(build_program(g, f.value_bytes, f.facts, o).to_text(), p.to_text());
}

TEST(PrefetchPoints, AnEarlyPointIsIssuedInThatNodesBackwardSlotBeforeItsKernel) {
  const Model m("vgg16");
  const Program all = m.build(Policy::kAll);
  const std::vector<PrefetchSlot> rule = prefetch_slots(all);
  // The output of conv3_1 (read first in backward by relu3_1's in-place slot or conv3_2): moved 4 slots early.
  const auto it = std::find_if(rule.begin(), rule.end(), [&](const PrefetchSlot& s) {
    return s.saved < 0 && s.node >= 0 && m.graph.nodes()[s.node].layer->name() == "conv3_1";
  });
  ASSERT_NE(it, rule.end());
  const int at = it->reader + 4;
  Program p = m.build(Policy::kAll, 0, with_points(all, m.graph, [&](const PrefetchSlot& s) {
                        return s.tensor == it->tensor ? at : s.issued_at;
                      }));
  bool found = false;
  for (const PrefetchSlot& s : prefetch_slots(p))
    if (s.tensor == it->tensor) {
      found = true;
      EXPECT_EQ(s.issued_at, at);
      EXPECT_EQ(s.reader, it->reader);  // still waited for by its first backward reader
    }
  EXPECT_TRUE(found);
  // In the text: the prefetch follows node at+1's backward kernel and precedes node at's.
  const std::string text = p.to_text(), tensor = p.tensors[it->tensor].name;
  const size_t prefetch = text.find("prefetch " + tensor + " ");
  const size_t before = text.find("backward " + p.node_names[at + 1] + "\n");
  const size_t after = text.find("backward " + p.node_names[at] + "\n");
  ASSERT_NE(prefetch, std::string::npos) << text;
  EXPECT_LT(before, prefetch);
  EXPECT_LT(prefetch, after);
  // Its host-to-device copy waits for the offload's event (the host copy is complete), and the
  // first reader's compute stream waits for the copy in the reader's slot (prefetch_slots' reader).
  int offload_event = -1;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.op == Op::kOffload && s.tensor == it->tensor) offload_event = s.event;
    if (s.op == Op::kPrefetch && s.tensor == it->tensor) {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(p.steps[i - 1].op, Op::kWait);
      EXPECT_EQ(p.steps[i - 1].stream, StreamKind::kH2D);
      EXPECT_EQ(p.steps[i - 1].event, offload_event);
      EXPECT_GE(offload_event, 0);
    }
  }
  EXPECT_TRUE(plan_memory(p, minimum_budget(p)).fits);
}

TEST(PrefetchPoints, EarlyPointsHoldMoreMemoryAndHideASlowLink) {
  const Model m("vgg16");
  const Program all = m.build(Policy::kAll);
  Program just_in_time =
      m.build(Policy::kAll, 0, with_points(all, m.graph, [](const PrefetchSlot& s) { return s.reader; }));
  Program two_early =
      m.build(Policy::kAll, 0,
              with_points(all, m.graph, [&](const PrefetchSlot& s) { return std::min(s.reader + 2, m.last()); }));
  Program at_start =
      m.build(Policy::kAll, 0, with_points(all, m.graph, [&](const PrefetchSlot& s) { return m.last(); }));
  for (const PrefetchSlot& s : prefetch_slots(just_in_time)) EXPECT_EQ(s.issued_at, s.reader);
  for (const PrefetchSlot& s : prefetch_slots(at_start)) EXPECT_EQ(s.issued_at, m.last());
  const size_t b_jit = minimum_budget(just_in_time), b_two = minimum_budget(two_early),
               b_start = minimum_budget(at_start);
  EXPECT_LE(b_jit, b_two);
  EXPECT_LT(b_two, b_start);  // everything back at the start of the backward pass: `none`'s backward
  // A link slow enough that a just-in-time prefetch stalls its reader. Each Program is placed at its
  // own smallest budget (the placement's reuse waits tie the h2d stream to the compute stream's
  // progress; unplaced, the host runs ahead and every point would issue at the same time).
  const SlowLink link(2e9);
  auto placed = [&](Program& p, SyncMode sync) {
    Program q = sync == SyncMode::kEvent
                    ? p
                    : m.build(Policy::kAll, 0,
                              with_points(p, m.graph, [](const PrefetchSlot& s) { return s.issued_at; }), sync);
    EXPECT_TRUE(plan_memory(q, minimum_budget(q)).fits);
    return simulate(q, link);
  };
  const SimResult jit = placed(just_in_time, SyncMode::kEvent), two = placed(two_early, SyncMode::kEvent),
                  start = placed(at_start, SyncMode::kEvent);
  EXPECT_GT(jit.stall_seconds, 0.0);
  EXPECT_LT(two.stall_seconds, jit.stall_seconds);
  EXPECT_LT(start.stall_seconds, jit.stall_seconds);
  EXPECT_LT(two.iteration_seconds, jit.iteration_seconds);
  // vDNN's layer barrier: a just-in-time copy stalls its reader whole; two slots early it is done
  // behind the two kernels before it.
  const SimResult jit_layer = placed(just_in_time, SyncMode::kLayer), two_layer = placed(two_early, SyncMode::kLayer);
  EXPECT_GT(jit_layer.stall_seconds, 0.0);
  EXPECT_LT(two_layer.stall_seconds, jit_layer.stall_seconds);
  EXPECT_LT(two_layer.iteration_seconds, jit_layer.iteration_seconds);
  // The simulator's memory timeline agrees: early points keep more bytes live.
  EXPECT_LT(jit.memory_by_class.total_peak, start.memory_by_class.total_peak);
}

TEST(PrefetchPoints, TrainingWithEarlyPointsIsBitIdenticalToNone) {
  const Graph dag = test::offload_test_dag();
  NetOptions o;
  o.batch = 8;
  o.seed = 3;
  const std::string none = test::train_for_hash(test::offload_test_dag(), o, 4);
  o.policy = Policy::kAll;
  const Program all = Net(test::offload_test_dag(), o).train_program();
  const int last = static_cast<int>(dag.nodes().size()) - 1;
  int moved = 0;
  o.decisions = with_points(all, dag, [&](const PrefetchSlot& s) {
    // Alternately at the start of the backward pass and three slots before the first reader.
    return (moved++ % 2) ? last : std::min(s.reader + 3, last);
  });
  ASSERT_GT(moved, 3);
  o.policy = Policy::kNone;
  for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer}) {
    o.sync = sync;
    o.link = LinkModel{2e9, 20e-6};  // a link slow enough that a missing wait reads a stale buffer
    EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), o, 4), none) << to_string(sync);
  }
  // With release points too (every other offload's device copy held to the last forward kernel).
  int held = 0;
  for (const PrefetchSlot& s : prefetch_slots(all))
    if (s.node >= 0 && held++ % 2 == 0) decision_for(o.decisions, dag, s).release_at = last;
  ASSERT_GT(held, 2);
  for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer}) {
    o.sync = sync;
    EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), o, 4), none) << to_string(sync) << ", release points";
  }
  // With recompute mixed in: a recomputed storage's inputs prefetched early for its slot.
  StepDecisions mixed = test::decisions_by_layer(
      dag, {{"lrn", StorageAction::kRecompute}, {"cat", StorageAction::kOffload}, {"stem", StorageAction::kOffload}});
  o.decisions = mixed;
  o.sync = SyncMode::kEvent;
  const Program p = Net(test::offload_test_dag(), o).train_program();
  ASSERT_EQ(prefetch_slots(p).size(), 2u);  // cat (read by lrn's recompute in pool's slot) and stem
  for (const PrefetchSlot& s : prefetch_slots(p)) decision_for(mixed, dag, s).prefetch_at = last;
  o.decisions = mixed;
  EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), o, 4), none);
}

TEST(PrefetchPoints, BadPointsAreRefusedInOneLineNamingTheTensorAndTheValidRange) {
  const Model m("fmnist_dag");
  const Program all = m.build(Policy::kAll);
  const std::vector<PrefetchSlot> slots = prefetch_slots(all);
  const auto slot =
      std::find_if(slots.begin(), slots.end(), [](const PrefetchSlot& s) { return s.saved < 0 && s.node >= 0; });
  ASSERT_NE(slot, slots.end());
  const std::string tensor = "'" + all.tensors[slot->tensor].name + "'";
  auto refused = [&](StepDecisions d, const std::vector<std::string>& says) {
    const std::string e = error_of([&] { m.build(Policy::kNone, 0, std::move(d)); });
    for (const std::string& s : says) EXPECT_NE(e.find(s), std::string::npos) << "expected '" << s << "' in: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  auto at = [&](int k, StorageAction a = StorageAction::kOffload) {
    StepDecisions d = decisions_of(all, m.graph);
    decision_for(d, m.graph, *slot) = {a, k};
    return d;
  };
  const std::string range = std::to_string(slot->reader) + ".." + std::to_string(m.last());
  if (slot->reader > 0) refused(at(slot->reader - 1), {tensor, "after its first backward reader", range});
  refused(at(m.last() + 1), {tensor, "out of range", "0.." + std::to_string(m.last())});
  refused(at(-2), {tensor, "out of range"});
  refused(at(m.last(), StorageAction::kKeep), {tensor, "keep", "only an offloaded tensor is prefetched"});
  refused(at(m.last(), StorageAction::kRecompute), {tensor, "recompute", "only an offloaded tensor is prefetched"});
  // Kernel-saved state kept, with a point.
  StepDecisions saved = decisions_of(all, m.graph);
  for (size_t i = 0; i < saved.saved.size(); ++i)
    if (!saved.saved[i].empty()) {
      saved.saved[i][0] = {StorageAction::kKeep, m.last()};
      refused(saved, {"'" + all.tensors[all.nodes[i].saved[0]].name + "'", "it is kept"});
      break;
    }
  // The just-in-time point and the start of the backward pass are both accepted.
  EXPECT_EQ(error_of([&] { m.build(Policy::kNone, 0, at(slot->reader)); }), "(accepted)");
  EXPECT_EQ(error_of([&] { m.build(Policy::kNone, 0, at(m.last())); }), "(accepted)");
}

}  // namespace test_prefetch_points
}  // namespace vdnn
