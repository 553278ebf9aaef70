// The roofline model over the CUDA target's sizes: those sizes match hand counts (the CUDA
// kernels' own: int32 argmax, float dropout mask); the convolution algorithms
// apply where cuDNN's do, with the arithmetic and workspace of their formulas; kernel times follow
// the roofline formula, scale with the batch when compute-bound, and a faster GPU is faster.
#include <gtest/gtest.h>

#include <map>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "layers/conv.h"
#include "plan/batch_efficiency.h"
#include "plan/conv_algorithms.h"
#include "plan/memory_plan.h"
#include "plan/program_builder.h"
#include "plan/roofline.h"

namespace vdnn {
namespace test_roofline {

int node_of(const Graph& g, const std::string& layer) { return g.value(g.find_value(layer)).producer; }

const AlgoCost* find_algo(const NodeCost& n, const std::string& name) {
  for (const AlgoCost& a : n.algos)
    if (a.name == name) return &a;
  return nullptr;
}

NetworkCosts costs_on(const std::string& device, const Graph& g, int64_t batch) {
  return backend_target("cuda").costs(g, batch, {.device = device});
}

TargetFacts cuda_facts(const Graph& g, int64_t batch) { return backend_target("cuda").facts(g, batch, {}); }

TEST(RooflineFacts, CudaTargetSizesOfFmnistCnnMatchAHandCount) {
  const Graph g = load_model("fmnist_cnn");
  const int64_t n = 8;
  const std::vector<size_t> expected_values = {n * 1 * 28 * 28 * 4,  // data
                                               n * 32 * 28 * 28 * 4,
                                               n * 32 * 28 * 28 * 4,
                                               n * 32 * 28 * 28 * 4,  // conv1 bn1 relu1
                                               n * 32 * 14 * 14 * 4,  // pool1
                                               n * 64 * 14 * 14 * 4,
                                               n * 64 * 14 * 14 * 4,
                                               n * 64 * 14 * 14 * 4,  // conv2 bn2 relu2
                                               n * 64 * 7 * 7 * 4,    // pool2
                                               n * 256 * 4,
                                               n * 256 * 4,
                                               n * 256 * 4,  // fc1 relu3 drop1
                                               n * 10 * 4,   // fc2
                                               4};           // loss: the batch mean
  const TargetFacts t = cuda_facts(g, n);
  EXPECT_EQ(t.value_bytes, expected_values);

  const std::vector<NodeFacts>& f = t.facts;
  ASSERT_EQ(f.size(), g.nodes().size());
  auto at = [&](const char* name) { return f[node_of(g, name)]; };
  EXPECT_EQ(at("conv1").param_bytes, (std::vector<size_t>{32 * 1 * 3 * 3 * 4}));  // no bias
  EXPECT_TRUE(at("conv1").saved_bytes.empty());
  EXPECT_EQ(at("bn1").param_bytes, (std::vector<size_t>{128, 128, 128, 128}));
  EXPECT_EQ(at("bn1").saved_bytes, (std::vector<size_t>{32 * 4, 32 * 4}));  // mean, 1/std
  EXPECT_TRUE(at("relu1").in_place);
  EXPECT_FALSE(at("bn1").in_place);
  EXPECT_EQ(at("pool1").saved_bytes, (std::vector<size_t>{n * 32 * 14 * 14 * 4}));  // int32 argmax
  EXPECT_EQ(at("fc1").param_bytes, (std::vector<size_t>{256 * 64 * 7 * 7 * 4, 256 * 4}));
  EXPECT_EQ(at("drop1").saved_bytes, (std::vector<size_t>{n * 256 * 4}));  // float mask
  EXPECT_EQ(at("loss").saved_bytes, (std::vector<size_t>{n * 10 * 4}));    // probabilities
  for (size_t i = 0; i < f.size(); ++i) {
    // Only the loss has scratch: the labels as int32 (direct convolutions: no workspace).
    EXPECT_EQ(f[i].scratch_bytes, g.nodes()[i].layer->name() == "loss" ? n * 4 : 0u);
    EXPECT_EQ(f[i].out_bytes, expected_values[g.nodes()[i].output]);
  }
}

TEST(RooflineFacts, ProgramsBuildFromCudaTargetFactsAndFitTheirMinimumBudget) {
  const Graph g = load_model("vgg16");
  const TargetFacts t = cuda_facts(g, 64);
  auto program = [&](Policy policy) { return build_program(g, t.value_bytes, t.facts, {policy}); };
  Program none = program(Policy::kNone), conv = program(Policy::kConv), all = program(Policy::kAll);
  // At batch 64 the 1.66 GB of weights, gradients and momentum stay; feature maps go to the host.
  const size_t none_budget = minimum_budget(none), all_budget = minimum_budget(all);
  EXPECT_LT(minimum_budget(conv), none_budget);
  EXPECT_LT(all_budget, minimum_budget(conv));
  EXPECT_GT(all.offloaded_bytes(), conv.offloaded_bytes());
  EXPECT_TRUE(plan_memory(all, all_budget).fits);
  const NetworkCosts costs = costs_on("titan-x-maxwell", g, 64);
  const ChosenCosts fast(costs, costs.fastest());
  const double t_none = simulate(none, fast).iteration_seconds;
  const double t_all = simulate(all, fast).iteration_seconds;
  // Without copies the step is its kernels plus the input upload and the optimizer's update.
  const double update = simulate(none, fast).update_seconds;
  EXPECT_GT(update, 0.0);
  EXPECT_GE(t_none, costs.compute_seconds(costs.fastest()) + update);
  EXPECT_LT(t_none, 1.01 * costs.compute_seconds(costs.fastest()) + update);
  EXPECT_GE(t_all, t_none);
}

TEST(RooflineConvAlgorithms, WinogradAndFftApplyOnlyWhereCudnnsDo) {
  auto names = [](const NodeCost& n) {  // over the whole batch (sub-batched variants: test_sub_batch_costs.cc)
    std::vector<std::string> out;
    for (const AlgoCost& a : n.algos)
      if (a.sub_batches == 1) out.push_back(a.name);
    return out;
  };
  const Graph vgg = load_model("vgg16");
  const NetworkCosts v = costs_on("titan-x-maxwell", vgg, 2);
  EXPECT_EQ(names(v.nodes[node_of(vgg, "conv3_1")]), conv_algorithm_names());  // 3x3 stride 1: all
  const Graph alex = load_model("alexnet");
  const NetworkCosts a = costs_on("titan-x-maxwell", alex, 2);
  EXPECT_EQ(names(a.nodes[node_of(alex, "conv1")]),  // 11x11 stride 4
            (std::vector<std::string>{"implicit_gemm", "implicit_precomp_gemm", "gemm"}));
  EXPECT_EQ(names(a.nodes[node_of(alex, "conv2")]),  // 5x5 stride 1 on 27x27 + pad 2
            (std::vector<std::string>{"implicit_gemm", "implicit_precomp_gemm", "gemm", "fft"}));
  const std::vector<NodeFacts> vf = cuda_facts(vgg, 2).facts, af = cuda_facts(alex, 2).facts;
  for (const auto& [c, f] : {std::pair{&v, &vf}, std::pair{&a, &af}})
    for (size_t i = 0; i < c->nodes.size(); ++i) {
      const NodeCost& n = c->nodes[i];
      SCOPED_TRACE(n.name);
      if (n.type != "conv") {  // no choice: the kernel's own scratch (the loss: its labels)
        ASSERT_EQ(n.algos.size(), 1u);
        EXPECT_EQ(n.algos[0].name, "-");
        EXPECT_EQ(n.algos[0].workspace_bytes, (*f)[i].scratch_bytes);
        continue;
      }
      EXPECT_EQ(n.algos[0].name, "implicit_gemm");
      EXPECT_EQ(n.algos[0].workspace_bytes, 0u);
      for (size_t k = 1; k < n.algos.size(); ++k) EXPECT_GT(n.algos[k].workspace_bytes, 0u) << n.algos[k].name;
    }
}

TEST(RooflineConvAlgorithms, ArithmeticAndWorkspaceFollowTheirFormulas) {
  // 64 -> 64 channels, 3x3 pad 1 on 56x56 (a ResNet stage-1 convolution), batch 32.
  ConvLayer conv("c", {.channels = 64, .kh = 3, .kw = 3, .ph = 1, .pw = 1});
  const ConvProblem p = ConvProblem::of(conv, Shape{64, 56, 56}, Shape{64, 56, 56}, 32);
  const double direct = 2.0 * 32 * 64 * 64 * 9 * 56 * 56;
  EXPECT_DOUBLE_EQ(p.direct_flops, direct);
  std::map<std::string, ConvAlgoEstimate> by_name;
  for (const ConvAlgoEstimate& a : conv_algorithms(p)) by_name[a.name] = a;
  EXPECT_DOUBLE_EQ(by_name["implicit_gemm"].flops, direct);
  EXPECT_DOUBLE_EQ(by_name["winograd"].flops, direct / 2.25);                         // 16 products per 4 outputs
  EXPECT_DOUBLE_EQ(by_name["winograd_nonfused"].flops, direct / 4);                   // 36 products per 16 outputs
  EXPECT_EQ(by_name["gemm"].workspace_bytes, size_t{4} * 32 * (64 * 9) * (56 * 56));  // im2col
  EXPECT_EQ(by_name["winograd"].workspace_bytes, size_t{4} * 16 * 64 * 64);
  EXPECT_EQ(by_name["winograd_nonfused"].workspace_bytes,
            size_t{4} * 36 * (32 * 64 * 14 * 14 + 64 * 64 + 32 * 64 * 14 * 14));
  // FFT on a 64x64 grid (58 rounded up), 64 x 33 bins, complex fp32 spectra.
  EXPECT_EQ(by_name["fft"].workspace_bytes, size_t{8} * (32 * 64 + 64 * 64 + 32 * 64) * (64 * 33));
  EXPECT_LT(by_name["fft"].flops, direct);
}

TEST(Roofline, KernelTimesFollowTheRooflineFormula) {
  const Graph g = load_model("vgg16");
  const DeviceProfile d = load_device_profile("titan-x-maxwell");
  const TargetFacts t = cuda_facts(g, 64);
  const NetworkCosts c = roofline_costs(g, 64, t.value_bytes, t.facts, d, load_link_profile("pcie3"));
  EXPECT_EQ(c.source, "device profile titan-x-maxwell + link pcie3");
  EXPECT_EQ(c.model, "vgg16");
  EXPECT_EQ(c.batch, 64);
  EXPECT_EQ(c.nodes.size(), g.nodes().size());
  EXPECT_DOUBLE_EQ(c.link_bytes_per_second, 12.8e9);
  EXPECT_DOUBLE_EQ(c.link_latency_seconds, 10e-6);
  EXPECT_DOUBLE_EQ(c.memory_bytes_per_second, 336.5e9);

  // conv1_2 is compute-bound: 2 * 64 * (64 * 9) * (64 * 224 * 224) flops.
  const double conv_flops = 2.0 * 64 * 64 * 9 * 64 * 224 * 224;
  // Its efficiency is the profile's at batch 64 (plan/batch_efficiency.h: below the reference 256).
  const AlgoCost& conv = c.nodes[node_of(g, "conv1_2")].algos[0];
  const double efficiency =
      efficiency_at(d.batch_efficiency, d.efficiency.conv.at("implicit_gemm"), 64.0 * 224 * 224, 64);
  EXPECT_LT(efficiency, d.efficiency.conv.at("implicit_gemm"));
  EXPECT_NEAR(conv.forward_seconds, conv_flops / (d.peak_fp32_flops * efficiency) + d.kernel_launch_seconds, 1e-12);
  EXPECT_NEAR(conv.backward_seconds, 2 * (conv.forward_seconds - d.kernel_launch_seconds) + d.kernel_launch_seconds,
              1e-12);
  // relu1_1 is memory-bound: it reads and writes 64 x 64 x 224 x 224 floats.
  const double relu_bytes = 2.0 * 64 * 64 * 224 * 224 * 4;
  EXPECT_NEAR(c.nodes[node_of(g, "relu1_1")].algos[0].forward_seconds,
              relu_bytes / (d.memory_bytes_per_second * d.efficiency.memory) + d.kernel_launch_seconds, 1e-12);
}

TEST(Roofline, BackwardCostsMoreThanForwardForEveryConvolution) {
  const Graph g = load_model("alexnet");
  for (const NodeCost& n : costs_on("v100-16gb", g, 32).nodes)
    if (n.type == "conv")
      for (const AlgoCost& a : n.algos) EXPECT_GT(a.backward_seconds, a.forward_seconds) << n.name << " " << a.name;
}

// The Titan X profile without its batch efficiency curve: the roofline alone.
NetworkCosts flat_titan_costs(const Graph& g, int64_t batch) {
  DeviceProfile d = load_device_profile("titan-x-maxwell");
  d.batch_efficiency = {};
  const TargetFacts t = cuda_facts(g, batch);
  return roofline_costs(g, batch, t.value_bytes, t.facts, d, load_link_profile(d.link));
}

TEST(Roofline, ComputeBoundLayersScaleLinearlyWithTheBatchAndWeightBoundOnesDoNot) {
  const Graph g = load_model("vgg16");
  const double launch = load_device_profile("titan-x-maxwell").kernel_launch_seconds;
  const NetworkCosts c32 = flat_titan_costs(g, 32), c64 = flat_titan_costs(g, 64);
  for (const char* conv : {"conv1_2", "conv3_1", "conv5_3"}) {
    const int i = node_of(g, conv);
    for (size_t k = 0; k < c32.nodes[i].algos.size(); ++k) {
      if (c32.nodes[i].algos[k].name == "fft") continue;    // its transforms of filters do not scale
      if (c32.nodes[i].algos[k].sub_batches > 1) continue;  // k launches, not one
      EXPECT_NEAR((c64.nodes[i].algos[k].forward_seconds - launch) / (c32.nodes[i].algos[k].forward_seconds - launch),
                  2.0, 0.02)
          << conv << " " << c32.nodes[i].algos[k].name;
    }
  }
  // fc6 at batch 1 and 2 reads its 411 MB of weights either way.
  const int fc6 = node_of(g, "fc6");
  const double t1 = flat_titan_costs(g, 1).nodes[fc6].algos[0].forward_seconds;
  const double t2 = flat_titan_costs(g, 2).nodes[fc6].algos[0].forward_seconds;
  EXPECT_LT(t2 / t1, 1.01);
}

TEST(Roofline, AFasterGpuPredictsLessTime) {
  const Graph g = load_model("vgg16");
  const NetworkCosts titan = costs_on("titan-x-maxwell", g, 64), h100 = costs_on("h100", g, 64);
  for (auto pick : {&NetworkCosts::fastest, &NetworkCosts::leanest}) {
    const double t_titan = titan.compute_seconds((titan.*pick)());
    const double t_h100 = h100.compute_seconds((h100.*pick)());
    EXPECT_LT(t_h100, t_titan / 5);  // 10x the arithmetic and the memory bandwidth
    EXPECT_GT(t_h100, t_titan / 15);
  }
  // The fastest choice is never slower than the leanest, which is implicit_gemm everywhere.
  EXPECT_LE(titan.compute_seconds(titan.fastest()), titan.compute_seconds(titan.leanest()));
  for (int a : titan.leanest()) EXPECT_EQ(a, 0);
}

}  // namespace test_roofline
}  // namespace vdnn
