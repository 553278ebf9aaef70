// plan/roofline.h — a training step's sizes and kernel times on a GPU we do not have, from the
// graph and a device profile alone (issue 4: plan for a device, then simulate its Program).
//
// Model: sizes are fp32 NCHW with no padding; saved state is what cuDNN-style kernels keep for
// backward (plain_facts). Each kernel runs at the roofline
//     seconds = max(flops / (peak_fp32_flops * efficiency), bytes / (memory_bytes_per_second *
//               efficiency.memory)) + kernel_launch_seconds
// forward: Layer::forward_flops x batch, bytes = inputs + output + parameters + saved state;
// backward: Layer::backward_flops x batch, bytes = output gradient + input gradients + what the
// backward reads (inputs, output, saved state) + parameters + parameter gradients.
// A convolution has one entry per applicable algorithm (plan/conv_algorithms.h, implicit_gemm
// first) with that algorithm's arithmetic, its efficiency and its workspace (written and read once
// per pass); every other layer has one entry, "-". The figures are assumptions until calibrated on
// a real GPU: docs/device-profiles.md.
//
//   DeviceProfile gpu = load_device_profile("titan-x-maxwell");
//   Graph g = load_model("vgg16");
//   Program p = build_program(g, plain_value_bytes(g, 64), plain_facts(g, 64), {Policy::kConv});
//   NetworkCosts costs = roofline_costs(g, 64, gpu, load_link_profile(gpu.link));
//   SimResult r = simulate(p, ChosenCosts(costs, costs.fastest()));
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "plan/device_profile.h"
#include "plan/network_costs.h"
#include "plan/program.h"

namespace vdnn {

// Bytes of every value (graph order) at `batch`, fp32 NCHW; the loss is one float (the batch mean).
std::vector<size_t> plain_value_bytes(const Graph& graph, int64_t batch);

// Per node: out_bytes, saved_bytes (batch_norm: mean and inverse std per channel; dropout: a
// 1-byte mask per element; softmax_cross_entropy: its probabilities; max_pool: one argmax index
// per output, 1 byte for windows of at most 256 cells, else 4; lrn: its output, which cuDNN's
// backward reads), param_bytes (fp32 Layer::params), in_place (Graph::runs_in_place).
// scratch_bytes is 0: the chosen algorithm's workspace is applied later.
std::vector<NodeFacts> plain_facts(const Graph& graph, int64_t batch);

// Per node, per algorithm, forward and backward seconds and workspace; link and memory bandwidth
// from the profiles. source: "device profile <device> + link <link>".
NetworkCosts roofline_costs(const Graph& graph, int64_t batch, const DeviceProfile& device,
                            const LinkProfile& link);

}  // namespace vdnn
