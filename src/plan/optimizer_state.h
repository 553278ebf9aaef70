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

// Where the optimizer state lives. kDevice: beside each parameter in the arena, updated by the
// device. kHost: ZeRO-Offload's single-device placement (Ren et al., USENIX ATC 2021): the state and
// a master copy of each trainable weight live in host memory; after the backward pass each gradient
// is copied to the host, the host's CPU updates the master weight and the state, and the weight is
// copied back. The device keeps the weights and the gradients; the host, per trainable parameter,
// the state, the master and a gradient copy. The arithmetic is the same, so the weights are too.
enum class StatePlace { kDevice, kHost };
// "device" | "host"; throws vdnn::Error naming `option`.
StatePlace parse_state_place(const std::string& name, const std::string& option = "--optimizer-state");
const char* to_string(StatePlace place);

// "sgd" | "adamw"; throws vdnn::Error naming `option` as the caller spells it (util/option_names.h).
OptimizerKind parse_optimizer(const std::string& name, const std::string& option = "--optimizer");
const char* to_string(OptimizerKind kind);
// The state buffers of one trainable parameter, by name suffix, in the order the Program adds them.
const std::vector<std::string>& optimizer_state_suffixes(OptimizerKind kind);
inline size_t optimizer_state_buffers(OptimizerKind kind) { return optimizer_state_suffixes(kind).size(); }

}  // namespace vdnn
