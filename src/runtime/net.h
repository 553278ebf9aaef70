// runtime/net.h — a graph bound to a backend's kernels, a budgeted device arena and planned Programs.
//
// Model: the backend (CPU: oneDNN in blocked layouts on a CPU device whose copy engine may emulate
// a PCIe link; CUDA: cuDNN/cuBLAS on a GPU) creates the kernels once; their declared sizes go to
// the planner (plan/planned_step.h), which returns the planned step: the training Program (with the
// chosen offload policy, sync mode and prefetch rule) and the evaluation Program, placed in one
// arena of `device_memory` bytes (0: exactly what the plans need). The Net searches no plan
// itself: it allocates that arena and the Executor runs those Programs on the backend. A budget
// below what a Program needs is refused here, before training, with the smallest budget that
// works. Parameters, their gradients and momentum live in the arena too; export/import and the
// weights hash go through plain layouts. With NetOptions::inference the planner places its forward
// pass alone (plan/planned_inference.h): weights and working set, nothing a training step would
// need; when that does not fit even with every weight streamed, the Net rebuilds its kernels once
// with the convolutions plan/planned_inference.h sends direct. What chooses with costs or a live
// run (a policy for a budget: dyn, auto; step calibration) is planning/'s, and fills NetOptions
// before the Net is built (planning/planned_policy.h).
//
//   Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1, .policy = Policy::kAll,
//                                      .device_memory = 64 << 20});
//   net.set_batch(images, labels, 128);
//   float loss = net.forward(/*training=*/true);
//   net.backward();
//   net.run_on_compute([&] { sgd.step(net.backend(), net.params(), lr); });
//
//   Net edge(load_model("fmnist_cnn"), {.batch = 1, .device_memory = 4 << 20, .inference = true});
//   edge.set_batch(images, labels, 1);
//   edge.forward(/*training=*/false);     // edge.logits(); edge.eval_plan() has the peak by class
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend_api/backend.h"
#include "core/conv_algo.h"
#include "core/graph.h"
#include "device/cpu_device.h"
#include "memory/host_buffer.h"
#include "plan/memory_plan.h"
#include "plan/optimizer_state.h"
#include "plan/planned_inference.h"
#include "plan/planned_step.h"
#include "plan/policy.h"
#include "plan/program.h"
#include "rewrites/slice_runs.h"
#include "runtime/executor.h"
#include "util/option_names.h"

namespace vdnn {

struct NetOptions {
  int64_t batch = 64;
  uint64_t seed = 1;
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  size_t device_memory = 0;  // bytes; 0: as much as the plans need
  // Bytes of host memory for the host copies (offloaded feature maps, streamed weights), taken once
  // as one region of exactly what the plans place (MemoryPlan::host_bytes, pinned on a GPU); 0: as
  // much as they need. A plan needing more is refused here, naming the smallest that works.
  size_t host_memory = 0;
  LinkModel link;
  // false: vDNN's prefetch rule. true: look ahead as many backward layers as the budget allows
  // (without a budget: as far as fits in what vDNN's rule needs).
  bool prefetch_ahead = false;
  ConvAlgo conv_algo = ConvAlgo::kAuto;
  // Training under a budget: with conv_algo kAuto left as the default (not asked), no per-node
  // choice and no slices, convolutions whose default algorithm's workspace does not fit go direct,
  // the widest first, until the step fits (plan/direct_convolutions.h; oneDNN's default depends on
  // the CPU). Asked (--conv-algo given), the algorithm is kept and a budget it does not fit is refused.
  bool conv_algo_asked = false;
  std::vector<ConvAlgo> conv_algos;  // per node (vDNN_dyn's choice); empty: conv_algo everywhere
  // Per node: k > 1 runs that convolution in k slices of the batch (k divides it), its workspace
  // that of batch / k; the weight gradient sums the slices' (float rounding differs from one pass).
  // Empty: every layer over the whole batch.
  std::vector<int> conv_sub_batches;
  // Runs of layers computed in slices of the batch (rewrites/slice_runs.h): the kernels, Programs and
  // plans are the sliced graph's, the parameters and checkpoints the graph's. Empty: none. The
  // per-node options here (conv_algos, conv_sub_batches, conv_workspace_bytes, decisions) then
  // index the sliced graph's nodes and values (plan it, as vdnn train --policy auto does). Not
  // with inference, data-parallel ranks or the CUDA backend (no slice and gather kernels yet).
  std::vector<SliceRun> slice_runs;
  // Per node: the workspace a plan counted for each convolution (conv_workspace_of), a cap the CUDA
  // backend reserves at most (BackendOptions::conv_workspace_bytes); empty: no caps.
  std::vector<size_t> conv_workspace_bytes;
  BackendKind backend = BackendKind::kCpu;
  // The activations' number type: bf16 keeps feature and gradient maps (and so offloaded bytes) at
  // half size, weights and the update in fp32 (core/precision.h). CPU with native bf16 only; not with
  // slice runs or sub-batches yet.
  Precision precision = Precision::kFp32;
  // Per-tensor keep/offload/recompute (plan/storage_decision.h) instead of `policy`'s choice; empty:
  // the policy decides. Recompute needs a backend that supports it (CPU; CUDA is refused).
  StepDecisions decisions;
  // Data parallel (comm/communicator.h): this rank's communicator, null for one process. With more
  // than one rank the training Program all-reduces gradient buckets (plan/collectives.h) and
  // updates them through the hook set by set_update(); dropout masks differ between ranks.
  Communicator* comm = nullptr;
  size_t bucket_bytes = CollectiveOptions{}.bucket_bytes;
  double collective_timeout_seconds = CommOptions{}.timeout_seconds;  // the backend's own collectives (NCCL)
  // A Net that only infers (plan/planned_inference.h): one forward-only Program, no gradients or
  // momentum on the device, `device_memory` bounding weights + working set. forward(false) only;
  // training is refused. Needs policy none, no decisions and no communicator. Its weights start at
  // zero: load them (runtime/checkpoint.h load_weights, import_param). When the pass does not fit
  // `device_memory`, weights are streamed first (stream_weights); only when every weight streamed
  // does not fit either do convolutions go direct, widest workspace first, until it does
  // (convolutions_made_direct() says which). The Net has no cost model: on this CPU a streamed
  // weight costs a memcpy and a direct kernel more time; `vdnn plan --inference` weighs the two.
  bool inference = false;
  // Inference under a budget: weights that do not fit are streamed from host memory (false: every
  // weight stays on the device, and a budget below them is refused). On the CPU the host copies are
  // the same memory, so streaming bounds the arena, not the process.
  bool stream_weights = true;
  // The optimizer whose state each trainable parameter keeps in the arena (plan/optimizer_state.h:
  // SGD's momentum, or AdamW's two moments), planned with the parameters. The Trainer's optimizer
  // must be this one (runtime/optimizer.h).
  OptimizerKind optimizer = OptimizerKind::kSgd;
  // Where that state lives (plan/optimizer_state.h): the arena, or host memory with a master copy
  // of each trainable weight and of its gradient, updated by the host (Trainer; ZeRO-Offload's
  // placement for one device). One rank only.
  StatePlace optimizer_state = StatePlace::kDevice;
  // How its errors name these options (a budget too small, a policy an inference Net does not
  // take): the CLI's flags (--device-memory) or the Python API's keywords (device_memory).
  OptionNames names;
};

struct ParamTensor {
  std::string name;  // "conv1.weight"
  ParamSpec spec;
  int node = -1, index = -1;    // the layer and its parameter number (ParamSpec order)
  size_t bytes = 0;             // in the kernel's layout (padding included): data, grad, each state buffer
  float* data = nullptr;        // device memory (the arena); a streamed weight's: its host copy
  float* grad = nullptr;        // null for non-trainable (running statistics)
  float* velocity = nullptr;    // SGD momentum (":momentum"); null for non-trainable and under AdamW
  float* exp_avg = nullptr;     // AdamW's first moment (":exp_avg"); null otherwise
  float* exp_avg_sq = nullptr;  // AdamW's second moment (":exp_avg_sq"); null otherwise
  // Optimizer state in host memory (NetOptions::optimizer_state kHost): the state pointers above
  // are host memory, and these the host's master of the weight and its gradient's copy (which
  // `grad` then points to: the backward pass streams each gradient there); else null.
  float* host_data = nullptr;
  float* host_grad = nullptr;
  // The optimizer state buffer named by `suffix` (plan/optimizer_state.h), or null.
  float* state(const std::string& suffix) const {
    return suffix == ":momentum"     ? velocity
           : suffix == ":exp_avg"    ? exp_avg
           : suffix == ":exp_avg_sq" ? exp_avg_sq
                                     : nullptr;
  }
};

class Net {
 public:
  Net(Graph graph, const NetOptions& options);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  const Graph& graph() const { return graph_; }
  // The graph the kernels and Programs run: graph(), or its sliced form (NetOptions::slice_runs),
  // whose node indices the Programs' steps use.
  const Graph& compute_graph() const { return sliced_ ? sliced_->graph : graph_; }
  int64_t batch() const { return batch_; }
  const NetOptions& options() const { return options_; }
  // The convolutions this Net made direct so its plan fits the budget (the workspace of the
  // algorithm they had did not), by layer name in graph order; empty: none. options().conv_algos
  // holds every layer's algorithm then.
  const std::vector<std::string>& convolutions_made_direct() const { return made_direct_; }

  // Copies `valid` <= batch samples (plain NCHW floats; a token input: floats holding exact ids) and
  // their labels in (valid x graph().labels_per_sample(): one per token for [T, V] logits); the rest
  // is zero-filled.
  void set_batch(const float* images, const int32_t* labels, int64_t valid);
  // Runs the forward pass and returns the mean loss over the valid samples.
  float forward(bool training);
  // Runs the backward pass: gradients of every trainable parameter are ready afterwards.
  void backward();
  // Ranks of a data-parallel run (1 without one), and this process's.
  int ranks() const { return train_.ranks; }
  int rank() const { return options_.comm ? options_.comm->rank() : 0; }
  // Data parallel: the optimizer step of one gradient bucket, called on the compute stream by the
  // Program's update steps with the indices into params() of the bucket's parameters.
  void set_update(std::function<void(const std::vector<size_t>& params)> update);
  // Runs `work` (e.g. the optimizer step) on the compute stream and waits for it. All OpenMP work
  // must start from that one thread: a second OpenMP master (the host thread) keeps a second team
  // of spinning threads that steals the two cores from the kernels.
  void run_on_compute(const std::function<void()>& work);
  // Samples among the valid ones whose arg-max logit equals their label (after forward).
  int64_t correct() const { return result_.correct; }
  // The logits of the last forward pass: valid samples x classes floats, row-major.
  const std::vector<float>& logits() const { return executor_->logits(); }
  // Records the measured timeline (forward and backward, not the optimizer step) of the
  // `step`-th training step from now (1-based) into `recorder`; the steps before it are recorded
  // too, each replacing the last, so when training stops sooner the recorder holds the last one.
  // Null: record nothing.
  void record_step(int64_t step, StepRecorder* recorder) {
    steps_to_record_ = step;
    recorder_ = recorder;
  }

  std::vector<ParamTensor>& params() { return params_; }
  const std::vector<ParamTensor>& params() const { return params_; }
  std::vector<float> export_param(size_t i) const;  // plain layout
  std::vector<float> export_grad(size_t i) const;
  // After backward(): the first trainable parameter whose gradient holds a NaN or an Inf, or null.
  const ParamTensor* first_nonfinite_gradient();                 // plain layout (trainable only)
  // The first parameter or running statistic whose values hold a NaN or an Inf, or null.
  const ParamTensor* first_nonfinite_weight();
  void import_param(size_t i, const std::vector<float>& plain);  // plain layout
  // SGD momentum of trainable parameter i, in the parameter's plain layout (checkpoints).
  std::vector<float> export_momentum(size_t i) const;
  void import_momentum(size_t i, const std::vector<float>& plain);
  // Any optimizer state buffer of trainable parameter i by its suffix (":momentum", ":exp_avg",
  // ":exp_avg_sq"; plan/optimizer_state.h), plain layout; throws when the Net's optimizer has none.
  std::vector<float> export_state(size_t i, const std::string& suffix) const;
  void import_state(size_t i, const std::string& suffix, const std::vector<float>& plain);
  // Training forward passes so far; dropout masks are drawn from (seed, this counter), so a
  // resumed run sets it back to continue with the same masks.
  uint64_t dropout_step() const { return step_; }
  void set_dropout_step(uint64_t step) { step_ = step; }
  // SHA-256 over every parameter and running statistic, plain layouts, in graph order.
  std::string weights_sha256() const;
  // PyTorch's BatchNorm num_batches_tracked of batch-norm node `node` before this run's first
  // optimizer step (loaded with the weights; 0 by default): checkpoints write it plus the steps done.
  int64_t batches_tracked_base(int node) const;
  void set_batches_tracked_base(int node, int64_t count) { batches_tracked_base_[node] = count; }

  Backend& backend() { return *backend_; }
  // An inference Net's only Program and plan serve as its training ones (parameters' places, peaks).
  const Program& train_program() const { return options_.inference ? eval_ : train_; }
  const MemoryPlan& train_plan() const { return options_.inference ? eval_plan_ : train_plan_; }
  // Per node: its weights are streamed from host memory (an inference Net under a budget smaller
  // than its weights and working set, plan/planned_inference.h); empty: none is.
  const std::vector<bool>& streamed_weights() const { return streamed_weights_; }
  // The smallest budget with every weight on the device (a training Net: the smallest its step runs
  // in, at vDNN's prefetch rule, with the algorithms it runs; plan_step's), and for an inference Net
  // the smallest that runs its pass at all, every weight streamed (plan/planned_inference.h).
  size_t smallest_resident_budget() const { return smallest_resident_budget_; }
  size_t smallest_streamed_budget() const { return smallest_streamed_budget_; }
  const Program& eval_program() const { return eval_; }
  const MemoryPlan& eval_plan() const { return eval_plan_; }
  size_t arena_bytes() const { return arena_->bytes(); }
  size_t host_bytes() const { return host_copies_.bytes(); }  // the host copies' region, taken at start
  int prefetch_depth() const { return prefetch_depth_; }      // 0: vDNN's rule
  // Optimizer state in host memory: the host's master weights (ParamTensor::host_data) equal the
  // device's once this returns; a weight written on the device since the last call (init,
  // import_param, a checkpoint) is copied to the host first. The Trainer calls it before an update.
  bool state_on_host() const { return options_.optimizer_state == StatePlace::kHost; }
  void refresh_host_masters();
  Device& device() { return backend_->device(); }

 private:
  BackendOptions backend_options() const;
  void take(PlannedStep step);
  bool host_masters_stale_ = true;  // a weight was written on the device since refresh_host_masters
  void take(PlannedInference planned);
  void check_trains() const;  // throws for an inference Net
  void bind_params();
  void init_params(uint64_t seed);

  // The kernels' node of parameter t (its layer's, or the first slice's in a sliced graph).
  int kernel_node(const ParamTensor& t) const { return sliced_ ? sliced_->node_of[t.node] : t.node; }

  Graph graph_;
  std::unique_ptr<SlicedGraph> sliced_;  // NetOptions::slice_runs; borrows graph_'s layers
  int64_t batch_;
  NetOptions options_;
  std::vector<std::string> made_direct_;
  void make_direct(std::vector<ConvAlgo> algos);  // rebuilds the kernels with those algorithms
  std::unique_ptr<Backend> backend_;
  std::vector<NodeFacts> facts_;  // the backend's facts (parameter sizes)
  Program train_, eval_;          // an inference Net: eval_ alone
  MemoryPlan train_plan_, eval_plan_;
  std::vector<bool> streamed_weights_;
  size_t smallest_resident_budget_ = 0, smallest_streamed_budget_ = 0;
  std::unique_ptr<DeviceBuffer> arena_;
  HostBuffer host_copies_;  // every Program's host copies: train_'s, then eval_'s
  std::unique_ptr<Executor> executor_;
  std::vector<ParamTensor> params_;
  HostBuffer images_;  // the batch, plain NCHW (host side of the input upload)
  HostBuffer labels_;
  int64_t valid_ = 0;
  uint64_t step_ = 0;
  int prefetch_depth_ = 0;
  StepResult result_;
  std::map<int, int64_t> batches_tracked_base_;     // by node; absent: 0
  std::vector<std::vector<size_t>> bucket_params_;  // per gradient bucket: indices into params_
  // The backend's communicator for gradients in device memory (CUDA: NCCL over options_.comm);
  // null: options_.comm serves (CPU). Declared last: destroyed before the backend.
  std::unique_ptr<Communicator> device_comm_;
  int64_t steps_to_record_ = 0;  // training steps still to record into recorder_
  StepRecorder* recorder_ = nullptr;
};

}  // namespace vdnn
