// The registry of backend targets (backends/backend_targets.h): this list is the one place a
// backend is registered. An explicit list, not self-registering static objects, which a static
// library's linker would drop when nothing else in their object file is referenced.
#include "backends/backend_targets.h"

#include "backends/cpu/cpu_target.h"
#include "backends/cuda_target/cuda_target.h"
#include "vdnn/error.h"

namespace vdnn {

const std::vector<const BackendTarget*>& backend_targets() {
  static const std::vector<const BackendTarget*> targets = {&cpu_target(), &cuda_target()};
  return targets;
}

const BackendTarget& backend_target(const std::string& name) {
  std::string known;
  for (const BackendTarget* t : backend_targets()) {
    if (t->name() == name) return *t;
    known += std::string(known.empty() ? "" : ", ") + t->name();
  }
  VDNN_THROW("no backend target '" << name << "'; registered: " << known);
}

std::string backend_unavailable_reason(BackendKind kind) {
  return backend_target(to_string(kind)).unavailable_reason();
}

std::unique_ptr<Backend> make_backend(const Graph& graph, const BackendOptions& options) {
  if (options.kind == BackendKind::kCuda && options.precision != Precision::kFp32)
    VDNN_THROW("--precision " << to_string(options.precision)
                              << " runs on the CPU backend only; the CUDA kernels are fp32 (use --precision fp32)");
  return backend_target(to_string(options.kind)).instantiate(graph, options);
}

}  // namespace vdnn
