// Optimizer state in host memory (plan/optimizer_state.h StatePlace::kHost, ZeRO-Offload's
// placement on one device): the weights train to the same bits as with the state on the device
// (SGD and AdamW, with clipping and warm-up, under none and all, a tied GPT head included); the
// device holds no state and no gradient between steps, the host region holds the state, each
// trainable weight's master and its gradient's copy; a resumed run equals a straight one; the
// simulator adds the host's update after the device's work; what the placement does not take is
// refused by name.
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "error_of.h"
#include "io/model_file.h"
#include "memory/offset_allocator.h"
#include "plan/planner.h"
#include "planning/device_planner.h"
#include "planning/plan_source.h"
#include "planning/state_placement.h"
#include "runtime/checkpoint.h"
#include "runtime/train_for_hash.h"
#include "runtime/trainer.h"

namespace vdnn::test {
namespace test_host_optimizer_state {

TrainConfig clipped_adamw(int64_t iterations) {
  TrainConfig c;
  c.optimizer = OptimizerKind::kAdamW;
  c.weight_decay = 0.01;
  c.lr = 2e-3;
  c.iterations = iterations;
  c.warmup_steps = 2;
  c.clip_grad_norm = 0.5;
  c.seed = 3;
  c.evaluate = false;
  return c;
}

std::string train(Graph g, NetOptions o, TrainConfig c, const std::function<void(Trainer&)>& before = {},
                  const std::function<void(const StepProgress&)>& on_step = {}) {
  o.optimizer = c.optimizer;
  const Shape& s = g.input_shape();
  const Dataset data = g.token_input()
                           ? make_synthetic_tokens(4 * o.batch, s.channels(), g.classes(), 11)
                           : make_synthetic(4 * o.batch, s.channels(), s.height(), s.width(), g.classes(), 11);
  Net net(std::move(g), o);
  c.seed = o.seed;
  Trainer trainer(net, c);
  if (before) before(trainer);
  if (on_step) trainer.on_step(on_step);
  return trainer.run(data, nullptr).weights_sha256;
}

NetOptions on(StatePlace place, Policy policy = Policy::kNone) {
  NetOptions o{.batch = 8, .seed = 3, .policy = policy};
  o.optimizer_state = place;
  return o;
}

TEST(HostOptimizerState, TrainsTheDevicePlacementsWeightsToTheBit) {
  TrainConfig sgd = clipped_adamw(5);
  sgd.optimizer = OptimizerKind::kSgd;
  sgd.lr = 0.05;
  for (const TrainConfig& c : {clipped_adamw(5), sgd})
    for (Policy p : {Policy::kNone, Policy::kAll})
      EXPECT_EQ(train(offload_test_dag(), on(StatePlace::kHost, p), c),
                train(offload_test_dag(), on(StatePlace::kDevice, p), c))
          << to_string(c.optimizer) << " " << to_string(p);
}

TEST(HostOptimizerState, ATiedHeadsGradientIsSummedBeforeItLeaves) {
  // gpt_char's lm_head shares wte's weight: its gradient is final only after the embedding's backward.
  NetOptions host = on(StatePlace::kHost), device = on(StatePlace::kDevice);
  host.batch = device.batch = 2;
  EXPECT_EQ(train(load_model("gpt_char"), host, clipped_adamw(2)),
            train(load_model("gpt_char"), device, clipped_adamw(2)));
}

// Each tensor's bytes as the host region places them.
size_t placed(const Program& p, bool (*which)(const ProgramTensor&)) {
  size_t bytes = 0;
  for (const ProgramTensor& t : p.tensors)
    if (which(t)) bytes += OffsetAllocator::round_up(t.bytes);
  return bytes;
}

TEST(HostOptimizerState, TheDeviceKeepsTheWeightsAndTheHostTheRest) {
  NetOptions host = on(StatePlace::kHost), device = on(StatePlace::kDevice);
  host.optimizer = device.optimizer = OptimizerKind::kAdamW;
  Net h(offload_test_dag(), host), d(offload_test_dag(), device);
  const MemoryPlan& hp = h.train_plan();
  EXPECT_EQ(hp.by_class.peak(MemoryClass::kOptimizerState), 0u);
  EXPECT_EQ(d.train_plan().by_class.peak(MemoryClass::kOptimizerState),
            2 * d.train_plan().by_class.peak(MemoryClass::kWeightGrads));
  EXPECT_LT(hp.by_class.peak(MemoryClass::kWeightGrads), d.train_plan().by_class.peak(MemoryClass::kWeightGrads))
      << "gradients stream to the host as the backward pass finishes them";
  const Program& p = h.train_program();
  const size_t state = placed(p, [](const ProgramTensor& t) { return t.on_host; });
  const size_t mirrors = placed(p, [](const ProgramTensor& t) { return t.host_mirror; });
  EXPECT_EQ(state, mirrors) << "AdamW: two moments per weight, as many bytes as the master and the gradient's copy";
  EXPECT_EQ(h.host_bytes(), state + mirrors) << "under none the host region is the model states alone";
  EXPECT_EQ(d.host_bytes(), 0u);
  EXPECT_LT(hp.smallest_bytes, d.train_plan().smallest_bytes);
  for (const ParamTensor& t : h.params()) {
    if (!t.spec.trainable) continue;
    EXPECT_NE(t.host_data, nullptr) << t.name;
    EXPECT_EQ(t.grad, t.host_grad) << t.name << ": the gradient's home is its host copy";
  }
}

TEST(HostOptimizerState, AResumedRunEqualsAStraightOne) {
  const std::filesystem::path dir = temp_dir("host_state_resume");
  const std::string straight = train(offload_test_dag(), on(StatePlace::kHost), clipped_adamw(6));
  struct Stop {};
  TrainConfig first = clipped_adamw(6);
  first.save_path = (dir / "half.safetensors").string();
  first.checkpoint_every = 3;
  EXPECT_THROW(train(offload_test_dag(), on(StatePlace::kHost), first, {},
                     [](const StepProgress& p) {
                       if (p.step == 3) throw Stop{};
                     }),
               Stop);
  const Checkpoint c = read_checkpoint(first.save_path);
  TrainConfig rest = clipped_adamw(6);
  EXPECT_EQ(train(offload_test_dag(), on(StatePlace::kHost), rest, [&](Trainer& t) { t.resume(c); }), straight);
  // The checkpoint is the placement's own business: the device placement resumes it too.
  EXPECT_EQ(train(offload_test_dag(), on(StatePlace::kDevice), rest, [&](Trainer& t) { t.resume(c); }), straight);
}

TEST(HostOptimizerState, TheSimulatorAddsTheHostsUpdateAfterTheDevicesWork) {
  const Graph graph = load_model("vgg_cifar");
  const PlanInputs in = plan_inputs(graph, 32, {.device = "titan-x-maxwell"});
  Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  planner.set_optimizer(OptimizerKind::kAdamW);
  const Configuration none{Policy::kNone, in.costs.fastest()};
  const Evaluation device = planner.evaluate(none, 0);
  planner.set_optimizer_state(StatePlace::kHost);
  const Evaluation host = planner.evaluate(none, 0);
  EXPECT_EQ(device.time.host_update_seconds, 0.0);
  EXPECT_GT(device.time.update_seconds, 0.0);
  EXPECT_EQ(host.time.update_seconds, 0.0) << "the device updates nothing";
  // The host's update of every weight (7 words each at the host's bandwidth) is its least.
  const double weights = static_cast<double>(device.memory.by_class.peak(MemoryClass::kWeightGrads));
  EXPECT_GE(host.time.host_update_seconds, 7 * weights / in.costs.host_memory_bytes_per_second * 0.99);
  EXPECT_GT(host.time.iteration_seconds, device.time.iteration_seconds - device.time.update_seconds);
  EXPECT_DOUBLE_EQ(planner.oracle_seconds(), device.time.iteration_seconds)
      << "the oracle keeps the state on the device";
  EXPECT_LT(host.minimum_budget, device.minimum_budget);
}

TEST(HostOptimizerState, AutoKeepsTheStateOnTheDeviceUnlessOnlyTheHostFitsOrIsFaster) {
  const Graph graph = load_model("vgg_cifar");
  const PlanSourceOptions titan{.device = "titan-x-maxwell"};
  const PlannerRequest adamw{.optimizer = OptimizerKind::kAdamW};
  const StatePlacement roomy = choose_state_placement(graph, 32, titan, adamw, "all");
  EXPECT_EQ(roomy.place, StatePlace::kDevice) << roomy.summary;
  ASSERT_TRUE(roomy.device_seconds && roomy.host_seconds) << roomy.summary;
  EXPECT_LT(*roomy.device_seconds, *roomy.host_seconds) << "the device's update is faster than the host's";
  // A budget below the device placement's smallest and above the host's: only the host fits.
  size_t smallest[2];
  for (StatePlace place : {StatePlace::kDevice, StatePlace::kHost}) {
    PlannerRequest r = adamw;
    r.optimizer_state = place;
    const DevicePlanner p(graph, 32, titan, r);
    smallest[place == StatePlace::kHost] = p.planner.minimum_budget({Policy::kAll, p.in.costs.fastest()});
  }
  ASSERT_LT(smallest[1], smallest[0]);
  PlannerRequest tight = adamw;
  tight.device_memory = (smallest[0] + smallest[1]) / 2;
  const StatePlacement p = choose_state_placement(graph, 32, titan, tight, "all");
  EXPECT_EQ(p.place, StatePlace::kHost) << p.summary;
  EXPECT_FALSE(p.device_seconds);
  EXPECT_NE(p.summary.find("optimizer state in host memory: its fastest fitting row "), std::string::npos) << p.summary;
  EXPECT_NE(p.summary.find("on the device nothing fits"), std::string::npos) << p.summary;
}

TEST(HostOptimizerState, WhatItDoesNotTakeIsRefusedByName) {
  NetOptions inference = on(StatePlace::kHost);
  inference.inference = true;
  expect_error([&] { Net(load_model("fmnist_cnn"), inference); }, {"--optimizer-state host", "inference"});
  expect_error([&] { parse_state_place("disk"); }, {"--optimizer-state 'disk'", "device", "host"});
  const Graph graph = load_model("fmnist_cnn");
  expect_error(
      [&] {
        DevicePlanner(graph, 8, {.device = "h100"},
                      {.optimizer_state = StatePlace::kHost, .collectives = {.ranks = 2}});
      },
      {"--optimizer-state host", "one rank"});
}

}  // namespace test_host_optimizer_state
}  // namespace vdnn::test
