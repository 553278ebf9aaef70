// backends/cpu/cpu_target.h — the CPU backend as a planning target (backend_api/backend_target.h).
//
// Model: sizes are the oneDNN kernels' own (their blocked layouts and scratchpads), read from a
// CompiledGraph built without tensor memory; a convolution's options are its direct kernel and
// the alternatives that keep its layouts (cpu_conv_alternatives: winograd, gemm); costs are
// measured on this machine by the profiler, or read from a saved `vdnn profile --save` file.
//
//   const BackendTarget& cpu = cpu_target();
//   TargetFacts f = cpu.facts(graph, 64, {});   // direct convolutions, as `vdnn plan`
#pragma once

#include "backend_api/backend_target.h"

namespace vdnn {

const BackendTarget& cpu_target();

}  // namespace vdnn
