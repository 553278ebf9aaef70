// backend_api/backend_target.h — a backend as a planning target: its sizes, algorithms and costs for a
// graph, known without a device; and the live Backend that must then declare the same facts.
//
// Model (ggml's analogue: a backend's buffer type with get_alloc_size, registered once): one
// BackendTarget per backend, in a registry keyed by name ("cpu", "cuda"; backend_targets.cc is
// the one explicit list, no static initialisers a static library could drop). For a Graph and a
// batch a target answers
//   - algorithms: per node, the algorithm options (name + workspace bytes); "-" where there is no
//     choice;
//   - facts: value bytes and NodeFacts (what build_program consumes) in the backend's own layouts,
//     for one algorithm choice (a ConvAlgo per node, as BackendOptions::conv_algos);
//   - costs: measured on this machine (cpu: the profiler, or a saved `vdnn profile` file) or
//     modelled from a device profile (cuda: plan/roofline.h);
//   - instantiate: the live Backend, whose value_bytes()/facts() equal facts(graph, batch, same
//     algorithms) — tests/runtime/test_backend_target.cc holds every target to that.
// The CUDA target is plain C++ and works on any machine (`vdnn plan --device <gpu>`): its sizes are
// the shape-only functions the CUDA kernels call themselves (backends/cuda_target/cuda_sizes.h).
//
//   const BackendTarget& cuda = backend_target("cuda");
//   TargetFacts f = cuda.facts(graph, 64, {});
//   Program p = build_program(graph, f.value_bytes, f.facts, {Policy::kAll});
//   NetworkCosts c = cuda.costs(graph, 64, {.device = "titan-x-maxwell"});
//   std::unique_ptr<Backend> live = cuda.instantiate(graph, {.kind = BackendKind::kCuda, .batch = 64});
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend_api/backend.h"
#include "core/conv_algo.h"
#include "core/graph.h"
#include "device/cpu_device.h"
#include "plan/network_costs.h"
#include "plan/program.h"

namespace vdnn {

struct AlgoOption {
  std::string name;            // "direct", "winograd", "implicit_gemm", ...; "-": no choice
  size_t workspace_bytes = 0;  // the scratch this algorithm adds (the most any pass needs)
  int sub_batches = 1;         // > 1: run in this many slices of the batch (AlgoCost::sub_batches)
  bool operator==(const AlgoOption&) const = default;
};

struct TargetFacts {
  std::vector<size_t> value_bytes;  // per graph value
  std::vector<NodeFacts> facts;     // per node, graph order
};

struct CostOptions {
  std::string device;                      // cuda: a device profile name or JSON path (its GPU's roofline)
  std::string link;                        // cuda: a link profile name ("" = the device's own)
  std::string costs_file;                  // cpu: a saved `vdnn profile --save` file ("" = measure now)
  int repeats = 3;                         // cpu, measuring: timed runs per kernel
  LinkModel cpu_link;                      // cpu, measuring: the copy engine's emulated link
  Precision precision = Precision::kFp32;  // the activations' type (a costs file must match)
  std::function<void(int done, int total)> on_layer;  // cpu, measuring: after each layer (progress)
};

class BackendTarget {
 public:
  virtual ~BackendTarget() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda"
  virtual BackendKind kind() const = 0;
  // Empty when instantiate() can work here, else why not in one line.
  virtual std::string unavailable_reason() const = 0;

  // `precision`: the activations' type (core/precision.h); a target without it throws vdnn::Error.
  virtual std::vector<std::vector<AlgoOption>> algorithms(const Graph& graph, int64_t batch,
                                                          Precision precision = Precision::kFp32) const = 0;
  // algos: one per node (non-convolutions ignore theirs); empty: the target's base choice
  // (ConvAlgo::kDirect everywhere).
  virtual TargetFacts facts(const Graph& graph, int64_t batch, const std::vector<ConvAlgo>& algos,
                            Precision precision = Precision::kFp32) const = 0;
  virtual NetworkCosts costs(const Graph& graph, int64_t batch, const CostOptions& options) const = 0;
  // Throws vdnn::Error when unavailable here (unavailable_reason) or a layer cannot be implemented.
  virtual std::unique_ptr<Backend> instantiate(const Graph& graph, const BackendOptions& options) const = 0;
};

}  // namespace vdnn
