#include "plan/optimizer_state.h"

#include "vdnn/error.h"

namespace vdnn {

OptimizerKind parse_optimizer(const std::string& name, const std::string& option) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adamw") return OptimizerKind::kAdamW;
  VDNN_THROW(option << " '" << name << "': expected sgd (with momentum) or adamw");
}

const char* to_string(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? "adamw" : "sgd"; }

StatePlace parse_state_place(const std::string& name, const std::string& option) {
  if (name == "device") return StatePlace::kDevice;
  if (name == "host") return StatePlace::kHost;
  VDNN_THROW(option << " '" << name
                    << "': expected device (the state beside each parameter in device memory) or host (the state "
                       "and master weights in host memory, updated by the CPU)");
}

const char* to_string(StatePlace place) { return place == StatePlace::kHost ? "host" : "device"; }

const std::vector<std::string>& optimizer_state_suffixes(OptimizerKind kind) {
  static const std::vector<std::string> sgd{":momentum"}, adamw{":exp_avg", ":exp_avg_sq"};
  return kind == OptimizerKind::kAdamW ? adamw : sgd;
}

}  // namespace vdnn
