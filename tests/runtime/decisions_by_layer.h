// tests/runtime/decisions_by_layer.h — explicit keep/offload/recompute decisions named by layer,
// and the nets the recompute tests train (a linear net with every cheap layer kind read by a
// backward, the shared offload DAG).
//
//   StepDecisions d = test::decisions_by_layer(g, {{"pool1", StorageAction::kRecompute}});
//   NetOptions o;
//   o.decisions = d;   // the output of layer pool1 is dropped in forward and recomputed
#pragma once

#include <map>
#include <string>

#include "core/graph.h"
#include "io/model_file.h"
#include "plan/storage_decision.h"
#include "vdnn/error.h"

namespace vdnn::test {

// Decides the output value of each named layer; every other value is kept.
inline StepDecisions decisions_by_layer(const Graph& g, const std::map<std::string, StorageAction>& by_layer) {
  StepDecisions d;
  d.values.assign(g.values().size(), {});
  size_t found = 0;
  for (const Node& n : g.nodes()) {
    auto it = by_layer.find(n.layer->name());
    if (it == by_layer.end()) continue;
    d.values[n.output].action = it->second;
    ++found;
  }
  VDNN_CHECK(found == by_layer.size(), "a layer named in the decisions is not in model '" << g.name() << "'");
  return d;
}

// A linear net in which every cheap kind's output is read by a later backward (so recomputing it
// matters): BN + in-place ReLU and LRN (read by LRN, a conv), max pool and BN (read by BN, a conv),
// average pool (read by an FC), dropout (read by an FC).
inline Graph cheap_layers_net() {
  ModelBuilder b("cheap_layers", {3, 12, 12}, 5);
  b.layer("conv", "conv1", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn1")
      .layer("relu", "relu1")
      .layer("lrn", "lrn1", {{"size", 3}})
      .layer("conv", "conv2", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu2")
      .layer("max_pool", "pool1", {{"kernel", 2}})
      .layer("batch_norm", "bn2")
      .layer("conv", "conv3", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu3")
      .layer("avg_pool", "apool", {{"kernel", 2}})
      .layer("fc", "fc1", {{"units", 16}})
      .layer("relu", "relu4")
      .layer("dropout", "drop1", {{"rate", 0.4}})
      .layer("fc", "fc2", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

}  // namespace vdnn::test
