// Backend targets (backend_api/backend_target.h): what a target predicts without a device is what its
// live backend declares. For every zoo model x policy x target that can be instantiated here, the
// Program and memory plan built from the target's facts equal, byte for byte, those built from the
// instantiated backend's; the CUDA target's sizes are the functions the CUDA kernels call
// (everywhere) and equal the live CUDA backend's where a GPU answers; `vdnn plan --device <gpu>`
// plans with the CUDA target's sizes (VGG-16's int32 max-pool argmax and float dropout masks).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "backends/cuda_target/cuda_sizes.h"
#include "cli/cli_run.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/memory_plan.h"
#include "plan/planner.h"
#include "plan/program_builder.h"
#include "planning/plan_source.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_backend_target {

constexpr int64_t kBatch = 2;  // small: the whole zoo stays a few seconds

void expect_same_facts(const TargetFacts& want, const std::vector<size_t>& value_bytes,
                       const std::vector<NodeFacts>& facts) {
  EXPECT_EQ(want.value_bytes, value_bytes);
  ASSERT_EQ(want.facts.size(), facts.size());
  for (size_t i = 0; i < facts.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(want.facts[i].out_bytes, facts[i].out_bytes);
    EXPECT_EQ(want.facts[i].saved_bytes, facts[i].saved_bytes);
    EXPECT_EQ(want.facts[i].scratch_bytes, facts[i].scratch_bytes);
    EXPECT_EQ(want.facts[i].param_bytes, facts[i].param_bytes);
    EXPECT_EQ(want.facts[i].in_place, facts[i].in_place);
    EXPECT_EQ(want.facts[i].saved_regenerated, facts[i].saved_regenerated);
  }
}

// A Program and its placement at its smallest budget, as text: every step (to_text), every
// tensor's bytes, class, flags and offset, and the plan's figures.
std::string planned(const Graph& g, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                    Policy policy, bool training) {
  Program p = build_program(g, value_bytes, facts, {training ? policy : Policy::kNone, SyncMode::kEvent, training});
  const MemoryPlan m = plan_memory(p, minimum_budget(p));
  std::string out = p.to_text();
  for (const ProgramTensor& t : p.tensors)
    out += VDNN_MSG(t.name << " " << t.bytes << " " << static_cast<int>(t.cls) << " " << t.persistent << t.offloaded
                           << " @" << t.offset << "\n");
  for (const Step& s : p.steps) out += VDNN_MSG(s.offset << ",");
  out += VDNN_MSG("\nfits " << m.fits << " capacity " << m.capacity_bytes << " peak " << m.peak_bytes << " high water "
                            << m.high_water_bytes << " host " << m.host_bytes);
  return out;
}

TEST(BackendTarget, RegistryHoldsCpuAndCudaAndNamesThemWhenAskedForAnother) {
  std::vector<std::string> names;
  for (const BackendTarget* t : backend_targets()) names.push_back(t->name());
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(backend_target("cuda").kind(), BackendKind::kCuda);
  EXPECT_EQ(backend_target("cpu").unavailable_reason(), "");
  try {
    backend_target("tpu");
    ADD_FAILURE() << "a tpu target";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no backend target 'tpu'; registered: cpu, cuda");
  }
}

// Every zoo model x none/conv/all x every target that can be instantiated here (CPU; CUDA too
// where a GPU answers): predicted facts, Programs and placements equal the live backend's.
TEST(BackendTarget, PredictedFactsProgramsAndPlansEqualTheInstantiatedBackendsOverTheZoo) {
  int compared = 0;
  for (const BackendTarget* target : backend_targets()) {
    if (!target->unavailable_reason().empty()) continue;  // CUDA without a GPU: the next tests
    for (const std::string& model : model_names()) {
      SCOPED_TRACE(std::string(target->name()) + " " + model);
      const Graph g = load_model(model);
      const TargetFacts predicted = target->facts(g, kBatch, {});
      const std::unique_ptr<Backend> live =
          target->instantiate(g, {.kind = target->kind(), .batch = kBatch, .conv_algo = ConvAlgo::kDirect});
      const std::vector<size_t> live_values = live->value_bytes();
      const std::vector<NodeFacts> live_facts = live->facts();
      expect_same_facts(predicted, live_values, live_facts);
      for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
        EXPECT_EQ(planned(g, predicted.value_bytes, predicted.facts, policy, true),
                  planned(g, live_values, live_facts, policy, true))
            << to_string(policy);
      EXPECT_EQ(planned(g, predicted.value_bytes, predicted.facts, Policy::kNone, false),
                planned(g, live_values, live_facts, Policy::kNone, false));
      ++compared;
    }
  }
  EXPECT_GE(compared, static_cast<int>(model_names().size()));  // at least the CPU over the zoo
}

// A per-node algorithm choice is honoured by the prediction as by the backend: the CPU target's
// options for a convolution are the kernels its backend builds for that choice.
// Measuring a network's costs on this CPU reports each layer as it is measured (the plan's
// progress: tens of ms a layer, minutes for a long chain, with nothing shown before).
TEST(BackendTarget, CpuMeasuringReportsEachLayerInOrder) {
  const Graph g = load_model("fmnist_cnn");
  std::vector<int> done;
  int total = -1;
  backend_target("cpu").costs(g, kBatch, {.repeats = 1, .on_layer = [&](int d, int t) {
                                 done.push_back(d);
                                 total = t;
                               }});
  EXPECT_EQ(total, static_cast<int>(g.nodes().size()));
  std::vector<int> each(g.nodes().size());
  std::iota(each.begin(), each.end(), 1);
  EXPECT_EQ(done, each);
}

TEST(BackendTarget, CpuAlgorithmOptionsAreTheWorkspaceOfTheKernelsTheBackendBuilds) {
  const Graph g = load_model("vgg16_cifar");
  const BackendTarget& cpu = backend_target("cpu");
  const auto options = cpu.algorithms(g, kBatch);
  ASSERT_EQ(options.size(), g.nodes().size());
  std::vector<ConvAlgo> algos(g.nodes().size(), ConvAlgo::kDirect);
  for (size_t i = 0; i < options.size(); ++i) {
    ASSERT_FALSE(options[i].empty());
    const bool conv = g.nodes()[i].layer->kind() == LayerKind::kConv;
    EXPECT_EQ(options[i][0].name, conv ? "direct" : "-");
    for (const AlgoOption& o : options[i])
      if (o.name == "winograd") algos[i] = ConvAlgo::kWinograd;
  }
  const TargetFacts base = cpu.facts(g, kBatch, {}), chosen = cpu.facts(g, kBatch, algos);
  for (size_t i = 0; i < options.size(); ++i) {
    EXPECT_EQ(options[i][0].workspace_bytes, base.facts[i].scratch_bytes) << i;
    if (algos[i] == ConvAlgo::kWinograd) EXPECT_EQ(options[i][1].workspace_bytes, chosen.facts[i].scratch_bytes) << i;
  }
  const std::unique_ptr<Backend> live =
      cpu.instantiate(g, {.kind = BackendKind::kCpu, .batch = kBatch, .conv_algos = algos});
  expect_same_facts(chosen, live->value_bytes(), live->facts());
}

// The shape-only half, on every machine: the CUDA target's facts are, node by node, what
// cuda_kernel_sizes gives for cuda_kernel_setup, the setup CudaBackend hands its kernels
// (CudaKernel::declare_sizes calls it), for every convolution algorithm.
TEST(CudaTarget, FactsAreTheSizesTheCudaKernelsDeclareOverTheZoo) {
  const BackendTarget& cuda = backend_target("cuda");
  for (const std::string& model : model_names()) {
    const Graph g = load_model(model);
    for (ConvAlgo algo : {ConvAlgo::kDirect, ConvAlgo::kWinograd, ConvAlgo::kAuto}) {
      SCOPED_TRACE(model + " " + to_string(algo));
      const TargetFacts t = cuda.facts(g, kBatch, std::vector<ConvAlgo>(g.nodes().size(), algo));
      TargetFacts kernels;
      kernels.value_bytes.assign(g.values().size(), 0);
      kernels.value_bytes[0] = float_bytes(kBatch, g.input_shape());
      for (size_t i = 0; i < g.nodes().size(); ++i) {
        const CudaKernelSetup setup = cuda_kernel_setup(g, static_cast<int>(i), kBatch, algo);
        const CudaSizes s = cuda_kernel_sizes(setup);
        kernels.value_bytes[g.nodes()[i].output] = s.out_bytes;
        kernels.facts.push_back(
            {s.out_bytes, s.saved_bytes, s.scratch_bytes, s.param_bytes, setup.in_place, s.saved_regenerated});
      }
      expect_same_facts(kernels, t.value_bytes, t.facts);
    }
  }
}

// Dilation and ReLU6 the CUDA target plans (cuDNN has both; its model offers no Winograd or FFT
// for a dilated convolution); asymmetric padding, which cuDNN's descriptor cannot express, is
// refused in one line naming the layer, before any kernel or device.
TEST(CudaTarget, PlansDilationAndReluSixButRefusesAsymmetricPaddingNamingTheLayer) {
  const BackendTarget& cuda = backend_target("cuda");
  auto net = [](bool lopsided) {
    ModelBuilder b("atrous", {3, 12, 12}, 4);
    b.layer("conv", "wide", {{"channels", 8}, {"kernel", 3}, {"pad", 2}, {"dilation", 2}}).layer("relu6", "act");
    nlohmann::json f = {{"channels", 8}, {"kernel", 3}, {"stride", 2}, {"pad", 1}};
    if (lopsided) f["pad_end"] = 0;
    b.layer("conv", "lopsided", f).layer("fc", "fc", {{"units", 4}}).layer("softmax_cross_entropy", "loss");
    return b.build();
  };
  const Graph ok = net(false);
  EXPECT_NO_THROW(cuda.facts(ok, kBatch, std::vector<ConvAlgo>(ok.nodes().size(), ConvAlgo::kWinograd)));
  const auto options = cuda.algorithms(ok, kBatch);
  // Over the whole batch (the sub-batched variants follow: gemm's im2col in 2 slices at batch 2).
  auto whole_batch = [](const std::vector<AlgoOption>& node) {
    std::vector<std::string> names;
    for (const auto& a : node)
      if (a.sub_batches == 1) names.push_back(a.name);
    return names;
  };
  EXPECT_EQ(whole_batch(options.at(0)), (std::vector<std::string>{"implicit_gemm", "implicit_precomp_gemm", "gemm"}));
  EXPECT_EQ(whole_batch(options.at(2)).size(), 3u);  // stride 2: no Winograd, no FFT either

  const Graph bad = net(true);
  try {
    cuda.facts(bad, kBatch, std::vector<ConvAlgo>(bad.nodes().size(), ConvAlgo::kDirect));
    ADD_FAILURE() << "asymmetric padding planned for cuDNN";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const char* part : {"layer 'lopsided'", "symmetric padding", "pad 1x1 and pad_end 0x0"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
  }
}

// Pooling's asymmetric padding (pad_end, ONNX's auto_pad SAME), which its CUDA kernels do not take
// (one pad per dimension), is refused the same way; symmetric padding plans.
TEST(CudaTarget, RefusesAsymmetricPoolingPaddingNamingTheLayer) {
  const BackendTarget& cuda = backend_target("cuda");
  for (const char* type : {"max_pool", "avg_pool"}) {
    auto net = [&](bool lopsided) {
      ModelBuilder b("same", {3, 8, 8}, 4);
      nlohmann::json f = {{"kernel", 2}, {"stride", 1}, {"pad", 1}};
      if (lopsided) f["pad_end"] = 0;
      b.layer(type, "pool", f).layer("fc", "fc", {{"units", 4}}).layer("softmax_cross_entropy", "loss");
      return b.build();
    };
    const Graph ok = net(false);
    EXPECT_NO_THROW(cuda.facts(ok, kBatch, std::vector<ConvAlgo>(ok.nodes().size(), ConvAlgo::kDirect))) << type;
    const Graph bad = net(true);
    test::expect_error([&] { cuda.facts(bad, kBatch, std::vector<ConvAlgo>(bad.nodes().size(), ConvAlgo::kDirect)); },
                       {"layer 'pool'", "symmetric pooling padding", "pad 1x1 and pad_end 0x0"});
  }
}

// The whole comparison for CUDA, only where a GPU answers (the zoo test above then includes it).
TEST(CudaTarget, EqualsTheLiveCudaBackendWhereAGpuAnswers) {
  const BackendTarget& cuda = backend_target("cuda");
  if (const std::string why = cuda.unavailable_reason(); !why.empty())
    GTEST_SKIP() << "no GPU answers here (" << why << "); the shape-only half runs above";
  for (ConvAlgo algo : {ConvAlgo::kDirect, ConvAlgo::kWinograd, ConvAlgo::kAuto}) {
    const Graph g = load_model("vgg16_cifar");
    const std::unique_ptr<Backend> live =
        cuda.instantiate(g, {.kind = BackendKind::kCuda, .batch = kBatch, .conv_algo = algo});
    expect_same_facts(cuda.facts(g, kBatch, std::vector<ConvAlgo>(g.nodes().size(), algo)), live->value_bytes(),
                      live->facts());
  }
}

// The CUDA target's algorithm options are the roofline's (names and workspace), so the planner's
// per-algorithm workspace is what the target reserves.
TEST(CudaTarget, AlgorithmOptionsAreTheDeviceProfileCostsAlgorithms) {
  const Graph g = load_model("alexnet");
  const BackendTarget& cuda = backend_target("cuda");
  const auto options = cuda.algorithms(g, 8);
  const NetworkCosts c = cuda.costs(g, 8, {.device = "titan-x-maxwell"});
  ASSERT_EQ(options.size(), c.nodes.size());
  for (size_t i = 0; i < options.size(); ++i) {
    ASSERT_EQ(options[i].size(), c.nodes[i].algos.size()) << i;
    for (size_t k = 0; k < options[i].size(); ++k) {
      EXPECT_EQ(options[i][k].name, c.nodes[i].algos[k].name);
      EXPECT_EQ(options[i][k].workspace_bytes, c.nodes[i].algos[k].workspace_bytes);
      EXPECT_EQ(options[i][k].sub_batches, c.nodes[i].algos[k].sub_batches);
    }
  }
}

// `vdnn plan --device titan-x-maxwell` (plan_inputs) sizes VGG-16 at batch 64 as the CUDA kernels
// do: an int32 argmax per max-pool output (374 MiB over the five pools, was 93 MiB with the old
// 1-byte model), a float mask per dropout element; and the whole plan is the target's.
TEST(CudaTarget, GpuProfilePlansUseTheCudaKernelsSizesForVgg16) {
  const Graph g = load_model("vgg16");
  const int64_t n = 64;
  const PlanInputs in = plan_inputs(g, n, {.device = "titan-x-maxwell"});
  expect_same_facts(backend_target("cuda").facts(g, n, {}), in.value_bytes, in.facts);
  size_t pool_saved = 0;
  int pools = 0, dropouts = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& node = g.nodes()[i];
    const size_t elements = static_cast<size_t>(n * g.value(node.output).shape.elements());
    if (node.layer->type() == "max_pool") {
      EXPECT_EQ(in.facts[i].saved_bytes, (std::vector<size_t>{elements * 4})) << node.layer->name();
      pool_saved += in.facts[i].saved_bytes[0];
      ++pools;
    }
    if (node.layer->type() == "dropout") {  // CudaDropoutKernel writes a float mask
      EXPECT_EQ(in.facts[i].saved_bytes, (std::vector<size_t>{elements * 4})) << node.layer->name();
      ++dropouts;
    }
  }
  EXPECT_EQ(pools, 5);
  EXPECT_EQ(dropouts, 2);
  // Per sample: 64x112x112 + 128x56x56 + 256x28x28 + 512x14x14 + 512x7x7 outputs, 4 bytes each.
  EXPECT_EQ(pool_saved,
            size_t{64} * 4 * (64 * 112 * 112 + 128 * 56 * 56 + 256 * 28 * 28 + 512 * 14 * 14 + 512 * 7 * 7));

  // The planner's figures for none with the leanest algorithms (no workspace beyond the kernels'
  // own) are those of the Program built straight from the target's facts.
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const Evaluation e = planner.evaluate({Policy::kNone, in.costs.leanest()}, 0);
  const TargetFacts t = backend_target("cuda").facts(g, n, {});
  Program train = build_program(g, t.value_bytes, t.facts, {Policy::kNone});
  const Program eval = build_program(g, t.value_bytes, t.facts, {Policy::kNone, SyncMode::kEvent, false});
  EXPECT_EQ(e.minimum_budget, minimum_budget(train, eval));
  const MemoryPlan m = plan_memory(train, e.minimum_budget);
  EXPECT_EQ(e.memory.peak_bytes, m.peak_bytes);
  EXPECT_EQ(e.memory.by_class.peak_bytes, m.by_class.peak_bytes);
}

// The CLI end to end: `vdnn plan --device titan-x-maxwell --policy none --json` on VGG-16 at
// batch 64 reports the smallest budget and the peaks of the Programs built from the CUDA target's
// facts with the workspace of the algorithms it lists (its options, by the reported indices).
TEST(CudaTarget, VdnnPlanOnAGpuProfileReportsTheCudaTargetsBudgetAndPeaks) {
  const int64_t n = 64;
  const test::CliRun r = test::vdnn("plan --model vgg16 --batch 64 --device titan-x-maxwell --policy none --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  ASSERT_EQ(j["configurations"].size(), 1u);
  const nlohmann::json& c = j["configurations"][0];
  const Graph g = load_model("vgg16");
  const BackendTarget& cuda = backend_target("cuda");
  TargetFacts t = cuda.facts(g, n, {});
  const auto options = cuda.algorithms(g, n);
  const std::vector<int> chosen = c["algorithms"].get<std::vector<int>>();
  ASSERT_EQ(chosen.size(), t.facts.size());
  for (size_t i = 0; i < chosen.size(); ++i) t.facts[i].scratch_bytes = options[i].at(chosen[i]).workspace_bytes;
  Program train = build_program(g, t.value_bytes, t.facts, {Policy::kNone});
  const Program eval = build_program(g, t.value_bytes, t.facts, {Policy::kNone, SyncMode::kEvent, false});
  const size_t budget = minimum_budget(train, eval);
  EXPECT_EQ(c["minimum_budget"].get<size_t>(), budget);
  const MemoryPlan m = plan_memory(train, budget);
  EXPECT_EQ(c["peak_bytes"].get<size_t>(), m.peak_bytes);
  EXPECT_EQ(c["peak_by_class"]["feature_maps"].get<size_t>(), m.by_class.peak(MemoryClass::kFeatureMaps));
  EXPECT_EQ(c["peak_by_class"]["workspace"].get<size_t>(), m.by_class.peak(MemoryClass::kWorkspace));
}

}  // namespace test_backend_target
}  // namespace vdnn
