// plan/network_costs.h — what every layer of one network at one batch size costs, per algorithm.
//
// Model: the cost model behind the simulator and vDNN_dyn. For each node (graph order) a list of
// algorithms, each with its forward time, backward time (data and weight gradients together) and
// workspace bytes; a node without a choice (pooling, ReLU, ...) has exactly one entry. Plus the
// host link (bandwidth, latency per copy) and the device's memory bandwidth for gradient sums and
// the input upload. Two sources fill it: `vdnn profile` (measured on this backend, profile.h) and a
// device profile's roofline (device_profile.h). It round-trips through JSON, so a measured profile
// can be saved and planned against later (`vdnn plan --costs FILE`).
//
//   NetworkCosts costs = measure_costs(compiled, ...);          // or roofline_costs(graph, ...)
//   AlgoChoice fast = costs.fastest(), lean = costs.leanest();
//   ChosenCosts model(costs, fast);                            // a CostModel for simulate()
//   SimResult r = simulate(program, model);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/conv_algo.h"
#include "core/precision.h"
#include "plan/device_profile.h"
#include "plan/simulator.h"

namespace vdnn {

struct AlgoCost {
  std::string name;  // "direct", "winograd", "gemm", "implicit_gemm", "fft", "-" (no choice)
  double forward_seconds = 0;
  double backward_seconds = 0;  // backward data + backward weights
  size_t workspace_bytes = 0;   // the most scratch any pass needs with this algorithm
  // Measured costs (util/timing_stability.h; the larger of forward and backward; 0: not measured):
  // how much the timed runs scattered (median absolute deviation over median), and how long the
  // kernel's threads waited for a CPU per second of run (another process on the cores).
  double spread = 0;
  double waited = 0;
  // > 1: the algorithm run in this many slices of the batch (a convolution, NetOptions::
  // conv_sub_batches): the time of that many kernels at batch / sub_batches, the workspace of one.
  // Optional in JSON (1).
  int sub_batches = 1;

  std::string label() const;  // "winograd", or "winograd/4" in 4 sub-batches
};

struct NodeCost {
  std::string name;             // the layer's name
  std::string type;             // "conv", "pool", ...
  std::vector<AlgoCost> algos;  // at least one
  // The algorithm a Net runs when nobody chose one per node (`vdnn train` without --conv-algo:
  // auto, oneDNN's choice per layer, which the CPU profiler records); -1: not recorded (a device
  // profile's costs, where the CUDA backend's auto takes the fastest measured; a costs file saved
  // before the profiler recorded it). Optional in JSON ("default": the algorithm's name).
  int runs_by_default = -1;

  // The fastest algorithm needing less workspace than algos[current]; -1 when none does. Only
  // whole-batch ones unless `sub_batched_too` (vDNN_dyn keeps to the paper's algorithms).
  int next_leaner(int current, bool sub_batched_too = false) const;
};

// One algorithm index per node (into NodeCost::algos).
using AlgoChoice = std::vector<int>;

struct NetworkCosts {
  std::string source;  // "measured on cpu (jit:avx512_core)", "device profile titan-x"
  std::string model;
  int64_t batch = 0;
  // The activations' type the kernels were costed in (core/precision.h). Optional in JSON (fp32).
  Precision precision = Precision::kFp32;
  std::vector<NodeCost> nodes;
  double link_bytes_per_second = 0;    // one direction; 0: copies cost nothing
  double link_latency_seconds = 0;     // per copy
  double memory_bytes_per_second = 0;  // device memory: gradient sums, input upload; 0: free
  // The host's CPU over host memory: the update of optimizer state kept there (StatePlace::kHost);
  // 0: memory_bytes_per_second (measured costs: the CPU backend's device memory is host memory).
  double host_memory_bytes_per_second = 0;
  // Slowdown of kernels while a copy runs, and of copies while a kernel runs (>= 1; 1 on a GPU,
  // measured on the CPU backend, whose copy engine shares the cores). Optional in JSON.
  double compute_slowdown_when_copying = 1;
  double copy_slowdown_when_computing = 1;
  // Every kernel's time as the simulator reads it is multiplied by this: a measured training step
  // over its simulation from kernels timed alone (planning/step_calibration.h; 1: uncalibrated).
  // Optional in JSON.
  double kernel_scale = 1;
  // Layers whose timings stayed unstable when measured (the machine was busy): their costs may be
  // far off. Optional in JSON.
  std::vector<std::string> unstable;
  // Data parallel: the network the ranks all-reduce over (`vdnn plan --network`); bytes_per_second
  // 0: none (collectives cost nothing). Chosen when planning, not part of the JSON.
  NetworkProfile network;

  AlgoChoice fastest() const;          // least forward + backward time per node
  AlgoChoice fastest_forward() const;  // least forward time per node (inference)
  AlgoChoice leanest() const;          // least workspace per node (ties: the faster)
  // What a Net runs by default (`vdnn train --policy P` without --conv-algo): each node's
  // runs_by_default, else its fastest.
  AlgoChoice defaults() const;
  // What `--conv-algo direct` runs: each node's "direct" algorithm (the CPU's), else its leanest
  // (the CUDA backend's direct is the memory-optimal algorithm, the least workspace).
  AlgoChoice direct() const;
  double compute_seconds(const AlgoChoice& choice) const;  // sum of every kernel's time
  // "" when every timing was stable; else one line naming the unstable layers and their spread.
  std::string unstable_warning() const;

  nlohmann::json to_json() const;
  // `where` names the source in errors ("costs.json").
  static NetworkCosts from_json(const nlohmann::json& j, const std::string& where);
  // A `vdnn profile --save` file; refuses a non-regular file or one above 64 MiB (util/text_file.h).
  static NetworkCosts load(const std::string& path);
};

// The per-node oneDNN algorithm (core/conv_algo.h, NetOptions::conv_algos) of a choice over costs
// measured on the CPU backend (non-convolutions: kAuto). In plan/, not with the profiler, so that
// the runtime can run what a plan chose without reaching into a backend.
std::vector<ConvAlgo> conv_algos_of(const NetworkCosts& costs, const AlgoChoice& choice);
// The per-node sub-batches of a choice (NetOptions::conv_sub_batches); empty when every chosen
// algorithm runs over the whole batch.
std::vector<int> conv_sub_batches_of(const NetworkCosts& costs, const AlgoChoice& choice);
// The per-node workspace of a choice's convolutions (NetOptions::conv_workspace_bytes; 0 for
// other layers): what the plan counted, for the backend to keep to.
std::vector<size_t> conv_workspace_of(const NetworkCosts& costs, const AlgoChoice& choice);

// A ring all-reduce of `bytes` over `ranks` ranks (Patarasuk & Yuan, "Bandwidth optimal all-reduce
// algorithms for clusters of workstations", JPDC 2009; NCCL's docs/performance "bus bandwidth"):
// 2(N-1) steps (reduce-scatter, then all-gather), each sending bytes/N per rank, so
// 2(N-1)/N * bytes / bandwidth + 2(N-1) * latency. 0 for one rank.
double ring_all_reduce_seconds(size_t bytes, int ranks, double bytes_per_second, double latency_seconds);

// The simulator's CostModel for one algorithm choice.
class ChosenCosts : public CostModel {
 public:
  ChosenCosts(const NetworkCosts& costs, AlgoChoice choice);
  double forward_seconds(int node) const override;
  double backward_seconds(int node) const override;
  double copy_seconds(size_t bytes) const override;
  double accumulate_seconds(size_t bytes) const override;
  double load_input_seconds(size_t bytes) const override;
  double update_seconds(size_t weight_bytes, size_t state_bytes) const override;
  double host_update_seconds(size_t weight_bytes, size_t state_bytes) const override;
  double slowdown_when_overlapped(StreamKind s) const override;
  double all_reduce_seconds(size_t bytes, int ranks) const override;  // costs.network's ring
  // 1 + min(network, link) / link when the network shares the host link, else 1 (simulator.h).
  double slowdown_when_sharing_host_link() const override;

 private:
  const AlgoCost& at(int node) const;
  const NetworkCosts& costs_;
  AlgoChoice choice_;
};

}  // namespace vdnn
