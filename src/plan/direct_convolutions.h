// plan/direct_convolutions.h — which convolutions go direct so a step or a pass fits its budget.
//
// Model: a convolution's default algorithm (oneDNN's own choice) may need a workspace the budget
// cannot hold, and which one it picks depends on the CPU (on an Intel Xeon with AVX-512, fmnist_dag's
// default kernels take 33.6 MiB of workspace at batch 128; on an AMD EPYC with AVX2 almost none).
// Its direct kernel needs the least. While the plan does not fit, the convolution whose workspace
// is widest goes direct (its facts from `direct`: the same kernels with every convolution direct),
// one at a time, until it fits or no direct convolution is leaner. An inference pass counts the
// forward kernel's workspace, a training step each convolution's widest kernel (forward or
// backward). A Net does this under a budget where no one chose its algorithms per layer
// (runtime/net.h); Planner::infer does the same on predicted costs.
//
//   const auto fits = [&](const std::vector<NodeFacts>& f) { return plan_step(graph, bytes, f, step).fits; };
//   std::vector<ConvAlgo> algos = direct_convolutions_until(graph, facts, direct, asked, Workspace::kStep, fits);
//   if (algos.empty()) {}  // none went direct: it fits, or nothing leaner helps
#pragma once

#include <functional>
#include <vector>

#include "core/conv_algo.h"
#include "core/graph.h"
#include "plan/program.h"

namespace vdnn {

// Whose workspace counts: the forward kernel's (an inference pass), or the widest of a
// convolution's kernels (a training step).
enum class Workspace { kForward, kStep };

// `algos`: the per-node algorithms `facts` are of. Returns them with the convolutions that went
// direct; empty when none did (it fits, or nothing leaner helps).
std::vector<ConvAlgo> direct_convolutions_until(const Graph& graph, const std::vector<NodeFacts>& facts,
                                                const std::vector<NodeFacts>& direct, std::vector<ConvAlgo> algos,
                                                Workspace counted,
                                                const std::function<bool(const std::vector<NodeFacts>&)>& fits);

}  // namespace vdnn
