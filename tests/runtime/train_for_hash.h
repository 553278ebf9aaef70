// tests/runtime/train_for_hash.h — trains a graph for a few steps on synthetic data and returns
// the weights hash, so tests can compare runs (policies, sync modes, links, budgets) exactly.
//
//   NetOptions o;
//   o.batch = 16;
//   o.policy = Policy::kAll;
//   EXPECT_EQ(train_for_hash(make_net(), o, 6), train_for_hash(make_net(), {.batch = 16}, 6));
//   Graph dag = offload_test_dag();   // the DAG the offload tests share
#pragma once

#include <string>

#include "data/synthetic.h"
#include "io/model_file.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

namespace vdnn::test {

// A small DAG with every kind of node offloading must handle: conv, BN, in-place ReLU, concat,
// LRN, pools, a residual add, dropout.
inline Graph offload_test_dag(const std::string& name = "offload_dag") {
  ModelBuilder b(name, {3, 12, 12}, 5);
  b.layer("conv", "stem", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn")
      .layer("relu", "relu")
      .layer("conv", "a", {{"channels", 16}, {"kernel", 1}}, {"relu"})
      .layer("conv", "b", {{"channels", 16}, {"kernel", 3}, {"pad", 1}}, {"relu"})
      .layer("concat", "cat", {}, {"a", "b"})
      .layer("lrn", "lrn", {{"size", 3}})
      .layer("max_pool", "pool", {{"kernel", 2}})
      .layer("conv", "c", {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
      .layer("add", "res", {}, {"c", "pool"})
      .layer("relu", "res_relu")
      .layer("dropout", "drop", {{"rate", 0.2}})
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

inline std::string train_for_hash(Graph g, const NetOptions& options, int64_t iterations,
                                  double lr = 0.05, int64_t samples = 64, uint64_t data_seed = 11) {
  const Shape& s = g.input_shape();
  Dataset data = make_synthetic(samples, s.channels(), s.height(), s.width(), g.classes(), data_seed);
  Net net(std::move(g), options);
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.lr = lr;
  cfg.seed = options.seed;
  cfg.evaluate = false;
  Trainer trainer(net, cfg);
  return trainer.run(data, nullptr).weights_sha256;
}

}  // namespace vdnn::test
