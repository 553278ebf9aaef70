// Placement without waste (issue 17): the offline placement (plan/block_placement.h) against the
// brute-force optimum on small random inputs; no two blocks alive together overlap, on random
// inputs of every size (the scan cap and the skyline included); and on every zoo network and
// policy the placed Programs reach at most 1.02x their peak of live bytes, never overlap two live
// tensors, and order every tensor after every earlier tenant of its bytes (the reuse waits).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>
#include <string>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/block_placement.h"
#include "plan/memory_plan.h"
#include "plan/planner.h"
#include "plan/program_builder.h"
#include "planning/plan_source.h"
#include "util/size_parse.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_block_placement {

// Lifetimes overlap and address ranges overlap.
bool clash(const Block& a, size_t at_a, const Block& b, size_t at_b) {
  return a.begin < b.end && b.begin < a.end && at_a < at_b + b.bytes && at_b < at_a + a.bytes;
}

void expect_no_clash(const std::vector<Block>& blocks, const std::vector<size_t>& at, size_t base) {
  ASSERT_EQ(at.size(), blocks.size());
  std::vector<int> by_begin(blocks.size());
  std::iota(by_begin.begin(), by_begin.end(), 0);
  std::sort(by_begin.begin(), by_begin.end(), [&](int a, int b) { return blocks[a].begin < blocks[b].begin; });
  for (size_t i = 0; i < by_begin.size(); ++i) {
    const int a = by_begin[i];
    ASSERT_GE(at[a], base);
    for (size_t j = i + 1; j < by_begin.size() && blocks[by_begin[j]].begin < blocks[a].end; ++j)
      ASSERT_FALSE(clash(blocks[a], at[a], blocks[by_begin[j]], at[by_begin[j]])) << a << " and " << by_begin[j];
  }
}

// n blocks of 256 B..4 KiB over `steps` steps, each alive for 1..max_life steps.
std::vector<Block> random_blocks(Rng& rng, size_t n, size_t steps, size_t max_life) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    const size_t begin = rng.below(steps);
    blocks.push_back({256 * (1 + rng.below(16)), begin, begin + 1 + rng.below(max_life)});
  }
  return blocks;
}

// The optimum: a lowest-offset placement in some order is optimal (block_placement.h), so the
// best over all n! orders is the least high water any placement reaches.
size_t optimum(const std::vector<Block>& blocks, size_t base) {
  std::vector<int> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  size_t best = SIZE_MAX;
  do best = std::min(best, high_water(blocks, place_in_order(blocks, order, base), base));
  while (std::next_permutation(order.begin(), order.end()));
  return best;
}

// Stated bound: on 600 random inputs of up to 7 blocks, within 1.12x of the optimum, and at it on
// at least 97% of them (measured: 598 of 600, worst 1.111x; lowest offset in the size order alone:
// 1.19x).
// placement_fits answers "is place_blocks' high water at most the capacity" exactly, stopping at the
// first candidate that fits: at the high water and above yes, one byte below no, on inputs small
// (perturbed orders too) and large (one order).
TEST(BlockPlacement, PlacementFitsIsExactlyTheHighWaterComparison) {
  Rng rng(23);
  for (size_t n : {5u, 40u, 300u, 9000u}) {
    for (int trial = 0; trial < (n > 1000 ? 1 : 10); ++trial) {
      const std::vector<Block> blocks = random_blocks(rng, n, 4 * n, n);
      const size_t base = 4096 * static_cast<size_t>(trial);
      const size_t top = high_water(blocks, place_blocks(blocks, base), base);
      EXPECT_TRUE(placement_fits(blocks, base, top)) << n << " blocks";
      EXPECT_TRUE(placement_fits(blocks, base, top + 1)) << n << " blocks";
      EXPECT_FALSE(placement_fits(blocks, base, top - 1)) << n << " blocks";
    }
  }
}

TEST(BlockPlacement, ReachesTheBruteForceOptimumOnSmallRandomInputs) {
  Rng rng(17);
  int at_optimum = 0, cases = 600;
  double worst = 1;
  for (int c = 0; c < cases; ++c) {
    const std::vector<Block> blocks = random_blocks(rng, 1 + c % 7, 12, 5);
    const size_t base = 256 * static_cast<size_t>(c % 3);
    const std::vector<size_t> at = place_blocks(blocks, base);
    expect_no_clash(blocks, at, base);
    const size_t got = high_water(blocks, at, base), best = optimum(blocks, base);
    ASSERT_GE(got, best);
    at_optimum += got == best;
    worst = std::max(worst, static_cast<double>(got - base) / static_cast<double>(best - base));
  }
  RecordProperty("worst_ratio", std::to_string(worst));
  std::printf("[ placement ] at the optimum on %d of %d; worst %.3fx\n", at_optimum, cases, worst);
  EXPECT_LE(worst, 1.12);
  EXPECT_GE(at_optimum, cases * 97 / 100);
}

// Random inputs from a few blocks to past the size where the scan is capped and blocks go on the
// skyline: never two live blocks in one place, and deterministic.
TEST(BlockPlacement, NeverPutsTwoLiveBlocksInOnePlace) {
  Rng rng(5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{50}, size_t{3000}, size_t{20000}}) {
    SCOPED_TRACE(n);
    const std::vector<Block> blocks = random_blocks(rng, n, n * 2 + 1, 200);
    const std::vector<size_t> at = place_blocks(blocks, 4096);
    expect_no_clash(blocks, at, 4096);
    EXPECT_EQ(place_blocks(blocks, 4096), at);
  }
}

// Vector clocks over the three streams: which events a stream's next operation is ordered after.
class HappensBefore {
 public:
  explicit HappensBefore(const Program& p)
      : clock_of_event_(static_cast<size_t>(p.event_count)), stream_of_event_(clock_of_event_.size()) {}
  using Clock = std::array<int, 3>;
  void step(const Step& s) {
    Clock& c = clock_[index(s.stream)];
    if (s.op == Op::kWait) {
      for (int k = 0; k < 3; ++k) c[k] = std::max(c[k], clock_of_event_.at(s.event)[k]);
    } else if (s.op == Op::kSync) {
      Clock all{};
      for (const Clock& x : clock_)
        for (int k = 0; k < 3; ++k) all[k] = std::max(all[k], x[k]);
      clock_.fill(all);
    } else if (s.event >= 0) {
      ++c[index(s.stream)];
      clock_of_event_.at(s.event) = c;
      stream_of_event_.at(s.event) = index(s.stream);
    }
  }
  // Whether `stream`'s next operation comes after event e completes.
  bool after(StreamKind stream, int e) const {
    const int k = stream_of_event_.at(e);
    return clock_[index(stream)][k] >= clock_of_event_.at(e)[k];
  }

 private:
  static int index(StreamKind s) { return static_cast<int>(s); }
  std::array<Clock, 3> clock_{};
  std::vector<Clock> clock_of_event_;
  std::vector<int> stream_of_event_;
};

// One placed Program: no two live tensors overlap; every alloc is ordered (after its waits) after
// every event that ended every earlier tenant of any of its bytes.
void check_placed(const Program& p) {
  struct Tenancy {
    size_t begin, end, offset, bytes;
    std::vector<int> events;  // of its free
  };
  std::vector<Tenancy> done, live(p.tensors.size(), Tenancy{0, SIZE_MAX, 0, 0, {}});
  std::vector<bool> on(p.tensors.size(), false);
  HappensBefore hb(p);
  auto bytes_of = [&](int t) { return (p.tensors[t].bytes + 255) / 256 * 256; };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    hb.step(s);
    if (s.op == Op::kAlloc) {
      const size_t lo = s.offset, hi = s.offset + bytes_of(s.tensor);
      for (size_t t = 0; t < p.tensors.size(); ++t)
        if (on[t] || p.tensors[t].persistent) {
          const size_t o = on[t] ? live[t].offset : p.tensors[t].offset,
                       b = on[t] ? live[t].bytes : bytes_of(static_cast<int>(t));
          ASSERT_FALSE(o < hi && lo < o + b)
              << "'" << p.tensors[s.tensor].name << "' overlaps live '" << p.tensors[t].name << "'";
        }
      // Its waits follow it: check the ordering at the first step after them.
      size_t j = i + 1;
      HappensBefore after = hb;
      for (; j < p.steps.size() && p.steps[j].op == Op::kWait && p.steps[j].stream == s.stream; ++j)
        after.step(p.steps[j]);
      for (const Tenancy& old : done)
        if (old.offset < hi && lo < old.offset + old.bytes)
          for (int e : old.events)
            ASSERT_TRUE(after.after(s.stream, e))
                << "'" << p.tensors[s.tensor].name << "' at step " << i << " is not ordered after event " << e;
      live[s.tensor] = {i, SIZE_MAX, s.offset, bytes_of(s.tensor), {}};
      on[s.tensor] = true;
    } else if (s.op == Op::kFree) {
      live[s.tensor].end = i;
      live[s.tensor].events = s.events;
      done.push_back(live[s.tensor]);
      on[s.tensor] = false;
    }
  }
}

// Places one Program: fits every capacity, at most 1.02x its peak of live bytes, and (with
// check_waits) no overlap and every reuse ordered. Returns smallest / peak.
double place_and_check(Program p, bool check_waits) {
  const MemoryPlan m = plan_memory(p, SIZE_MAX);
  EXPECT_TRUE(m.fits);
  EXPECT_EQ(m.high_water_bytes, m.smallest_bytes);
  const double ratio = static_cast<double>(m.smallest_bytes) / static_cast<double>(m.peak_bytes);
  EXPECT_LE(ratio, 1.02) << format_bytes(m.smallest_bytes) << " for a peak of " << format_bytes(m.peak_bytes);
  if (check_waits) check_placed(p);
  return ratio;
}

// Every zoo network (small batches keep it fast: the figures at the paper's batches are in
// docs/benchmarks.md), on the Titan X profile's sizes, training Programs of none/conv/all with the
// fastest and the leanest algorithms, vDNN's prefetch and a look-ahead, and the evaluation Program.
TEST(BlockPlacement, EveryZooNetworkPlacesWithinTwoPercentOfItsPeak) {
  double worst = 0;
  std::string worst_what;
  for (const std::string& model : model_names()) {
    const Graph graph = load_model(model);
    const PlanInputs in = plan_inputs(graph, 8, {.device = "titan-x-maxwell"});
    const Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
    const bool all_waits = model == "fmnist_dag" || model == "googlenet" || model == "resnet50" || model == "vgg16";
    for (const AlgoChoice& algos : {in.costs.fastest(), in.costs.leanest()})
      for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
        for (int depth : {0, 3})
          for (bool training : {true, false}) {
            if ((!training || policy == Policy::kNone) && depth > 0) continue;
            if (!training && policy != Policy::kNone) continue;
            const std::string what =
                VDNN_MSG(model << " " << to_string(policy) << (algos == in.costs.fastest() ? "+fastest" : "+leanest")
                               << (training ? " training" : " evaluation") << " depth " << depth);
            SCOPED_TRACE(what);
            const bool waits = all_waits || (policy == Policy::kAll && training && depth == 0);
            const double ratio = place_and_check(planner.program({policy, algos}, training, depth), waits);
            if (ratio > worst) worst = ratio, worst_what = what;
          }
  }
  std::printf("[ placement ] worst smallest/peak %.4f (%s)\n", worst, worst_what.c_str());
}

// The same on this CPU's kernels (their layouts and scratchpads) for the small networks.
TEST(BlockPlacement, CpuProgramsPlaceWithinTwoPercentOfTheirPeak) {
  for (const std::string model : {"fmnist_cnn", "fmnist_dag", "vgg_cifar"}) {
    const Graph graph = load_model(model);
    const std::unique_ptr<Backend> backend = make_backend(graph, {BackendKind::kCpu, 16});
    for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
      for (bool training : {true, false}) {
        SCOPED_TRACE(VDNN_MSG(model << " " << to_string(policy) << (training ? " training" : " evaluation")));
        ProgramOptions o{policy, SyncMode::kEvent, training};
        place_and_check(build_program(graph, backend->value_bytes(), backend->facts(), o), true);
      }
    // Inference with every weight streamed (allocated on the h2d stream, freed on compute): each
    // reuse of a streamed weight's range still waits for its previous tenant's end.
    SCOPED_TRACE(model + " inference, every weight streamed");
    ProgramOptions streamed{Policy::kNone, SyncMode::kEvent, false};
    streamed.inference = true;
    streamed.streamed_weights.assign(graph.nodes().size(), true);
    place_and_check(build_program(graph, backend->value_bytes(), backend->facts(), streamed), true);
  }
}

}  // namespace test_block_placement
}  // namespace vdnn
