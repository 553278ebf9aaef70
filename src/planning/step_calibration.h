// planning/step_calibration.h — a measured training step against its simulation, on this CPU.
//
// Model: the profiler (backends/cpu/profiler.h) times each kernel alone, on buffers of its own. In a
// training step the same kernels run slower — on vgg_cifar at batch 64 on a 2-core EPYC the
// forward convolutions by 15%, the backward ones by 6%, and every small kernel pays 0.05–0.3 ms of
// the executor's dispatch — so a plan on raw costs predicted every policy's step 8–22% too fast.
// calibrate_kernels trains a few steps of the network under `none` with the costs' fastest
// algorithms (the Trainer, on synthetic data: two warm-up steps, then `steps` timed, as `vdnn
// train` reports iteration time: forward, backward, the non-finite check and the optimizer's
// update, the batch loader), simulates that Net's own Program on the costs, and sets
// NetworkCosts::kernel_scale to measured / simulated: the simulator multiplies every kernel time
// by it. One factor for the whole network — Capuchin's idea of correcting a plan with a measured
// iteration, at its coarsest: what it cannot capture is a policy whose kernels slow down unlike
// `none`'s (the copy engine's contention is measured on its own, compute_slowdown_…), or the
// per-step work of a policy beyond its kernels and copies.
//
// calibrate_inference_kernels does the same for a forward pass (`vdnn plan --inference`): an
// inference Net with the fastest forward algorithms, its median pass (after two warm-up passes)
// against its own Program simulated on the costs — at batch 1 on a 2-core EPYC the profiler's
// kernels alone predicted VGG-16's pass 1.9x too fast (fc6's 392 MiB of weights are read from
// memory in the pass, not from a cache warmed by repeats).
//
//   NetworkCosts costs = measure_costs(graph, 64, {});
//   calibrate_kernels(costs, load_model("vgg_cifar"), 64);   // a Graph of its own: the Net takes it
//   costs.kernel_scale;                                       // e.g. 1.13
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "data/dataset.h"
#include "plan/network_costs.h"
#include "runtime/net.h"

namespace vdnn {

// What `vdnn train` reports per iteration for `net` on `data`: two warm-up iterations, then the
// mean of `steps` (a Trainer each, no evaluation). A token model (Graph::token_input, or labels
// per token) times the same steps on one batch of token id 0 and label 0 instead of `data`.
double seconds_per_iteration(Net& net, const Dataset& data, int steps);

// The median wall time of `passes` forward passes (evaluation mode) over the batch `net` holds,
// after `warmup` untimed ones.
double median_forward_seconds(Net& net, int warmup, int passes);

// What a calibration measured: the step (or pass) on this CPU and its simulation on the raw costs;
// kernel_scale is measured / simulated, clamped to [0.1, 10].
struct Calibration {
  double measured_seconds = 0;
  double simulated_seconds = 0;
};

// Sets costs.kernel_scale (see above); `graph` is the network the costs were measured on.
Calibration calibrate_kernels(NetworkCosts& costs, Graph graph, int64_t batch, int steps = 5);
Calibration calibrate_inference_kernels(NetworkCosts& costs, Graph graph, int64_t batch, int passes = 5);

}  // namespace vdnn
