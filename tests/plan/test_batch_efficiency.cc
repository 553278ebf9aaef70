// The batch-dependent efficiency (plan/batch_efficiency.h): the curve is monotone, saturating,
// equal to the profile's efficiency at its reference batch and never above 1; on the Titan X
// profile a convolution cut into 16 sub-batches now costs measurably more than the whole batch,
// where before the curve it cost the same but for 15 launches and weight reads.
#include <gtest/gtest.h>

#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/batch_efficiency.h"
#include "plan/device_profile.h"
#include "plan/roofline.h"

namespace vdnn {
namespace test_batch_efficiency {

constexpr double kHalf = 196608;  // the Titan X profile's half wave

TEST(BatchEfficiency, TheCurveRisesWithTheWorkAndSaturates) {
  const double reference = 256.0 * 64 * 224 * 224;
  double previous = 0;
  for (double work = 1e3; work < 1e12; work *= 2) {
    const double e = saturating_efficiency(0.6, work, reference, kHalf);
    EXPECT_GT(e, previous) << work;  // monotone
    EXPECT_LE(e, 1.0);
    previous = e;
  }
  // Saturating: far above the half-saturation point, doubling the work gains almost nothing, and
  // at it the efficiency is half of the ceiling.
  const double big = saturating_efficiency(0.6, 1e11, reference, kHalf);
  EXPECT_LT(saturating_efficiency(0.6, 2e11, reference, kHalf) / big, 1.000001);
  const double ceiling = 0.6 * (reference + kHalf) / reference;
  EXPECT_NEAR(saturating_efficiency(0.6, kHalf, reference, kHalf), ceiling / 2, 1e-12);
  EXPECT_NEAR(saturating_efficiency(0.6, 1e15, reference, kHalf), ceiling, 1e-6);
}

TEST(BatchEfficiency, AtTheReferenceBatchItIsTheProfilesEfficiency) {
  const BatchEfficiency titan{.reference_batch = 256, .half_saturation_outputs = kHalf};
  for (double per_sample : {10.0, 4096.0, 512.0 * 14 * 14, 64.0 * 224 * 224}) {
    EXPECT_DOUBLE_EQ(efficiency_at(titan, 0.55, per_sample, 256), 0.55) << per_sample;
    EXPECT_LT(efficiency_at(titan, 0.55, per_sample, 16), 0.55) << per_sample;
    EXPECT_GE(efficiency_at(titan, 0.55, per_sample, 1024), 0.55) << per_sample;
  }
  // Never above the peak, however small the reference work was.
  EXPECT_LE(efficiency_at(titan, 0.9, 1.0, 1 << 20), 1.0);
  // A small layer loses more than a large one at the same batch: fewer tiles fill fewer SMs.
  EXPECT_LT(efficiency_at(titan, 0.55, 512.0 * 14 * 14, 16), efficiency_at(titan, 0.55, 64.0 * 224 * 224, 16));
  // Off (no curve in the profile) and no half-wave: the profile's figure at every batch.
  EXPECT_EQ(efficiency_at({}, 0.55, 4096, 1), 0.55);
  EXPECT_EQ(efficiency_at({.reference_batch = 256, .half_saturation_outputs = 0}, 0.55, 4096, 1), 0.55);
}

// conv `layer`'s algorithm `algo` at `sub_batches` slices (1: whole) on `device`.
const AlgoCost& conv_cost(const NetworkCosts& c, const Graph& g, const std::string& layer, const std::string& algo,
                          int sub_batches) {
  const NodeCost& n = c.nodes[g.value(g.find_value(layer)).producer];
  for (const AlgoCost& a : n.algos)
    if (a.name == algo && a.sub_batches == sub_batches) return a;
  ADD_FAILURE() << layer << " has no " << algo << " in " << sub_batches;
  return n.algos[0];
}

NetworkCosts vgg16_b256(const DeviceProfile& d) {
  const Graph g = load_model("vgg16");
  const TargetFacts t = backend_target("cuda").facts(g, 256, {});
  return roofline_costs(g, 256, t.value_bytes, t.facts, d, load_link_profile(d.link));
}

TEST(BatchEfficiency, SixteenSubBatchesOfAConvolutionCostMeasurablyMoreThanTheWholeBatch) {
  const Graph g = load_model("vgg16");
  const DeviceProfile titan = load_device_profile("titan-x-maxwell");
  DeviceProfile flat = titan;
  flat.batch_efficiency = {};
  const NetworkCosts curved = vgg16_b256(titan), before = vgg16_b256(flat);
  // conv5_1 (14x14x512 outputs) in 16 slices of 16 samples: each slice's GEMM fills 4 waves of
  // 24 SMs instead of 65, so the arithmetic runs at 0.89 of its whole-batch efficiency.
  for (const NetworkCosts* c : {&curved, &before}) {
    const double whole = conv_cost(*c, g, "conv5_1", "gemm", 1).forward_seconds;
    const double sliced = conv_cost(*c, g, "conv5_1", "gemm", 16).forward_seconds;
    if (c == &curved) {
      EXPECT_GT(sliced / whole, 1.08);
    } else {
      EXPECT_LT(sliced / whole, 1.01);  // before: 15 more launches only
    }
  }
  // The whole batch is where the profile's figures hold: it does not move.
  EXPECT_DOUBLE_EQ(conv_cost(curved, g, "conv5_1", "gemm", 1).forward_seconds,
                   conv_cost(before, g, "conv5_1", "gemm", 1).forward_seconds);
  // conv1_2 in 16 slices still fills 131 waves a slice: on im2col GEMM it loses less (0.4%), but
  // more than nothing. (Its non-fused Winograd slices are bound by their workspace traffic.)
  const double gemm_16 = conv_cost(curved, g, "conv1_2", "gemm", 16).forward_seconds;
  EXPECT_GT(gemm_16, conv_cost(before, g, "conv1_2", "gemm", 16).forward_seconds);
  EXPECT_LT(gemm_16, 1.01 * conv_cost(before, g, "conv1_2", "gemm", 16).forward_seconds);
}

TEST(BatchEfficiency, ASmallBatchPlanRunsItsKernelsAtASmallBatchsEfficiency) {
  // VGG-16 at batch 16: every convolution and fully connected layer slower than without the curve;
  // at the reference batch, 256, every kernel as it was.
  const DeviceProfile titan = load_device_profile("titan-x-maxwell");
  DeviceProfile flat = titan;
  flat.batch_efficiency = {};
  const Graph g = load_model("vgg16");
  for (int64_t batch : {16, 256}) {
    const TargetFacts t = backend_target("cuda").facts(g, batch, {});
    const LinkProfile link = load_link_profile(titan.link);
    const NetworkCosts curved = roofline_costs(g, batch, t.value_bytes, t.facts, titan, link);
    const NetworkCosts before = roofline_costs(g, batch, t.value_bytes, t.facts, flat, link);
    int gemms = 0;
    for (size_t i = 0; i < curved.nodes.size(); ++i) {
      const std::string& type = curved.nodes[i].type;
      const double now = curved.nodes[i].algos[0].forward_seconds, was = before.nodes[i].algos[0].forward_seconds;
      if ((type == "conv" || type == "fc") && batch == 16 && now <= was) ADD_FAILURE() << curved.nodes[i].name;
      if ((type != "conv" && type != "fc") || batch == 256) EXPECT_DOUBLE_EQ(now, was) << curved.nodes[i].name;
      gemms += type == "conv" || type == "fc";
    }
    EXPECT_EQ(gemms, 16);  // 13 convolutions, 3 fully connected layers
  }
}

}  // namespace test_batch_efficiency
}  // namespace vdnn
