// Numerical faults: a NaN in the data makes the loss and the gradients non-finite; training stops
// before the update with the step and the layer named, or, with skip, leaves the weights untouched
// (and batch norm's running statistics) for that step and goes on. An Inf in one gradient alone is found too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "data/synthetic.h"
#include "io/model_file.h"
#include "runtime/trainer.h"

namespace vdnn {
namespace test_nonfinite {

Dataset poisoned(int64_t bad_sample) {
  Dataset d = make_synthetic(64, 1, 28, 28, 10, 5);
  d.images[static_cast<size_t>(bad_sample * 28 * 28 + 100)] = std::numeric_limits<float>::quiet_NaN();
  return d;
}

TrainConfig config(int64_t iterations, TrainConfig::OnNonFinite on) {
  TrainConfig c;
  c.iterations = iterations;
  c.evaluate = false;
  c.on_nonfinite = on;
  c.offers_on_nan_skip = true;  // as vdnn train's
  return c;
}

// With clipping the same pass that sums the gradients' squares for the norm finds the NaN.
TEST(NonFinite, StopsBeforeTheUpdateNamingTheStepAndTheLayer) {
  for (double clip : {0.0, 1.0}) {
    SCOPED_TRACE(clip);
    Net net(load_model("fmnist_cnn"), {.batch = 16, .policy = Policy::kAll});
    TrainConfig c = config(4, TrainConfig::OnNonFinite::kStop);
    c.clip_grad_norm = clip;
    Trainer trainer(net, c);
    try {
      trainer.run(poisoned(3), nullptr);  // sample 3 is in the first shuffled batch or a later one
      FAIL() << "a NaN in the data must stop training";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("step "), std::string::npos) << what;
      // Max pooling drops NaNs, so the loss may stay finite; conv1's weight gradient cannot.
      EXPECT_NE(what.find("the gradient of 'conv1.weight' (layer 'conv1') holds NaN or Inf"), std::string::npos)
          << what;
      EXPECT_NE(what.find("--on-nan skip"), std::string::npos) << what;
    }
  }
}

TEST(NonFinite, SkipLeavesTheWeightsAndRunningStatisticsOfThatStepUntouched) {
  // Every batch holds the bad sample (the data set is one batch): every step is skipped.
  Dataset d = make_synthetic(16, 1, 28, 28, 10, 5);
  d.images[100] = std::numeric_limits<float>::infinity();
  Net net(load_model("fmnist_cnn"), {.batch = 16});
  const std::string before = net.weights_sha256();
  Trainer trainer(net, config(3, TrainConfig::OnNonFinite::kSkip));
  const TrainResult r = trainer.run(d, nullptr);
  EXPECT_EQ(r.skipped_steps.size(), 3u);
  EXPECT_EQ(r.weights_sha256, before);
  EXPECT_EQ(r.skipped_steps.front().rfind("step 1: ", 0), 0u) << r.skipped_steps.front();
}

TEST(NonFinite, CleanDataSkipsNothingAndTrainsAsBefore) {
  Net net(load_model("fmnist_cnn"), {.batch = 16});
  const std::string before = net.weights_sha256();
  Trainer trainer(net, config(3, TrainConfig::OnNonFinite::kSkip));
  const TrainResult r = trainer.run(make_synthetic(64, 1, 28, 28, 10, 5), nullptr);
  EXPECT_TRUE(r.skipped_steps.empty());
  EXPECT_NE(r.weights_sha256, before);
}

TEST(NonFinite, AnInfInOneGradientIsFoundAndNamed) {
  Net net(load_model("fmnist_cnn"), {.batch = 16});
  Dataset d = make_synthetic(16, 1, 28, 28, 10, 5);
  net.set_batch(d.images.data(), d.labels.data(), 16);
  net.forward(true);
  net.backward();
  EXPECT_EQ(net.first_nonfinite_gradient(), nullptr);
  ParamTensor& fc = net.params().back();  // fc2's bias
  ASSERT_NE(fc.grad, nullptr);
  fc.grad[0] = std::numeric_limits<float>::infinity();  // the CPU arena is host memory
  const ParamTensor* bad = net.first_nonfinite_gradient();
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->name, fc.name);
}

// A step whose weights have had no update yet cannot blame the learning rate (an LRN of beta 1000
// did: "lower --lr"); once an update has been made, the learning rate is what to try first.
TEST(NonFinite, BeforeAnyUpdateTheLearningRateIsNotBlamed) {
  Net net(load_model("fmnist_cnn"), {.batch = 16});
  Trainer trainer(net, config(1, TrainConfig::OnNonFinite::kStop));
  const Dataset clean = make_synthetic(16, 1, 28, 28, 10, 5);
  Dataset huge = clean;
  std::fill(huge.images.begin(), huge.images.end(), 3e38f);  // finite, but the convolutions overflow
  auto message = [&](int64_t step) {
    try {
      trainer.train_batch(huge.images.data(), huge.labels.data(), 16, 0.01, step, 0);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string first = message(0);
  EXPECT_NE(first.find("no update has been made yet, so --lr is not the cause"), std::string::npos) << first;
  EXPECT_EQ(first.find("lower --lr"), std::string::npos) << first;
  EXPECT_TRUE(std::isfinite(trainer.train_batch(clean.images.data(), clean.labels.data(), 16, 0.01, 0, 0)));
  const std::string later = message(1);
  EXPECT_NE(later.find("(lower --lr, or --on-nan skip to skip such steps)"), std::string::npos) << later;
}

// plan's and profile's timing steps run at learning rate 0 and have neither --lr nor --on-nan: their
// message blames neither (they said "lower --lr, or --on-nan skip").
TEST(NonFinite, StepsAtLearningRateZeroBlameNeitherTheRateNorAFlagTheCallerLacks) {
  Net net(load_model("fmnist_cnn"), {.batch = 16});
  TrainConfig c;
  c.lr = 0;
  Trainer trainer(net, c);
  const Dataset clean = make_synthetic(16, 1, 28, 28, 10, 5);
  Dataset huge = clean;
  std::fill(huge.images.begin(), huge.images.end(), 3e38f);
  ASSERT_TRUE(std::isfinite(trainer.train_batch(clean.images.data(), clean.labels.data(), 16, 0.0, 0, 0)));
  try {
    trainer.train_batch(huge.images.data(), huge.labels.data(), 16, 0.0, 1, 0);
    FAIL() << "an overflowing input must stop the step";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the steps run at learning rate 0, so the learning rate is not the cause"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("lower"), std::string::npos) << what;
    EXPECT_EQ(what.find("--on-nan"), std::string::npos) << what;
  }
}

// An update that overflows float32 with every gradient finite (a bias of 1e37 decayed at lr 100:
// 1e37 · (1 − 100) is beyond float32) is refused after the step, by train_batch and by run(), and
// no checkpoint or result is written with it.
TEST(NonFinite, AnUpdateThatOverflowsIsRefusedAfterTheStep) {
  const Dataset clean = make_synthetic(16, 1, 28, 28, 10, 5);
  for (bool whole_run : {false, true}) {
    SCOPED_TRACE(whole_run);
    Net net(load_model("fmnist_cnn"), {.batch = 16});
    const size_t bias = net.params().size() - 1;  // fc2's bias
    std::vector<float> huge(10, 1e37f);
    net.import_param(bias, huge);
    TrainConfig c = config(1, TrainConfig::OnNonFinite::kStop);
    c.lr = 100;
    c.weight_decay = 1;
    c.weight_decay_on = SgdConfig::DecayOn::kAll;
    Trainer trainer(net, c);
    try {
      if (whole_run)
        trainer.run(clean, nullptr);
      else
        trainer.train_batch(clean.images.data(), clean.labels.data(), 16, c.lr, 0, 0);
      FAIL() << "an update that overflows must stop training";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("after step 1's update, 'fc2.bias' (layer 'fc2') holds NaN or Inf, though every gradient "
                          "was finite"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("(lower --lr)"), std::string::npos) << what;
    }
  }
}

}  // namespace test_nonfinite
}  // namespace vdnn
