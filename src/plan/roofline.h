// plan/roofline.h — a training step's kernel times on a GPU we do not have, from the graph, its
// sizes and a device profile alone (issue 4: plan for a device, then simulate its Program).
//
// Model: the sizes are given — the CUDA target's (backends/cuda_target/cuda_target.h), which are
// the CUDA kernels' own; this file models time only. Each kernel runs at the roofline
//     seconds = max(flops / (peak_fp32_flops * efficiency), bytes / (memory_bytes_per_second *
//               efficiency.memory)) + kernel_launch_seconds
// forward: Layer::forward_flops x batch, bytes = inputs + output + parameters + saved state;
// backward: Layer::backward_flops x batch, bytes = output gradient + input gradients + what the
// backward reads (inputs, output, saved state) + parameters + parameter gradients.
// A convolution has one entry per applicable algorithm (plan/conv_algorithms.h, implicit_gemm
// first; only those the profile offers) with that algorithm's arithmetic, its efficiency at the
// kernel's batch (plan/batch_efficiency.h) and its workspace (written and read once
// per pass), then the same algorithms run in k = 2, 4, 8, 16 sub-batches (k dividing the batch)
// where that needs less workspace (AlgoCost::sub_batches; μ-cuDNN's idea): k kernels at batch / k,
// each reading the weights whole, the workspace of one, at the efficiency of batch / k. A fully
// connected layer's GEMM has the efficiency of its batch too. Every other layer has one entry, "-",
// whose workspace is the node's scratch in `facts`. In bf16 (`precision`), every kernel's arithmetic
// runs at the profile's peak_bf16_flops instead (its tensor cores; the sizes given are bf16's), with
// the same efficiencies. The figures are assumptions until calibrated on a real GPU:
// docs/device-profiles.md.
//
//   DeviceProfile gpu = load_device_profile("titan-x-maxwell");
//   Graph g = load_model("vgg16");
//   TargetFacts f = backend_target("cuda").facts(g, 64, {});
//   Program p = build_program(g, f.value_bytes, f.facts, {Policy::kConv});
//   NetworkCosts costs = roofline_costs(g, 64, f.value_bytes, f.facts, gpu, load_link_profile(gpu.link));
//   SimResult r = simulate(p, ChosenCosts(costs, costs.fastest()));
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/precision.h"
#include "plan/device_profile.h"
#include "plan/network_costs.h"
#include "plan/program.h"

namespace vdnn {

// Per node, per algorithm, forward and backward seconds and workspace; link and memory bandwidth
// from the profiles. source: "device profile <device> + link <link>".
// value_bytes / facts: per value / per node at `batch`, with no algorithm's workspace applied.
// Throws vdnn::Error for bf16 on a device without peak_bf16_flops.
NetworkCosts roofline_costs(const Graph& graph, int64_t batch, const std::vector<size_t>& value_bytes,
                            const std::vector<NodeFacts>& facts, const DeviceProfile& device, const LinkProfile& link,
                            Precision precision = Precision::kFp32);

}  // namespace vdnn
