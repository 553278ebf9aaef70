// backends/cpu/profiler.h — measures what every layer costs on this machine's CPU backend.
//
// Model: each layer's oneDNN kernel runs alone, on buffers of its own, forward then backward,
// `repeats` times after one warm-up, with the caches evicted before each run (a training step's
// working set does not fit them); the median is its cost. Timings that scatter (another process
// on the cores: util/timing_stability.h) are taken again, twice at most, and the steadiest set
// counts; a layer still unstable is named in NetworkCosts::unstable, each algorithm keeps its
// spread. The kernels run on a CpuDevice's compute stream, the thread and OpenMP team the executor
// uses. Convolutions are measured once per
// algorithm oneDNN offers for them here (direct everywhere; Winograd where it exists, 3x3 stride
// 1, and keeps the same output layout), each with its scratchpad bytes — the choices vDNN_dyn picks
// from — and what `auto` runs ("auto", or "gemm" for tiny outputs), recorded as the node's default
// (NodeCost::runs_by_default: the plan's none, conv and all rows are what `vdnn train` runs); an
// "auto" that is the direct or Winograd kernel is not timed again. The copy engine is timed through a CpuDevice with
// the given link model, the device memory bandwidth with a large memcpy. The result is a NetworkCosts
// (plan/network_costs.h) that the simulator turns into a predicted step time and that `vdnn profile --save` writes as
// JSON.
//
//   NetworkCosts c = measure_costs(load_model("fmnist_cnn"), /*batch=*/128, {.repeats = 5});
//   ChosenCosts model(c, c.fastest());
//   std::vector<ConvAlgo> algos = conv_algos_of(c, c.fastest());   // for NetOptions::conv_algos
#pragma once

#include <functional>
#include <vector>

#include "backends/cpu/kernel.h"
#include "core/graph.h"
#include "device/cpu_device.h"
#include "plan/network_costs.h"

namespace vdnn {

struct ProfileOptions {
  int repeats = 5;
  uint64_t seed = 1;
  LinkModel link;                          // the copy engine's emulated link (0: as fast as memcpy)
  bool cold_caches = true;                 // evict the caches before each timed run, as a training step finds them
  Precision precision = Precision::kFp32;  // the kernels' (bf16: the caller checked the CPU has it)
  // Called after each layer is measured (on the measuring thread): layers done, layer count.
  std::function<void(int done, int total)> on_layer;
};

NetworkCosts measure_costs(const Graph& graph, int64_t batch, const ProfileOptions& options);

}  // namespace vdnn
