#include "runtime/step_calibration.h"

#include <algorithm>
#include <chrono>

#include "backends/cpu/profiler.h"
#include "plan/simulator.h"
#include "util/timing_stability.h"
#include "vdnn/rng.h"

namespace vdnn {

SyntheticBatch::SyntheticBatch(const Graph& graph, int64_t batch)
    : images(static_cast<size_t>(graph.input_shape().elements()) * static_cast<size_t>(batch)),
      labels(static_cast<size_t>(batch)), batch(batch) {
  Rng rng(1, 3);
  for (float& x : images) x = rng.normal();
  for (size_t n = 0; n < labels.size(); ++n) labels[n] = static_cast<int32_t>(n % graph.classes());
}

double time_step(Net& net, SyntheticBatch& data) {
  net.set_batch(data.images.data(), data.labels.data(), data.batch);
  const auto start = std::chrono::steady_clock::now();
  net.forward(true);
  net.backward();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void calibrate_kernels(NetworkCosts& costs, Graph graph, int64_t batch, int steps) {
  costs.kernel_scale = 1;
  SyntheticBatch data(graph, batch);
  NetOptions o{.batch = batch, .seed = 1, .policy = Policy::kNone};
  const AlgoChoice fast = costs.fastest();
  o.conv_algos = conv_algos_of(costs, fast);
  Net net(std::move(graph), o);
  std::vector<double> times;
  for (int s = -2; s < std::max(steps, 1); ++s) {  // two warm-up steps
    const double t = time_step(net, data);
    if (s >= 0) times.push_back(t);
  }
  const SimResult sim = simulate(net.train_program(), ChosenCosts(costs, fast));
  const double simulated = sim.iteration_seconds - sim.update_seconds;  // what time_step measures
  if (simulated > 0) costs.kernel_scale = std::clamp(median(times) / simulated, 0.1, 10.0);
}

}  // namespace vdnn
