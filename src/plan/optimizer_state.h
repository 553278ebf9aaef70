// plan/optimizer_state.h — which optimizer a training step runs, and the state it keeps per
// trainable parameter: what the planner places in the arena as MemoryClass::kOptimizerState.
//
// Model: every optimizer's state is a list of fp32 buffers, each as many bytes as the parameter
// (its kernel layout, padding included), named "<parameter><suffix>" in the Program and in
// checkpoints: SGD with momentum keeps one (":momentum"), AdamW two (":exp_avg", ":exp_avg_sq",
// PyTorch's state names). The Program builder adds them beside each gradient, so the plan, the
// smallest budget and every report count them; the Net binds them by these names.
//
//   OptimizerKind o = parse_optimizer("adamw");            // throws vdnn::Error naming --optimizer
//   for (const std::string& s : optimizer_state_suffixes(o)) { /* ":exp_avg", ":exp_avg_sq" */ }
//   size_t state = optimizer_state_buffers(o) * size_t{4096};   // bytes for a 4 KiB parameter
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vdnn {

enum class OptimizerKind { kSgd, kAdamW };

// "sgd" | "adamw"; throws vdnn::Error naming `option` as the caller spells it (util/option_names.h).
OptimizerKind parse_optimizer(const std::string& name, const std::string& option = "--optimizer");
const char* to_string(OptimizerKind kind);
// The state buffers of one trainable parameter, by name suffix, in the order the Program adds them.
const std::vector<std::string>& optimizer_state_suffixes(OptimizerKind kind);
inline size_t optimizer_state_buffers(OptimizerKind kind) { return optimizer_state_suffixes(kind).size(); }

}  // namespace vdnn
