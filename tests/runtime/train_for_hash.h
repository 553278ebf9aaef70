// tests/runtime/train_for_hash.h — trains a graph for a few steps on synthetic data and returns
// the weights hash, so tests can compare runs (policies, sync modes, links, budgets) exactly.
//
//   NetOptions o;
//   o.batch = 16;
//   o.policy = Policy::kAll;
//   EXPECT_EQ(train_for_hash(make_net(), o, 6), train_for_hash(make_net(), {.batch = 16}, 6));
//   Graph dag = offload_test_dag();   // the DAG the offload tests share
//   Graph a = atrous_net();            // dilation, asymmetric padding, ReLU6
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "data/synthetic.h"
#include "io/model_file.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

namespace vdnn::test {

// A small DAG with every kind of node offloading must handle: conv, BN, in-place ReLU, concat,
// LRN, pools, a residual add, dropout (unless `with_dropout` is false).
inline Graph offload_test_dag(const std::string& name = "offload_dag", bool with_dropout = true) {
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
      .layer("relu", "res_relu");
  if (with_dropout) b.layer("dropout", "drop", {{"rate", 0.2}});
  b.layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

// The layer features ONNX import brought (issue 18): dilation, asymmetric padding, ReLU6 in place
// after batch norm and after a dilated convolution.
inline Graph atrous_net() {
  ModelBuilder b("atrous", {3, 12, 12}, 5);
  b.layer("conv", "c1", {{"channels", 8}, {"kernel", 3}, {"dilation", 2}, {"pad", 2}})
      .layer("batch_norm", "bn")
      .layer("relu6", "a1")
      .layer("conv", "c2",
             {{"channels", 16},
              {"kernel", 3},
              {"stride", 2},
              {"pad", 0},
              {"pad_end", 1},
              {"dilation", nlohmann::json::array({1, 2})}})
      .layer("relu6", "a2")
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

inline std::string train_for_hash(Graph g, const NetOptions& options, int64_t iterations, double lr = 0.05,
                                  int64_t samples = 64, uint64_t data_seed = 11) {
  const Shape& s = g.input_shape();
  Dataset data = g.token_input() ? make_synthetic_tokens(samples, s.channels(), g.classes(), data_seed)
                                 : make_synthetic(samples, s.channels(), s.height(), s.width(), g.classes(), data_seed);
  Net net(std::move(g), options);
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.lr = lr;
  cfg.seed = options.seed;
  cfg.evaluate = false;
  Trainer trainer(net, cfg);
  return trainer.run(data, nullptr).weights_sha256;
}

// A few steps on synthetic data (4 batches of samples), with what comparisons of two ways of
// training need: the per-step losses, every parameter in its plain layout, the hash and the peak.
struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> weights;
  std::string sha;
  size_t peak = 0;
};

inline Trained train_and_export(Graph g, const NetOptions& o, int steps) {
  const Shape& s = g.input_shape();
  const Dataset data = make_synthetic(4 * o.batch, s.channels(), s.height(), s.width(), g.classes(), 11);
  Net net(std::move(g), o);
  TrainConfig cfg;
  cfg.iterations = steps;
  cfg.lr = 0.05;
  cfg.seed = o.seed;
  cfg.evaluate = false;
  const TrainResult r = Trainer(net, cfg).run(data, nullptr);
  Trained t{r.step_losses, {}, r.weights_sha256, net.train_plan().peak_bytes};
  for (size_t i = 0; i < net.params().size(); ++i) t.weights.push_back(net.export_param(i));
  return t;
}

// How far two trainings ended apart: the largest relative difference of a step's loss and the
// largest absolute difference of a weight.
struct Agreement {
  double loss_relative = 0, weight_absolute = 0;
};

inline Agreement agreement(const Trained& a, const Trained& b) {
  Agreement d;
  bool same_shapes = a.losses.size() == b.losses.size() && a.weights.size() == b.weights.size();
  for (size_t p = 0; same_shapes && p < a.weights.size(); ++p) same_shapes = a.weights[p].size() == b.weights[p].size();
  if (!same_shapes) return {INFINITY, INFINITY};  // not the same training at all
  for (size_t i = 0; i < a.losses.size() && i < b.losses.size(); ++i)
    d.loss_relative =
        std::max(d.loss_relative, std::abs(double(a.losses[i]) - b.losses[i]) / std::abs(double(a.losses[i])));
  for (size_t p = 0; p < a.weights.size() && p < b.weights.size(); ++p)
    for (size_t i = 0; i < a.weights[p].size(); ++i)
      d.weight_absolute = std::max(d.weight_absolute, std::abs(double(a.weights[p][i]) - b.weights[p][i]));
  return d;
}

}  // namespace vdnn::test
