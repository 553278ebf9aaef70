// core/layer_kind.h — the coarse kind of a layer, as vDNN's policies see it.
//
// Model: the `conv` policy offloads inputs of kConv layers only; the prefetch rule stops at kConv;
// reports group time and memory by kind.
//
//   const Node& n = graph.nodes()[i];
//   if (n.layer->kind() == LayerKind::kConv) offload(n.inputs[0]);
//   std::string s = to_string(LayerKind::kPool);  // "POOL"
#pragma once

#include <string>

namespace vdnn {

enum class LayerKind { kConv, kActivation, kPool, kNorm, kFc, kDropout, kJoin, kReshape, kLoss, kAttention };

inline std::string to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::kConv:
      return "CONV";
    case LayerKind::kActivation:
      return "ACTV";
    case LayerKind::kPool:
      return "POOL";
    case LayerKind::kNorm:
      return "NORM";
    case LayerKind::kFc:
      return "FC";
    case LayerKind::kDropout:
      return "DROP";
    case LayerKind::kJoin:
      return "JOIN";
    case LayerKind::kReshape:
      return "RESHAPE";
    case LayerKind::kLoss:
      return "LOSS";
    case LayerKind::kAttention:
      return "ATTN";
  }
  return "?";
}

}  // namespace vdnn
