// Checkpoints: N steps straight and N/2 + resume + N/2 end with the same weights_sha256 (fmnist_cnn,
// whose dropout, batch norm and momentum all carry state across steps), under policies none and
// all; leaving the momentum or the dropout counter out breaks that equality; bad checkpoints and
// mismatched runs give one clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "runtime/checkpoint.h"
#include "runtime/trainer.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_checkpoint {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 16;
constexpr int64_t kSteps = 10;  // 4 batches per epoch: the half-way point is inside epoch 2

struct Interrupted {};  // thrown from on_step to stop a run the way a crash would

class CheckpointBase : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_checkpoint_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static TrainConfig config(const std::string& save = "", int64_t every = 0) {
    TrainConfig c;
    c.iterations = kSteps;
    c.lr = 0.05;  // cosine over the whole run: the learning rate depends on the global step
    c.seed = 3;
    c.evaluate = false;
    c.save_path = save;
    c.checkpoint_every = every;
    return c;
  }

  NetOptions options(int64_t batch = kBatch) const {
    NetOptions o;
    o.batch = batch;
    o.seed = 3;
    o.policy = policy_;
    return o;
  }

  // Trains a fresh fmnist_cnn; `before_run` may resume or alter it, `on_step` may interrupt it.
  std::string train(const TrainConfig& cfg, const std::function<void(Trainer&, Net&)>& before_run = {},
                    const std::function<void(const StepProgress&)>& on_step = {}) {
    Net net(load_model("fmnist_cnn"), options());
    Trainer trainer(net, cfg);
    if (before_run) before_run(trainer, net);
    if (on_step) trainer.on_step(on_step);
    return trainer.run(data_, nullptr).weights_sha256;
  }

  // Runs the first half of kSteps with a checkpoint every kSteps / 2, then "crashes".
  std::string interrupted_run() {
    const std::string file = path("half.safetensors");
    EXPECT_THROW(train(config(file, kSteps / 2), {},
                       [](const StepProgress& p) {
                         if (p.step == kSteps / 2) throw Interrupted{};
                       }),
                 Interrupted);
    return file;
  }

  const Dataset data_ = make_synthetic(64, 1, 28, 28, 10, /*seed=*/5);
  Policy policy_ = Policy::kNone;
  fs::path dir_;
};

class CheckpointTest : public CheckpointBase, public ::testing::WithParamInterface<Policy> {
 protected:
  void SetUp() override {
    CheckpointBase::SetUp();
    policy_ = GetParam();
  }
};

TEST_P(CheckpointTest, ResumedRunEqualsStraightRun) {
  const std::string straight = train(config());
  const std::string file = interrupted_run();
  const Checkpoint c = read_checkpoint(file);
  EXPECT_EQ(c.position.step, kSteps / 2);
  EXPECT_EQ(c.position.steps_per_epoch, 4);
  EXPECT_EQ(c.dropout_step, static_cast<uint64_t>(kSteps / 2));
  EXPECT_EQ(c.file.metadata.at("epoch"), "1");
  EXPECT_EQ(c.file.metadata.at("epoch_step"), "1");
  int64_t first_step = 0;
  const std::string resumed = train(
      config(), [&](Trainer& t, Net&) { t.resume(c); },
      [&](const StepProgress& p) {
        if (!first_step) first_step = p.step;
      });
  EXPECT_EQ(first_step, kSteps / 2 + 1);
  EXPECT_EQ(resumed, straight);
}

TEST_P(CheckpointTest, MomentumAndDropoutCounterAreNeeded) {
  const std::string straight = train(config());
  const Checkpoint c = read_checkpoint(interrupted_run());
  const std::string without_momentum = train(config(), [&](Trainer& t, Net& net) {
    t.resume(c);
    for (size_t i = 0; i < net.params().size(); ++i)
      if (net.params()[i].velocity)
        net.import_momentum(i, std::vector<float>(static_cast<size_t>(net.params()[i].spec.elements()), 0.0f));
  });
  EXPECT_NE(without_momentum, straight);
  const std::string without_dropout_step = train(config(), [&](Trainer& t, Net& net) {
    t.resume(c);
    net.set_dropout_step(0);
  });
  EXPECT_NE(without_dropout_step, straight);
}

INSTANTIATE_TEST_SUITE_P(Policies, CheckpointTest, ::testing::Values(Policy::kNone, Policy::kAll),
                         [](const auto& info) { return std::string(to_string(info.param)); });

using CheckpointFileTest = CheckpointBase;

TEST_F(CheckpointFileTest, SavesEveryNStepsAndAtTheEnd) {
  const std::string file = path("run.safetensors");
  std::vector<int64_t> seen_steps;
  const std::string hash = train(config(file, 3), {}, [&](const StepProgress& p) {
    if (fs::exists(file)) seen_steps.push_back(read_checkpoint(file).position.step);
  });
  EXPECT_EQ(seen_steps, (std::vector<int64_t>{3, 3, 3, 6, 6, 6, 9, 9}));
  const Checkpoint c = read_checkpoint(file);
  EXPECT_EQ(c.position.step, kSteps);
  EXPECT_EQ(c.file.metadata.at("weights_sha256"), hash);
  EXPECT_EQ(c.model, "fmnist_cnn");
  EXPECT_EQ(c.batch, kBatch);
  EXPECT_EQ(c.seed, 3u);
  // Every parameter and running statistic, each batch norm's num_batches_tracked (bn1, bn2) and
  // the momentum of each trainable one.
  Net net(load_model("fmnist_cnn"), options());
  size_t trainable = 0;
  for (const ParamTensor& p : net.params()) trainable += p.velocity != nullptr;
  EXPECT_EQ(c.file.tensors.size(), net.params().size() + 2 + trainable);
  ASSERT_NE(c.file.find("bn2.num_batches_tracked"), nullptr);
  EXPECT_EQ(c.file.find("bn2.num_batches_tracked")->integers, std::vector<int64_t>{kSteps});
  ASSERT_NE(c.file.find("bn1.running_mean"), nullptr);
  ASSERT_NE(c.file.find("conv1.weight:momentum"), nullptr);
  load_weights(c.file, net);
  EXPECT_EQ(net.weights_sha256(), hash);
}

using test::expect_error;  // one line holding every fragment (error_of.h)

TEST_F(CheckpointFileTest, MismatchedRunsAreRefused) {
  const std::string file = path("run.safetensors");
  train(config(file));
  const Checkpoint c = read_checkpoint(file);
  expect_error([&] { check_resumable(c, "vgg_cifar", kBatch, 3); }, {file, "'fmnist_cnn'", "'vgg_cifar'"});
  expect_error([&] { check_resumable(c, "fmnist_cnn", 32, 3); }, {file, "--batch 16", "--batch 32"});
  expect_error([&] { check_resumable(c, "fmnist_cnn", kBatch, 4); }, {file, "--seed 3", "--seed 4"});
  // Another amount of data gives another number of batches per epoch.
  expect_error(
      [&] {
        Net net(load_model("fmnist_cnn"), options());
        Trainer t(net, config());
        t.resume(c);
        t.run(make_synthetic(128, 1, 28, 28, 10, 5), nullptr);
      },
      {file, "4 batches per epoch", "gives 8"});
  expect_error(
      [&] {
        Net net(load_model("fmnist_cnn"), options());
        TrainConfig shorter = config();
        shorter.iterations = 5;
        Trainer t(net, shorter);
        t.resume(c);
        t.run(data_, nullptr);
      },
      {file, "step 10", "ends at step 5"});
  expect_error([&] { train(config("", 3)); }, {"--checkpoint-every 3 needs --save"});
}

TEST_F(CheckpointFileTest, BadTensorsAreNamed) {
  const std::string file = path("run.safetensors");
  train(config(file));
  SafeTensors f = read_weights_file(file);
  Net net(load_model("fmnist_cnn"), options());

  SafeTensors reshaped = f;
  for (SafeTensor& t : reshaped.tensors)
    if (t.name == "fc2.bias") t = {"fc2.bias", {9}, std::vector<float>(9)};
  write_safetensors(path("reshaped.safetensors"), reshaped);
  expect_error([&] { restore_checkpoint(read_checkpoint(path("reshaped.safetensors")), net); },
               {"reshaped.safetensors", "'fc2.bias'", "[9]", "[10]"});

  SafeTensors no_momentum = f;
  std::erase_if(no_momentum.tensors, [](const SafeTensor& t) { return t.name == "conv2.weight:momentum"; });
  write_safetensors(path("no_momentum.safetensors"), no_momentum);
  expect_error([&] { restore_checkpoint(read_checkpoint(path("no_momentum.safetensors")), net); },
               {"no_momentum.safetensors", "'conv2.weight:momentum'", "missing"});

  SafeTensors changed = f;
  changed.tensors[0].data[0] += 1.0f;
  write_safetensors(path("changed.safetensors"), changed);
  expect_error([&] { restore_checkpoint(read_checkpoint(path("changed.safetensors")), net); },
               {"changed.safetensors", "weights_sha256"});

  SafeTensors weights_only = f;
  weights_only.metadata.clear();
  write_safetensors(path("weights.safetensors"), weights_only);
  expect_error([&] { read_checkpoint(path("weights.safetensors")); }, {"weights.safetensors", "not a vdnn checkpoint"});
  load_weights(read_weights_file(path("weights.safetensors")), net);  // fine for `vdnn infer`

  SafeTensors bad_step = f;
  bad_step.metadata["step"] = "seven";
  write_safetensors(path("bad_step.safetensors"), bad_step);
  expect_error([&] { read_checkpoint(path("bad_step.safetensors")); }, {"bad_step.safetensors", "'step'", "seven"});
}

}  // namespace test_checkpoint
}  // namespace vdnn
