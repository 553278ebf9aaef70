// tests/runtime/train_for_hash.h — trains a graph for a few steps on synthetic data and returns
// the weights hash, so tests can compare runs (policies, sync modes, links, budgets) exactly.
//
//   NetOptions o;
//   o.batch = 16;
//   o.policy = Policy::kAll;
//   EXPECT_EQ(train_for_hash(make_net(), o, 6), train_for_hash(make_net(), {.batch = 16}, 6));
#pragma once

#include <string>

#include "data/synthetic.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

namespace vdnn::test {

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
