#include "runtime/step_calibration.h"

#include <algorithm>
#include <chrono>

#include "data/synthetic.h"
#include "plan/simulator.h"
#include "runtime/trainer.h"
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
  const Shape& shape = graph.input_shape();
  const Dataset data = make_synthetic(2 * batch, shape.channels(), shape.height(), shape.width(), graph.classes(), 1);
  NetOptions o{.batch = batch, .seed = 1, .policy = Policy::kNone};
  const AlgoChoice fast = costs.fastest();
  o.conv_algos = conv_algos_of(costs, fast);
  Net net(std::move(graph), o);
  TrainConfig config;
  config.evaluate = false;
  config.iterations = 2;  // warm-up
  Trainer(net, config).run(data, nullptr);
  config.iterations = std::max(steps, 1);
  const TrainResult timed = Trainer(net, config).run(data, nullptr);
  const double measured = timed.train_seconds / static_cast<double>(timed.iterations);
  const double simulated = simulate(net.train_program(), ChosenCosts(costs, fast)).iteration_seconds;
  if (simulated > 0 && measured > 0) costs.kernel_scale = std::clamp(measured / simulated, 0.1, 10.0);
}

}  // namespace vdnn
