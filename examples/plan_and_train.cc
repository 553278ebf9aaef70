// examples/plan_and_train.cc — libvdnn as a library: load a shipped model, plan it under a device
// memory budget, train a few steps on synthetic data, print the loss and the weights hash.
//
//   plan_and_train [budget_mib=32]
// The model comes from the installed data directory (share/vdnn/models), found without the source
// tree. The plan is made on the CPU target's own sizes, so the smallest budget it names is the one
// the Net then refuses to go below.
#include <cstdio>
#include <cstdlib>

#include <vdnn/vdnn.h>

int main(int argc, char** argv) try {
  const int64_t batch = 32;
  const size_t budget = size_t(argc > 1 ? std::atoi(argv[1]) : 32)
                        << 20;  // all needs 28.31 MiB on a Xeon (Winograd conv2), less on AMD

  // Plan: will `all` (offload every feature map to host memory) fit the budget, and what is the least?
  const vdnn::Graph graph = vdnn::load_model("fmnist_cnn");
  const vdnn::PlanInputs in = vdnn::plan_inputs(graph, batch, {.device = "cpu", .repeats = 1});
  const vdnn::Planner planner(graph, in.value_bytes, in.facts, in.costs, vdnn::SyncMode::kEvent);
  const vdnn::Evaluation e = planner.evaluate({vdnn::Policy::kAll, in.costs.fastest()}, budget);
  std::printf("plan: fmnist_cnn, batch %lld, policy all, budget %zu MiB: %s (smallest %zu bytes)\n",
              static_cast<long long>(batch), budget >> 20, e.fits ? "fits" : "does not fit", e.minimum_budget);
  if (!e.fits) return 1;

  // Train a few steps under that budget.
  vdnn::Net net(vdnn::load_model("fmnist_cnn"),
                {.batch = batch, .seed = 1, .policy = vdnn::Policy::kAll, .device_memory = budget});
  vdnn::TrainConfig config;
  config.iterations = 5;
  config.lr = 0.01;
  config.evaluate = false;
  vdnn::Trainer trainer(net, config);
  const vdnn::TrainResult r = trainer.run(vdnn::make_synthetic(256, 1, 28, 28, 10, /*seed=*/1), nullptr);
  std::printf("trained %lld steps: loss %.4f, weights %s\n", static_cast<long long>(r.iterations), r.final_loss,
              r.weights_sha256.c_str());
  return 0;
} catch (const vdnn::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
