// AdamW (runtime/adamw.h), gradient clipping (runtime/optimizer.h) and warm-up + cosine
// (runtime/sgd.h LrSchedule): the CPU update kernel against a float64 reference of PyTorch's
// formula; one pass over every parameter equal to one update at a time, bit for bit; the plan
// counting AdamW's two moments as optimizer state (twice SGD's); training under policies none,
// conv, all and dyn giving the same weights to the bit; a resumed AdamW run equal to a straight
// one; and the errors a wrong setting, a mismatched Net or checkpoint gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backend_api/backend.h"
#include "cli/cli_run.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/planner.h"
#include "planning/plan_source.h"
#include "planning/planned_policy.h"
#include "reference/finite_difference.h"
#include "runtime/adamw.h"
#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "runtime/trainer.h"
#include "train_for_hash.h"

namespace vdnn::test {
namespace test_adamw {

namespace fs = std::filesystem;

// One parameter's tensors in fp32 (what the kernel updates) and its float64 reference.
struct Tensors {
  std::vector<float> w, g, m, v;
  std::vector<double> rw, rm, rv;
};

Tensors random_tensors(size_t n, uint64_t seed) {
  Tensors t{ref::random_vector(n, seed), ref::random_vector(n, seed + 1), std::vector<float>(n, 0.0f),
            std::vector<float>(n, 0.0f)};
  t.rw.assign(t.w.begin(), t.w.end());
  t.rm.assign(n, 0.0);
  t.rv.assign(n, 0.0);
  return t;
}

// torch.optim.AdamW's step (foreach=False) in float64: t counts from 1.
void reference_step(Tensors& t, double lr, double wd, double b1, double b2, double eps, double scale, int64_t step) {
  const double bc1 = 1 - std::pow(b1, static_cast<double>(step)), bc2 = 1 - std::pow(b2, static_cast<double>(step));
  for (size_t k = 0; k < t.w.size(); ++k) {
    const double g = scale * static_cast<double>(t.g[k]);
    t.rw[k] *= 1 - lr * wd;
    t.rm[k] = b1 * t.rm[k] + (1 - b1) * g;
    t.rv[k] = b2 * t.rv[k] + (1 - b2) * g * g;
    t.rw[k] -= lr / bc1 * t.rm[k] / (std::sqrt(t.rv[k]) / std::sqrt(bc2) + eps);
  }
}

// The largest difference of `got` from `want`, relative to want's largest magnitude.
template <typename Want>
double relative_error(const std::vector<float>& got, const std::vector<Want>& want) {
  double diff = 0, scale = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    diff = std::max(diff, std::abs(static_cast<double>(got[k]) - static_cast<double>(want[k])));
    scale = std::max(scale, std::abs(static_cast<double>(want[k])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(AdamwKernel, MatchesAFloat64ReferenceOfPyTorchsStep) {
  Net net(load_model("fmnist_cnn"), {.batch = 2});
  // Sizes around the one-pass threshold and odd ones, so thread shares start and end mid-parameter.
  const std::vector<size_t> sizes{1, 7, 65536, 100003, 3, 250001};
  std::vector<Tensors> params;
  for (size_t i = 0; i < sizes.size(); ++i) params.push_back(random_tensors(sizes[i], 10 * i + 1));
  const double wd = 0.1, b1 = 0.9, b2 = 0.95, eps = 1e-8;
  AdamW adamw({.kind = OptimizerKind::kAdamW, .weight_decay = wd, .beta1 = b1, .beta2 = b2, .eps = eps});
  for (int64_t step = 1; step <= 6; ++step) {
    const double lr = 1e-3 * step;               // a schedule's changing rate
    const float scale = step % 2 ? 1.0f : 0.5f;  // clipped every other step
    adamw.begin_step(lr, scale);
    std::vector<AdamwUpdate> updates;
    for (size_t i = 0; i < params.size(); ++i) {
      Tensors& t = params[i];
      updates.push_back({t.w.data(), t.g.data(), t.m.data(), t.v.data(), static_cast<int64_t>(t.w.size()),
                         adamw.scalars(/*decays=*/i % 2 == 0)});
      reference_step(t, lr, i % 2 == 0 ? wd : 0.0, b1, b2, eps, scale, step);
    }
    net.run_on_compute([&] { net.backend().adamw_update_all(updates); });
  }
  EXPECT_EQ(adamw.steps(), 6);
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensors& t = params[i];
    EXPECT_LT(relative_error(t.w, t.rw), 1e-6) << "weights of parameter " << i << " (" << sizes[i] << ")";
    EXPECT_LT(relative_error(t.m, t.rm), 1e-6) << "exp_avg of parameter " << i;
    EXPECT_LT(relative_error(t.v, t.rv), 1e-6) << "exp_avg_sq of parameter " << i;
  }
}

TEST(AdamwKernel, OnePassIsEachParametersOwnUpdateBitForBit) {
  Net net(load_model("fmnist_cnn"), {.batch = 2});
  const std::vector<size_t> sizes{1, 7, 65536, 100003, 3, 250001, 16};
  std::vector<Tensors> together, alone;
  for (size_t i = 0; i < sizes.size(); ++i) {
    together.push_back(random_tensors(sizes[i], 7 * i + 3));
    together.back().m = ref::random_vector(sizes[i], 7 * i + 5);
    together.back().v = ref::random_vector(sizes[i], 7 * i + 6, 0.0f, 1.0f);
    alone.push_back(together.back());
  }
  AdamW adamw({.kind = OptimizerKind::kAdamW, .weight_decay = 0.01});
  adamw.begin_step(3e-4, 0.75f);
  auto update = [&](Tensors& t, size_t i) {
    return AdamwUpdate{
        t.w.data(), t.g.data(), t.m.data(), t.v.data(), static_cast<int64_t>(t.w.size()), adamw.scalars(i % 3 != 0)};
  };
  std::vector<AdamwUpdate> all;
  for (size_t i = 0; i < together.size(); ++i) all.push_back(update(together[i], i));
  net.run_on_compute([&] {
    net.backend().adamw_update_all(all);
    for (size_t i = 0; i < alone.size(); ++i) net.backend().adamw_update(update(alone[i], i));
  });
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(together[i].w, alone[i].w) << "parameter " << i << " of " << sizes[i];
    EXPECT_EQ(together[i].m, alone[i].m) << "parameter " << i;
    EXPECT_EQ(together[i].v, alone[i].v) << "parameter " << i;
  }
}

TEST(AdamwKernel, AnUpdateBeforeBeginStepIsRefused) {
  AdamW adamw({.kind = OptimizerKind::kAdamW});
  EXPECT_THROW(adamw.scalars(true), InternalError) << "a programming error, not the user's";
}

TEST(GradClipping, GlobalNormIsTheNormOfTheNorms) {
  Net net(load_model("fmnist_cnn"), {.batch = 4});
  const Dataset data = make_synthetic(4, 1, 28, 28, 10, 3);
  net.set_batch(data.images.data(), data.labels.data(), 4);
  net.forward(true);
  net.backward();
  double sum = 0;  // float64 over every gradient in plain layout
  for (size_t i = 0; i < net.params().size(); ++i)
    if (net.params()[i].grad)
      for (float x : net.export_grad(i)) sum += static_cast<double>(x) * x;
  float norm = 0;
  net.run_on_compute([&] { norm = global_grad_norm(net.backend(), net.params()); });
  EXPECT_GT(norm, 0.0f);
  EXPECT_NEAR(norm, std::sqrt(sum), 1e-5 * std::sqrt(sum));
  EXPECT_EQ(clip_scale(0.0, norm), 1.0f) << "0: no clipping";
  EXPECT_EQ(clip_scale(10 * norm, norm), 1.0f) << "a norm below the limit is left alone";
  EXPECT_FLOAT_EQ(clip_scale(0.5 * norm, norm), 0.5f * norm / (norm + 1e-6f));
}

TEST(GradClipping, ALimitAboveTheNormChangesNothingAndOneBelowChangesTheRun) {
  const NetOptions o{.batch = 16, .seed = 2};
  auto train = [&](double clip) {
    const Dataset data = make_synthetic(64, 1, 28, 28, 10, 11);
    Net net(load_model("fmnist_cnn"), o);
    TrainConfig cfg;
    cfg.iterations = 3;
    cfg.evaluate = false;
    cfg.seed = o.seed;
    cfg.clip_grad_norm = clip;
    Trainer trainer(net, cfg);
    const TrainResult r = trainer.run(data, nullptr);
    EXPECT_EQ(r.step_grad_norms.size(), clip > 0 ? 3u : 0u);
    for (float n : r.step_grad_norms) EXPECT_GT(n, 0.0f);
    return r.weights_sha256;
  };
  const std::string plain = train(0);
  EXPECT_EQ(train(1e6), plain) << "a scale of exactly 1 leaves every gradient as it is";
  EXPECT_NE(train(1e-3), plain);
}

TEST(LrWarmupCosine, IsNanoGptsGetLr) {
  const double base = 6e-4, floor = 6e-5;
  const int64_t warmup = 10, total = 100;
  const LrSchedule s{base, LrSchedule::kCosine, total, 5, 0.1, warmup, floor};
  s.check(OptionNames{});
  for (int64_t it = 0; it < 120; ++it) {  // nanoGPT train.py get_lr, with lr_decay_iters = total
    double want;
    if (it < warmup) {
      want = base * static_cast<double>(it + 1) / static_cast<double>(warmup + 1);
    } else if (it > total) {
      want = floor;
    } else {
      const double ratio = static_cast<double>(it - warmup) / static_cast<double>(total - warmup);
      want = floor + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (base - floor);
    }
    EXPECT_NEAR(s.at(it, 0), want, 1e-15) << "step " << it;
  }
  const LrSchedule plain{0.05, LrSchedule::kCosine, 37};  // no warm-up, no floor: the cosine as it was
  for (int64_t it = 0; it < 40; ++it)
    EXPECT_EQ(plain.at(it, 0), 0.05 * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, it / 37.0)))) << it;
  const LrSchedule warm_constant{0.1, LrSchedule::kConstant, 10, 5, 0.1, 4};
  EXPECT_DOUBLE_EQ(warm_constant.at(0, 0), 0.1 / 5);
  EXPECT_DOUBLE_EQ(warm_constant.at(4, 0), 0.1);
}

TEST(LrWarmupCosine, BadSettingsNameTheirFlag) {
  auto check = [](LrSchedule s) { s.check(OptionNames{}); };
  expect_error([&] { check({0.1, LrSchedule::kCosine, 10, 5, 0.1, -1}); }, {"--warmup-steps -1", "expected 0"});
  expect_error([&] { check({0.1, LrSchedule::kCosine, 10, 5, 0.1, 0, 0.2}); }, {"--min-lr 0.2", "--lr 0.1"});
  expect_error(
      [&] {
        check({0.1, LrSchedule::kStep, 10, 5, 0.1, 0, 0.01});
      },
      {"--min-lr 0.01", "cosine", "--lr-schedule is step"});
  const OptionNames keywords{OptionNames::kKeywords};
  EXPECT_NE(error_of([&] { LrSchedule{0.1, LrSchedule::kCosine, 10, 5, 0.1, 0, 0.2}.check(keywords); }).find("min_lr"),
            std::string::npos);
}

TEST(AdamwSettings, BadValuesNameTheirOption) {
  const OptionNames flags;
  expect_error([&] { check_adamw_settings(1.0, 0.999, 1e-8, flags); }, {"--beta1 1", "0 <= beta1 < 1"});
  expect_error([&] { check_adamw_settings(0.9, -0.1, 1e-8, flags); }, {"--beta2 -0.1", "0 <= beta2 < 1"});
  expect_error([&] { check_adamw_settings(0.9, 0.999, 0.0, flags); }, {"--eps 0", "float32's smallest normal value"});
  expect_error([&] { check_adamw_settings(0.9, 0.999, NAN, flags); }, {"--eps nan"});
  expect_error([&] { check_clip_grad_norm(-1, flags); }, {"--clip-grad-norm -1", "0 (no clipping)"});
  expect_error([&] { parse_optimizer("adam"); }, {"--optimizer 'adam'", "sgd", "adamw"});
  expect_error([&] { net_options({.optimizer = "lion"}, OptionNames{OptionNames::kKeywords}); },
               {"optimizer 'lion'", "adamw"});
  EXPECT_EQ(default_weight_decay(OptimizerKind::kAdamW), 0.01);
  EXPECT_EQ(default_weight_decay(OptimizerKind::kSgd), 5e-4);
}

TEST(AdamwSettings, ATrainerOfAnotherOptimizerThanItsNetIsRefused) {
  Net net(load_model("fmnist_cnn"), {.batch = 4});  // planned for SGD
  TrainConfig cfg;
  cfg.optimizer = OptimizerKind::kAdamW;
  expect_error([&] { Trainer(net, cfg); }, {"--optimizer adamw", "planned for sgd"});
}

// --- memory: the moments are planned optimizer state ------------------------------------------

size_t state_bytes(const MemoryPlan& p) { return p.by_class.peak(MemoryClass::kOptimizerState); }
size_t grad_bytes(const MemoryPlan& p) { return p.by_class.peak(MemoryClass::kWeightGrads); }

TEST(AdamwMemory, ThePlanCountsTwiceTheParametersBytesOfOptimizerState) {
  NetOptions sgd{.batch = 8};
  NetOptions adamw = sgd;
  adamw.optimizer = OptimizerKind::kAdamW;
  Net a(load_model("fmnist_cnn"), sgd), b(load_model("fmnist_cnn"), adamw);
  const size_t grads = grad_bytes(a.train_plan());
  ASSERT_GT(grads, 0u);
  EXPECT_EQ(grad_bytes(b.train_plan()), grads);
  EXPECT_EQ(state_bytes(a.train_plan()), grads) << "SGD: one momentum buffer per trainable parameter";
  EXPECT_EQ(state_bytes(b.train_plan()), 2 * grads) << "AdamW: exp_avg and exp_avg_sq";
  EXPECT_EQ(b.train_plan().smallest_bytes - a.train_plan().smallest_bytes, grads);
  for (const ParamTensor& p : b.params()) {
    EXPECT_EQ(p.velocity, nullptr) << p.name;
    EXPECT_EQ(p.exp_avg != nullptr, p.grad != nullptr) << p.name;
    EXPECT_EQ(p.exp_avg_sq != nullptr, p.grad != nullptr) << p.name;
  }
}

TEST(AdamwMemory, VdnnPlansPlannerCountsThemToo) {
  const Graph graph = load_model("vgg_cifar");
  const PlanInputs in = plan_inputs(graph, 32, {.device = "titan-x-maxwell"});
  Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const Configuration none{Policy::kNone, in.costs.fastest()};
  const Evaluation sgd = planner.evaluate(none, 0);
  planner.set_optimizer(OptimizerKind::kAdamW);
  const Evaluation adamw = planner.evaluate(none, 0);
  const size_t grads = sgd.memory.by_class.peak(MemoryClass::kWeightGrads);
  EXPECT_EQ(sgd.memory.by_class.peak(MemoryClass::kOptimizerState), grads);
  EXPECT_EQ(adamw.memory.by_class.peak(MemoryClass::kOptimizerState), 2 * grads);
  EXPECT_EQ(adamw.minimum_budget - sgd.minimum_budget, grads);
  // The update is memory-bound: SGD moves 5 words per weight (w, g, m in; w, m out), AdamW 7.
  EXPECT_GT(sgd.time.update_seconds, 0.0);
  EXPECT_NEAR(adamw.time.update_seconds / sgd.time.update_seconds, 7.0 / 5.0, 1e-9);
}

// --- training: policies, resume ---------------------------------------------------------------

TrainConfig adamw_config(int64_t iterations) {
  TrainConfig c;
  c.optimizer = OptimizerKind::kAdamW;
  c.weight_decay = 0.01;
  c.weight_decay_on = SgdConfig::DecayOn::kAll;
  c.lr = 2e-3;
  c.iterations = iterations;
  c.warmup_steps = 3;
  c.min_lr = 2e-4;
  c.clip_grad_norm = 0.5;
  c.seed = 3;
  c.evaluate = false;
  return c;
}

std::string train_adamw(Graph g, NetOptions o, int64_t steps) {
  o.optimizer = OptimizerKind::kAdamW;
  const Shape& s = g.input_shape();
  const Dataset data = make_synthetic(4 * o.batch, s.channels(), s.height(), s.width(), g.classes(), 11);
  Net net(std::move(g), o);
  TrainConfig c = adamw_config(steps);
  c.seed = o.seed;
  return Trainer(net, c).run(data, nullptr).weights_sha256;
}

TEST(AdamwPolicies, EveryPolicyTrainsTheSameWeightsToTheBit) {
  const NetOptions none{.batch = 8, .seed = 3};
  const std::string baseline = train_adamw(offload_test_dag(), none, 6);
  for (Policy p : {Policy::kConv, Policy::kAll}) {
    NetOptions o = none;
    o.policy = p;
    EXPECT_EQ(train_adamw(offload_test_dag(), o, 6), baseline) << to_string(p);
  }
  // dyn picks a policy and algorithms for a budget; the algorithms are arithmetic, so its run
  // is compared with `none` on the same algorithms.
  NetOptions sized = none;
  sized.optimizer = OptimizerKind::kAdamW;
  const size_t smallest = Net(offload_test_dag(), sized).train_plan().smallest_bytes;
  NetOptions dyn = sized;
  const PlannedPolicy pick =
      choose_planned_policy(offload_test_dag(), 8, "dyn", smallest * 9 / 10, {}, SyncMode::kEvent, dyn);
  EXPECT_NE(dyn.policy, Policy::kNone) << "below none's smallest budget dyn offloads: " << pick.summary;
  NetOptions same_algorithms = none;
  same_algorithms.conv_algos = dyn.conv_algos;
  same_algorithms.conv_sub_batches = dyn.conv_sub_batches;
  same_algorithms.conv_workspace_bytes = dyn.conv_workspace_bytes;
  EXPECT_EQ(train_adamw(offload_test_dag(), dyn, 6), train_adamw(offload_test_dag(), same_algorithms, 6))
      << pick.summary;
}

class AdamwCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("adamw_checkpoint"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  NetOptions options(OptimizerKind optimizer) const {
    NetOptions o{.batch = 16, .seed = 3};
    o.optimizer = optimizer;
    return o;
  }
  std::string train(const TrainConfig& cfg, const std::function<void(Trainer&)>& before = {},
                    const std::function<void(const StepProgress&)>& on_step = {}) {
    Net net(load_model("fmnist_cnn"), options(cfg.optimizer));
    Trainer trainer(net, cfg);
    if (before) before(trainer);
    if (on_step) trainer.on_step(on_step);
    return trainer.run(data_, nullptr).weights_sha256;
  }

  const Dataset data_ = make_synthetic(64, 1, 28, 28, 10, /*seed=*/5);
  fs::path dir_;
};

struct Stop {};

TEST_F(AdamwCheckpoint, AResumedRunEqualsAStraightOneToTheBit) {
  const int64_t steps = 10;
  const std::string straight = train(adamw_config(steps));
  TrainConfig first = adamw_config(steps);
  first.save_path = path("half.safetensors");
  first.checkpoint_every = steps / 2;
  EXPECT_THROW(train(first, {},
                     [&](const StepProgress& p) {
                       if (p.step == steps / 2) throw Stop{};
                     }),
               Stop);
  const Checkpoint c = read_checkpoint(first.save_path);
  EXPECT_EQ(c.optimizer, OptimizerKind::kAdamW);
  EXPECT_EQ(c.optimizer_steps, steps / 2);
  EXPECT_TRUE(c.file.find("conv1.weight:exp_avg") && c.file.find("conv1.weight:exp_avg_sq"));
  EXPECT_FALSE(c.file.find("conv1.weight:momentum"));
  EXPECT_EQ(train(adamw_config(steps), [&](Trainer& t) { t.resume(c); }), straight);
  // Without its step count the run is another one.
  Checkpoint no_count = c;
  no_count.optimizer_steps = 0;
  EXPECT_NE(train(adamw_config(steps), [&](Trainer& t) { t.resume(no_count); }), straight)
      << "the bias corrections follow the step count";
}

TEST_F(AdamwCheckpoint, AnotherOptimizersCheckpointIsRefused) {
  TrainConfig sgd = adamw_config(2);
  sgd.optimizer = OptimizerKind::kSgd;
  sgd.weight_decay = 5e-4;
  sgd.save_path = path("sgd.safetensors");
  train(sgd);
  const Checkpoint c = read_checkpoint(sgd.save_path);
  EXPECT_EQ(c.optimizer, OptimizerKind::kSgd);
  TrainConfig adamw = adamw_config(4);
  expect_error([&] { train(adamw, [&](Trainer& t) { t.resume(c); }); },
               {"--resume", "sgd.safetensors", "--optimizer sgd", "this run has --optimizer adamw", "':momentum'",
                "':exp_avg' and ':exp_avg_sq'", "--initial-weights"});
}

}  // namespace test_adamw
}  // namespace vdnn::test
