// Data parallel, predicted (issue 19): the gradient buckets in the Program (backward order, sizes
// capped, the first one small, every trainable gradient in exactly one, running statistics in the
// first, events that chain compute -> comm -> update), and the simulator's reading of them (a
// ring all-reduce on the comm stream, per-bucket updates that sum to the one-rank update, the
// hidden fraction, the host-link sharing rule; one rank exactly as before).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/collectives.h"
#include "plan/fixed_costs.h"
#include "plan/memory_plan.h"
#include "plan/network_costs.h"
#include "plan/program_builder.h"
#include "plan/simulator.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_collectives {

// fmnist_dag: a DAG with batch norm (running statistics) and gradient sums.
struct DagFacts {
  Graph graph = load_model("fmnist_dag");
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  DagFacts() {
    const std::unique_ptr<Backend> b = make_backend(graph, {BackendKind::kCpu, 8});
    value_bytes = b->value_bytes();
    facts = b->facts();
  }
  Program program(Policy policy, bool training = true) const {
    Program p = build_program(graph, value_bytes, facts, {policy, SyncMode::kEvent, training});
    plan_memory(p, minimum_budget(p));
    return p;
  }
};

const DagFacts& dag() {
  static const DagFacts f;
  return f;
}

// A cost model with made-up kernels and link (FixedCosts) plus an update, an all-reduce and the
// sharing slowdown of our choosing.
struct ParallelCosts : test::FixedCosts {
  double comm_bytes_per_second = 1e9, share = 1.0;
  explicit ParallelCosts(double link = 0) : FixedCosts(link) {}
  double update_seconds(size_t weight_bytes, size_t /*state_bytes*/) const override {
    return static_cast<double>(weight_bytes) * 1e-10;
  }
  double all_reduce_seconds(size_t bytes, int ranks) const override {
    return ring_all_reduce_seconds(bytes, ranks, comm_bytes_per_second, 1e-6);
  }
  double slowdown_when_sharing_host_link() const override { return share; }
};

TEST(Collectives, EveryTrainableGradientIsInExactlyOneBucketInBackwardOrder) {
  for (Policy policy : {Policy::kNone, Policy::kAll}) {
    SCOPED_TRACE(to_string(policy));
    Program p = dag().program(policy);
    const CollectiveOptions o{.ranks = 3, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10};
    add_collectives(p, o);
    ASSERT_EQ(p.ranks, 3);
    ASSERT_GE(p.buckets.size(), 3u) << "small caps split fmnist_dag's gradients";
    // Where each node's backward kernel is issued.
    std::map<int, size_t> backward_at;
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].op == Op::kBackward) backward_at[p.steps[i].node] = i;
    std::map<int, int> bucket_of;  // tensor -> bucket
    size_t last_backward = 0;
    for (size_t b = 0; b < p.buckets.size(); ++b) {
      const GradientBucket& bucket = p.buckets[b];
      size_t bytes = 0, gradients = 0;
      for (int t : bucket.tensors) {
        EXPECT_TRUE(bucket_of.emplace(t, static_cast<int>(b)).second) << p.tensors[t].name << " in two buckets";
        bytes += p.tensors[t].bytes;
        gradients += p.tensors[t].cls == MemoryClass::kWeightGrads;
      }
      EXPECT_EQ(bytes, bucket.bytes);
      EXPECT_EQ(gradients, bucket.params.size());
      const size_t cap = b == 0 ? o.first_bucket_bytes : o.bucket_bytes;
      EXPECT_TRUE(bytes <= cap || gradients == 1) << "bucket " << b << ": " << bytes << " bytes over " << cap;
      // Gradients in the order the backward pass finishes them: their nodes' kernels never go back.
      for (const auto& [node, k] : bucket.params) {
        EXPECT_EQ(bucket_of.count(p.nodes[node].d_params[k]), 1u);
        EXPECT_GE(backward_at.at(node), last_backward) << p.node_names[node];
        last_backward = backward_at.at(node);
      }
    }
    size_t running = 0;
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      if (p.tensors[t].cls == MemoryClass::kWeightGrads)
        EXPECT_EQ(bucket_of.count(static_cast<int>(t)), 1u) << p.tensors[t].name << " is in no bucket";
    }
    for (const NodeBinding& n : p.nodes)
      for (size_t k = 0; k < n.params.size(); ++k)
        if (n.d_params[k] < 0) {  // batch norm's running statistics: averaged with the first bucket
          ++running;
          ASSERT_EQ(bucket_of.count(n.params[k]), 1u) << p.tensors[n.params[k]].name;
          EXPECT_EQ(bucket_of.at(n.params[k]), 0);
        }
    EXPECT_GT(running, 0u) << "fmnist_dag has batch norm";
  }
}

TEST(Collectives, EventsChainComputeToCommToTheBucketsUpdate) {
  Program p = dag().program(Policy::kAll);
  add_collectives(p, {.ranks = 2, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10});
  std::map<int, size_t> recorded;  // event -> step
  std::map<int, StreamKind> recorded_on;
  std::vector<int> reduced, updated;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.event >= 0) ASSERT_LT(s.event, p.event_count);
    if (s.op == Op::kRecord) recorded[s.event] = i, recorded_on[s.event] = s.stream;
    if (s.op == Op::kAllReduce) {
      EXPECT_EQ(s.stream, StreamKind::kComm);
      // The comm stream waits for the compute stream's event, recorded just before.
      ASSERT_GE(i, 1u);
      const Step& wait = p.steps[i - 1];
      ASSERT_EQ(wait.op, Op::kWait);
      EXPECT_EQ(wait.stream, StreamKind::kComm);
      ASSERT_EQ(recorded.count(wait.event), 1u);
      EXPECT_EQ(recorded_on[wait.event], StreamKind::kCompute);
      ASSERT_LT(i + 1, p.steps.size());
      EXPECT_EQ(p.steps[i + 1].op, Op::kRecord);
      EXPECT_EQ(p.steps[i + 1].stream, StreamKind::kComm);
      reduced.push_back(s.bucket);
    }
    if (s.op == Op::kUpdate) {
      EXPECT_EQ(s.stream, StreamKind::kCompute);
      const Step& wait = p.steps[i - 1];
      ASSERT_EQ(wait.op, Op::kWait);
      EXPECT_EQ(wait.stream, StreamKind::kCompute);
      // It waits for its own bucket's all-reduce: the event recorded right after that kAllReduce.
      ASSERT_EQ(recorded.count(wait.event), 1u);
      const size_t at = recorded[wait.event];
      EXPECT_EQ(p.steps[at - 1].op, Op::kAllReduce);
      EXPECT_EQ(p.steps[at - 1].bucket, s.bucket);
      updated.push_back(s.bucket);
    }
  }
  std::vector<int> all(p.buckets.size());
  for (size_t b = 0; b < all.size(); ++b) all[b] = static_cast<int>(b);
  EXPECT_EQ(reduced, all) << "every bucket all-reduced once, in bucket order";
  EXPECT_EQ(updated, all) << "every bucket updated once, in bucket order";
}

TEST(Collectives, ABucketIsAllReducedRightAfterTheKernelThatFinishesItsLastGradient) {
  // DDP launches a bucket's all-reduce once its last gradient is ready; here the compute stream
  // records the bucket's event before any later backward kernel is issued, also when the bucket
  // closes because the next node's first gradient would overflow it (with small caps: bn2's
  // bucket, which conv2's weight gradient would overflow, waited for conv2's kernel).
  const Graph graph = load_model("fmnist_cnn");
  const std::unique_ptr<Backend> b = make_backend(graph, {BackendKind::kCpu, 8});
  for (const CollectiveOptions& o :
       {CollectiveOptions{.ranks = 2},
        CollectiveOptions{.ranks = 2, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10}}) {
    Program p = build_program(graph, b->value_bytes(), b->facts(), {Policy::kAll, SyncMode::kEvent, true});
    add_collectives(p, o);
    ASSERT_GE(p.buckets.size(), 2u);
    std::map<int, size_t> recorded;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const Step& s = p.steps[i];
      if (s.op == Op::kRecord) recorded[s.event] = i;
      if (s.op != Op::kAllReduce) continue;
      const size_t ready = recorded.at(p.steps[i - 1].event);
      int last = -1;  // the node whose backward kernel finishes the bucket (the last in issue order)
      size_t last_at = 0;
      for (size_t k = 0; k < ready; ++k)
        if (p.steps[k].op == Op::kBackward)
          for (const auto& [node, param] : p.buckets[s.bucket].params)
            if (p.steps[k].node == node) last = node, last_at = k;
      ASSERT_GE(last, 0) << "bucket " << s.bucket << " recorded before its gradients";
      for (size_t k = last_at + 1; k < ready; ++k)
        EXPECT_NE(p.steps[k].op, Op::kBackward)
            << "bucket " << s.bucket << " (last gradient from " << p.node_names[last] << ") waits for backward "
            << p.node_names[p.steps[k].node];
    }
  }
}

TEST(Collectives, OneRankAndEvaluationAreLeftAsTheyAre) {
  const Program before = dag().program(Policy::kAll);
  Program one = before;
  add_collectives(one, {.ranks = 1});
  EXPECT_EQ(one.to_text(), before.to_text());
  EXPECT_TRUE(one.buckets.empty());
  Program eval = dag().program(Policy::kNone, false);
  const size_t steps = eval.steps.size();
  add_collectives(eval, {.ranks = 4});
  EXPECT_EQ(eval.steps.size(), steps) << "evaluation has no gradients to all-reduce";
  EXPECT_TRUE(eval.buckets.empty());
  Program bad = before;
  EXPECT_THROW(add_collectives(bad, {.ranks = 0}), Error);
  EXPECT_THROW(add_collectives(bad, {.ranks = 2, .bucket_bytes = 0}), Error);
}

TEST(CollectiveCosts, RingAllReduceIsTwoNMinusOneStepsOfAnNthEach) {
  // 2(N-1)/N * bytes / bandwidth + 2(N-1) * latency.
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(8'000'000, 4, 1e9, 1e-5), 6.0 / 4 * 8e-3 + 6 * 1e-5);
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(8'000'000, 2, 1e9, 0), 8e-3);
  EXPECT_EQ(ring_all_reduce_seconds(8'000'000, 1, 1e9, 1e-5), 0.0);
  // Bandwidth term tends to twice the bytes over the bandwidth as N grows.
  EXPECT_LT(ring_all_reduce_seconds(1'000'000, 1024, 1e9, 0), 2e-3);
  EXPECT_GT(ring_all_reduce_seconds(1'000'000, 1024, 1e9, 0), 1.99e-3);
}

TEST(CollectiveCosts, ChosenCostsUseTheNetworkAndShareTheLinkOnlyWhenItCrossesIt) {
  NetworkCosts c;
  c.nodes = {{"a", "relu", {{"-", 1e-3, 1e-3, 0}}}};
  c.link_bytes_per_second = 20e9;
  const ChosenCosts none(c, {0});
  EXPECT_EQ(none.all_reduce_seconds(1 << 20, 8), 0.0) << "no network: collectives free";
  EXPECT_EQ(none.slowdown_when_sharing_host_link(), 1.0);
  c.network = {.name = "ib", .bytes_per_second = 10e9, .latency_seconds = 2e-6, .shares_host_link = true};
  const ChosenCosts ib(c, {0});
  EXPECT_DOUBLE_EQ(ib.all_reduce_seconds(1 << 20, 8), ring_all_reduce_seconds(1 << 20, 8, 10e9, 2e-6));
  EXPECT_EQ(ib.all_reduce_seconds(1 << 20, 1), 0.0);
  EXPECT_DOUBLE_EQ(ib.slowdown_when_sharing_host_link(), 1.5) << "(L + N) / L = (20 + 10) / 20";
  c.network.bytes_per_second = 40e9;  // faster than the link: capped at the link
  EXPECT_DOUBLE_EQ(ChosenCosts(c, {0}).slowdown_when_sharing_host_link(), 2.0);
  c.network.shares_host_link = false;  // NVLink
  EXPECT_EQ(ChosenCosts(c, {0}).slowdown_when_sharing_host_link(), 1.0);
}

// Seconds during which both an op of `a` and an op of `b` run, from the predicted trace.
double overlap(const SimResult& r, StreamKind a, StreamKind b) {
  double total = 0;
  for (const TimelineOp& x : r.ops)
    for (const TimelineOp& y : r.ops)
      if (x.stream == a && y.stream == b) total += std::max(0.0, std::min(x.end, y.end) - std::max(x.start, y.start));
  return total;
}

TEST(SimulatedCollectives, OneRankIsExactlyTheStepWithoutCollectives) {
  const ParallelCosts costs(1e9);
  for (Policy policy : {Policy::kNone, Policy::kAll}) {
    const Program p = dag().program(policy);
    Program one = p;
    add_collectives(one, {.ranks = 1});
    const SimResult a = simulate(p, costs), b = simulate(one, costs);
    EXPECT_EQ(a.iteration_seconds, b.iteration_seconds);
    EXPECT_EQ(a.update_seconds, b.update_seconds);
    EXPECT_GT(a.update_seconds, 0.0);
    EXPECT_EQ(a.busy_seconds, b.busy_seconds);
    EXPECT_EQ(b.busy_seconds[static_cast<int>(StreamKind::kComm)], 0.0);
    EXPECT_EQ(b.all_reduce_hidden, 0.0);
  }
}

TEST(SimulatedCollectives, AllReducesCostTheRingAndUpdatesSumToTheOneRankUpdate) {
  const ParallelCosts costs(0);
  const Program one = dag().program(Policy::kNone);
  Program four = one;
  add_collectives(four, {.ranks = 4, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10});
  const SimResult r1 = simulate(one, costs), r4 = simulate(four, costs);
  double ring = 0;
  for (const GradientBucket& b : four.buckets) ring += costs.all_reduce_seconds(b.bytes, 4);
  EXPECT_NEAR(r4.busy_seconds[static_cast<int>(StreamKind::kComm)], ring, 1e-15);
  EXPECT_NEAR(r4.update_seconds, r1.update_seconds, 1e-15) << "per-bucket updates cover every trainable weight once";
  EXPECT_GE(r4.iteration_seconds, r1.iteration_seconds - 1e-12);
  // Hidden: the fraction of all-reduce time under compute, as the trace shows it.
  const double comm = r4.busy_seconds[static_cast<int>(StreamKind::kComm)];
  EXPECT_NEAR(r4.all_reduce_hidden, overlap(r4, StreamKind::kComm, StreamKind::kCompute) / comm, 1e-9);
  EXPECT_GT(r4.all_reduce_hidden, 0.0) << "early buckets overlap the rest of backward";
  EXPECT_LT(r4.all_reduce_hidden, 1.0) << "the last bucket's all-reduce has nothing left to hide under";
}

TEST(SimulatedCollectives, ASlowNetworkIsExposedAndBoundsTheStep) {
  ParallelCosts costs(0);
  costs.comm_bytes_per_second = 1e5;  // all-reduce dwarfs the kernels
  Program p = dag().program(Policy::kNone);
  add_collectives(p, {.ranks = 8, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10});
  const SimResult r = simulate(p, costs);
  const double comm = r.busy_seconds[static_cast<int>(StreamKind::kComm)];
  EXPECT_GE(r.iteration_seconds, comm + r.forward_seconds);
  EXPECT_LT(r.all_reduce_hidden, 0.05);
  EXPECT_GT(r.stall_seconds, 0.9 * comm - r.busy_seconds[static_cast<int>(StreamKind::kCompute)])
      << "the updates wait for the all-reduces";
}

// A hand-made Program: a copy and an all-reduce issued together, each 1 s alone.
Program copy_and_all_reduce(bool reduce_first) {
  Program p;
  p.training = false;
  p.ranks = 2;
  p.tensors = {{.name = "x", .bytes = 1'000'000'000}};
  p.buckets = {{.tensors = {0}, .params = {}, .bytes = 1'000'000'000}};
  p.event_count = 1;
  Step copy{Op::kOffload, StreamKind::kD2H, -1, 0, -1, 0};
  Step reduce{Op::kAllReduce, StreamKind::kComm};
  reduce.bucket = 0;
  p.steps = reduce_first ? std::vector<Step>{reduce, copy} : std::vector<Step>{copy, reduce};
  return p;
}

TEST(SimulatedCollectives, SharingTheHostLinkStretchesTheOverlappedPartOfTheLaterOp) {
  ParallelCosts costs(1e9);  // the copy: 1 s
  costs.comm_bytes_per_second = 1e9;
  // 2(N-1)/N = 1 at two ranks, plus 2 messages of 1 us: the all-reduce alone is 1 s + 2 us.
  const double reduce = 1.0 + 2e-6;
  for (bool reduce_first : {false, true}) {
    SCOPED_TRACE(reduce_first ? "all-reduce issued first" : "copy issued first");
    const Program p = copy_and_all_reduce(reduce_first);
    costs.share = 1.0;  // NVLink: no interaction
    SimResult r = simulate(p, costs);
    EXPECT_NEAR(r.iteration_seconds, reduce, 1e-12);
    costs.share = 2.0;  // the later op runs at half speed while the earlier one is in flight
    r = simulate(p, costs);
    const double first = reduce_first ? reduce : 1.0, alone = reduce_first ? 1.0 : reduce;
    // The later op does half of `first` seconds of work under the earlier one, then the rest
    // alone: d = alone + (1 - 1/2) * first.
    EXPECT_NEAR(r.iteration_seconds, alone + first / 2, 1e-9);
    EXPECT_NEAR(
        r.busy_seconds[static_cast<int>(StreamKind::kComm)] + r.busy_seconds[static_cast<int>(StreamKind::kD2H)],
        reduce + 1.0 + first / 2, 1e-9);
    // Wholly under a long rival, an op takes `share` times its work.
    costs.share = 1.9;
    Program long_copy = p;
    long_copy.tensors[0].bytes = 4'000'000'000;  // the copy: 4 s
    r = simulate(long_copy, costs);
    if (!reduce_first) EXPECT_NEAR(r.busy_seconds[static_cast<int>(StreamKind::kComm)], 1.9 * reduce, 1e-3);
  }
}

TEST(SimulatedCollectives, OnTheCpuBackendCommIsSlowedByComputeLikeACopy) {
  // The CPU backend's communicator is a thread beside the kernels, as its copy engine is: the
  // compute-vs-copy slowdown applies to it; with slowdown 1 (a GPU) the all-reduce is the ring.
  struct SlowCpu : ParallelCosts {
    double slow = 1;
    double slowdown_when_overlapped(StreamKind) const override { return slow; }
  } costs;
  Program p = dag().program(Policy::kNone);
  add_collectives(p, {.ranks = 2, .bucket_bytes = 64 << 10, .first_bucket_bytes = 16 << 10});
  double ring = 0;
  for (const GradientBucket& b : p.buckets) ring += costs.all_reduce_seconds(b.bytes, 2);
  const SimResult gpu = simulate(p, costs);
  EXPECT_NEAR(gpu.busy_seconds[static_cast<int>(StreamKind::kComm)], ring, 1e-15);
  ASSERT_GT(overlap(gpu, StreamKind::kComm, StreamKind::kCompute), 0.0);
  costs.slow = 3;
  const SimResult cpu = simulate(p, costs);
  // Each all-reduce is issued before the backward kernels it overlaps, so the later-issued
  // kernels carry the stretch (simulator.h): (3 - 1) x their overlap with the comm stream.
  EXPECT_NEAR(cpu.busy_seconds[static_cast<int>(StreamKind::kComm)], ring, 1e-15);
  const int compute = static_cast<int>(StreamKind::kCompute);
  // (The stretch solves d = work + 2 overlap(d) in a few fixed-point steps: close, not exact.)
  const double stretch = cpu.busy_seconds[compute] - gpu.busy_seconds[compute];
  const double under_comm = overlap(cpu, StreamKind::kCompute, StreamKind::kComm);
  EXPECT_LE(stretch, 2 * under_comm + 1e-12);
  EXPECT_GT(stretch, 0.9 * 2 * under_comm) << "kernels issued under an all-reduce run 3 times slower there";
}

}  // namespace test_collectives
}  // namespace vdnn
