// `vdnn train`: trains a network on Fashion-MNIST (default), synthetic data or an IDX folder.
#include <omp.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <optional>

#include "backends/backend_targets.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/profiler.h"
#include "comm/communicator.h"
#include "comm/rank_agreement.h"
#include "commands.h"
#include "data/augment.h"
#include "data/char_text.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "data_flags.h"
#include "data_parallel.h"
#include "flag_rules.h"
#include "model_flags.h"
#include "numeric_flags.h"
#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/memory_plan.h"
#include "planning/plan_source.h"
#include "planning/planned_policy.h"
#include "report/chrome_trace.h"
#include "report/report.h"
#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "runtime/trainer.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/progress.h"
#include "util/size_parse.h"
#include "util/text_list.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

struct TrainOptions {
  ModelFlags model{.name = "fmnist_cnn"};
  std::string data = "fashion-mnist";
  std::string report, trace, schedule = "cosine";
  int threads = 0;
  int64_t synthetic_samples = 2048;
  bool no_eval = false;
  std::string costs;  // --policy dyn/auto: a saved `vdnn profile` (default: measure now)
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string resume;           // a checkpoint to continue (o.config.save_path: where to save)
  std::string initial_weights;  // a safetensors file (e.g. a PyTorch state_dict) to start from
  std::string save_weights;     // --save-weights: the weights alone at the end, as a state_dict
  std::string weight_decay_on = "weights";
  std::string optimizer = "sgd";
  std::string optimizer_state = "device";
  std::string progress = "auto";
  std::string on_nan = "stop";
  std::string policy = "none", sync = "event", prefetch = "vdnn", conv_algo = "auto", device_memory, host_memory,
              link_bandwidth = "0", link_latency = "0";
  bool conv_algo_asked = false;  // --conv-algo given (NetOptions::conv_algo_asked)
  // Data parallel (under mpirun): a collective's timeout, the gradient bucket size, and the
  // replica check after every step.
  int conv_sub_batches = 1;             // every convolution in this many slices of the batch
  std::vector<std::string> slice_runs;  // --slice-run FIRST:LAST:K, repeatable
  std::string augment = "none";
  DataSource image_flags;  // --mean, --std, --skip-bad-images
  double collective_timeout = 300;
  std::string bucket_size = "25MiB";
  bool verify_replicas = false;
  TrainConfig config;
  // Absent: the optimizer's default (default_lr, default_weight_decay).
  const CLI::Option* lr_flag = nullptr;
  const CLI::Option* weight_decay_flag = nullptr;
};

// --policy dyn or auto: what it picks for --device-memory (planning/planned_policy.h), from costs
// measured on this machine (calibrated by a few timed steps) or read from --costs. Prints its
// choice; returns the reason for it, for the report.
// `graph` is the one the Net will run (sliced with --slice-run: the plan's per-node choices index
// it; plan_inputs neither calibrates nor reads --costs for it).
std::string choose_planned_configuration(const Graph& graph, const TrainOptions& o, NetOptions& net_options) {
  PlanSourceOptions source{.costs_file = o.costs};
  source.precision = net_options.precision;
  source.cpu_link = parse_link(o.link_bandwidth, o.link_latency);
  source.calibrate_with = [&o] { return o.model.load().graph; };
  const PlannedPolicy p = choose_planned_policy(graph, o.model.batch, o.policy, net_options.device_memory, source,
                                                net_options.sync, net_options);
  std::printf("%s\n", p.summary.c_str());
  return p.reason;
}

// One line after a signal stopped training: where it stopped and, if a checkpoint of this run is
// at --save, the step it holds and how to continue from it. Under mpirun rank 0 writes the
// checkpoints, maybe still: another rank reading the file could quote the step before the one rank 0
// is saving (the second probe saw it one short), so it names the writer instead of a step.
void report_interrupted(int sig, int64_t step, int64_t total, const TrainOptions& o, const std::string& model,
                        int rank) {
  std::fflush(stdout);
  std::string next = "no --save, so nothing to resume from";
  if (!o.config.save_path.empty() && rank > 0) {
    next = VDNN_MSG("rank 0 writes the checkpoints at " << o.config.save_path << ": `vdnn train ... --resume "
                                                        << o.config.save_path
                                                        << "` (the same flags) continues from the step it holds");
  } else if (!o.config.save_path.empty()) {
    next = VDNN_MSG("no checkpoint at " << o.config.save_path << " yet");
    try {
      const Checkpoint c = read_checkpoint(o.config.save_path);
      check_resumable(c, model, o.model.batch, o.config.seed);
      next = VDNN_MSG("the checkpoint " << o.config.save_path << " holds step " << c.position.step
                                        << ": `vdnn train ... --resume " << o.config.save_path
                                        << "` (the same flags) continues from there");
    } catch (const Error&) {
    }
  }
  std::fprintf(stderr, "interrupted (%s) after step %lld of %lld; %s\n", sig == SIGINT ? "Ctrl-C" : "SIGTERM",
               static_cast<long long>(step), static_cast<long long>(total), next.c_str());
}

// The Net's options the flags give, by the library's rules on them (runtime/net_settings.h: the
// policy and its budget, precision and convolution algorithm, the cpu budget within host memory).
NetOptions train_net_options(const TrainOptions& o) {
  NetSettings s{.batch = o.model.batch,
                .seed = o.config.seed,
                .policy = o.policy,
                .precision = o.precision,
                .conv_algo = o.conv_algo,
                .conv_algo_asked = o.conv_algo_asked,
                .sync = o.sync,
                .prefetch = o.prefetch,
                .backend = parse_backend(o.backend),
                .optimizer = o.optimizer,
                .optimizer_state = o.optimizer_state};
  s.device_memory = parse_budget(o.device_memory, "--device-memory");
  s.host_memory = parse_budget(o.host_memory, "--host-memory");
  return net_options(s, OptionNames{});
}

// --lr's and --weight-decay's defaults are the optimizer's (SGD 0.05 and 5e-4; AdamW 1e-3 and 0.01,
// torch.optim.AdamW's). The flags of one optimizer are refused with the other (train_flag_rules).
void check_optimizer_flags(TrainOptions& o, OptimizerKind optimizer) {
  o.config.optimizer = optimizer;
  if (o.lr_flag->count() == 0) o.config.lr = default_lr(optimizer);
  if (o.weight_decay_flag->count() == 0) o.config.weight_decay = default_weight_decay(optimizer);
  check_train_config(o.config, OptionNames{});
}

// Checks every flag that needs no model or data (before any output: one line if one is
// unusable) and fills o.config from them. Returns the Net's options the flags give.
NetOptions check_flags(TrainOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const NetOptions checked = train_net_options(o);
  if (checked.precision != Precision::kFp32) require_native_bf16();
  parse_link(o.link_bandwidth, o.link_latency);
  check_budget(parse_size(o.bucket_size, "--bucket-size"), "--bucket-size");
  o.config.schedule = LrSchedule::parse(o.schedule);
  o.config.weight_decay_on = SgdConfig::parse_decay_on(o.weight_decay_on);
  check_optimizer_flags(o, checked.optimizer);
  if (!o.initial_weights.empty() && !o.resume.empty())
    VDNN_THROW(
        "--initial-weights and --resume both give the starting weights: use one (--resume continues its "
        "checkpoint's run, --initial-weights starts a new run from a weights file)");
  o.config.evaluate = !o.no_eval;
  o.config.on_nonfinite = o.on_nan == "skip" ? TrainConfig::OnNonFinite::kSkip : TrainConfig::OnNonFinite::kStop;
  o.config.offers_on_nan_skip = true;
  check_output_files({{"--save", o.config.save_path},
                      {"--save-weights", o.save_weights},
                      {"--trace", o.trace},
                      {"--report", o.report}});
  return checked;
}

// The checkpoint --resume names (none without it); a bad one is an error naming the flag.
std::optional<Checkpoint> read_resume(const std::string& path) {
  try {
    if (!path.empty()) return read_checkpoint(path);
  } catch (const Error& e) {
    VDNN_THROW("--resume " << e.what());
  }
  return std::nullopt;
}

// --initial-weights: every parameter and running statistic of the model, under its name and
// PyTorch's shape (a state_dict saved with safetensors loads as it is; its num_batches_tracked
// counters are kept and counted on). Read before any output, so a bad file is one line; a missing
// or misshapen tensor is an error naming the file and tensor when the Net takes them.
std::optional<SafeTensors> read_initial_weights(const std::string& path) {
  try {
    if (!path.empty()) return read_weights_file(path);
  } catch (const Error& e) {
    VDNN_THROW("--initial-weights " << e.what());
  }
  return std::nullopt;
}

// The digest of the weights `file` gives `graph` (a flag's file), "none" without one.
std::string weights_digest(const SafeTensors* file, const Graph& graph, const char* flag) {
  try {
    return file ? weights_sha256(*file, graph).substr(0, 16) : "none";
  } catch (const Error& e) {
    VDNN_THROW(flag << " " << e.what());
  }
}

// Under mpirun: every rank was given the same --initial-weights and --resume weights, the same
// --verify-replicas (a check on some ranks only would leave the others out of its collective) and
// the same output files (rank 0 writes them: a --report given to another rank alone would be
// dropped without a word). The Net and the Trainer check the rest (comm/rank_agreement.h).
void check_ranks_started_alike(Communicator& comm, const TrainOptions& o, const Graph& graph,
                               const std::optional<Checkpoint>& resume, const std::optional<SafeTensors>& initial) {
  if (comm.size() == 1) return;
  check_ranks_agree(comm,
                    {{"--initial-weights", weights_digest(initial ? &*initial : nullptr, graph, "--initial-weights")},
                     {"--resume", weights_digest(resume ? &resume->file : nullptr, graph, "--resume")},
                     {"--verify-replicas", o.verify_replicas ? "given" : "not given"},
                     {"--report", o.report.empty() ? "none" : o.report},
                     {"--trace", o.trace.empty() ? "none" : o.trace},
                     {"--save", o.config.save_path.empty() ? "none" : o.config.save_path},
                     {"--save-weights", o.save_weights.empty() ? "none" : o.save_weights}});
}

void load_initial_weights(Net& net, const SafeTensors& weights) {
  try {
    load_weights(weights, net);
  } catch (const Error& e) {
    VDNN_THROW("--initial-weights " << e.what());
  }
  std::printf("initial weights from %s (weights_sha256 %s)\n", weights.path.c_str(), net.weights_sha256().c_str());
}

void print_run(const Graph& graph, const Dataset& train, const Dataset& test, int64_t batch) {
  std::printf(
      "model %s: %lld parameters, %.1f MFLOP/image forward; data %s (%lld train, %lld "
      "test); batch %lld, %d threads\n",
      graph.name().c_str(), static_cast<long long>(graph.parameter_count()), graph.forward_flops_per_sample() / 1e6,
      train.name.c_str(), static_cast<long long>(train.count), static_cast<long long>(test.count),
      static_cast<long long>(batch), omp_get_max_threads());
}

// The Net's options from the flags (with --policy dyn: the policy and algorithms it picks), and
// why the convolution algorithms are what they are, for the report.
struct NetChoice {
  NetOptions options;
  std::string algo_reason;
};

NetChoice choose_net_options(const Graph& graph, const TrainOptions& o, const NetOptions& checked, Communicator& comm) {
  NetChoice c{.options = checked, .algo_reason = "--conv-algo " + o.conv_algo};
  NetOptions& net_options = c.options;
  if (comm.size() > 1) net_options.comm = &comm;
  net_options.collective_timeout_seconds = o.collective_timeout;
  net_options.bucket_bytes = parse_size(o.bucket_size, "--bucket-size");
  // Per-node choices index the graph the Net runs: with --slice-run, the sliced one.
  for (const std::string& run : o.slice_runs) net_options.slice_runs.push_back(parse_slice_run(run));
  const bool planned = is_planned(o.policy);
  if (!o.slice_runs.empty() && comm.size() > 1)  // before any profiling (the Net refuses it too)
    VDNN_THROW("--slice-run does not combine with data-parallel ranks yet");
  const std::optional<SlicedGraph> sliced =
      net_options.slice_runs.empty()
          ? std::nullopt
          : std::optional<SlicedGraph>(slice_runs(graph, o.model.batch, net_options.slice_runs));
  const Graph& computed = sliced ? sliced->graph : graph;
  if (o.conv_sub_batches > 1) {  // not with dyn or auto (train_flag_rules): they pick the algorithms
    if (o.model.batch % o.conv_sub_batches != 0)
      VDNN_THROW("--conv-sub-batches " << o.conv_sub_batches << " must divide --batch " << o.model.batch);
    for (const Node& n : computed.nodes())
      net_options.conv_sub_batches.push_back(n.layer->kind() == LayerKind::kConv ? o.conv_sub_batches : 1);
  }
  if (planned) c.algo_reason = choose_planned_configuration(computed, o, net_options);
  net_options.link = parse_link(o.link_bandwidth, o.link_latency);
  return c;
}

void print_memory_plan(const Net& net, const TrainOptions& o) {
  const MemoryPlan& plan = net.train_plan();
  std::printf(
      "device memory %s (policy %s, sync %s, prefetch %s): plan peak %s (smallest budget %s), host %s for "
      "offloaded tensors (taken once)\n",
      format_bytes(net.arena_bytes()).c_str(), o.policy.c_str(), o.sync.c_str(),
      net.prefetch_depth()
          ? VDNN_MSG("ahead " << net.prefetch_depth() << (net.prefetch_depth() == 1 ? " layer" : " layers")).c_str()
          : "vdnn",
      format_bytes(plan.peak_bytes).c_str(), format_bytes(net.smallest_resident_budget()).c_str(),
      format_bytes(net.host_bytes()).c_str());
  // oneDNN's default algorithms depend on the CPU (runtime/net.h): say where the budget overruled them.
  if (const std::vector<std::string>& direct = net.convolutions_made_direct(); !direct.empty())
    std::printf("to fit --device-memory, %zu convolution(s) run direct instead of their default algorithm: %s\n",
                direct.size(), join_list(direct).c_str());
}

void resume_trainer(Trainer& trainer, const Checkpoint& checkpoint, const std::string& path) {
  trainer.resume(checkpoint);
  const CheckpointPosition& at = checkpoint.position;
  std::printf("resuming %s at step %lld (epoch %lld, %lld of its %lld batches done)\n", path.c_str(),
              static_cast<long long>(at.step), static_cast<long long>(at.step / at.steps_per_epoch + 1),
              static_cast<long long>(at.step % at.steps_per_epoch), static_cast<long long>(at.steps_per_epoch));
}

// What the terminal shows while training: per epoch a progress bar or lines (--progress), then
// the epoch's line; and the step reached, for the message when a signal stops the run. step()
// throws Interrupted after a signal: between steps, a clean stop.
class TrainConsole {
 public:
  TrainConsole(Progress::Mode mode, int64_t batch) : mode_(mode), batch_(batch) {}

  void step(const StepProgress& p) {
    last_step_ = p.step;
    total_steps_ = p.total_steps;
    if (const int sig = interrupt_signal()) throw Interrupted{sig};
    if (!progress_)
      progress_ = std::make_unique<Progress>(stdout, mode_, VDNN_MSG("epoch " << p.epoch << "/" << p.epochs), "img/s");
    // Training waited for data: how much of its time so far (shown from 1%).
    const double wait = p.elapsed_seconds > 0 ? p.data_wait_seconds / p.elapsed_seconds : 0;
    progress_->update(
        p.epoch_step, p.steps_per_epoch, static_cast<double>(p.epoch_step * batch_),
        VDNN_MSG("loss " << std::fixed << std::setprecision(4) << p.loss
                         << (p.grad_norm > 0 ? VDNN_MSG("  grad norm " << std::setprecision(3) << p.grad_norm)
                                             : std::string())
                         << (wait >= 0.01 ? VDNN_MSG("  data wait " << std::setprecision(0) << wait * 100 << "%")
                                          : std::string())));
  }

  void epoch(const EpochResult& e) {
    progress_.reset();
    std::printf("epoch %3d  lr %.4f  loss %.4f  train acc %.4f", e.epoch, e.lr, e.train_loss, e.train_accuracy);
    if (e.test.samples > 0) std::printf("  test loss %.4f  test acc %.4f", e.test.loss, e.test.accuracy);
    std::printf("  %.0f img/s  %.1f s", e.images_per_second, e.train_seconds);
    if (e.data_wait_seconds >= 0.01 * e.train_seconds && e.data_wait_seconds > 0)
      std::printf("  data wait %.1f s", e.data_wait_seconds);
    std::printf("\n");
    std::fflush(stdout);
  }

  void end() { progress_.reset(); }
  int64_t last_step() const { return last_step_; }
  int64_t total_steps() const { return total_steps_; }

 private:
  std::unique_ptr<Progress> progress_;  // one per epoch
  Progress::Mode mode_;
  int64_t batch_;
  int64_t last_step_ = 0, total_steps_ = 0;
};

// --progress: auto is a bar on a terminal, lines elsewhere; one rank of mpirun always gets lines.
// Open MPI hands every rank a pseudo-terminal, so the rank sees a terminal even when mpirun's own
// output goes to a file or a pipe (the bar's carriage returns would make one endless line there),
// and a rank cannot tell where mpirun writes. `--progress bar` still draws it.
Progress::Mode progress_mode(const std::string& flag) {
  const Progress::Mode mode = Progress::parse(flag);
  return mode == Progress::Mode::kAuto && launched_by_mpi() ? Progress::Mode::kLines : mode;
}

void print_result(const TrainResult& r, const TrainOptions& o) {
  std::printf("done: %lld iterations, final loss %.4f, ", static_cast<long long>(r.iterations), r.final_loss);
  if (o.config.evaluate)
    std::printf("test accuracy %.4f, ", r.test_accuracy);
  else
    std::printf("no evaluation, ");
  std::printf("%.0f images/s\n", r.images_per_second);
  std::printf("data: waited %.2f s of %.2f s for batches (%d loader threads)", r.data_wait_seconds, r.train_seconds,
              o.config.data_threads);
  if (r.bad_images > 0) std::printf(", %lld unreadable images skipped", static_cast<long long>(r.bad_images));
  std::printf("\nweights_sha256 %s\n", r.weights_sha256.c_str());
  if (!o.config.save_path.empty())
    std::printf("saved %s (step %lld)\n", o.config.save_path.c_str(), static_cast<long long>(r.iterations));
}

void write_trace(const TrainOptions& o, const StepRecorder& recorder, const Net& net, const std::string& model_name) {
  write_chrome_trace(
      o.trace, recorder.timeline(),
      VDNN_MSG(model_name << ", batch " << o.model.batch << ", policy " << to_string(net.options().policy) << ", "
                          << o.backend << ", measured step " << recorder.steps_begun()));
  std::printf("trace: training step %d written to %s\n", recorder.steps_begun(), o.trace.c_str());
}

// The memory line; returns the report's memory fields it prints from.
nlohmann::json print_memory(Net& net, const TrainResult& r) {
  nlohmann::json memory = memory_report(net, r);
  std::printf(
      "memory: peak %s of %s, offloaded %s/iteration, compute stalled %.1f ms/iteration, "
      "%.1f ms/iteration\n",
      format_bytes(memory["peak_device_bytes"].get<size_t>()).c_str(), format_bytes(net.arena_bytes()).c_str(),
      format_bytes(static_cast<size_t>(memory["offloaded_bytes_per_iteration"].get<double>())).c_str(),
      memory["stall_ms_per_iteration"].get<double>(), memory["iteration_ms"].get<double>());
  return memory;
}

// The training set --data names and, when evaluating, its test set, each checked against the
// model's input before any step (not after the first epoch).
struct TrainData {
  Dataset train, test;
};

// An image-folder root (torchvision's ImageFolder(ROOT)) holds no split to evaluate on: without
// --val-data the run trains on all of it and skips evaluation, saying so. Image files not stored at
// the model's size or colour mode are counted in one line.
TrainData load_train_data(TrainOptions& o, const Graph& graph) {
  DataSource source = o.image_flags;  // --mean, --std, --skip-bad-images, --val-data
  source.data = o.data, source.synthetic_samples = o.synthetic_samples, source.seed = o.config.seed;
  source.augment = o.config.augment;
  if (o.config.evaluate && !has_evaluation_split(source)) {
    std::printf(
        "data: %s holds the class folders themselves (torchvision's ImageFolder root): all of it trains and "
        "none is held out, so no evaluation (--val-data DIR evaluates on another such folder)\n",
        o.data.c_str());
    o.config.evaluate = false;
  }
  TrainData d;
  d.train = load_data(source, graph, Split::kTrain);
  if (o.config.evaluate) d.test = load_data(source, graph, Split::kTest);
  check_data_fits(graph, d.train);
  if (o.config.evaluate) check_data_fits(graph, d.test);
  if (const std::string line = adaptation_line({&d.train, &d.test}); !line.empty()) std::printf("%s\n", line.c_str());
  return d;
}

// Text read as characters: their vocabulary (id -> character) beside --report, to decode what the
// model generates: run.json -> run.vocab.json.
void write_text_vocabulary(const TrainOptions& o, const Dataset& train) {
  namespace fs = std::filesystem;
  if (train.vocabulary.empty() || o.report.empty()) return;
  fs::path file = o.report;
  file.replace_extension(".vocab.json");
  write_vocabulary(file.string(), train.vocabulary, o.data);
  std::printf("data: the vocabulary of %s (%zu characters, id -> character) written to %s\n", o.data.c_str(),
              train.vocabulary.size(), file.c_str());
}

// --resume continues a run of this model, batch, seed, augmentation and number of ranks only.
void check_resume(const Checkpoint& c, const TrainOptions& o, const std::string& model, const Communicator& comm) {
  check_resumable(c, model, o.model.batch, o.config.seed);
  check_same_augmentation(c, o.config);
  check_same_ranks(c, comm.size());
}

// The weights the first step starts from, once the Trainer exists: --resume's checkpoint (weights,
// momentum, counters) or --initial-weights; each file's tensors are freed once the Net holds them.
void load_starting_weights(const TrainOptions& o, Net& net, Trainer& trainer, std::optional<Checkpoint>& resume,
                           std::optional<SafeTensors>& initial) {
  if (resume) {
    resume_trainer(trainer, *resume, o.resume);
    resume.reset();
  }
  if (initial) {
    load_initial_weights(net, *initial);
    initial.reset();
  }
}

// What rank 0 leaves after training: --save-weights, --trace, the skipped steps, the memory line
// and --report (`ranks`: the data-parallel part of it, null for one rank).
void write_outputs(const TrainOptions& o, Net& net, const TrainResult& r, const StepRecorder& recorder,
                   const nlohmann::json& ranks, const std::string& algo_reason) {
  const std::string& model_name = net.graph().name();
  if (!o.save_weights.empty()) {
    save_weights(o.save_weights, net, o.config.seed, r.iterations, r.class_names);
    std::printf("saved weights %s (a PyTorch state_dict: load_state_dict(strict=True) takes it)\n",
                o.save_weights.c_str());
  }
  if (!o.trace.empty()) write_trace(o, recorder, net, model_name);
  if (!r.skipped_steps.empty())
    std::printf("skipped %zu steps with a NaN or Inf (--on-nan skip); first: %s\n", r.skipped_steps.size(),
                r.skipped_steps.front().c_str());
  const nlohmann::json memory = print_memory(net, r);
  if (!o.report.empty()) {
    nlohmann::json report = train_report(model_name, o.config, o.model.batch, r);
    report.update(memory);
    report["decisions"] = decisions_report(net, algo_reason);
    if (!ranks.is_null()) report["data_parallel"] = ranks;
    write_json_file(o.report, report);
  }
}

int train(TrainOptions& o, const NetOptions& checked, Communicator& comm) {
  o.config.augment = parse_augmentation(o.augment, "--augment");
  std::optional<Checkpoint> resume = read_resume(o.resume);
  std::optional<SafeTensors> initial = read_initial_weights(o.initial_weights);
  NetworkSource model = o.model.load();
  Graph graph = std::move(model.graph);
  const std::string model_name = graph.name();
  check_trainable(graph);
  check_ranks_started_alike(comm, o, graph, resume, initial);
  if (resume) check_resume(*resume, o, model_name, comm);
  TrainData data = load_train_data(o, graph);
  if (comm.rank() == 0) write_text_vocabulary(o, data.train);
  print_run(graph, data.train, data.test, o.model.batch);
  const NetChoice choice = choose_net_options(graph, o, checked, comm);
  Net net(std::move(graph), choice.options);
  if (!resume && !model.initial_weights.tensors.empty()) load_weights(model.initial_weights, net);  // ONNX initializers
  model.initial_weights = {};
  print_memory_plan(net, o);
  print_ranks(comm, net, o.model.batch);
  Trainer trainer(net, o.config);
  StepRecorder recorder;  // --trace and data parallel: the 3rd step, warmed up (or the last, if fewer)
  if (!o.trace.empty() || comm.size() > 1) net.record_step(3, &recorder);
  load_starting_weights(o, net, trainer, resume, initial);
  TrainConsole console(progress_mode(o.progress), o.model.batch);
  trainer.on_step([&](const StepProgress& p) {
    if (o.verify_replicas) check_replicas(comm, net, p.step);
    console.step(p);
  });
  TrainResult r;
  try {
    const DeferInterrupts defer;  // Ctrl-C stops after the step in flight (a second one at once)
    r = trainer.run(data.train, &data.test, [&](const EpochResult& e) { console.epoch(e); });
  } catch (const Interrupted&) {
  }
  if (const int sig = interrupt_signal()) {
    console.end();
    report_interrupted(sig, console.last_step(), console.total_steps(), o, model_name, comm.rank());
    return Interrupted{sig}.exit_code();
  }
  print_result(r, o);
  if (o.verify_replicas && comm.size() > 1)
    std::printf("replicas: the %d ranks held identical weights after each of the %lld steps (--verify-replicas)\n",
                comm.size(), static_cast<long long>(r.iterations));
  const nlohmann::json ranks =
      comm.size() > 1 ? ranks_report(comm, net, r, recorder, o.verify_replicas) : nlohmann::json();
  if (comm.rank() == 0)
    write_outputs(o, net, r, recorder, ranks, choice.algo_reason);  // rank 0 writes what the run leaves
  return 0;
}

int run_train(TrainOptions& o) {
  const NetOptions checked = check_flags(o);
  std::unique_ptr<Communicator> comm = start_ranks(o.collective_timeout);
  try {
    return train(o, checked, *comm);
  } catch (const RanksDisagree&) {
    throw;  // every rank refuses together: each ends on its own
  } catch (const std::exception& e) {
    if (comm->size() > 1) stop_every_rank(*comm, e.what());  // the others would wait for this one
    throw;
  }
}

// Where the batches come from: the data set, its loader, image-folder normalisation and augmentation.
void add_data_flags(CLI::App& app, TrainOptions& o) {
  app.add_option("--data", o.data,
                 "fashion-mnist, synthetic, or a folder: CIFAR-10/100 binary batches (data_batch_*.bin, or "
                 "train.bin and test.bin), image folders (DIR/train/<class>/*.jpg|png with DIR/val/<class>/..., "
                 "or class folders DIR/<class>/... as torchvision's ImageFolder(DIR): all of it trains) or "
                 "Fashion-MNIST IDX files; or token data for a model whose input is [T] tokens: nanoGPT's folder "
                 "(train.bin, val.bin), a token file FILE.bin (uint16 ids) or a text FILE.txt (UTF-8 characters, "
                 "the last 10% held out)")
      ->capture_default_str();
  app.add_option("--val-data", o.image_flags.val_data,
                 "image folders: evaluate on this folder of class folders (DIR/<class>/..., the training "
                 "classes) instead of DIR/val; with --data a class-folder root, the only evaluation there is; "
                 "token files: evaluate on this FILE.bin");
  app.add_option("--data-threads", o.config.data_threads,
                 "loader threads: each makes (reads, decodes, augments) whole batches ahead of training")
      ->check(CLI::Range(1, kMaxDataThreads))
      ->capture_default_str();
  add_image_folder_flags(app, o.image_flags);
  add_token_data_flags(app, o.image_flags);
  app.add_option("--synthetic-samples", o.synthetic_samples, "training samples for --data synthetic")
      ->check(CLI::Range(int64_t{1}, kMaxSyntheticSamples));
  app.add_option("--augment", o.augment,
                 "training-batch augmentation: none, flip (horizontal, p = 1/2), cifar (pad 4, random crop to "
                 "the image's size, flip: torchvision's CIFAR recipe) or imagenet (image folders: random resized "
                 "crop and flip; evaluation resizes by 256/224 and center-crops), seeded from --seed")
      ->capture_default_str();
}

// How long and how it learns: epochs, the learning-rate schedule and SGD, the seed, threads.
void add_schedule_flags(CLI::App& app, TrainOptions& o) {
  app.add_option("--epochs", o.config.epochs, "epochs")->check(CLI::Range(1, kMaxEpochs))->capture_default_str();
  app.add_option("--iterations", o.config.iterations, "stop after N steps (the run's length instead of --epochs)")
      ->check(CLI::Range(int64_t{1}, kMaxIterations));
  o.lr_flag = app.add_option("--lr", o.config.lr,
                             "base learning rate (default: 0.05 with --optimizer sgd, 0.001 with adamw, "
                             "torch.optim.AdamW's)")
                  ->check(CLI::Range(0.0, kMaxLr));
  app.add_option("--lr-schedule", o.schedule, "constant, step or cosine")
      ->check(CLI::IsMember({"constant", "step", "cosine"}))
      ->capture_default_str();
  app.add_option("--lr-step-epochs", o.config.step_epochs, "step schedule: decay every N epochs")
      ->check(CLI::Range(1, kMaxStepEpochs));
  app.add_option("--lr-gamma", o.config.gamma, "step schedule: decay factor")->check(CLI::Range(0.0, 1.0));
  app.add_option("--warmup-steps", o.config.warmup_steps,
                 "linear warm-up: step s < N runs at lr * (s + 1) / (N + 1), then the schedule (nanoGPT's)")
      ->check(CLI::Range(int64_t{0}, kMaxWarmupSteps))
      ->capture_default_str();
  app.add_option("--min-lr", o.config.min_lr, "cosine schedule: the rate it decays to (0 to --lr)")
      ->check(CLI::Range(0.0, kMaxLr))
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer,
                 "sgd (with momentum) or adamw (torch.optim.AdamW; its two moments take twice SGD's optimizer "
                 "state in the device arena)")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  app.add_option("--optimizer-state", o.optimizer_state,
                 "device (beside each weight in the arena) or host: the state, a master of each weight and a "
                 "gradient copy in host memory, updated by the CPU after the backward pass (ZeRO-Offload); one rank")
      ->check(CLI::IsMember({"device", "host"}))
      ->capture_default_str();
  app.add_option("--momentum", o.config.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, kMaxMomentum))
      ->capture_default_str();
  app.add_option("--beta1", o.config.beta1, "AdamW: first-moment decay, 0 <= beta1 < 1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--beta2", o.config.beta2, "AdamW: second-moment decay, 0 <= beta2 < 1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--eps", o.config.eps, "AdamW: added to the denominator, at least 1.2e-38 (float32's smallest normal value)")
      ->check(CLI::Range(0.0, kMaxEps))
      ->capture_default_str();
  o.weight_decay_flag = app.add_option("--weight-decay", o.config.weight_decay,
                                       "weight decay (on what: --weight-decay-on); default 5e-4 with sgd (L2, "
                                       "added to the gradient), 0.01 with adamw (decoupled, as torch.optim.AdamW)")
                            ->check(CLI::Range(0.0, kMaxWeightDecay));
  app.add_option("--weight-decay-on", o.weight_decay_on,
                 "weights (vdnn: conv and fc weights only) or all (PyTorch's default: biases and batch-norm "
                 "weight/bias too)")
      ->check(CLI::IsMember({"weights", "all"}))
      ->capture_default_str();
  app.add_option("--clip-grad-norm", o.config.clip_grad_norm,
                 "> 0: scale the gradients to this global L2 norm when above it (torch's clip_grad_norm_), "
                 "before the update; one rank only")
      ->check(CLI::Range(0.0, kMaxClipGradNorm))
      ->capture_default_str();
  app.add_option("--seed", o.config.seed, "seed for initialization, shuffling, dropout and augmentation")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "oneDNN/OpenMP threads (default: all cores)")->check(threads_check());
  app.add_flag("--no-eval", o.no_eval, "skip test-set evaluation after each epoch");
}

// How the step uses memory: the offload policy and its budgets, backend, precision, algorithms.
void add_memory_flags(CLI::App& app, TrainOptions& o) {
  app.add_option("--policy", o.policy,
                 "what to offload: none, all (vDNN_all), conv (vDNN_conv), dyn (vDNN_dyn: profile, then the "
                 "first policy and convolution algorithms that fit --device-memory) or auto (profile, then keep, "
                 "offload or recompute each tensor and pick algorithms and prefetch for the fastest step that fits)")
      ->check(CLI::IsMember({"none", "all", "conv", "dyn", "auto"}))
      ->capture_default_str();
  app.add_option("--costs", o.costs,
                 "--policy dyn or auto: costs saved by `vdnn profile --save` (default: measure now)");
  app.add_option("--sync", o.sync, "event (only true dependencies wait) or layer (vDNN's barrier)")
      ->check(CLI::IsMember({"event", "layer"}))
      ->capture_default_str();
  app.add_option("--backend", o.backend, "cpu (oneDNN) or cuda (cuDNN and cuBLAS on GPU 0)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "fp32, or bf16: feature and gradient maps and conv/fc arithmetic in bfloat16 (half the bytes "
                 "to hold and offload), weights, their update, batch-norm statistics and the loss in fp32; "
                 "needs a CPU with AVX512_BF16 or AMX")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--conv-algo", o.conv_algo,
                 "convolution algorithm: auto (cpu: oneDNN picks; cuda: fastest measured), direct "
                 "(cuda: least workspace), winograd")
      ->check(CLI::IsMember({"auto", "direct", "winograd"}))
      ->each([&o](const std::string&) { o.conv_algo_asked = true; })
      ->capture_default_str();
  app.add_option("--conv-sub-batches", o.conv_sub_batches,
                 "run every convolution in this many equal slices of the batch (a divisor of --batch): each "
                 "slice's workspace instead of the whole batch's; the weight gradient sums the slices' (float "
                 "rounding differs from one pass); with --policy none, all or conv (auto chooses sub-batches itself on "
                 "a GPU profile)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option(
         "--slice-run", o.slice_runs,
         "FIRST:LAST:K: run the layers FIRST..LAST (a chain of conv, relu, pool, lrn, fc, flatten or batch_norm "
         "layers) in K slices of the batch, one after another, so each slice's maps are offloaded or freed "
         "on their own and the device need not hold a whole layer's input and output; the weight gradients "
         "sum the slices' (float rounding differs); repeatable; --policy dyn and auto plan the sliced graph "
         "(its measured costs uncalibrated)")
      ->take_all();
  app.add_option("--prefetch", o.prefetch,
                 "vdnn (nearest offloaded layer, never past a conv) or ahead (as far as the budget allows)")
      ->check(CLI::IsMember({"vdnn", "ahead"}))
      ->capture_default_str();
  app.add_option("--device-memory", o.device_memory,
                 "device memory budget, e.g. 512MiB or 12GiB (default: what the plan needs); on --backend cpu "
                 "it is real host memory, taken at once, so at most the host's available memory");
  app.add_option("--host-memory", o.host_memory,
                 "host memory for the host copies of offloaded tensors, e.g. 2GiB (default: what the plan "
                 "needs); taken once, pinned on a GPU; a plan needing more is refused before training");
  app.add_option("--link-bandwidth", o.link_bandwidth, "emulated host link in GB/s (0: unlimited)")
      ->capture_default_str();
  app.add_option("--link-latency", o.link_latency, "emulated per-copy latency, e.g. 10us")->capture_default_str();
}

// What the run reads and leaves: checkpoints, weights, the report and trace, the progress shown.
void add_output_flags(CLI::App& app, TrainOptions& o) {
  app.add_option("--report", o.report, "write a JSON report to this file");
  app.add_option("--on-nan", o.on_nan,
                 "a NaN or Inf in the loss or a gradient: stop (an error naming the step and "
                 "layer) or skip (that step makes no update)")
      ->check(CLI::IsMember({"stop", "skip"}))
      ->capture_default_str();
  app.add_option("--trace", o.trace,
                 "write the 3rd training step (or the last, if fewer) as a Chrome trace (Perfetto, "
                 "chrome://tracing): ops per stream, memory by class (cuda: host issue times)");
  app.add_option("--save", o.config.save_path, "write a checkpoint (safetensors) at the end");
  app.add_option("--save-weights", o.save_weights,
                 "write the weights alone at the end (safetensors, PyTorch's names and shapes, no optimizer state)");
  app.add_option("--checkpoint-every", o.config.checkpoint_every, "also write the --save checkpoint every N steps")
      ->check(CLI::Range(int64_t{1}, kMaxIterations));
  app.add_option("--resume", o.resume,
                 "continue the run saved in this checkpoint (same model, batch, seed, data, --augment)");
  app.add_option("--initial-weights", o.initial_weights,
                 "start from the weights and running statistics in this safetensors file (a vdnn checkpoint "
                 "or a PyTorch state_dict with the model's names) instead of the seeded initialisation");
  app.add_option("--progress", o.progress,
                 "auto (a bar on a terminal, lines every 10 s otherwise and under mpirun), bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
}

// Under mpirun: collectives, gradient buckets, the replica check.
void add_train_parallel_flags(CLI::App& app, TrainOptions& o) {
  app.add_option("--collective-timeout", o.collective_timeout,
                 "under mpirun: seconds a collective may wait for the other ranks before every rank stops, naming "
                 "the ranks that never arrived (0: forever)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--bucket-size", o.bucket_size,
                 "under mpirun: gradients are all-reduced in buckets of about this size (PyTorch DDP's 25 MiB), "
                 "the first of at most 1 MiB")
      ->capture_default_str();
  app.add_flag("--verify-replicas", o.verify_replicas,
               "under mpirun: compare the ranks' weights (SHA-256) after every step; an error names the step if they "
               "differ");
}

// The flags that apply only with some settings of others (tools/flag_rules.h).
FlagRules train_flag_rules(const CLI::App& app, const TrainOptions& o) {
  FlagRules rules(app);
  add_data_rules(rules, app, {.data = o.data, .flags = o.image_flags});
  rules.add({"--epochs"},
            {"without --iterations (which sets the run's length instead)", [&o] { return o.config.iterations == 0; },
             [&o] { return "with --iterations " + std::to_string(o.config.iterations); }});
  rules.add({"--lr-step-epochs", "--lr-gamma"}, one_of("--lr-schedule", o.schedule, {"step"}));
  rules.add({"--min-lr"}, one_of("--lr-schedule", o.schedule, {"cosine"}, "the floor it decays to"));
  rules.add({"--momentum"}, one_of("--optimizer", o.optimizer, {"sgd"}, "AdamW's moments are --beta1 and --beta2"));
  rules.add({"--beta1", "--beta2", "--eps"}, one_of("--optimizer", o.optimizer, {"adamw"}));
  rules.add({"--host-memory", "--link-bandwidth", "--link-latency"},
            one_of("--policy", o.policy, {"all", "conv", "dyn", "auto"}, "the policies that offload"));
  rules.add({"--prefetch"}, one_of("--policy", o.policy, {"all", "conv", "dyn"}, "auto picks its prefetch itself"));
  rules.add({"--costs"}, one_of("--policy", o.policy, {"dyn", "auto"}, "they plan from costs"));
  rules.add({"--conv-algo", "--conv-sub-batches"},
            one_of("--policy", o.policy, {"none", "all", "conv"}, "dyn and auto pick each layer's algorithm"));
  rules.add({"--checkpoint-every"}, with_flag(app, "--save", "FILE.safetensors (where the checkpoints go)"));
  rules.add({"--collective-timeout", "--bucket-size", "--verify-replicas"}, under_mpirun());
  return rules;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // later wins
  add_model_flags(app, o->model);
  add_data_flags(app, *o);
  add_schedule_flags(app, *o);
  add_memory_flags(app, *o);
  add_output_flags(app, *o);
  add_train_parallel_flags(app, *o);
  return {[o] { return run_train(*o); }, train_flag_rules(app, *o)};
}

}  // namespace vdnn::cli
