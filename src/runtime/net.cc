#include "runtime/net.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "backends/backend_targets.h"
#include "comm/rank_agreement.h"
#include "core/graph_digest.h"
#include "plan/direct_convolutions.h"
#include "util/host_memory.h"
#include "util/sha256.h"
#include "util/size_parse.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {

namespace {

// Under a budget the default convolutions' workspace may not fit: the backend target's facts for
// the same kernels with every convolution direct, and which of them go direct until `fits`
// (plan/direct_convolutions.h). Returns the per-node algorithms (empty: nothing leaner helps or is
// needed).
std::vector<ConvAlgo> leaner_convolutions(const Graph& graph, int64_t batch, const NetOptions& options,
                                          const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                                          Workspace counted,
                                          const std::function<bool(const std::vector<NodeFacts>&)>& fits) {
  const int n = static_cast<int>(graph.nodes().size());
  const TargetFacts direct = backend_target(to_string(options.backend))
                                 .facts(graph, batch, std::vector<ConvAlgo>(n, ConvAlgo::kDirect), options.precision);
  if (direct.value_bytes != value_bytes) return {};
  std::vector<ConvAlgo> algos =
      options.conv_algos.empty() ? std::vector<ConvAlgo>(n, options.conv_algo) : options.conv_algos;
  return direct_convolutions_until(graph, facts, direct.facts, std::move(algos), counted, fits);
}

// A training Net picks its convolutions' algorithms itself (oneDNN's default, which depends on the
// CPU) unless someone chose them: asked for one, per layer (dyn, auto), or layers in slices.
bool picks_its_own_algorithms(const NetOptions& options) {
  return options.conv_algo == ConvAlgo::kAuto && !options.conv_algo_asked && options.conv_algos.empty() &&
         options.conv_sub_batches.empty() && options.slice_runs.empty();
}

// NetOptions::conv_sub_batches: one count per node, >= 1, > 1 only for a convolution, dividing
// the node's batch (a slice of a layer: its share). The other per-node options: one per node.
void check_sub_batches(const Graph& graph, const NetOptions& options) {
  if (!options.conv_workspace_bytes.empty() && options.conv_workspace_bytes.size() != graph.nodes().size())
    VDNN_THROW("workspace caps: " << options.conv_workspace_bytes.size() << " for the " << graph.nodes().size()
                                  << " layers of '" << graph.name() << "' (one per layer, or none)");
  if (!options.conv_algos.empty() && options.conv_algos.size() != graph.nodes().size())
    VDNN_THROW("convolution algorithms: "
               << options.conv_algos.size() << " for the " << graph.nodes().size() << " layers of '" << graph.name()
               << "' (one per layer of the graph the Net runs, sliced with slice runs; or none)");
  const std::vector<int>& k = options.conv_sub_batches;
  if (k.empty()) return;
  if (options.precision != Precision::kFp32 && std::any_of(k.begin(), k.end(), [](int n) { return n > 1; }))
    VDNN_THROW("sub-batches do not combine with --precision " << to_string(options.precision) << " yet");
  if (k.size() != graph.nodes().size())
    VDNN_THROW("sub-batches: " << k.size() << " counts for the " << graph.nodes().size() << " layers of '"
                               << graph.name() << "' (one per layer, or none)");
  for (size_t i = 0; i < k.size(); ++i) {
    const Layer& layer = *graph.nodes()[i].layer;
    if (k[i] == 1) continue;
    if (k[i] < 1) layer.fail(VDNN_MSG("sub-batches must be >= 1, got " << k[i]));
    if (layer.kind() != LayerKind::kConv)
      layer.fail(VDNN_MSG("only convolutions run in sub-batches (asked for " << k[i] << ")"));
    const int64_t batch = graph.nodes()[i].batch(options.batch);
    if (batch % k[i] != 0) layer.fail(VDNN_MSG(k[i] << " sub-batches do not divide the batch of " << batch));
  }
}

// NetOptions::slice_runs: the sliced graph, for a Net that trains on one process.
std::unique_ptr<SlicedGraph> sliced_graph(const Graph& graph, const NetOptions& o) {
  if (o.slice_runs.empty()) return nullptr;
  const char* refused = o.inference                    ? "an inference Net"
                        : o.comm && o.comm->size() > 1 ? "data-parallel ranks"
                        : o.backend != BackendKind::kCpu
                            ? "--backend cuda (its slice and gather kernels are not written)"
                        : o.precision != Precision::kFp32 ? "--precision bf16 (the slice kernels are fp32)"
                                                          : nullptr;
  if (refused) VDNN_THROW("slice runs (--slice-run) do not combine with " << refused << " yet");
  return std::make_unique<SlicedGraph>(slice_runs(graph, o.batch, o.slice_runs));
}

// The cpu backend takes its arena and the host copies from host memory at once: plans needing
// more than the host has available now would swap, or be killed mid-run.
void check_fits_host(const Graph& graph, int64_t batch, size_t bytes, const OptionNames& names) {
  const size_t available = available_host_memory();
  if (available > 0 && bytes > available)
    VDNN_THROW("model '" << graph.name() << "' at " << names("batch") << " " << batch << " needs "
                         << format_bytes(bytes)
                         << " of host memory (the cpu backend takes its arena and host copies at once), but only "
                         << format_bytes(available) << " is available (MemAvailable in /proc/meminfo); lower "
                         << names("batch"));
}

// What every rank's Net must hold alike (comm/rank_agreement.h): the model (its name and graph),
// the batch, the seed its weights and dropout masks come from, the arithmetic, and the gradient
// buckets' size, which decides the collectives every step issues.
std::vector<RankSetting> net_rank_settings(const Graph& graph, const NetOptions& o) {
  return {{"the model", graph.name() + " " + graph_digest(graph).substr(0, 16)},
          {o.names("batch"), std::to_string(o.batch)},
          {o.names("seed"), std::to_string(o.seed)},
          {o.names("precision"), to_string(o.precision)},
          {o.names("backend"), to_string(o.backend)},
          {o.names("bucket_size"), format_bytes(o.bucket_bytes)}};
}

}  // namespace

BackendOptions Net::backend_options() const {
  BackendOptions b{options_.backend, batch_, options_.seed, options_.conv_algo, options_.conv_algos, options_.link};
  b.conv_sub_batches = options_.conv_sub_batches;
  b.conv_workspace_bytes = options_.conv_workspace_bytes;
  b.precision = options_.precision;
  return b;
}

Net::Net(Graph graph, const NetOptions& options) : graph_(std::move(graph)), batch_(options.batch), options_(options) {
  if (batch_ < 1) VDNN_THROW("batch size must be >= 1, got " << batch_);
  if (options.comm) check_ranks_agree(*options.comm, net_rank_settings(graph_, options));  // before any collective
  // A tied weight's gradient is final only after both layers' backward; a gradient bucket could be
  // summed over the ranks before the second is added (docs/design/sequences.md "Tied weights").
  if (options.comm && options.comm->size() > 1)
    for (const Node& n : graph_.nodes())
      if (n.param_owner >= 0)
        VDNN_THROW("layer '" << n.layer->name() << "' shares the weights of '"
                             << graph_.nodes()[n.param_owner].layer->name()
                             << "' (tied_to): tied weights do not train data-parallel (mpirun) yet; train on one rank");
  if (options.optimizer_state == StatePlace::kHost && (options.inference || (options.comm && options.comm->size() > 1)))
    VDNN_THROW(options.names("optimizer_state")
               << " host keeps one rank's optimizer state in its host memory for training: "
               << (options.inference ? "an inference Net has no optimizer"
                                     : "data-parallel ranks (mpirun) with state in host memory are not built yet; "
                                       "use " + options.names("optimizer_state") + " device"));
  sliced_ = sliced_graph(graph_, options);
  const Graph& run_graph = compute_graph();
  check_sub_batches(run_graph, options);
  backend_ = make_backend(run_graph, backend_options());
  facts_ = backend_->facts();
  const std::vector<size_t> value_bytes = backend_->value_bytes();
  if (options.decisions.any(StorageAction::kRecompute) && !backend_->supports_recompute())
    VDNN_THROW("recompute decisions: the " << backend_->name()
                                           << " backend does not re-run forward kernels in the backward pass yet "
                                              "(use --backend cpu, or keep/offload those tensors)");
  if (options.inference) {
    if (options.policy != Policy::kNone || !options.decisions.empty() || options.comm)
      VDNN_THROW("an inference Net runs the forward pass only: offload policies ("
                 << options.names("policy") << " " << to_string(options.policy)
                 << "), storage decisions and data-parallel ranks are for training");
    PlannedInference planned =
        plan_inference(graph_, value_bytes, facts_, options.device_memory, options.stream_weights);
    if (!planned.fits && options.device_memory) {
      std::vector<ConvAlgo> algos =
          leaner_convolutions(graph_, batch_, options, value_bytes, facts_, Workspace::kForward,
                              [&](const std::vector<NodeFacts>& f) {
                                return plan_inference(graph_, value_bytes, f, options.device_memory,
                                                      options.stream_weights)
                                    .fits;
                              });
      if (!algos.empty()) {
        make_direct(std::move(algos));
        planned =
            plan_inference(graph_, backend_->value_bytes(), facts_, options.device_memory, options.stream_weights);
      }
    }
    if (!planned.fits) VDNN_THROW(inference_refusal(graph_, batch_, planned, options.names));
    take(std::move(planned));
  } else {
    StepOptions step{options.policy, options.sync, options.prefetch_ahead ? Prefetch::kAhead : Prefetch::kVdnn,
                     options.device_memory, options.decisions};
    step.optimizer = options.optimizer;
    step.optimizer_state = options.optimizer_state;
    step.collectives.ranks = options.comm ? options.comm->size() : 1;
    step.collectives.bucket_bytes = options.bucket_bytes;
    step.collectives.first_bucket_bytes = std::min(step.collectives.first_bucket_bytes, options.bucket_bytes);
    PlannedStep planned = plan_step(run_graph, value_bytes, facts_, step);
    if (!planned.fits && options.device_memory && picks_its_own_algorithms(options)) {
      std::vector<ConvAlgo> algos = leaner_convolutions(
          graph_, batch_, options, value_bytes, facts_, Workspace::kStep,
          [&](const std::vector<NodeFacts>& f) { return plan_step(graph_, value_bytes, f, step).fits; });
      if (!algos.empty()) {
        make_direct(std::move(algos));
        planned = plan_step(graph_, backend_->value_bytes(), facts_, step);
      }
    }
    if (!planned.fits) VDNN_THROW(budget_refusal(run_graph, value_bytes, facts_, step, batch_, planned, options.names));
    take(std::move(planned));
  }
  const size_t host_bytes = train_plan_.host_bytes + eval_plan_.host_bytes;
  if (options.host_memory && host_bytes > options.host_memory)
    VDNN_THROW(host_refusal(graph_.name(), batch_, options.host_memory, train_program(), host_bytes, options.names));
  if (options.backend == BackendKind::kCpu)
    check_fits_host(graph_, batch_, train_plan().capacity_bytes + host_bytes, options.names);
  arena_ = backend_->allocate_arena(train_plan().capacity_bytes);
  host_copies_ = HostBuffer(host_bytes, backend_->host_memory(), "host copies of offloaded tensors");
  executor_ = std::make_unique<Executor>(*backend_, arena_->data());
  if (train_plan_.host_bytes) executor_->set_host_region(train_, host_copies_.data());
  if (eval_plan_.host_bytes) executor_->set_host_region(eval_, host_copies_.data() + train_plan_.host_bytes);
  bind_params();
  // An inference Net's weights are loaded, not trained from a seed: left zero (its arena's pages
  // stay untouched until they are), so loading VGG-16's 528 MiB never holds a second, random copy.
  if (!options.inference) init_params(options.seed);
  if (ranks() > 1)  // a collective: every rank builds its Net in the same order
    device_comm_ = backend_->gradient_communicator(*options_.comm, {options_.collective_timeout_seconds});
  for (const GradientBucket& b : train_.buckets) {
    bucket_params_.emplace_back();
    for (auto [node, index] : b.params)
      for (size_t i = 0; i < params_.size(); ++i)
        if (kernel_node(params_[i]) == node && params_[i].index == index) bucket_params_.back().push_back(i);
  }
  // The batch's host side (pinned on a GPU, so its upload is a DMA copy); zero-filled.
  const HostMemory staging = backend_->host_memory();
  const size_t image_bytes = static_cast<size_t>(batch_ * graph_.input_shape().elements()) * sizeof(float);
  images_ = HostBuffer(image_bytes, staging, "input batch");
  const size_t labels = static_cast<size_t>(batch_ * graph_.labels_per_sample());  // per token for [T, V] logits
  labels_ = HostBuffer(labels * sizeof(int32_t), staging, "labels");
  std::memset(images_.data(), 0, images_.bytes());
  std::memset(labels_.data(), 0, labels_.bytes());
}

void Net::make_direct(std::vector<ConvAlgo> algos) {
  for (size_t i = 0; i < algos.size(); ++i) {
    const ConvAlgo had = options_.conv_algos.empty() ? options_.conv_algo : options_.conv_algos[i];
    if (algos[i] == ConvAlgo::kDirect && had != ConvAlgo::kDirect) made_direct_.push_back(graph_.nodes()[i].layer->name());
  }
  options_.conv_algos = std::move(algos);
  backend_ = make_backend(graph_, backend_options());
  facts_ = backend_->facts();
}

Net::~Net() {
  executor_.reset();  // waits for the device; then the host copies, the arena, the backend
}

// Runs what the planner gave: the Programs as placed, at the depth it chose.
void Net::take(PlannedStep step) {
  train_ = std::move(step.train);
  eval_ = std::move(step.eval);
  train_plan_ = std::move(step.train_plan);
  eval_plan_ = std::move(step.eval_plan);
  prefetch_depth_ = step.prefetch_depth;
  smallest_resident_budget_ = step.smallest_budget;
}

// An inference Net has one Program, the evaluation one: train_program() and train_plan() give it
// (the parameters' places, the peaks), and forward(true)/backward() refuse to run it.
void Net::take(PlannedInference planned) {
  eval_ = std::move(planned.program);
  eval_plan_ = std::move(planned.plan);
  streamed_weights_ = std::move(planned.streamed);
  smallest_resident_budget_ = planned.smallest_budget;
  smallest_streamed_budget_ = planned.smallest_streamed_budget;
}

// Each parameter's place: the arena at its planned offset, or a streamed weight's host copy.
void Net::bind_params() {
  const Program& program = train_program();
  std::map<std::string, int> by_name;
  for (size_t t = 0; t < program.tensors.size(); ++t) by_name[program.tensors[t].name] = static_cast<int>(t);
  auto at = [&](const std::string& name) -> float* {
    auto it = by_name.find(name);
    if (it == by_name.end()) return nullptr;
    const ProgramTensor& t = program.tensors[it->second];
    if (t.streamed || t.on_host) return reinterpret_cast<float*>(executor_->host_copy(program, it->second));
    return reinterpret_cast<float*>(arena_->data() + train_plan().persistent_offsets[it->second]);
  };
  auto host_mirror = [&](const std::string& name) {  // a weight's or gradient's host copy
    const int t = by_name.at(name);
    VDNN_CHECK(program.tensors[t].host_mirror, "'" << name << "' has no host copy in the plan");
    return reinterpret_cast<float*>(executor_->host_copy(program, t));
  };
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const Node& node = graph_.nodes()[i];
    if (node.param_owner >= 0) continue;  // a tied layer: its parameters are its owner's, bound there
    const int kernel = sliced_ ? sliced_->node_of[i] : static_cast<int>(i);
    for (size_t k = 0; k < node.params.size(); ++k) {
      const std::string name = node.layer->name() + "." + node.params[k].name;
      // The Program's tensors are named after the node holding them ("conv1_1/s0.weight" when sliced).
      const std::string tensor = compute_graph().nodes()[kernel].layer->name() + "." + node.params[k].name;
      ParamTensor t{
          name,    node.params[k], static_cast<int>(i), static_cast<int>(k), facts_[kernel].param_bytes[k], at(tensor),
          nullptr, nullptr};
      if (node.params[k].trainable && !options_.inference) {
        t.grad = at(tensor + ":grad");
        t.velocity = at(tensor + ":momentum");
        t.exp_avg = at(tensor + ":exp_avg");
        t.exp_avg_sq = at(tensor + ":exp_avg_sq");
        const std::vector<char> zeros(t.bytes, 0);
        for (const std::string& state : optimizer_state_suffixes(options_.optimizer)) {
          VDNN_CHECK(t.state(state), "parameter '" << name << "' has no " << state << " buffer in the plan");
          if (state_on_host())
            std::memset(t.state(state), 0, t.bytes);
          else
            backend_->upload(t.state(state), zeros.data(), t.bytes);
        }
        if (state_on_host()) {  // the gradient's home is its host copy (streamed out in backward)
          t.host_data = host_mirror(tensor);
          t.grad = t.host_grad = host_mirror(tensor + ":grad");
        }
      }
      params_.push_back(t);
    }
  }
}

static void fill_plain(const ParamSpec& spec, Rng& rng, std::vector<float>& out) {
  out.resize(static_cast<size_t>(spec.elements()));
  const float std_dev = std::sqrt(2.0f / static_cast<float>(spec.fan_in));
  for (float& x : out) {
    switch (spec.init) {
      case ParamSpec::Init::kHeNormal:
        x = rng.normal() * std_dev;
        break;
      case ParamSpec::Init::kLecunNormal:
        x = rng.normal() * std_dev * 0.70710678f;
        break;
      case ParamSpec::Init::kZero:
        x = 0.0f;
        break;
      case ParamSpec::Init::kOne:
        x = 1.0f;
        break;
      case ParamSpec::Init::kSmallNormal:
        x = rng.normal() * 0.02f;
        break;
    }
  }
}

void Net::init_params(uint64_t seed) {
  std::vector<float> plain;
  for (size_t i = 0; i < params_.size(); ++i) {
    Rng rng(seed, 1000 + i);
    fill_plain(params_[i].spec, rng, plain);
    import_param(i, plain);
  }
}

std::vector<float> Net::export_param(size_t i) const {
  const ParamTensor& t = params_.at(i);
  return backend_->export_param(kernel_node(t), t.index, t.data);
}

std::vector<float> Net::export_grad(size_t i) const {
  const ParamTensor& t = params_.at(i);
  VDNN_CHECK(t.grad, "parameter '" << t.name << "' is not trainable: it has no gradient");
  return backend_->export_param(kernel_node(t), t.index, t.grad);
}

const ParamTensor* Net::first_nonfinite_gradient() {
  for (const ParamTensor& t : params_)
    if (t.grad && !backend_->all_finite(t.grad, t.bytes)) return &t;
  return nullptr;
}

const ParamTensor* Net::first_nonfinite_weight() {
  for (const ParamTensor& t : params_)
    if (!backend_->all_finite(t.data, t.bytes)) return &t;
  return nullptr;
}

void Net::refresh_host_masters() {
  if (!host_masters_stale_) return;
  for (const ParamTensor& t : params_)
    if (t.host_data) backend_->download(t.host_data, t.data, t.bytes);
  host_masters_stale_ = false;
}

void Net::import_param(size_t i, const std::vector<float>& plain) {
  host_masters_stale_ = true;
  const ParamTensor& t = params_.at(i);
  if (static_cast<int64_t>(plain.size()) != t.spec.elements())
    VDNN_THROW("parameter '" << t.name << "' has " << t.spec.elements() << " elements, got " << plain.size());
  backend_->import_param(kernel_node(t), t.index, plain, t.data);
}

std::vector<float> Net::export_momentum(size_t i) const { return export_state(i, ":momentum"); }

void Net::import_momentum(size_t i, const std::vector<float>& plain) { import_state(i, ":momentum", plain); }

std::vector<float> Net::export_state(size_t i, const std::string& suffix) const {
  const ParamTensor& t = params_.at(i);
  VDNN_CHECK(t.state(suffix), "parameter '" << t.name << "' has no optimizer state " << suffix << " (optimizer "
                                            << to_string(options_.optimizer) << ", trainable: " << t.spec.trainable
                                            << ")");
  return backend_->export_param(kernel_node(t), t.index, t.state(suffix));
}

void Net::import_state(size_t i, const std::string& suffix, const std::vector<float>& plain) {
  const ParamTensor& t = params_.at(i);
  VDNN_CHECK(t.state(suffix), "parameter '" << t.name << "' has no optimizer state " << suffix << " (optimizer "
                                            << to_string(options_.optimizer) << ", trainable: " << t.spec.trainable
                                            << ")");
  VDNN_CHECK(static_cast<int64_t>(plain.size()) == t.spec.elements(),
             suffix << " of '" << t.name << "' has " << t.spec.elements() << " elements, got " << plain.size());
  backend_->import_param(kernel_node(t), t.index, plain, t.state(suffix));
}

int64_t Net::batches_tracked_base(int node) const {
  auto it = batches_tracked_base_.find(node);
  return it == batches_tracked_base_.end() ? 0 : it->second;
}

std::string Net::weights_sha256() const {
  Sha256 hash;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::vector<float> plain = export_param(i);
    hash.update(plain.data(), plain.size() * sizeof(float));
  }
  return hash.hex_digest();
}

void Net::set_batch(const float* images, const int32_t* labels, int64_t valid) {
  VDNN_CHECK(valid >= 1 && valid <= batch_, "valid " << valid << " outside 1.." << batch_);
  const size_t per_sample = static_cast<size_t>(graph_.input_shape().elements());
  float* x = images_.as<float>();
  int32_t* y = labels_.as<int32_t>();
  std::memcpy(x, images, valid * per_sample * sizeof(float));
  std::fill(x + valid * per_sample, x + batch_ * per_sample, 0.0f);
  const int64_t per_sample_labels = graph_.labels_per_sample();
  std::memcpy(y, labels, valid * per_sample_labels * sizeof(int32_t));
  std::fill(y + valid * per_sample_labels, y + batch_ * per_sample_labels, 0);
  valid_ = valid;
}

void Net::check_trains() const {
  if (options_.inference)
    VDNN_THROW(
        "this Net was built for inference only (NetOptions::inference): it has no gradients, momentum "
        "or training pass; build it without inference to train");
}

float Net::forward(bool training) {
  VDNN_CHECK(valid_ > 0, "forward() before set_batch()");
  if (training) check_trains();
  // Dropout draws its masks from (seed, step); another rank's steps are far apart (rank 0: as one process).
  const uint64_t stream = step_ + (static_cast<uint64_t>(rank()) << 40);
  BatchView view{images_.as<float>(), labels_.as<int32_t>(), valid_, graph_.classes(), graph_.labels_per_sample()};
  view.step = stream;
  view.training = training;
  const bool record = training && recorder_ && steps_to_record_ > 0;
  steps_to_record_ -= record;
  executor_->record_into(record ? recorder_ : nullptr);
  result_ =
      executor_->run(training ? train_ : eval_, training ? Executor::Phase::kForward : Executor::Phase::kAll, view);
  if (training) ++step_;
  return result_.loss;
}

void Net::set_update(std::function<void(const std::vector<size_t>& params)> update) {
  executor_->set_collectives(device_comm_ ? device_comm_.get() : options_.comm,
                             [this, update = std::move(update)](int bucket) { update(bucket_params_.at(bucket)); });
}

void Net::run_on_compute(const std::function<void()>& work) {
  device().launch(StreamKind::kCompute, work);
  device().synchronize(StreamKind::kCompute);
}

void Net::backward() {
  check_trains();
  BatchView view{images_.as<float>(), labels_.as<int32_t>(), valid_, graph_.classes(), graph_.labels_per_sample()};
  view.step = step_;
  executor_->run(train_, Executor::Phase::kBackward, view);
}

}  // namespace vdnn
