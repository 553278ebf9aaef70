// The measured costs' calibration (planning/step_calibration.h): NetworkCosts::kernel_scale scales
// every kernel time the simulator reads (and nothing else), round-trips through JSON and refuses
// absurd values; calibrate_kernels sets it to the training iteration it measured over the
// simulation of the Net it trained.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cpu/profiler.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/simulator.h"
#include "planning/step_calibration.h"
#include "runtime/decisions_by_layer.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace test_step_calibration {

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
  // The re-probe: finite but absurd figures made the step inf or NaN with exit 0; each is refused
  // with the range of plan/physical_limits.h.
  j["kernel_scale"] = 1.0;
  const std::vector<std::pair<std::string, std::string>> absurd{{"compute_slowdown_when_copying", "slowdowns"},
                                                                {"link_bytes_per_second", "link and memory"},
                                                                {"memory_bytes_per_second", "link and memory"}};
  for (const auto& [field, message] : absurd) {
    nlohmann::json k = j;
    k[field] = field == "compute_slowdown_when_copying" ? 1e308 : 1e-308;
    const std::string e = test::error_of([&] { NetworkCosts::from_json(k, "c.json"); });
    EXPECT_NE(e.find(message), std::string::npos) << field << ": " << e;
  }
  nlohmann::json k = j;
  k["nodes"][0]["algos"][0]["forward_seconds"] = 1e308;
  EXPECT_NE(test::error_of([&] { NetworkCosts::from_json(k, "c.json"); }).find("times must be from 0 to 3600"),
            std::string::npos);
}

TEST(StepCalibration, KernelScaleIsTheMeasuredStepOverTheSimulationOfTheNetItTrained) {
  // What calibrate_kernels measured, against the simulation of a `none` Net with the costs' fastest
  // algorithms — the Net `vdnn plan` then predicts. Whether the calibrated simulation predicts
  // another run's step is a question of timing, and timing is measured in the benchmark (`vdnn
  // profile --check`, docs/benchmarks.md "Does the simulator predict the step?"), not here: as a ctest it failed
  // CI three times, beside other tests on two shared cores (a step 3.5x slower than the calibration
  // measured a moment before, in each of three tries).
  const int64_t batch = 16;
  NetworkCosts costs = measure_costs(test::cheap_layers_net(), batch, {.repeats = 1});
  const Calibration measured = calibrate_kernels(costs, test::cheap_layers_net(), batch, 2);
  ASSERT_GT(measured.measured_seconds, 0);
  NetOptions o{.batch = batch, .seed = 1, .policy = Policy::kNone};
  o.conv_algos = conv_algos_of(costs, costs.fastest());
  Net net(test::cheap_layers_net(), o);
  NetworkCosts raw = costs;
  raw.kernel_scale = 1;
  const SimResult raw_sim = simulate(net.train_program(), ChosenCosts(raw, raw.fastest()));
  EXPECT_DOUBLE_EQ(raw_sim.iteration_seconds, measured.simulated_seconds);  // the same Program, the same algorithms
  EXPECT_DOUBLE_EQ(costs.kernel_scale, std::clamp(measured.measured_seconds / measured.simulated_seconds, 0.1, 10.0));
  // Calibrated, every kernel of the step is scaled by the factor; the update is not, nor is the
  // input batch's copy (about 0.05% of this step: hence the 2%).
  const SimResult sim = simulate(net.train_program(), ChosenCosts(costs, costs.fastest()));
  EXPECT_NEAR((sim.iteration_seconds - sim.update_seconds) / (raw_sim.iteration_seconds - raw_sim.update_seconds),
              costs.kernel_scale, 0.02 * costs.kernel_scale);
}

}  // namespace test_step_calibration
}  // namespace vdnn
