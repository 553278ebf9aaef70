// The measured costs' calibration (runtime/step_calibration.h): NetworkCosts::kernel_scale scales
// every kernel time the simulator reads (and nothing else), round-trips through JSON and refuses
// absurd values; calibrate_kernels sets it to a measured training iteration over that step's
// simulation, so the calibrated simulation of `none` is what training takes.
#include <gtest/gtest.h>

#include "backends/cpu/profiler.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/simulator.h"
#include "data/synthetic.h"
#include "runtime/net.h"
#include "runtime/step_calibration.h"
#include "runtime/decisions_by_layer.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace {

TEST(StepCalibration, KernelScaleMultipliesKernelsOnlyAndRoundTrips) {
  NetworkCosts c;
  c.batch = 4;
  c.link_bytes_per_second = 1e9;
  c.memory_bytes_per_second = 1e10;
  c.nodes.push_back({"conv", "conv", {{"direct", 2e-3, 5e-3, 0}}});
  NetworkCosts calibrated = c;
  calibrated.kernel_scale = 1.25;
  const ChosenCosts plain(c, {0}), scaled(calibrated, {0});  // each reads its costs by reference
  EXPECT_DOUBLE_EQ(scaled.forward_seconds(0), 1.25 * plain.forward_seconds(0));
  EXPECT_DOUBLE_EQ(scaled.backward_seconds(0), 1.25 * plain.backward_seconds(0));
  EXPECT_DOUBLE_EQ(scaled.copy_seconds(1 << 20), plain.copy_seconds(1 << 20));  // the link is measured on its own
  EXPECT_DOUBLE_EQ(scaled.accumulate_seconds(1 << 20), plain.accumulate_seconds(1 << 20));
  EXPECT_DOUBLE_EQ(NetworkCosts::from_json(calibrated.to_json(), "c.json").kernel_scale, 1.25);
  nlohmann::json j = calibrated.to_json();
  j.erase("kernel_scale");  // files saved before it: uncalibrated
  EXPECT_DOUBLE_EQ(NetworkCosts::from_json(j, "c.json").kernel_scale, 1.0);
  for (double bad : {0.0, -1.0, 50.0}) {
    j["kernel_scale"] = bad;
    const std::string e = test::error_of([&] { NetworkCosts::from_json(j, "c.json"); });
    EXPECT_NE(e.find("c.json"), std::string::npos) << e;
    EXPECT_NE(e.find("kernel_scale"), std::string::npos) << e;
  }
}

TEST(StepCalibration, TheCalibratedSimulationOfNoneIsTheMeasuredStep) {
  const int64_t batch = 16;
  // A Net of its own, trained again as `vdnn train` times it: its calibrated simulation is within
  // the run-to-run scatter of that (a loose bound, a factor of 2 either way). Two cores are shared
  // with whatever else ctest runs beside it (PyTorch and mpirun tests included): CI once measured a
  // step 4x slower than its calibration a moment before. Noise only ever adds time to one side, so
  // the pair is taken up to three times and one pair inside the bound passes; what it guards against,
  // a step's work left out of the calibration or the simulation, is off in every pair.
  NetOptions o{.batch = batch, .seed = 1, .policy = Policy::kNone};
  const Graph graph = test::cheap_layers_net();
  const Shape& s = graph.input_shape();
  const Dataset data = make_synthetic(2 * batch, s.channels(), s.height(), s.width(), graph.classes(), 1);
  NetworkCosts costs;
  SimResult sim;
  std::string ratios;
  bool within = false;
  for (int attempt = 0; attempt < 3 && !within; ++attempt) {
    costs = measure_costs(test::cheap_layers_net(), batch, {.repeats = 1});
    calibrate_kernels(costs, test::cheap_layers_net(), batch, 5);
    ASSERT_GE(costs.kernel_scale, 0.1);
    ASSERT_LE(costs.kernel_scale, 10.0);
    o.conv_algos = conv_algos_of(costs, costs.fastest());
    Net timed(test::cheap_layers_net(), o);
    const double measured = seconds_per_iteration(timed, data, 8);
    sim = simulate(timed.train_program(), ChosenCosts(costs, costs.fastest()));
    const double ratio = sim.iteration_seconds / measured;
    ratios += std::to_string(ratio) + " (kernel_scale " + std::to_string(costs.kernel_scale) + ") ";
    within = ratio > 0.5 && ratio < 2.0;
  }
  EXPECT_TRUE(within) << "simulated / measured step in each try: " << ratios;
  // Uncalibrated, the simulation is off by exactly the factor.
  NetworkCosts raw = costs;
  raw.kernel_scale = 1;
  o.conv_algos = conv_algos_of(costs, costs.fastest());
  Net last(test::cheap_layers_net(), o);
  const SimResult raw_sim = simulate(last.train_program(), ChosenCosts(raw, raw.fastest()));
  EXPECT_NEAR((sim.iteration_seconds - sim.update_seconds) / (raw_sim.iteration_seconds - raw_sim.update_seconds),
              costs.kernel_scale, 0.02 * costs.kernel_scale);
}

}  // namespace
}  // namespace vdnn
