// The CUDA target in bf16 (`vdnn plan --device <gpu> --precision bf16`): which sizes halve and
// which stay fp32, as the CPU backend's bf16 model has them (docs/design/mixed-precision.md); the
// roofline at the profile's bf16 peak; a device without bf16 and the CUDA backend itself refuse it.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "cli/cli_run.h"
#include "error_of.h"
#include "io/model_file.h"

namespace vdnn {
namespace test_cuda_target_bf16 {

bool is_loss(const Layer& l) { return l.type() == "softmax_cross_entropy" || l.type() == "token_cross_entropy"; }

size_t total(const std::vector<size_t>& xs) { return std::accumulate(xs.begin(), xs.end(), size_t{0}); }

// vgg16: convolutions, max pooling's argmax, fc, dropout; alexnet: LRN; gpt_char: token ids,
// embeddings, layer norm, materialized attention, linear, the token loss.
TEST(CudaTargetBf16, ActivationsHalveWhileWeightsStatisticsTokenIdsAndLogitsStayFp32) {
  const BackendTarget& cuda = backend_target("cuda");
  for (const char* model : {"vgg16", "alexnet", "gpt_char"}) {
    SCOPED_TRACE(model);
    const Graph g = load_model(model);
    const TargetFacts f32 = cuda.facts(g, 2, {}, Precision::kFp32), bf16 = cuda.facts(g, 2, {}, Precision::kBf16);
    std::set<ValueId> fp32_values;  // each loss's logits and output; token ids
    for (const Node& n : g.nodes())
      if (is_loss(*n.layer)) fp32_values.insert({n.inputs[0], n.output});
    if (g.token_input()) fp32_values.insert(0);
    for (size_t v = 0; v < g.values().size(); ++v) {
      SCOPED_TRACE(g.value(static_cast<ValueId>(v)).name);
      if (fp32_values.count(static_cast<ValueId>(v)))
        EXPECT_EQ(bf16.value_bytes[v], f32.value_bytes[v]);
      else
        EXPECT_EQ(2 * bf16.value_bytes[v], f32.value_bytes[v]);
    }
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Layer& layer = *g.nodes()[i].layer;
      SCOPED_TRACE(layer.name());
      const NodeFacts &a = f32.facts[i], &b = bf16.facts[i];
      EXPECT_EQ(b.param_bytes, a.param_bytes);  // the fp32 master weights
      ASSERT_EQ(b.saved_bytes.size(), a.saved_bytes.size());
      const std::string& type = layer.type();
      if (type == "dropout" || type == "lrn") {
        EXPECT_EQ(2 * b.saved_bytes[0], a.saved_bytes[0]);  // the mask, LRN's y: activations
      } else if (type == "attention") {
        EXPECT_EQ(2 * b.saved_bytes[0], a.saved_bytes[0]);  // the probabilities
        EXPECT_EQ(b.scratch_bytes, a.scratch_bytes);         // dP kept at fp32: an upper bound
      } else {
        EXPECT_EQ(b.saved_bytes, a.saved_bytes);  // argmax, statistics, the loss's probabilities
      }
      if (type == "conv" || type == "fc" || type == "linear")  // + the weights cast to bf16
        EXPECT_EQ(b.scratch_bytes, a.scratch_bytes + total(a.param_bytes) / 2);
      if (is_loss(layer)) EXPECT_EQ(b.scratch_bytes, a.scratch_bytes);  // int32 labels
    }
  }
}

TEST(CudaTargetBf16, TheRooflineRunsAtTheBf16PeakAndWhatHasNoBf16Refuses) {
  const BackendTarget& cuda = backend_target("cuda");
  const Graph g = load_model("gpt_char");
  const NetworkCosts f32 = cuda.costs(g, 8, {.device = "a100-40gb", .precision = Precision::kFp32});
  const NetworkCosts bf16 = cuda.costs(g, 8, {.device = "a100-40gb", .precision = Precision::kBf16});
  EXPECT_EQ(bf16.precision, Precision::kBf16);
  ASSERT_EQ(bf16.nodes.size(), f32.nodes.size());
  double faster_by_the_peaks = 0;  // the linear layers' arithmetic, at 312 against 19.5 TFLOP/s
  for (size_t i = 0; i < f32.nodes.size(); ++i) {
    SCOPED_TRACE(f32.nodes[i].name);
    EXPECT_LE(bf16.nodes[i].algos[0].forward_seconds, f32.nodes[i].algos[0].forward_seconds);
    EXPECT_LE(bf16.nodes[i].algos[0].backward_seconds, f32.nodes[i].algos[0].backward_seconds);
    if (f32.nodes[i].type == "linear")
      faster_by_the_peaks = std::max(faster_by_the_peaks, f32.nodes[i].algos[0].forward_seconds /
                                                              bf16.nodes[i].algos[0].forward_seconds);
  }
  EXPECT_GT(faster_by_the_peaks, 4.0);
  const std::string volta =
      test::error_of([&] { cuda.costs(g, 8, {.device = "v100-16gb", .precision = Precision::kBf16}); });
  EXPECT_NE(volta.find("bf16: device profile 'v100-16gb' has no bf16 arithmetic"), std::string::npos)
      << volta;
  BackendOptions options;
  options.kind = BackendKind::kCuda;
  options.precision = Precision::kBf16;
  const std::string backend = test::error_of([&] { cuda.instantiate(g, options); });
  EXPECT_NE(backend.find("the CUDA backend's kernels run fp32 only so far"), std::string::npos) << backend;
}

// What a user sees: GPT-2 small at batch 8 with AdamW on an A100 40 GB in bf16 keeps fewer
// feature-map bytes than in fp32, the same weights and optimizer state, and a faster step.
TEST(CudaTargetBf16, VdnnPlanOnAGpuProfileInBf16) {
  auto plan = [](const std::string& precision) {
    const test::CliRun r = test::vdnn("plan --model gpt2 --batch 8 --optimizer adamw --device a100-40gb --policy none "
                                      "--json --precision " +
                                      precision);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output)["configurations"][0];
  };
  const nlohmann::json f32 = plan("fp32"), bf16 = plan("bf16");
  EXPECT_TRUE(bf16["fits"].get<bool>());
  EXPECT_LT(bf16["peak_by_class"]["feature_maps"].get<double>(),
            0.7 * f32["peak_by_class"]["feature_maps"].get<double>());
  EXPECT_EQ(bf16["peak_by_class"]["weights"], f32["peak_by_class"]["weights"]);
  EXPECT_LT(bf16["iteration_seconds"].get<double>(), 0.5 * f32["iteration_seconds"].get<double>());
  test::expect_user_error("plan --model gpt2 --batch 8 --device v100-16gb --precision bf16",
                          "device profile 'v100-16gb' has no bf16 arithmetic");
}

}  // namespace test_cuda_target_bf16
}  // namespace vdnn
