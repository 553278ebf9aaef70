// Numerical faults: a NaN in the data makes the loss and the gradients non-finite; training stops
// before the update with the step and the layer named, or, with skip, leaves the weights untouched
// (and batch norm's running statistics) for that step and goes on. An Inf in one gradient alone is found too.
#include <gtest/gtest.h>

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

}  // namespace test_nonfinite
}  // namespace vdnn
