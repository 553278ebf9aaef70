#include "runtime/net_settings.h"

#include "backends/backend_targets.h"
#include "util/host_memory.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// The policy the Net runs: none, conv or all as asked; a planned one picks it later.
Policy checked_policy(const NetSettings& s, const OptionNames& names) {
  const std::string policy = names("policy") + " " + s.policy;
  if (s.policy != "none" && s.policy != "conv" && s.policy != "all" && !is_planned(s.policy))
    VDNN_THROW(names("policy") << ": '" << s.policy << "' is not a policy; valid: none, conv, all, dyn, auto");
  if (s.inference && s.policy != "none")
    VDNN_THROW(policy << ": an inference Net runs the forward pass alone and takes " << names("policy")
                      << " none (offload policies, dyn and auto plan training)");
  if (!is_planned(s.policy)) return parse_policy(s.policy);
  if (!s.device_memory) VDNN_THROW(policy << " needs " << names("device_memory") << ": it picks what fits a budget");
  if (s.backend != BackendKind::kCpu)
    VDNN_THROW(policy << " is implemented for " << names("backend") << " cpu only so far (it plans from costs "
                      << "measured with the CPU kernels); on cuda use " << names("policy") << " none, conv or all");
  return Policy::kNone;
}

// bf16 runs on the cpu backend, and not with Winograd convolutions.
void check_precision(const NetSettings& s, Precision precision, ConvAlgo algo, const OptionNames& names) {
  if (precision == Precision::kFp32) return;
  if (s.backend != BackendKind::kCpu)
    VDNN_THROW(names("precision") << " " << s.precision << " runs on " << names("backend")
                                  << " cpu only so far (the CUDA kernels are fp32)");
  if (algo == ConvAlgo::kWinograd)
    VDNN_THROW(names("conv_algo") << " winograd: oneDNN 2.6 has no bf16 Winograd; with " << names("precision") << " "
                                  << s.precision << " use auto or direct");
}

// The cpu backend's "device" arena is host memory, taken whole at the start: a budget above what
// the host has free would swap or be killed by the OOM killer mid-run.
void check_budget_fits_host(size_t budget, const OptionNames& names) {
  const size_t available = available_host_memory();
  if (available > 0 && budget > available)
    VDNN_THROW(names("device_memory") << " " << format_bytes(budget)
                                      << ": the cpu backend takes the budget from host memory at once, and only "
                                      << format_bytes(available)
                                      << " is available (MemAvailable in /proc/meminfo); give at most that");
}

}  // namespace

bool is_planned(const std::string& policy) { return policy == "dyn" || policy == "auto"; }

void check_batch(int64_t batch, const OptionNames& names) {
  if (batch < 1 || batch > kMaxBatch) VDNN_THROW(names("batch") << " " << batch << ": expected 1 to " << kMaxBatch);
}

NetOptions net_options(const NetSettings& s, const OptionNames& names) {
  check_batch(s.batch, names);
  NetOptions o;
  o.policy = checked_policy(s, names);
  o.precision = parse_precision(s.precision, names("precision"));
  o.conv_algo = parse_conv_algo(s.conv_algo, names("conv_algo"));
  o.conv_algo_asked = s.conv_algo_asked;
  check_precision(s, o.precision, o.conv_algo, names);
  if (const std::string why = backend_unavailable_reason(s.backend); !why.empty())
    VDNN_THROW(names("backend") << " " << to_string(s.backend) << ": " << why);
  if (s.device_memory) check_budget(*s.device_memory, names("device_memory"));
  if (s.host_memory) check_budget(*s.host_memory, names("host_memory"));
  if (s.backend == BackendKind::kCpu && s.device_memory) check_budget_fits_host(*s.device_memory, names);
  o.batch = s.batch;
  o.seed = s.seed;
  o.sync = parse_sync_mode(s.sync, names("sync"));
  o.prefetch_ahead = parse_prefetch(s.prefetch, names("prefetch")) == Prefetch::kAhead;
  o.optimizer = parse_optimizer(s.optimizer, names("optimizer"));
  o.optimizer_state = parse_state_place(s.optimizer_state, names("optimizer_state"));
  o.device_memory = s.device_memory.value_or(0);
  o.host_memory = s.host_memory.value_or(0);
  o.backend = s.backend;
  o.inference = s.inference;
  o.names = names;
  return o;
}

}  // namespace vdnn
