// Weights streamed from host memory (program_builder.h ProgramOptions::streamed_weights,
// plan/planned_inference.h): an inference Net under a budget smaller than its weights and working
// set keeps some layers' weights on the host and prefetches them one weighted layer ahead. The
// Program's order is checked step by step, the planner streams the largest layers first and only as
// many as it must, and the logits are the resident Net's bit for bit (the same kernels read the
// same weights, only from another place).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "backends/backend_targets.h"
#include "cpu_facts.h"
#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "memory/offset_allocator.h"
#include "plan/planned_inference.h"
#include "plan/program_builder.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_streamed_weights {

constexpr int64_t kBatch = 8;

struct Facts : test::CpuFacts {
  explicit Facts(const std::string& model) : CpuFacts(model, kBatch) {}
  Program program(const std::vector<bool>& streamed) const {
    ProgramOptions o{Policy::kNone, SyncMode::kEvent, /*training=*/false};
    o.inference = true;
    o.streamed_weights = streamed;
    return build_program(graph, value_bytes, facts, o);
  }
};

// Index of the first step matching `op` on `node` (kForward) or `tensor` (the others).
size_t step_of(const Program& p, Op op, int node_or_tensor) {
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].op == op && (op == Op::kForward ? p.steps[i].node : p.steps[i].tensor) == node_or_tensor) return i;
  ADD_FAILURE() << "no " << static_cast<int>(op) << " step for " << node_or_tensor;
  return p.steps.size();
}

TEST(StreamedWeights, EachLayersWeightsArePrefetchedOneWeightedLayerAheadAndFreedAfterIt) {
  const Facts f("fmnist_cnn");
  const int n = static_cast<int>(f.graph.nodes().size());
  Program p = f.program(std::vector<bool>(n, true));
  int previous = -1;                     // the previous weighted layer
  size_t streamed = 0, host_region = 0;  // the copies' bytes, and rounded as the host region places them
  for (int i = 0; i < n; ++i) {
    if (p.nodes[i].params.empty()) continue;
    const size_t forward = step_of(p, Op::kForward, i);
    for (int t : p.nodes[i].params) {
      const ProgramTensor& w = p.tensors[t];
      EXPECT_TRUE(w.streamed && !w.persistent && !w.offloaded) << w.name;
      streamed += w.bytes;
      host_region += OffsetAllocator::round_up(w.bytes);
      const size_t alloc = step_of(p, Op::kAlloc, t), prefetch = step_of(p, Op::kPrefetch, t);
      EXPECT_EQ(p.steps[alloc].stream, StreamKind::kH2D) << w.name;
      EXPECT_EQ(p.steps[prefetch].stream, StreamKind::kH2D) << w.name;
      EXPECT_LT(alloc, prefetch) << w.name;
      // Issued before the previous weighted layer's kernel (the first: before the input upload),
      // so the copy overlaps it, and no earlier (two layers' weights on the device at most).
      if (previous >= 0) {
        EXPECT_LT(prefetch, step_of(p, Op::kForward, previous)) << w.name;
        if (previous > 0) EXPECT_GT(prefetch, step_of(p, Op::kForward, previous - 1)) << w.name;
      } else {
        EXPECT_LT(prefetch, step_of(p, Op::kLoadInput, p.input_tensor)) << w.name;
      }
      // The kernel waits for the copy on the compute stream, and the weight is freed after it.
      bool waited = false;
      for (size_t s = prefetch; s < forward; ++s)
        waited |= p.steps[s].op == Op::kWait && p.steps[s].stream == StreamKind::kCompute &&
                  p.steps[s].event == p.steps[prefetch].event;
      EXPECT_TRUE(waited) << w.name;
      EXPECT_GT(step_of(p, Op::kFree, t), forward) << w.name;
    }
    previous = i;
  }
  EXPECT_EQ(p.streamed_bytes(), streamed);
  EXPECT_EQ(p.offloaded_bytes(), 0u);
  const MemoryPlan plan = plan_memory(p, SIZE_MAX);
  EXPECT_EQ(plan.host_bytes, host_region);
}

TEST(StreamedWeights, ARuleItCannotFollowIsRefused) {
  const Facts f("fmnist_cnn");
  const std::string e = test::error_of([&] { f.program(std::vector<bool>(3, true)); });
  EXPECT_NE(e.find("3 flags for model 'fmnist_cnn'"), std::string::npos) << e;
  ProgramOptions training{Policy::kNone, SyncMode::kEvent, /*training=*/true};
  training.streamed_weights.assign(f.graph.nodes().size(), true);
  const std::string t = test::error_of([&] { build_program(f.graph, f.value_bytes, f.facts, training); });
  EXPECT_NE(t.find("only an inference Program streams its weights"), std::string::npos) << t;
  // Nor a training Net's evaluation Program, whose weights sit where the training Program's do.
  ProgramOptions evaluation{Policy::kNone, SyncMode::kEvent, /*training=*/false};
  evaluation.streamed_weights.assign(f.graph.nodes().size(), true);
  const std::string v = test::error_of([&] { build_program(f.graph, f.value_bytes, f.facts, evaluation); });
  EXPECT_NE(v.find("only an inference Program streams its weights"), std::string::npos) << v;
}

TEST(StreamedWeights, ThePlannerStreamsTheLargestLayersFirstAndOnlyAsManyAsItMust) {
  const Facts f("fmnist_cnn");
  const PlannedInference resident = plan_inference(f.graph, f.value_bytes, f.facts, 0);
  const size_t n = f.graph.nodes().size();
  auto weights = [&](size_t i) {
    return std::accumulate(f.facts[i].param_bytes.begin(), f.facts[i].param_bytes.end(), size_t{0});
  };
  size_t previous_count = 0;
  for (size_t budget :
       {resident.smallest_budget - 1, (resident.smallest_budget + resident.smallest_streamed_budget) / 2,
        resident.smallest_streamed_budget}) {
    SCOPED_TRACE(budget);
    const PlannedInference p = plan_inference(f.graph, f.value_bytes, f.facts, budget);
    ASSERT_TRUE(p.fits);
    ASSERT_EQ(p.streamed.size(), n);
    EXPECT_LE(p.plan.smallest_bytes, budget);
    size_t count = 0, smallest_streamed = SIZE_MAX, largest_resident = 0;
    for (size_t i = 0; i < n; ++i) {
      if (weights(i) == 0) continue;
      if (p.streamed[i])
        smallest_streamed = std::min(smallest_streamed, weights(i));
      else
        largest_resident = std::max(largest_resident, weights(i));
      count += p.streamed[i];
    }
    EXPECT_GE(count, 1u);
    EXPECT_GE(count, previous_count);  // a smaller budget streams no fewer layers
    previous_count = count;
    if (smallest_streamed != SIZE_MAX) EXPECT_GE(smallest_streamed, largest_resident);
    EXPECT_GT(p.program.streamed_bytes(), 0u);
  }
}

TEST(StreamedWeights, LogitsAreTheResidentNetsBitForBit) {
  for (const std::string model : {"fmnist_cnn", "fmnist_dag"}) {
    SCOPED_TRACE(model);
    Net resident(load_model(model), {.batch = kBatch, .inference = true});
    const PlannedInference all =
        plan_inference(resident.graph(), resident.backend().value_bytes(), resident.backend().facts(), 0);
    Net streamed(load_model(model),
                 {.batch = kBatch, .device_memory = all.smallest_streamed_budget, .inference = true});
    ASSERT_FALSE(streamed.streamed_weights().empty());
    EXPECT_LT(streamed.arena_bytes(), resident.arena_bytes());
    Net trained(load_model(model), {.batch = kBatch, .seed = 7});  // seeded weights to copy
    for (size_t i = 0; i < trained.params().size(); ++i) {
      const std::vector<float> w = trained.export_param(i);
      resident.import_param(i, w);
      streamed.import_param(i, w);
      EXPECT_EQ(streamed.export_param(i), w) << streamed.params()[i].name;  // from its host copy
    }
    const Shape& s = resident.graph().input_shape();
    const Dataset d = make_synthetic(kBatch, s.channels(), s.height(), s.width(), resident.graph().classes(), 2);
    for (int pass = 0; pass < 2; ++pass) {  // twice: the host copies are read again, not consumed
      resident.set_batch(d.images.data(), d.labels.data(), kBatch);
      streamed.set_batch(d.images.data(), d.labels.data(), kBatch);
      EXPECT_EQ(resident.forward(false), streamed.forward(false));
      ASSERT_EQ(resident.logits().size(), streamed.logits().size());
      EXPECT_EQ(
          std::memcmp(resident.logits().data(), streamed.logits().data(), resident.logits().size() * sizeof(float)), 0);
    }
    EXPECT_EQ(resident.weights_sha256(), streamed.weights_sha256());
  }
}

TEST(StreamedWeights, WithStreamingOffEveryWeightStaysAndTheResidentSmallestIsNamed) {
  const Facts f("fmnist_cnn");
  const PlannedInference resident = plan_inference(f.graph, f.value_bytes, f.facts, 0);
  NetOptions o{
      .batch = kBatch, .device_memory = resident.smallest_budget - 1, .inference = true, .stream_weights = false};
  const std::string e = test::error_of([&] { Net n(load_model("fmnist_cnn"), o); });
  EXPECT_NE(e.find("(" + std::to_string(resident.smallest_budget) + " bytes)"), std::string::npos) << e;
  EXPECT_NE(e.find("streaming them from host memory is off"), std::string::npos) << e;
  o.device_memory = resident.smallest_budget;
  EXPECT_TRUE(Net(load_model("fmnist_cnn"), o).streamed_weights().empty());
}

}  // namespace test_streamed_weights
}  // namespace vdnn
