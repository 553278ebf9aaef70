// plan/policy.h — what vDNN offloads (policy) and how the streams synchronize (sync mode).
//
//   none  everything stays on the device (the baseline)
//   all   offload every value some backward reads, and kernel-saved state (vDNN_all)
//   conv  offload only the inputs of convolutions (vDNN_conv; in a transformer, of the matmul-class
//         layers: is_conv_class)
//   auto  per tensor keep, offload or recompute, and per convolution an algorithm, searched for the
//         fastest simulated step under the budget (plan/auto_policy.h; beyond vDNN)
//   sync event  only true dependencies wait (default)     sync layer  barrier after every layer (vDNN)
//   prefetch vdnn  the nearest offloaded layer, never past a conv   prefetch ahead  as far as the budget allows
//
//   Policy p = parse_policy("all");        // throws vdnn::Error naming --policy otherwise
//   SyncMode s = parse_sync_mode("layer");
//   Prefetch f = parse_prefetch("ahead");
#pragma once

#include <string>

#include "core/graph.h"
#include "vdnn/error.h"

namespace vdnn {

enum class Policy { kNone, kAll, kConv, kAuto };
enum class SyncMode { kEvent, kLayer };
enum class Prefetch { kVdnn, kAhead };

inline const char* to_string(Policy p) {
  return p == Policy::kNone ? "none" : p == Policy::kAll ? "all" : p == Policy::kConv ? "conv" : "auto";
}
inline const char* to_string(SyncMode s) { return s == SyncMode::kEvent ? "event" : "layer"; }
inline const char* to_string(Prefetch f) { return f == Prefetch::kVdnn ? "vdnn" : "ahead"; }

inline Policy parse_policy(const std::string& text) {
  if (text == "none") return Policy::kNone;
  if (text == "all") return Policy::kAll;
  if (text == "conv") return Policy::kConv;
  if (text == "auto") return Policy::kAuto;
  VDNN_THROW("--policy: expected none, all, conv or auto, got '" << text << "'");
}

// The layers whose inputs vDNN_conv offloads and that vDNN's prefetch does not look past: the
// convolutions (the paper's rule, unchanged for a CNN) and the layers that do their job in a
// transformer, the matmul-class ones: attention, and `linear` on a sequence (a [T, C] input). A
// CNN's classifier (fc on a vector) stays out, as in the paper. ViT has both kinds: its patch
// convolution and its transformer layers all count.
inline bool is_conv_class(const Graph& graph, int node) {
  const Node& n = graph.nodes()[node];
  const LayerKind kind = n.layer->kind();
  return kind == LayerKind::kConv || kind == LayerKind::kAttention ||
         (kind == LayerKind::kFc && graph.value(n.inputs[0]).shape.rank() == 2);
}

// `option` names the setting in errors as the caller spells it (util/option_names.h).
inline SyncMode parse_sync_mode(const std::string& text, const std::string& option = "--sync") {
  if (text == "event") return SyncMode::kEvent;
  if (text == "layer") return SyncMode::kLayer;
  VDNN_THROW(option << ": expected event or layer, got '" << text << "'");
}

inline Prefetch parse_prefetch(const std::string& text, const std::string& option = "--prefetch") {
  if (text == "vdnn") return Prefetch::kVdnn;
  if (text == "ahead") return Prefetch::kAhead;
  VDNN_THROW(option << ": expected vdnn or ahead, got '" << text << "'");
}

}  // namespace vdnn
