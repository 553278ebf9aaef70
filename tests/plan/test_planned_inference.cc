// The forward-only plan of a Net that only infers (plan/planned_inference.h, NetOptions::inference,
// Planner::infer): the device holds the weights and the working set and nothing a training step
// needs, the smallest budget is exact (it runs, one byte less is refused naming it), the logits are
// the training Net's evaluation logits bit for bit, and under a budget the planner trades the
// fastest algorithms' workspace for leaner ones only as far as it must.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "backends/cpu/cpu_isa.h"
#include "cpu_facts.h"
#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/planned_inference.h"
#include "plan/planned_step.h"
#include "plan/planner.h"
#include "planning/plan_source.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_planned_inference {

constexpr int64_t kBatch = 16;

struct Facts : test::CpuFacts {
  explicit Facts(const std::string& model) : CpuFacts(model, kBatch) {}
};

size_t bytes_of(const Program& p, MemoryClass cls) {
  size_t sum = 0;
  for (const ProgramTensor& t : p.tensors)
    if (t.cls == cls) sum += t.bytes;
  return sum;
}

TEST(PlannedInference, HoldsWeightsAndTheWorkingSetOnly) {
  for (const std::string model : {"fmnist_cnn", "fmnist_dag"}) {
    SCOPED_TRACE(model);
    const Facts f(model);
    const PlannedInference p = plan_inference(f.graph, f.value_bytes, f.facts, 0);
    ASSERT_TRUE(p.fits);
    EXPECT_EQ(bytes_of(p.program, MemoryClass::kWeightGrads), 0u);
    EXPECT_EQ(bytes_of(p.program, MemoryClass::kOptimizerState), 0u);
    EXPECT_EQ(bytes_of(p.program, MemoryClass::kGradientMaps), 0u);
    for (const Step& s : p.program.steps) {
      EXPECT_NE(s.op, Op::kBackward);
      EXPECT_NE(s.op, Op::kOffload);
    }
    // The training Net's step needs the gradients and momentum on top (and keeps feature maps for
    // backward): inference needs less than its evaluation Program alone.
    const PlannedStep train = plan_step(f.graph, f.value_bytes, f.facts, {});
    const size_t grads =
        bytes_of(train.eval, MemoryClass::kWeightGrads) + bytes_of(train.eval, MemoryClass::kOptimizerState);
    EXPECT_LE(p.smallest_budget + grads, train.eval_plan.smallest_bytes + 4096);
    const InferencePeak peak = inference_peak(p.plan);
    const size_t weights = bytes_of(p.program, MemoryClass::kWeights);
    EXPECT_GE(peak.weights, weights);  // as placed: each rounded up to the allocator's alignment
    EXPECT_LE(peak.weights, weights + 512 * p.program.tensors.size());
    // Every activation is freed after its last reader: the activations' peak is below their sum, and
    // no more than the training Net's evaluation holds (which frees them the same way).
    EXPECT_LT(peak.activations, bytes_of(p.program, MemoryClass::kFeatureMaps));
    EXPECT_LE(peak.activations, train.eval_plan.by_class.peak(MemoryClass::kFeatureMaps));
    // The kernels' backward-only scratch is not allocated (NodeFacts::forward_scratch_bytes): on
    // fmnist_cnn, the weight gradients' GEMM buffers are most of the evaluation's workspace.
    const size_t eval_workspace = train.eval_plan.by_class.peak(MemoryClass::kWorkspace);
    EXPECT_LE(peak.workspace, eval_workspace);
    if (model == "fmnist_cnn") EXPECT_LT(peak.workspace, eval_workspace);
    EXPECT_LE(peak.total, peak.weights + peak.activations + peak.workspace);
    EXPECT_GE(peak.budget, peak.total);
  }
}

TEST(PlannedInference, TheSmallestBudgetRunsAndOneByteLessIsRefusedNamingIt) {
  // Direct convolutions, so no leaner algorithm can lower these budgets (with `auto`, a CPU where
  // oneDNN picks Winograd for conv2 fits one byte below by going direct: the next test's case).
  const Graph graph = load_model("fmnist_cnn");
  const TargetFacts f =
      backend_target("cpu").facts(graph, kBatch, std::vector<ConvAlgo>(graph.nodes().size(), ConvAlgo::kDirect));
  const PlannedInference resident = plan_inference(graph, f.value_bytes, f.facts, 0);
  EXPECT_TRUE(resident.streamed.empty());
  ASSERT_LT(resident.smallest_streamed_budget, resident.smallest_budget);
  // Every weight resident at the smallest budget; one byte less streams some from host memory.
  NetOptions o{
      .batch = kBatch, .device_memory = resident.smallest_budget, .conv_algo = ConvAlgo::kDirect, .inference = true};
  {
    Net net(load_model("fmnist_cnn"), o);
    EXPECT_EQ(net.arena_bytes(), resident.smallest_budget);
    EXPECT_TRUE(net.streamed_weights().empty());
  }
  o.device_memory = resident.smallest_budget - 1;
  EXPECT_FALSE(Net(load_model("fmnist_cnn"), o).streamed_weights().empty());
  // Every weight streamed: the smallest that runs at all, and one byte less is refused naming it.
  o.device_memory = resident.smallest_streamed_budget;
  EXPECT_EQ(Net(load_model("fmnist_cnn"), o).arena_bytes(), resident.smallest_streamed_budget);
  o.device_memory = resident.smallest_streamed_budget - 1;
  const std::string e = test::error_of([&] { Net small(load_model("fmnist_cnn"), o); });
  EXPECT_NE(e.find("too small to run model 'fmnist_cnn' forward at batch 16"), std::string::npos) << e;
  EXPECT_NE(e.find(describe_budget(resident.smallest_streamed_budget)), std::string::npos) << e;
  EXPECT_NE(e.find("every weight streamed from host memory"), std::string::npos) << e;
  // Below one layer's weights, the message says what would be needed to go further.
  o.device_memory = 4096;
  const std::string tiny = test::error_of([&] { Net t(load_model("fmnist_cnn"), o); });
  EXPECT_NE(tiny.find("layer 'fc1' alone holds"), std::string::npos) << tiny;
}

TEST(PlannedInference, LogitsAreTheTrainingNetsEvaluationLogitsBitForBit) {
  for (const std::string model : {"fmnist_cnn", "fmnist_dag"}) {
    SCOPED_TRACE(model);
    Net trained(load_model(model), {.batch = kBatch, .seed = 3});
    Net infer(load_model(model), {.batch = kBatch, .seed = 3, .inference = true});
    const Shape& s = trained.graph().input_shape();
    const Dataset d = make_synthetic(kBatch, s.channels(), s.height(), s.width(), trained.graph().classes(), 5);
    // A few training steps first, so batch norm's running statistics are not their initial values.
    for (int i = 0; i < 3; ++i) {
      trained.set_batch(d.images.data(), d.labels.data(), kBatch);
      trained.forward(true);
      trained.backward();
    }
    for (size_t i = 0; i < trained.params().size(); ++i) infer.import_param(i, trained.export_param(i));
    trained.set_batch(d.images.data(), d.labels.data(), kBatch - 3);
    infer.set_batch(d.images.data(), d.labels.data(), kBatch - 3);
    const float a = trained.forward(false), b = infer.forward(false);
    EXPECT_EQ(a, b);
    ASSERT_EQ(trained.logits().size(), infer.logits().size());
    EXPECT_EQ(std::memcmp(trained.logits().data(), infer.logits().data(), trained.logits().size() * sizeof(float)), 0);
    EXPECT_EQ(trained.correct(), infer.correct());
    EXPECT_LT(infer.arena_bytes(), trained.arena_bytes());
  }
}

TEST(PlannedInference, AnInferenceNetRefusesToTrainAndTrainingOptions) {
  Net net(load_model("fmnist_cnn"), {.batch = 4, .inference = true});
  const Dataset d = make_synthetic(4, 1, 28, 28, 10, 1);
  net.set_batch(d.images.data(), d.labels.data(), 4);
  for (const std::string& e : {test::error_of([&] { net.forward(true); }), test::error_of([&] { net.backward(); })})
    EXPECT_NE(e.find("built for inference only"), std::string::npos) << e;
  for (size_t i = 0; i < net.params().size(); ++i) {
    const ParamTensor& p = net.params()[i];
    EXPECT_EQ(p.grad, nullptr) << p.name;
    EXPECT_EQ(p.velocity, nullptr) << p.name;
    const std::vector<float> w = net.export_param(i);  // loaded, not seeded: zero until then
    EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](float x) { return x == 0; })) << p.name;
  }
  const std::string e =
      test::error_of([] { Net n(load_model("fmnist_cnn"), {.batch = 4, .policy = Policy::kAll, .inference = true}); });
  EXPECT_NE(e.find("--policy all"), std::string::npos) << e;
}

TEST(PlannedInference, BelowTheFastestKernelsWorkspaceConvolutionsGoDirectUntilItFits) {
  if (!cpu_has_winograd())  // AVX2: vgg_cifar's fastest convolutions are direct already, with no workspace to save
    GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no Winograd, whose workspace this test trades";
  const int64_t batch = 32;
  Net fastest(load_model("vgg_cifar"), {.batch = batch, .inference = true});
  const InferencePeak peak = inference_peak(fastest.eval_plan());
  ASSERT_GT(peak.workspace, size_t{1} << 20) << "vgg_cifar's Winograd convolutions need workspace";
  NetOptions o{.batch = batch, .device_memory = peak.budget - peak.workspace / 2, .inference = true};
  Net lean(load_model("vgg_cifar"), o);
  const std::vector<ConvAlgo>& algos = lean.options().conv_algos;
  const long direct = std::count(algos.begin(), algos.end(), ConvAlgo::kDirect);
  EXPECT_GT(direct, 0);
  EXPECT_LT(direct, std::count_if(lean.graph().nodes().begin(), lean.graph().nodes().end(),
                                  [](const Node& n) { return n.layer->kind() == LayerKind::kConv; }))
      << "only as many as the budget needs";
  EXPECT_LE(lean.arena_bytes(), o.device_memory);
  // The same weights give the same answer within float noise (another algorithm's summation order).
  const Net seeded(load_model("vgg_cifar"), {.batch = batch, .seed = 4});
  for (size_t i = 0; i < seeded.params().size(); ++i) {
    fastest.import_param(i, seeded.export_param(i));
    lean.import_param(i, seeded.export_param(i));
  }
  const Shape& s = lean.graph().input_shape();
  const Dataset d = make_synthetic(batch, s.channels(), s.height(), s.width(), lean.graph().classes(), 6);
  fastest.set_batch(d.images.data(), d.labels.data(), batch);
  lean.set_batch(d.images.data(), d.labels.data(), batch);
  fastest.forward(false);
  lean.forward(false);
  float largest = 0, diff = 0;
  for (size_t i = 0; i < lean.logits().size(); ++i) {
    largest = std::max(largest, std::abs(fastest.logits()[i]));
    diff = std::max(diff, std::abs(fastest.logits()[i] - lean.logits()[i]));
  }
  EXPECT_LE(diff, 1e-4f * std::max(1.0f, largest));
}

TEST(PlannedInference, UnderABudgetOnlyTheWidestWorkspacesGoLeaner) {
  const Graph graph = load_model("vgg16");
  const PlanInputs in = plan_inputs(graph, 8, {.device = "titan-x-maxwell"});
  const Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const InferenceEvaluation free = planner.infer(0);
  ASSERT_TRUE(free.fits);
  EXPECT_EQ(free.leaner_layers, 0);
  const InferencePeak peak = inference_peak(free.planned.plan);
  ASSERT_GT(peak.workspace, 0u);
  // A budget a little below what the fastest algorithms need: some layers go leaner (not all), or
  // the largest layers' weights are streamed, whichever the simulation says is faster.
  const size_t budget = free.planned.smallest_budget - peak.workspace / 4;
  const InferenceEvaluation tight = planner.infer(budget);
  ASSERT_TRUE(tight.fits) << "a budget a quarter of the workspace below the fastest plan fits";
  EXPECT_TRUE(tight.leaner_layers > 0 || tight.streamed_bytes > 0);
  EXPECT_EQ(tight.streamed_bytes, tight.planned.program.streamed_bytes());
  EXPECT_LE(tight.planned.plan.smallest_bytes, budget);
  EXPECT_GE(tight.time.iteration_seconds, free.time.iteration_seconds);
  EXPECT_GT(free.time.iteration_seconds, 0.0);
  // Below one layer's weights (fc6: 392 MiB) nothing fits, streamed or not, and the evaluation
  // says how much it would need.
  size_t widest_layer = 0;
  for (size_t i = 0; i < in.facts.size(); ++i) {
    size_t w = 0;
    for (size_t b : in.facts[i].param_bytes) w += b;
    widest_layer = std::max(widest_layer, w);
  }
  const InferenceEvaluation none = planner.infer(widest_layer);
  EXPECT_FALSE(none.fits);
  EXPECT_GT(none.planned.smallest_streamed_budget, widest_layer);
  EXPECT_GT(none.streamed_bytes, 0u);
}

TEST(PlannedInference, AtBatchOneBelowItsWeightsTheLargestLayersAreStreamed) {
  const Graph graph = load_model("vgg16");
  const PlanInputs in = plan_inputs(graph, 1, {.device = "titan-x-maxwell"});
  const Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const InferenceEvaluation free = planner.infer(0);
  // At batch 1 the weights (528 MiB) are most of the pass and no leaner algorithm helps: in 480 MiB
  // the largest layers' weights are streamed (fc6's 392 MiB and fc7's 64 MiB, prefetched while fc6
  // computes, leave little room for resident ones).
  const InferenceEvaluation streamed = planner.infer(size_t{480} << 20);
  ASSERT_TRUE(streamed.fits);
  EXPECT_GT(streamed.streamed_bytes, 0u);
  EXPECT_LT(streamed.streamed_bytes, inference_peak(free.planned.plan).weights);
  EXPECT_GT(streamed.time.iteration_seconds, free.time.iteration_seconds);  // the copies cost
}

}  // namespace test_planned_inference
}  // namespace vdnn
