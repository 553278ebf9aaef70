#include "runtime/trainer.h"

#include <chrono>

#include "data/batch_loader.h"
#include "vdnn/error.h"

namespace vdnn {

using Clock = std::chrono::steady_clock;

Trainer::Trainer(Net& net, TrainConfig config)
    : net_(net), config_(config), sgd_({config.momentum, config.weight_decay}) {}

void check_data_fits(const Graph& g, const Dataset& data) {
  const Shape sample = g.input_shape().rank() == 3
                           ? Shape{data.channels, data.height, data.width}
                           : Shape{data.channels * data.height * data.width};
  if (!(sample == g.input_shape()))
    VDNN_THROW("data '" << data.name << "' has " << Shape{data.channels, data.height, data.width}.to_string()
                        << " samples but model '" << g.name() << "' expects "
                        << g.input_shape().to_string()
                        << " (use --data synthetic, or --input to resize the model)");
  if (data.classes > g.classes())
    VDNN_THROW("data '" << data.name << "' has " << data.classes << " classes but model '"
                        << g.name() << "' predicts " << g.classes());
}

EvalResult Trainer::evaluate(const Dataset& data) {
  check_data_fits(net_.graph(), data);
  BatchLoader loader(data, net_.batch(), /*shuffle=*/false, config_.seed);
  loader.start_epoch(0);
  std::vector<float> images(static_cast<size_t>(net_.batch() * loader.sample_floats()));
  std::vector<int32_t> labels(static_cast<size_t>(net_.batch()));
  int64_t count = 0, right = 0;
  EvalResult r;
  double loss_sum = 0;
  while (loader.next(images.data(), labels.data(), &count)) {
    net_.set_batch(images.data(), labels.data(), count);
    loss_sum += static_cast<double>(net_.forward(/*training=*/false)) * count;
    right += net_.correct();
    r.samples += count;
  }
  r.loss = loss_sum / static_cast<double>(r.samples);
  r.accuracy = static_cast<double>(right) / static_cast<double>(r.samples);
  return r;
}

TrainResult Trainer::run(const Dataset& train, const Dataset* test,
                         const std::function<void(const EpochResult&)>& on_epoch) {
  check_data_fits(net_.graph(), train);
  BatchLoader loader(train, net_.batch(), /*shuffle=*/true, config_.seed);
  const int64_t per_epoch = loader.batches_per_epoch();
  int epochs = config_.epochs;
  if (config_.iterations > 0) epochs = static_cast<int>((config_.iterations + per_epoch - 1) / per_epoch);
  const int64_t total = config_.iterations > 0 ? config_.iterations : per_epoch * epochs;
  LrSchedule schedule{config_.lr, config_.schedule, total, config_.step_epochs, config_.gamma};

  std::vector<float> images(static_cast<size_t>(net_.batch() * loader.sample_floats()));
  std::vector<int32_t> labels(static_cast<size_t>(net_.batch()));
  TrainResult result;
  int64_t step = 0;
  for (int epoch = 0; epoch < epochs && step < total; ++epoch) {
    EpochResult e;
    e.epoch = epoch + 1;
    loader.start_epoch(epoch);
    double loss_sum = 0;
    int64_t right = 0, seen = 0, count = 0;
    const auto start = Clock::now();
    while (step < total && loader.next(images.data(), labels.data(), &count)) {
      net_.set_batch(images.data(), labels.data(), count);
      loss_sum += net_.forward(/*training=*/true);
      right += net_.correct();
      seen += count;
      net_.backward();
      e.lr = schedule.at(step, epoch);
      net_.run_on_compute([&] { sgd_.step(net_.backend(), net_.params(), e.lr); });
      ++step;
    }
    e.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t batches = seen / net_.batch();
    e.steps = step;
    e.train_loss = batches ? loss_sum / static_cast<double>(batches) : 0.0;
    e.train_accuracy = seen ? static_cast<double>(right) / static_cast<double>(seen) : 0.0;
    e.images_per_second = e.train_seconds > 0 ? seen / e.train_seconds : 0.0;
    if (test && config_.evaluate) e.test = evaluate(*test);
    result.train_seconds += e.train_seconds;
    result.images_per_second += seen;  // summed here, divided below
    result.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
  }
  result.iterations = step;
  result.images_per_second =
      result.train_seconds > 0 ? result.images_per_second / result.train_seconds : 0.0;
  if (!result.epochs.empty()) {
    result.final_loss = result.epochs.back().train_loss;
    result.test_accuracy = result.epochs.back().test.accuracy;
  }
  result.weights_sha256 = net_.weights_sha256();
  return result;
}

}  // namespace vdnn
