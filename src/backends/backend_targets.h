// backends/backend_targets.h — the registry: every backend target vdnn was built with, and the
// live backend of a kind made through its target.
//
// Model: the backend interfaces (backend_api/backend.h, backend_api/backend_target.h) sit below
// the backends; this registry sits above them (backends/backend_targets.cc is the one explicit
// list) and below the runtime, which reaches a backend only through it. So no library calls a
// function of a library above it (docs/design.md, "Layering").
//
//   const BackendTarget& cuda = backend_target("cuda");          // plans without a GPU
//   if (backend_unavailable_reason(BackendKind::kCuda).empty())
//     std::unique_ptr<Backend> live = make_backend(graph, {.kind = BackendKind::kCuda, .batch = 64});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend_api/backend.h"
#include "backend_api/backend_target.h"
#include "core/graph.h"

namespace vdnn {

// Every registered target, in registration order (cpu first).
const std::vector<const BackendTarget*>& backend_targets();
// The target named `name`; throws vdnn::Error naming the registered ones otherwise.
const BackendTarget& backend_target(const std::string& name);

// Empty when a backend of this kind can be created here, else why not in one line ("this vdnn
// was built without the CUDA backend", "cudaGetDeviceCount: ... (error 35)").
std::string backend_unavailable_reason(BackendKind kind);

// The backend `options.kind` for `graph` (kernels created, convolution algorithms chosen), made by
// its registered target. Throws vdnn::Error when that backend is unavailable
// (backend_unavailable_reason) or a layer cannot be implemented. `graph` must outlive the backend.
std::unique_ptr<Backend> make_backend(const Graph& graph, const BackendOptions& options);

}  // namespace vdnn
