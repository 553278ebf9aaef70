// runtime/trainer.h — epochs of SGD over a data set, with evaluation and timing.
//
//   Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1});
//   TrainConfig cfg;                 // epochs, iterations, lr, momentum, weight decay, schedule
//   Trainer trainer(net, cfg);
//   TrainResult r = trainer.run(train_set, &test_set, [](const EpochResult& e) { print(e); });
//   r.test_accuracy; r.images_per_second; r.weights_sha256;
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "runtime/net.h"
#include "runtime/sgd.h"

namespace vdnn {

struct TrainConfig {
  int epochs = 10;
  int64_t iterations = 0;  // > 0: stop after this many steps in total (overrides epochs)
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 5e-4;
  LrSchedule::Kind schedule = LrSchedule::kCosine;
  int step_epochs = 5;
  double gamma = 0.1;
  uint64_t seed = 1;
  bool evaluate = true;
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
};

struct EpochResult {
  int epoch = 0;
  int64_t steps = 0;         // total so far
  double lr = 0;             // at the epoch's last step
  double train_loss = 0, train_accuracy = 0;
  double train_seconds = 0;  // this epoch's training time, evaluation excluded
  double images_per_second = 0;
  EvalResult test;           // samples == 0 when not evaluated
};

struct TrainResult {
  std::vector<EpochResult> epochs;
  int64_t iterations = 0;
  double final_loss = 0;       // mean training loss of the last epoch
  double test_accuracy = 0;    // after the last epoch (0 if not evaluated)
  double images_per_second = 0;
  double train_seconds = 0;
  std::string weights_sha256;
};

// Throws vdnn::Error when the data's sample shape or class count does not fit the model.
void check_data_fits(const Graph& graph, const Dataset& data);

class Trainer {
 public:
  Trainer(Net& net, TrainConfig config);
  TrainResult run(const Dataset& train, const Dataset* test,
                  const std::function<void(const EpochResult&)>& on_epoch = {});
  EvalResult evaluate(const Dataset& data);

 private:
  Net& net_;
  TrainConfig config_;
  Sgd sgd_;
};

}  // namespace vdnn
