// `vdnn profile`: what every layer costs on this machine — forward and backward time and
// workspace per convolution algorithm — as a table, or saved as JSON for `vdnn plan --costs`.
// `--check none,conv,all` then trains a few iterations with each policy (as `vdnn train` times them) and puts
// the measured step time and device memory beside the simulator's prediction; `--check dyn,auto
// --device-memory 48MiB` does so for what dyn and auto pick for that budget (auto: its per-tensor
// decisions; a budget where it would pick a plain vDNN policy is refused, naming why).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "backends/cpu/compiled_graph.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/profiler.h"
#include "commands.h"
#include "data/synthetic.h"
#include "model_flags.h"
#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/planner.h"
#include "planning/plan_source.h"
#include "planning/planned_policy.h"
#include "planning/step_calibration.h"
#include "runtime/net.h"
#include "runtime/net_settings.h"
#include "util/atomic_file.h"
#include "util/json_dump.h"
#include "util/progress.h"
#include "util/size_parse.h"
#include "util/text_file.h"

namespace vdnn::cli {
namespace {

struct ProfileCliOptions {
  ModelFlags model{.name = "fmnist_cnn"};
  std::string save, check, sync = "event", link_bandwidth = "0", link_latency = "0", progress = "auto",
                           precision = "fp32", device_memory;
  int repeats = 5, steps = 10;
  bool json = false;
};

void print_table(const NetworkCosts& c) {
  std::printf("%-16s %-10s %-10s %10s %10s %12s\n", "layer", "type", "algorithm", "fwd ms", "bwd ms", "workspace");
  const AlgoChoice fast = c.fastest();
  for (size_t i = 0; i < c.nodes.size(); ++i)
    for (size_t k = 0; k < c.nodes[i].algos.size(); ++k) {
      const AlgoCost& a = c.nodes[i].algos[k];
      std::printf("%-16s %-10s %-10s %10.3f %10.3f %12s%s\n", k ? "" : c.nodes[i].name.c_str(),
                  k ? "" : c.nodes[i].type.c_str(), a.name.c_str(), a.forward_seconds * 1e3, a.backward_seconds * 1e3,
                  format_bytes(a.workspace_bytes).c_str(),
                  c.nodes[i].algos.size() > 1 && fast[i] == static_cast<int>(k) ? "  (fastest)" : "");
    }
  std::printf("kernels %.2f ms per step (fastest algorithms); link %.2f GB/s + %.1f us per copy; memory %.1f GB/s\n",
              c.compute_seconds(fast) * 1e3, c.link_bytes_per_second / 1e9, c.link_latency_seconds * 1e6,
              c.memory_bytes_per_second / 1e9);
  std::printf("in a training step the kernels take %.2fx their times alone (kernel_scale: the plan uses it)\n",
              c.kernel_scale);
}

// One policy --check trains: the configuration the plan predicts, and the Net's options for it.
struct CheckedPolicy {
  std::string name;
  Configuration config;
  Prefetch prefetch = Prefetch::kVdnn;
  size_t budget = 0;  // the plan's and the Net's (0: the smallest that works)
  NetOptions net;
};

// --check auto measures auto's own per-tensor decisions; where the budget leaves it a plain vDNN
// policy (everything fits: none+fastest), measuring that under auto's name would say nothing
// about auto's predictions, so it is refused, naming the budget below which auto decides.
void check_auto_decides(const Planner& planner, size_t budget, const AutoChoice& a) {
  if (a.config.policy == Policy::kAuto) return;
  const Configuration oracle{Policy::kNone, planner.costs().fastest()};
  const std::string hint = planner.fits(oracle, budget) ? VDNN_MSG("give --device-memory below "
                                                                   << describe_budget(planner.minimum_budget(oracle))
                                                                   << " (none+fastest's smallest)")
                                                        : std::string("give another --device-memory");
  VDNN_THROW("--check auto: at --device-memory "
             << describe_budget(budget) << " auto picks vDNN's " << describe(a.config, planner.costs()) << " (" << a.why
             << "), which --check " << to_string(a.config.policy) << " measures; " << hint
             << " for auto's own per-tensor decisions");
}

// none, conv, all: that policy with the fastest algorithms, at its smallest budget; dyn and auto:
// what each picks for --device-memory (required: they choose for a budget), at that budget.
CheckedPolicy policy_to_check(const std::string& name, const Planner& planner, const ProfileCliOptions& o) {
  CheckedPolicy c{.name = name};
  c.net = NetOptions{.batch = o.model.batch, .seed = 1, .sync = parse_sync_mode(o.sync)};
  c.net.link = parse_link(o.link_bandwidth, o.link_latency);
  c.net.precision = planner.costs().precision;
  if (!is_planned(name)) {
    c.config = {parse_policy(name), planner.costs().fastest()};
  } else {
    c.budget = parse_size(o.device_memory, "--device-memory");  // given: check_check_flags
    if (name == "auto") {
      const AutoChoice a = choose_auto(planner, c.budget);
      if (!a.fits) VDNN_THROW("--check auto: --device-memory " << describe_budget(c.budget) << ": " << a.why);
      check_auto_decides(planner, c.budget, a);
      c.config = a.config, c.prefetch = a.prefetch;
      c.net.decisions = a.config.decisions;
      c.net.prefetch_ahead = a.prefetch == Prefetch::kAhead;
    } else {
      const DynChoice d = choose_dyn(planner, c.budget);
      if (!d.fits) VDNN_THROW("--check dyn: --device-memory " << describe_budget(c.budget) << ": " << d.why);
      c.config = d.config;
    }
    c.net.device_memory = c.budget;
  }
  c.net.policy = c.config.policy;
  use_algorithms(c.net, planner.costs(), c.config.algos);
  return c;
}

// Trains `steps` iterations per policy and compares each mean with the simulated step.
void check_predictions(const Graph& graph, const NetworkCosts& costs, const ProfileCliOptions& o) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const CompiledGraph direct(graph, o.model.batch, 1, engine, ConvAlgo::kDirect, {}, {}, costs.precision);
  const Planner planner(graph, direct.value_bytes(), direct.facts(), costs, parse_sync_mode(o.sync));
  std::vector<CheckedPolicy> checked;
  std::stringstream list(o.check);
  for (std::string p; std::getline(list, p, ',');) checked.push_back(policy_to_check(p, planner, o));
  std::vector<std::unique_ptr<Net>> nets;
  for (const CheckedPolicy& c : checked) nets.push_back(std::make_unique<Net>(o.model.load().graph, c.net));
  const Shape& shape = graph.input_shape();
  const Dataset data =
      make_synthetic(o.model.batch, shape.channels(), shape.height(), shape.width(), graph.classes(), 1);
  std::vector<double> times;  // as `vdnn train` reports them, what the calibration measured too
  for (auto& net : nets) times.push_back(seconds_per_iteration(*net, data, o.steps));
  std::printf("\n%-8s %12s %12s %8s %14s %14s %8s\n", "policy", "predicted ms", "measured ms", "error", "predicted MiB",
              "measured MiB", "error");
  for (size_t i = 0; i < nets.size(); ++i) {
    const Evaluation e = planner.evaluate(checked[i].config, checked[i].budget, checked[i].prefetch);
    const double predicted = e.time.iteration_seconds;
    const double measured = times[i];
    const double mem = static_cast<double>(nets[i]->train_plan().high_water_bytes);
    const double predicted_mem = static_cast<double>(e.memory.high_water_bytes);
    std::printf("%-8s %12.2f %12.2f %7.1f%% %14.2f %14.2f %7.2f%%\n", checked[i].name.c_str(), predicted * 1e3,
                measured * 1e3, (predicted / measured - 1) * 100, predicted_mem / (1 << 20), mem / (1 << 20),
                (predicted_mem / mem - 1) * 100);
  }
  std::printf(
      "measured: mean of %d training iterations after two warm-up ones, as vdnn train reports them, one policy after "
      "the other\n",
      o.steps);
}

// --check's policies and --device-memory, before anything is measured.
void check_check_flags(const ProfileCliOptions& o) {
  if (!o.device_memory.empty()) parse_size(o.device_memory, "--device-memory");
  std::stringstream list(o.check);
  for (std::string p; std::getline(list, p, ',');) {
    if (p != "none" && p != "conv" && p != "all" && !is_planned(p))
      VDNN_THROW("--check: '" << p << "' is not a policy; valid: none, conv, all, dyn, auto (comma-separated)");
    if (is_planned(p) && o.device_memory.empty())
      VDNN_THROW("--check " << p << ": " << p << " chooses for a budget; give --device-memory (e.g. the one "
                            << "`vdnn train --policy " << p << "` gets)");
  }
}

// Whether --check lists dyn or auto, the policies --device-memory is for.
bool checks_planned_policy(const std::string& check) {
  std::stringstream list(check);
  for (std::string p; std::getline(list, p, ',');)
    if (is_planned(p)) return true;
  return false;
}

int run_profile(const ProfileCliOptions& o) {
  check_output_files({{"--save", o.save}});
  check_check_flags(o);
  const Graph graph = o.model.load().graph;
  ProfileOptions po{.repeats = o.repeats, .seed = 1, .link = parse_link(o.link_bandwidth, o.link_latency)};
  po.precision = parse_precision(o.precision);
  if (po.precision != Precision::kFp32) require_native_bf16();
  Progress progress(o.json ? stderr : stdout, Progress::parse(o.progress), "profiling " + graph.name(), "layers/s");
  po.on_layer = [&](int done, int total) { progress.update(done, total, done); };
  NetworkCosts costs = measure_costs(graph, o.model.batch, po);
  progress.finish();
  calibrate_kernels(costs, o.model.load().graph, o.model.batch);
  if (const std::string w = costs.unstable_warning(); !w.empty()) std::fprintf(stderr, "%s\n", w.c_str());
  if (o.json)
    std::printf("%s\n", dump_json(costs.to_json(), 2).c_str());
  else
    print_table(costs);
  if (!o.save.empty()) {
    write_text_file(o.save, dump_json(costs.to_json(), 2) + "\n");
    if (!o.json) std::printf("saved to %s (use: vdnn plan --costs %s)\n", o.save.c_str(), o.save.c_str());
  }
  if (!o.check.empty()) check_predictions(graph, costs, o);
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto o = std::make_shared<ProfileCliOptions>();
  add_model_flags(app, o->model);
  app.add_option("--precision", o->precision, "fp32, or bf16 (the kernels `vdnn train --precision bf16` runs)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--repeats", o->repeats, "timed runs per kernel (the median counts)")
      ->check(CLI::Range(1, kMaxRepeats))
      ->capture_default_str();
  app.add_option("--save", o->save, "write the costs as JSON to this file");
  app.add_flag("--json", o->json, "print JSON instead of a table");
  app.add_option("--link-bandwidth", o->link_bandwidth, "emulated link GB/s (0 = unlimited)")->capture_default_str();
  app.add_option("--link-latency", o->link_latency, "emulated link latency per copy")->capture_default_str();
  app.add_option("--progress", o->progress, "auto (a bar on a terminal), bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  app.add_option("--check", o->check,
                 "policies to train and compare with the prediction, e.g. none,conv,all (fastest algorithms); dyn "
                 "and auto train what they pick for --device-memory (auto: its per-tensor decisions; refused where "
                 "it would pick a plain vDNN policy)");
  app.add_option("--device-memory", o->device_memory, "--check dyn or auto: the budget they choose for, e.g. 48MiB");
  app.add_option("--steps", o->steps, "--check: measured steps per policy")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--sync", o->sync, "--check: event or layer")
      ->check(CLI::IsMember({"event", "layer"}))
      ->capture_default_str();
  FlagRules rules(app);
  rules.add({"--steps", "--sync"}, with_flag(app, "--check", "POLICIES"));
  rules.add({"--device-memory"},
            {"with --check dyn or auto (the budget they choose for)", [o] { return checks_planned_policy(o->check); },
             [o] { return o->check.empty() ? "without --check" : "with --check " + o->check; }});
  return {[o] { return run_profile(*o); }, rules};
}

}  // namespace vdnn::cli
