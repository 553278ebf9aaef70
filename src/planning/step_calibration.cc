#include "planning/step_calibration.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "data/synthetic.h"
#include "plan/simulator.h"
#include "runtime/trainer.h"

namespace vdnn {

namespace {

// A token model's batch (until token data is a Dataset with a label per token): ids and labels all
// 0, valid for every vocabulary; a step's time does not depend on them.
struct ZeroTokens {
  std::vector<float> ids;
  std::vector<int32_t> labels;
  ZeroTokens(const Graph& g, int64_t batch)
      : ids(static_cast<size_t>(batch * g.input_shape().elements()), 0.0f),
        labels(static_cast<size_t>(batch * g.labels_per_sample()), 0) {}
};

bool reads_tokens(const Graph& g) { return g.token_input() || g.labels_per_sample() > 1; }

// seconds_per_iteration for a token model: the same steps (lr 0) on one batch of ZeroTokens.
double seconds_per_token_step(Net& net, int steps) {
  const ZeroTokens batch(net.graph(), net.batch());
  TrainConfig config;
  config.lr = 0;
  Trainer trainer(net, config);
  for (int64_t s = 0; s < 2; ++s) trainer.train_batch(batch.ids.data(), batch.labels.data(), net.batch(), 0.0, s);
  const auto start = std::chrono::steady_clock::now();
  const int timed = std::max(steps, 1);
  for (int64_t s = 0; s < timed; ++s) trainer.train_batch(batch.ids.data(), batch.labels.data(), net.batch(), 0.0, s);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / timed;
}

}  // namespace

double seconds_per_iteration(Net& net, const Dataset& data, int steps) {
  if (reads_tokens(net.graph())) return seconds_per_token_step(net, steps);
  // The same work as a training step, with learning rate 0: the timing does not depend on the
  // weights moving, and a network that diverges at the default rate (vgg_cifar, no batch norm:
  // `vdnn plan --model vgg_cifar` stopped with a NaN) keeps its initial weights.
  TrainConfig config;
  config.lr = 0;
  config.schedule = LrSchedule::kConstant;
  config.evaluate = false;
  config.iterations = 2;  // warm-up
  Trainer(net, config).run(data, nullptr);
  config.iterations = std::max(steps, 1);
  const TrainResult timed = Trainer(net, config).run(data, nullptr);
  return timed.train_seconds / static_cast<double>(timed.iterations);
}

Calibration calibrate_kernels(NetworkCosts& costs, Graph graph, int64_t batch, int steps) {
  costs.kernel_scale = 1;
  const Shape& shape = graph.input_shape();
  const Dataset data = make_synthetic(2 * batch, shape.channels(), shape.height(), shape.width(), graph.classes(), 1);
  NetOptions o{.batch = batch, .seed = 1, .policy = Policy::kNone};
  o.precision = costs.precision;
  const AlgoChoice fast = costs.fastest();
  o.conv_algos = conv_algos_of(costs, fast);
  Net net(std::move(graph), o);
  const double measured = seconds_per_iteration(net, data, steps);
  const double simulated = simulate(net.train_program(), ChosenCosts(costs, fast)).iteration_seconds;
  if (simulated > 0 && measured > 0) costs.kernel_scale = std::clamp(measured / simulated, 0.1, 10.0);
  return {measured, simulated};
}

double median_forward_seconds(Net& net, int warmup, int passes) {
  for (int i = 0; i < warmup; ++i) net.forward(false);
  std::vector<double> seconds;
  for (int i = 0; i < std::max(passes, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    net.forward(false);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

Calibration calibrate_inference_kernels(NetworkCosts& costs, Graph graph, int64_t batch, int passes) {
  costs.kernel_scale = 1;
  const Shape& shape = graph.input_shape();
  const Dataset data = make_synthetic(batch, shape.channels(), shape.height(), shape.width(), graph.classes(), 1);
  NetOptions o{.batch = batch, .seed = 1, .inference = true};
  o.precision = costs.precision;
  const AlgoChoice fast = costs.fastest_forward();
  o.conv_algos = conv_algos_of(costs, fast);
  Net net(std::move(graph), o);
  // Weights written: an inference Net's start as untouched zero pages, all one physical page, which
  // the pass would read from cache (VGG-16's fc6 at batch 1: 2.3x too fast a calibration).
  for (size_t i = 0; i < net.params().size(); ++i)
    net.import_param(i, std::vector<float>(static_cast<size_t>(net.params()[i].spec.elements()), 1e-3f));
  const ZeroTokens tokens(net.graph(), batch);
  if (reads_tokens(net.graph()))
    net.set_batch(tokens.ids.data(), tokens.labels.data(), batch);
  else
    net.set_batch(data.images.data(), data.labels.data(), batch);
  const double measured = median_forward_seconds(net, 2, passes);
  const double simulated = simulate(net.train_program(), ChosenCosts(costs, fast)).iteration_seconds;
  if (simulated > 0 && measured > 0) costs.kernel_scale = std::clamp(measured / simulated, 0.1, 10.0);
  return {measured, simulated};
}

}  // namespace vdnn
