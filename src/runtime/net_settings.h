// runtime/net_settings.h — the rules on what a user asks of a Net, kept once for the CLI (`vdnn
// train`'s and `vdnn infer`'s flags) and the Python API (vdnn.Net's keyword arguments).
//
// Model: NetSettings holds the options as the user gave them, before any model is read;
// net_options() checks them and returns the NetOptions they give (what a planned policy, dyn or
// auto, picks comes later: planning/planned_policy.h). Each refusal is one line naming the option as
// the caller spells it (util/option_names.h: --host-memory for the CLI, host_memory for Python):
//   - batch: 1 to kMaxBatch (check_batch; `vdnn plan` and vdnn.plan take the same batches);
//   - policy: none, conv, all, or dyn and auto, which plan for device_memory (so need it), on the
//     cpu backend (they plan from costs measured with the CPU kernels); an inference Net takes none;
//   - precision: fp32 or bf16; bf16 on the cpu backend only, and not with conv_algo winograd
//     (oneDNN 2.6 has no bf16 Winograd);
//   - conv_algo: auto, direct or winograd; sync: event or layer; prefetch: vdnn or ahead;
//   - optimizer: sgd or adamw (the state the plan places per trainable parameter); optimizer_state:
//     device or host (host: training on one rank, NetOptions::optimizer_state);
//   - the backend built into this vdnn; device_memory and host_memory above 0 when given (absent:
//     what the plans need; util/size_parse.h check_budget); on the cpu backend the device_memory
//     budget is host memory taken at once, so at most what the host has available now.
// A CPU without native bf16 is refused when the Net's kernels are made (backends/cpu/cpu_isa.h).
// The optimizer's ranges (momentum, weight_decay) are check_sgd_settings's (runtime/sgd.h).
//
//   NetSettings s{.batch = 32, .policy = "dyn", .device_memory = 48 << 20, .precision = "bf16"};
//   NetOptions o = net_options(s, OptionNames{OptionNames::kKeywords});   // errors name device_memory, ...
//   bool plan_first = is_planned(s.policy);   // dyn: planning/planned_policy.h picks for the budget
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/net.h"
#include "util/option_names.h"

namespace vdnn {

struct NetSettings {
  int64_t batch = 64;
  uint64_t seed = 1;
  std::string policy = "none";          // none, conv, all; dyn or auto (planned)
  std::optional<size_t> device_memory;  // bytes; none: what the plans need
  std::optional<size_t> host_memory;    // bytes, for the host copies; none: what the plans need
  std::string precision = "fp32";
  std::string conv_algo = "auto";  // a planned policy picks the algorithms itself
  bool conv_algo_asked = false;    // conv_algo was given, not left to the default (NetOptions::conv_algo_asked)
  std::string sync = "event";
  std::string prefetch = "vdnn";
  BackendKind backend = BackendKind::kCpu;
  bool inference = false;         // NetOptions::inference: a Net that only infers
  std::string optimizer = "sgd";  // sgd or adamw: whose state the plan keeps (NetOptions::optimizer)
  std::string optimizer_state = "device";  // device or host: where that state lives (NetOptions::optimizer_state)
};

// The largest batch vdnn takes (2^20 samples): a batch's tensors then stay far from the 2^31
// elements that oneDNN's kernels index with int (a larger one crashed them), and its memory is
// refused by the budget checks long before.
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;

// Throws vdnn::Error naming the option by `names` when batch is outside [1, kMaxBatch].
void check_batch(int64_t batch, const OptionNames& names);

// dyn or auto: a policy that plans for a budget before the Net is built.
bool is_planned(const std::string& policy);

// Checks `settings` by the rules above and returns the NetOptions they give (with `names`, for
// the Net's own refusals). Throws vdnn::Error naming the option by `names`, its value and what
// would be valid.
NetOptions net_options(const NetSettings& settings, const OptionNames& names);

}  // namespace vdnn
