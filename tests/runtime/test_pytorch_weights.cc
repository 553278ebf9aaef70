// PyTorch's conventions in vdnn's weight files: batch-norm parameters are "weight"/"bias", each
// batch norm has an I64 "num_batches_tracked" (kept from the weights loaded, counted per optimizer
// step), a grouped convolution's weight is [O, I/groups, kh, kw] and an fc weight after an image
// is [units, C*H*W]; --weight-decay-on all decays every trainable parameter as torch.optim.SGD does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "runtime/checkpoint.h"
#include "runtime/sgd.h"
#include "runtime/trainer.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_pytorch_weights {

namespace fs = std::filesystem;

// conv1 (no bias) -> bn1 -> relu1 -> conv2 (2 groups, bias) -> fc, as a PyTorch module would name them.
constexpr const char* kModel = R"({"name": "torch_like", "input": [2, 6, 6], "classes": 3, "layers": [
  {"name": "conv1", "type": "conv", "channels": 4, "kernel": 3, "pad": 1, "bias": false},
  {"name": "bn1", "type": "batch_norm"},
  {"name": "relu1", "type": "relu"},
  {"name": "conv2", "type": "conv", "channels": 4, "kernel": 3, "pad": 1, "groups": 2},
  {"name": "fc", "type": "fc", "units": "classes"},
  {"name": "loss", "type": "softmax_cross_entropy"}]})";

class PyTorchWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_pytorch_weights_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static Net make_net() { return Net(parse_model_text(kModel, "torch_like.json"), {.batch = 4, .seed = 1}); }

  static TrainConfig config(int64_t steps, const std::string& save = "") {
    TrainConfig c;
    c.iterations = steps;
    c.evaluate = false;
    c.save_path = save;
    return c;
  }

  // Every parameter of `net` under its name and PyTorch's shape, element k of each = 0.25 + k / 1024
  // (distinct, exact in float), plus bn1.num_batches_tracked = `tracked`.
  static SafeTensors state_dict(const Net& net, int64_t tracked) {
    SafeTensors f;
    for (const ParamTensor& p : net.params()) {
      std::vector<float> v(static_cast<size_t>(p.spec.elements()));
      for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f + static_cast<float>(k) / 1024;
      f.tensors.push_back({p.name, p.spec.file_dims(), v});
    }
    f.tensors.push_back({"bn1.num_batches_tracked", {}, {}, "I64", {tracked}});
    return f;
  }

  const Dataset data_ = make_synthetic(16, 2, 6, 6, 3, /*seed=*/5);
  fs::path dir_;
};

using test::expect_error;  // one line holding every fragment (error_of.h)

TEST_F(PyTorchWeightsTest, CheckpointHoldsPyTorchNamesAndShapes) {
  const std::string file = path("run.safetensors");
  Net net = make_net();
  Trainer(net, config(3, file)).run(data_, nullptr);
  const Checkpoint c = read_checkpoint(file);
  const SafeTensors& f = c.file;
  EXPECT_EQ(f.find("bn1.scale"), nullptr);
  EXPECT_EQ(f.find("bn1.shift"), nullptr);
  ASSERT_NE(f.find("bn1.weight"), nullptr);
  ASSERT_NE(f.find("bn1.bias"), nullptr);
  EXPECT_EQ(f.find("bn1.weight")->shape, std::vector<int64_t>{4});
  const SafeTensor* tracked = f.find("bn1.num_batches_tracked");
  ASSERT_NE(tracked, nullptr);
  EXPECT_EQ(tracked->dtype, "I64");
  EXPECT_TRUE(tracked->shape.empty());
  EXPECT_EQ(tracked->integers, std::vector<int64_t>{3});  // one per optimizer step
  EXPECT_EQ(f.find("conv1.weight")->shape, (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ(f.find("conv2.weight")->shape, (std::vector<int64_t>{4, 2, 3, 3}));  // not goihw [2, 2, 2, 3, 3]
  EXPECT_EQ(f.find("conv2.weight:momentum")->shape, (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ(f.find("fc.weight")->shape, (std::vector<int64_t>{3, 144}));  // not [3, 4, 6, 6]
  EXPECT_EQ(f.metadata.at("weight_decay_on"), "weights");
}

// A PyTorch state_dict loads in the same memory order (a grouped weight [O, I/g, kh, kw] is goihw's
// bytes); vdnn's former shapes still load; any other shape is one error naming file and tensor.
TEST_F(PyTorchWeightsTest, PyTorchShapesLoadInTheSameOrder) {
  Net net = make_net();
  const SafeTensors sd = state_dict(net, 0);
  write_safetensors(path("sd.safetensors"), sd);
  load_weights(read_weights_file(path("sd.safetensors")), net);
  for (size_t i = 0; i < net.params().size(); ++i)
    EXPECT_EQ(net.export_param(i), sd.find(net.params()[i].name)->data) << net.params()[i].name;

  SafeTensors old = sd;
  for (SafeTensor& t : old.tensors)
    if (t.name == "conv2.weight") t.shape = {2, 2, 2, 3, 3};
  Net other = make_net();
  load_weights(old, other);
  EXPECT_EQ(other.weights_sha256(), net.weights_sha256());

  SafeTensors wrong = sd;
  for (SafeTensor& t : wrong.tensors)
    if (t.name == "conv2.weight") t.shape = {4, 4, 3, 3, 1}, t.data.resize(144);
  write_safetensors(path("wrong.safetensors"), wrong);
  expect_error([&] { load_weights(read_weights_file(path("wrong.safetensors")), other); },
               {"wrong.safetensors", "'conv2.weight'", "[4, 4, 3, 3, 1]", "needs shape [4, 2, 3, 3]"});
  SafeTensors missing = sd;
  std::erase_if(missing.tensors, [](const SafeTensor& t) { return t.name == "bn1.running_var"; });
  expect_error([&] { load_weights(missing, other); }, {"'bn1.running_var'", "missing"});
}

// PyTorch's count is kept: 100 loaded + 3 steps = 103, and a resume continues from there.
TEST_F(PyTorchWeightsTest, NumBatchesTrackedIsKeptAndCounted) {
  const std::string run = path("run.safetensors");
  {
    Net net = make_net();
    write_safetensors(path("sd.safetensors"), state_dict(net, 100));
    load_weights(read_weights_file(path("sd.safetensors")), net);
    Trainer(net, config(3, run)).run(data_, nullptr);
    EXPECT_EQ(read_checkpoint(run).file.find("bn1.num_batches_tracked")->integers, std::vector<int64_t>{103});
  }
  Net net = make_net();
  Trainer trainer(net, config(5, run));
  trainer.resume(read_checkpoint(run));
  trainer.run(data_, nullptr);
  EXPECT_EQ(read_checkpoint(run).file.find("bn1.num_batches_tracked")->integers, std::vector<int64_t>{105});
}

TEST_F(PyTorchWeightsTest, OnlyAnIntegerScalarCountIsTaken) {
  Net net = make_net();
  SafeTensors as_float = state_dict(net, 0);
  as_float.tensors.back() = {"bn1.num_batches_tracked", {}, {7.0f}};
  expect_error([&] { load_weights(as_float, net); },
               {"'bn1.num_batches_tracked'", "F32 []", "expected an integer scalar (shape [])"});
  SafeTensors shaped = state_dict(net, 0);
  shaped.tensors.back().shape = {1};
  expect_error([&] { load_weights(shaped, net); }, {"'bn1.num_batches_tracked'", "I64 [1]"});
  SafeTensors step = state_dict(net, 0);
  step.tensors.push_back({"step", {}, {}, "I64", {5}});  // an optimizer's counter: not a weight
  write_safetensors(path("step.safetensors"), step);
  expect_error([&] { read_weights_file(path("step.safetensors")); },
               {"step.safetensors", "tensor 'step'", "dtype I64"});
}

// One SGD step from zero momentum, against the hand computation w - lr * (g + wd * w).
TEST_F(PyTorchWeightsTest, DecayOnAllDecaysBiasesAndBatchNorm) {
  const double lr = 0.5, wd = 0.1;
  for (const SgdConfig::DecayOn on : {SgdConfig::DecayOn::kWeights, SgdConfig::DecayOn::kAll}) {
    Net net = make_net();
    load_weights(state_dict(net, 0), net);  // biases and BN parameters away from 0 and 1
    std::vector<float> images(static_cast<size_t>(4 * 2 * 6 * 6));
    for (size_t k = 0; k < images.size(); ++k) images[k] = std::sin(static_cast<float>(k));
    const std::vector<int32_t> labels = {0, 1, 2, 1};
    net.set_batch(images.data(), labels.data(), 4);
    net.forward(/*training=*/true);
    net.backward();
    std::vector<std::vector<float>> w0, g;
    for (size_t i = 0; i < net.params().size(); ++i) {
      w0.push_back(net.export_param(i));
      g.push_back(net.params()[i].grad ? net.export_grad(i) : std::vector<float>{});
    }
    Sgd sgd({.momentum = 0.9, .weight_decay = wd, .decay_on = on});
    net.run_on_compute([&] { sgd.step(net.backend(), net.params(), lr); });
    for (size_t i = 0; i < net.params().size(); ++i) {
      const ParamTensor& p = net.params()[i];
      const std::vector<float> w1 = net.export_param(i);
      if (!p.grad) {
        EXPECT_EQ(w1, w0[i]) << p.name;  // running statistics: no update, no decay
        continue;
      }
      const bool weight = p.name == "conv1.weight" || p.name == "conv2.weight" || p.name == "fc.weight";
      const double rate = on == SgdConfig::DecayOn::kAll || weight ? wd : 0.0;
      for (size_t k = 0; k < w1.size(); ++k) {
        const double expected = w0[i][k] - lr * (g[i][k] + rate * w0[i][k]);
        ASSERT_NEAR(w1[k], expected, 1e-6 * std::max(1.0, std::abs(expected))) << p.name << "[" << k << "]";
      }
    }
  }
}

TEST_F(PyTorchWeightsTest, DecayRuleIsRecordedAndCheckedOnResume) {
  const std::string run = path("run.safetensors");
  TrainConfig all = config(2, run);
  all.weight_decay_on = SgdConfig::DecayOn::kAll;
  Net net = make_net();
  Trainer(net, all).run(data_, nullptr);
  const Checkpoint c = read_checkpoint(run);
  EXPECT_EQ(c.file.metadata.at("weight_decay_on"), "all");
  EXPECT_EQ(c.weight_decay_on, SgdConfig::DecayOn::kAll);
  Net again = make_net();
  Trainer weights_only(again, config(4));
  expect_error([&] { weights_only.resume(c); },
               {"--resume", "run.safetensors", "--weight-decay-on all", "this run has --weight-decay-on weights"});
  // A checkpoint from before the option decayed weights only.
  SafeTensors before = read_weights_file(run);
  before.metadata.erase("weight_decay_on");
  write_safetensors(path("before.safetensors"), before);
  EXPECT_EQ(read_checkpoint(path("before.safetensors")).weight_decay_on, SgdConfig::DecayOn::kWeights);
  before.metadata["weight_decay_on"] = "biases";
  write_safetensors(path("bad.safetensors"), before);
  expect_error([&] { read_checkpoint(path("bad.safetensors")); },
               {"bad.safetensors", "'weight_decay_on' is 'biases'", "weights or all"});
}

// save_weights: the checkpoint's tensors less the momentum, the same bytes, and loadable as weights.
TEST_F(PyTorchWeightsTest, SavedWeightsAreTheCheckpointLessMomentum) {
  Net net = make_net();
  Trainer(net, config(3, path("run.safetensors"))).run(data_, nullptr);
  save_weights(path("w.safetensors"), net, 1, 3);
  const SafeTensors c = read_weights_file(path("run.safetensors"));
  const SafeTensors w = read_weights_file(path("w.safetensors"));
  size_t momentum = 0;
  for (const SafeTensor& t : c.tensors) {
    if (t.name.ends_with(":momentum")) {
      ++momentum;
      EXPECT_EQ(w.find(t.name), nullptr) << t.name;
      continue;
    }
    const SafeTensor* same = w.find(t.name);
    ASSERT_NE(same, nullptr) << t.name;
    EXPECT_EQ(same->shape, t.shape) << t.name;
    EXPECT_EQ(same->data, t.data) << t.name;
    EXPECT_EQ(same->integers, t.integers) << t.name;
  }
  EXPECT_EQ(w.tensors.size() + momentum, c.tensors.size());
  EXPECT_EQ(w.metadata.at("weights_sha256"), net.weights_sha256());
  EXPECT_EQ(w.metadata.at("step"), "3");
  Net other = make_net();
  load_weights(w, other);
  EXPECT_EQ(other.weights_sha256(), net.weights_sha256());
  expect_error([&] { read_checkpoint(path("w.safetensors")); }, {"w.safetensors", "not a vdnn checkpoint"});
}

}  // namespace test_pytorch_weights
}  // namespace vdnn
