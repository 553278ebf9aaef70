// `vdnn plan`: will a network fit, with which policy, and at what cost — before anything trains.
// One row per configuration (none, conv and all with the algorithms `vdnn train` runs, none with
// --conv-algo direct's, what vDNN_dyn picks for the budget, and what `auto` decides per tensor,
// plan/auto_policy.h; planning/plan_report.h):
// peak device memory by class, host memory, the smallest budget, the simulated step time, its
// overhead against the oracle (none, fastest, unlimited memory) and its ratio to the physical
// bound (the busiest stream). Each row is the step `vdnn train` runs (plan/planned_step.h);
// `--prefetch ahead` rows name the look-ahead depth it picks. Sizes and costs come from this CPU
// (measured now, or `--costs` from `vdnn profile --save`) or from a GPU's device profile.
// `--sweep` adds a budget sweep (plan/budget_sweep.h, tools/plan_sweep.h): every policy's step time
// from the largest smallest budget down to the floor; `--sweep-svg` draws it. With `--policy auto`
// on a device profile, the slice search's runs add a column, "auto+slices", down to their floor.
// `--ranks N --network NET` plans data-parallel training (tools/plan_parallel.h): every row then
// includes the all-reduce of N ranks, and a second table gives each row's step, all-reduce, hidden
// fraction and efficiency against one rank; `--scaling` does so for 1 to 64 ranks, `--scaling-svg`
// draws it. `--inference` plans the forward pass alone instead (tools/plan_inference.h). `--max-batch`
// searches the batch instead: per policy the largest that trains in the budget on a device profile
// (planning/largest_fitting.h, tools/plan_largest.h). `--device A,B,...` plans each device alone and
// prints one row per device: each policy's step there and the fastest that fits (tools/plan_devices.h).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "commands.h"
#include "io/json_text.h"
#include "layers/position_embedding.h"
#include "model_flags.h"
#include "plan/auto_policy.h"
#include "plan/collectives.h"
#include "plan/device_profile.h"
#include "plan/dyn.h"
#include "plan/memory_plan.h"
#include "plan/planner.h"
#include "plan/slice_search.h"
#include "plan_devices.h"
#include "plan_inference.h"
#include "plan_largest.h"
#include "plan_parallel.h"
#include "plan_sweep.h"
#include "planning/device_planner.h"
#include "planning/largest_fitting.h"
#include "planning/plan_report.h"
#include "planning/plan_source.h"
#include "planning/state_placement.h"
#include "report/budget_sweep_chart.h"
#include "report/chrome_trace.h"
#include "report/configuration_chart.h"
#include "report/memory_timeline_chart.h"
#include "report/scaling_chart.h"
#include "rewrites/slice_runs.h"
#include "runtime/net_settings.h"
#include "util/atomic_file.h"
#include "util/json_dump.h"
#include "util/size_parse.h"
#include "util/text_file.h"
#include "util/text_list.h"

namespace vdnn::cli {
namespace {

struct PlanOptions {
  ModelFlags model{.name = "fmnist_cnn"};
  std::string policy, sync = "event", prefetch = "vdnn", device_memory, host_memory, link_bandwidth = "0",
                      link_latency = "0", trace, svg, svg_memory, sweep_svg, network, bucket_size = "25MiB",
                      scaling_svg, batches, precision = "fp32", optimizer = "sgd", optimizer_state = "device";
  std::vector<std::string> scaling_with;
  std::vector<std::string> slice_runs;  // --slice-run FIRST:LAST:K, repeatable
  PlanSourceOptions source;
  int sweep_steps = 20, ranks = 1;
  bool print = false, json = false, sweep = false, scaling = false, inference = false, no_slice_search = false,
       max_batch = false, max_seq_len = false;
};

// The devices --device names: one, or several separated by commas.
// --optimizer-state auto plans one batch on one device both ways; the searches and tables over
// sizes or devices take one placement.
void refuse_state_auto(const PlanOptions& o, const std::string& with) {
  if (o.optimizer_state == "auto")
    VDNN_THROW("--optimizer-state auto plans one batch on one device both ways; with "
               << with << " give --optimizer-state device or host");
}

std::vector<std::string> device_list(const PlanOptions& o) {
  std::vector<std::string> devices;
  std::stringstream list(o.source.device);
  for (std::string d; std::getline(list, d, ',');) devices.push_back(d);
  return devices;
}

// --inference: the forward pass alone, per device (--device may list several) and batch size.
int run_inference(const PlanOptions& o) {
  InferencePlanRequest r;
  r.load = [&o] { return o.model.load().graph; };
  r.devices = device_list(o);
  if (r.devices.empty()) VDNN_THROW("--device is empty; expected cpu or device profiles, e.g. cpu,jetson-orin-nano");
  r.batches = o.batches.empty() ? std::vector<int64_t>{o.model.batch} : parse_batches(o.batches, "--batches");
  r.budget = parse_budget(o.device_memory, "--device-memory").value_or(0);
  r.source = o.source;
  r.source.cpu_link = parse_link(o.link_bandwidth, o.link_latency);
  r.svg_memory = o.svg_memory;
  r.json = o.json;
  return run_plan_inference(r);
}

std::string mib(size_t bytes) { return VDNN_MSG(static_cast<double>(bytes) / (1 << 20)); }

void print_row(const PlanRow& r, double oracle, bool with_budget) {
  const ClassStats& c = r.e.memory.by_class;
  const size_t params =
      c.peak(MemoryClass::kWeights) + c.peak(MemoryClass::kWeightGrads) + c.peak(MemoryClass::kOptimizerState);
  const double t = r.e.time.iteration_seconds;
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %11s %10.2f %8.1f%% %7.2f %s\n", r.label.c_str(),
              mib(r.e.memory.peak_bytes).c_str(), mib(c.peak(MemoryClass::kFeatureMaps)).c_str(),
              mib(c.peak(MemoryClass::kGradientMaps)).c_str(), mib(params).c_str(),
              mib(c.peak(MemoryClass::kWorkspace)).c_str(), mib(r.e.memory.host_bytes).c_str(),
              format_bytes(r.e.minimum_budget).c_str(), t * 1e3, (t / oracle - 1) * 100, t / r.e.bound_seconds,
              !with_budget                        ? ""
              : r.e.fits                          ? "yes"
              : !r.e.device_fits || r.e.host_fits ? "no"
                                                  : "no (host)");
}

// --trace, --svg, --svg-memory. The trace shows dyn's pick if there is one, else none
// (none with train's default algorithms, or the one --policy asked for); the memory panels skip none
// with --conv-algo direct, and show dyn's and auto's picks whatever their algorithms.
void write_pictures(const PlanOptions& o, const std::vector<PlanRow>& rows, const std::string& title, size_t budget,
                    double oracle, const NetworkCosts& costs) {
  const auto is_dyn = [](const PlanRow& r) { return r.label.rfind("dyn: ", 0) == 0; };
  const auto is_pick = [&](const PlanRow& r) { return is_dyn(r) || r.label.rfind("auto: ", 0) == 0; };
  if (!o.trace.empty() && !rows.empty()) {
    auto traced = std::find_if(rows.begin(), rows.end(), is_dyn);
    if (traced == rows.end())
      traced = std::find_if(rows.begin(), rows.end(), [&](const PlanRow& r) {
        return r.e.config == Configuration{Policy::kNone, costs.defaults()};
      });
    const PlanRow& r = traced == rows.end() ? rows.front() : *traced;
    write_chrome_trace(o.trace, r.e.time.timeline(), title + ", " + r.label + ", predicted");
  }
  if (!o.svg.empty()) {
    std::vector<ConfigurationBar> bars;
    for (const PlanRow& r : rows)
      bars.push_back({r.label, peak_point(r.e.time.memory), r.e.minimum_budget, r.e.time.iteration_seconds, r.e.fits});
    write_text_file(o.svg, configuration_chart_svg(title, bars, budget, oracle));
  }
  if (!o.svg_memory.empty()) {
    std::vector<MemoryPanel> panels;
    for (const PlanRow& r : rows)
      if (is_pick(r) || r.e.config.algos == costs.defaults())
        panels.push_back({r.label, r.e.time.memory, r.e.time.iteration_seconds});
    write_text_file(o.svg_memory, memory_timeline_svg(title, panels, budget));
  }
}

// --ranks, --network, --bucket-size, checked before any planning.
DataParallel data_parallel(const PlanOptions& o) {
  DataParallel dp;
  if (o.ranks < 1) VDNN_THROW("--ranks must be at least 1 (data-parallel ranks), got " << o.ranks);
  dp.ranks = o.ranks;
  dp.bucket_bytes = check_budget(parse_size(o.bucket_size, "--bucket-size"), "--bucket-size");
  if (dp.bucket_bytes == 0) VDNN_THROW("--bucket-size must be positive, e.g. 25MiB (PyTorch DDP's default)");
  if (o.network.empty()) {
    if (o.ranks > 1 || o.scaling)
      VDNN_THROW((o.scaling ? std::string("--scaling") : VDNN_MSG("--ranks " << o.ranks))
                 << " needs --network: a network profile (" << join_list(network_profile_names())
                 << ") or a JSON file");
    return dp;
  }
  try {
    dp.network = load_network_profile(o.network);
  } catch (const Error& e) {
    VDNN_THROW("--network: " << e.what());
  }
  return dp;
}

// The files a training plan writes, checked before any planning.
void check_training_flags(const PlanOptions& o) {
  check_output_files({{"--trace", o.trace},
                      {"--svg", o.svg},
                      {"--svg-memory", o.svg_memory},
                      {"--sweep-svg", o.sweep_svg},
                      {"--scaling-svg", o.scaling_svg}});
}

// --scaling-with: the series of earlier `vdnn plan --scaling --json` outputs, read before any
// planning; they are drawn on --scaling-svg (a flag rule: they need it).
std::vector<ScalingSeries> read_scaling_with(const PlanOptions& o) {
  std::vector<ScalingSeries> others;
  for (const std::string& file : o.scaling_with) {
    try {
      const std::vector<ScalingSeries> s = scaling_from_json(parse_json_text(read_text_file(file), file), file);
      others.insert(others.end(), s.begin(), s.end());
    } catch (const Error& e) {
      VDNN_THROW("--scaling-with " << e.what());
    }
  }
  return others;
}

// --slice-run: the runs the configurations are planned with (not with data-parallel plans yet).
std::vector<SliceRun> requested_slice_runs(const PlanOptions& o) {
  std::vector<SliceRun> runs;
  for (const std::string& r : o.slice_runs) runs.push_back(parse_slice_run(r));
  if (!runs.empty() && (o.ranks > 1 || o.scaling))
    VDNN_THROW("--slice-run: data-parallel plans (--ranks, --scaling) are not planned with slice runs yet");
  return runs;
}

// What a training plan computed, for its outputs: the table or JSON, the pictures, the Programs.
struct TrainingPlan {
  const Graph& graph;      // the graph planned: sliced by --slice-run, else the model's
  const Planner& planner;  // of `graph`
  std::string device;      // "cpu" or the device profile's name
  size_t budget = 0;       // --device-memory, else the device profile's memory (0: none, on cpu)
  double oracle = 0;       // the whole graph's: none, fastest algorithms, unlimited memory, no slices
  Prefetch prefetch = Prefetch::kVdnn;
  bool sliced = false;              // --slice-run given
  size_t unified_memory_bytes = 0;  // a unified-memory device's memory (device budget + host copies)
  PlanTable table;
  std::vector<ScalingSeries> scaling;    // --ranks N or --scaling: each row at 1..N ranks
  std::optional<SliceRunChoice> slices;  // auto's slice search (a device profile, --policy auto)
  std::optional<BudgetSweep> sweep;      // --sweep
  std::string state_choice;              // --optimizer-state auto: which placement, and why
  std::string title;                     // "model, batch N, device": the pictures'
  std::string sweep_title;

  bool has_budget_rows() const { return budget && !table.one; }
  // Nothing fits --device-memory: no dyn, auto or auto with slice runs.
  bool nothing_fits() const {
    return has_budget_rows() && !table.dyn.fits && !table.chosen.fits && !(slices && slices->choice.fits);
  }
};

// The oracle the rows are measured against: the whole graph's, also when the rows are a sliced
// graph's (planned from uncalibrated costs then, as the sliced graph's are).
double oracle_seconds(const PlanOptions& o, const Graph& whole, bool sliced, const Planner& planner) {
  if (!sliced) return planner.oracle_seconds();
  PlanSourceOptions uncalibrated = o.source;
  uncalibrated.calibrate_with = nullptr;
  const DevicePlanner of_whole(whole, o.model.batch, uncalibrated,
                               {.optimizer = parse_optimizer(o.optimizer), .sync = parse_sync_mode(o.sync)});
  return of_whole.planner.oracle_seconds();
}

// --ranks N or --scaling: every row again at each number of ranks, with their all-reduce.
std::vector<ScalingSeries> scale_rows(const PlanOptions& o, const TrainingPlan& plan, const PlanInputs& in,
                                      const DataParallel& dp) {
  return scale_table(
      plan.table, plan.prefetch, plan.budget, o.scaling ? scaling_ranks() : std::vector<int>{1, o.ranks}, [&](int n) {
        Planner at_n(plan.graph, in.value_bytes, in.facts, in.costs, parse_sync_mode(o.sync), dp.collectives(n));
        at_n.set_host_budget(plan.planner.host_budget());
        at_n.set_optimizer(plan.planner.optimizer());
        return at_n;
      });
}

// --sweep: every policy's step time from the largest smallest budget down to the floor; with the
// slice search's runs, also `auto` on the graph sliced by them, down to its own floor.
void sweep_plan(const PlanOptions& o, const Graph& whole, TrainingPlan& plan) {
  plan.sweep = sweep_budgets(
      plan.planner, sweep_policies(),
      {.steps = o.sweep_steps, .prefetch_ahead = plan.prefetch == Prefetch::kAhead, .extra_budget = plan.budget});
  const std::optional<SliceRunChoice>& slices = plan.slices;
  if (!slices || !slices->choice.fits || slices->runs.empty()) return;
  const SlicedGraph cut = slice_runs(whole, o.model.batch, slices->runs);
  const DevicePlanner cut_planned(cut.graph, o.model.batch, o.source,
                                  {.device_memory = plan.budget,
                                   .host_memory = plan.planner.host_budget(),
                                   .optimizer = plan.planner.optimizer(),
                                   .sync = parse_sync_mode(o.sync)});
  add_sliced_column(*plan.sweep, cut_planned.planner, "auto+slices", std::max(SweepOptions::kMinSteps, o.sweep_steps / 2),
                    plan.budget);
  plan.sweep_title += "; auto+slices: the runs chosen at " + format_bytes(plan.budget);  // the text and JSON name them
}

// The slice search's line under the table.
std::string slice_line(const SliceRunChoice& slices, double oracle) {
  if (!slices.choice.fits)
    return VDNN_MSG("auto with slice runs: nothing fits either (" << slices.evaluations << " auto searches)");
  std::string runs_text;
  for (const SliceRun& r : slices.runs) runs_text += (runs_text.empty() ? "" : ", ") + to_string(r);
  return VDNN_MSG("auto with slice runs picks "
                  << (runs_text.empty() ? "no slices" : runs_text) << " (" << slices.evaluations << " auto searches, "
                  << slices.pruned << " pruned by their lower bound): " << std::fixed << std::setprecision(2)
                  << slices.choice.seconds * 1e3 << " ms, " << std::setprecision(3) << slices.choice.seconds / oracle
                  << "x the oracle; " << describe(slices.choice) << "; with these runs, "
                  << describe_bound(slices.bound, slices.choice));
}

void print_plan_json(const PlanOptions& o, const TrainingPlan& plan, const DataParallel& dp) {
  nlohmann::json out = plan_json(plan.table, {.model = plan.graph.name(),
                                              .batch = o.model.batch,
                                              .sync = o.sync,
                                              .prefetch = o.prefetch,
                                              .device = plan.device,
                                              .optimizer = o.optimizer,
                                              .optimizer_state = o.optimizer_state});
  if (plan.sweep) out["sweep"] = sweep_json(*plan.sweep, plan.planner.costs());
  if (!plan.state_choice.empty()) out["optimizer_state_choice"] = plan.state_choice;
  if (plan.sliced) {  // against the whole graph's oracle, as the table
    out["oracle_seconds"] = plan.oracle;
    for (nlohmann::json& c : out["configurations"])
      c["overhead_vs_oracle"] = c["iteration_seconds"].get<double>() / plan.oracle - 1;
    out["slice_runs"] = o.slice_runs;
  }
  if (plan.slices) out["slice_runs"] = slice_runs_json(*plan.slices, plan.oracle);
  if (!plan.scaling.empty()) out["data_parallel"] = scaling_json(plan.scaling, o.model.batch, dp);
  std::cout << dump_json(out, 2) << "\n";
}

// What dyn and auto pick for the budget, one line each, under the table.
void print_choices(const PlanOptions& o, const TrainingPlan& plan) {
  if (!plan.has_budget_rows()) return;
  const DynChoice& dyn = plan.table.dyn;
  if (o.policy != "auto") {
    if (dyn.fits)
      std::printf("dyn picks %s (step %d): %s.\n", describe(dyn.config, plan.planner.costs()).c_str(), dyn.step,
                  dyn.why.c_str());
    else
      std::printf("dyn: nothing fits: %s.\n", dyn.why.c_str());
  }
  if (o.policy != "dyn")
    std::printf("%s; %s.\n", describe(plan.table.chosen).c_str(),
                describe_bound(plan.table.bound, plan.table.chosen).c_str());
}

void print_plan_table(const PlanOptions& o, const TrainingPlan& plan, const DataParallel& dp) {
  const size_t host_budget = plan.planner.host_budget();
  std::printf("model %s, batch %lld, device %s%s, sync %s%s; costs: %s\n", plan.graph.name().c_str(),
              static_cast<long long>(o.model.batch), plan.device.c_str(),
              (plan.budget ? ", budget " + format_bytes(plan.budget) : std::string()).c_str(), o.sync.c_str(),
              plan.prefetch == Prefetch::kAhead ? ", prefetch ahead" : "", plan.planner.costs().source.c_str());
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %11s %10s %9s %7s %s\n", "configuration", "peak MiB", "fmaps", "grads",
              "params*", "workspace", "host MiB", "min budget", "step ms", "vs oracle", "/bound",
              plan.budget || host_budget ? "fits" : "");
  for (const PlanRow& r : plan.table.rows) print_row(r, plan.oracle, plan.budget || host_budget);
  if (plan.unified_memory_bytes)
    std::printf(
        "unified memory: the %s the CPU and the GPU share hold the budget and the host copies together; "
        "host copies (host MiB) beyond %s do not fit.\n",
        format_bytes(plan.unified_memory_bytes).c_str(), format_bytes(host_budget > 1 ? host_budget : 0).c_str());
  else if (host_budget)
    std::printf("host budget %s: a configuration whose host copies (host MiB) need more does not fit.\n",
                format_bytes(host_budget).c_str());
  std::printf(
      "* params = weights + weight gradients + optimizer state (sgd: momentum; adamw: 2 moments)%s. oracle = none, "
      "fastest algorithms, unlimited "
      "memory: %.2f ms. /bound = step time over the busiest stream's time.\n",
      plan.planner.optimizer_state() == StatePlace::kHost
          ? " on the device: here the weights and the weight gradients the backward pass holds at once (each is "
            "on the device from its first writer until copied out; the state, masters and gradient copies are host MiB)"
          : "",
      plan.oracle * 1e3);
  if (!plan.state_choice.empty()) std::printf("%s\n", plan.state_choice.c_str());
  if (o.policy.empty() || plan.table.one)
    std::printf(
        "each none, conv and all row is the step `vdnn train --policy P --conv-algo auto` runs (the backend's own "
        "choice of algorithm%s), so its min budget trains (without --conv-algo, train makes convolutions direct where a "
        "smaller budget needs it); leanest: with --conv-algo direct.\n",
        plan.planner.costs().defaults() == plan.planner.costs().fastest() ? ", here the fastest" : "");
  print_choices(o, plan);
  if (plan.slices) std::printf("%s.\n", slice_line(*plan.slices, plan.oracle).c_str());
  if (plan.sweep) print_sweep_table(*plan.sweep, plan.budget);
  if (!plan.scaling.empty()) print_scaling_table(plan.scaling, o.model.batch, dp);
}

// --scaling-svg: the --scaling-with series first, then this command's rows.
void write_scaling_svg(const PlanOptions& o, const TrainingPlan& plan, const DataParallel& dp,
                       const std::vector<ScalingSeries>& others) {
  std::vector<ScalingSeries> drawn = others;
  for (ScalingSeries s : plan.scaling) {
    if (!others.empty()) s.label = with_batch(s.label, o.model.batch);
    drawn.push_back(std::move(s));
  }
  write_text_file(o.scaling_svg,
                  scaling_svg(VDNN_MSG(plan.graph.name()
                                       << ", batch " << (others.empty() ? std::to_string(o.model.batch) : "as labelled")
                                       << " per rank, " << plan.device << ", " << dp.network.name),
                              drawn));
}

// --print: each row's Program, one line per step (auto: and its decisions per layer).
void print_programs(const TrainingPlan& plan) {
  for (const PlanRow& r : plan.table.rows) {
    Program p = plan.planner.program(r.e.config, true, r.e.prefetch_depth);
    plan_memory(p, r.e.fits && plan.budget ? plan.budget : r.e.minimum_budget);
    add_collectives(p, plan.planner.collectives());  // --ranks N: the all-reduce and update steps too
    std::cout << "# " << r.label << "\n" << p.to_text();
    if (r.e.config.policy == Policy::kAuto)
      std::cout << "# " << r.label << ": per layer\n" << decisions_by_layer(plan.planner, r.e.config);
  }
}

// The table (or JSON), the files asked for and the Programs; 1 when nothing fits --device-memory.
int report_plan(const PlanOptions& o, const TrainingPlan& plan, const DataParallel& dp,
                const std::vector<ScalingSeries>& others) {
  if (o.json)
    print_plan_json(o, plan, dp);
  else
    print_plan_table(o, plan, dp);
  if (!o.scaling_svg.empty()) write_scaling_svg(o, plan, dp, others);
  if (plan.sweep && !o.sweep_svg.empty())
    write_text_file(o.sweep_svg, budget_sweep_svg(plan.sweep_title, *plan.sweep, plan.planner.costs(), plan.budget));
  write_pictures(o, plan.table.rows, plan.title, plan.budget, plan.oracle, plan.planner.costs());
  if (o.print) print_programs(plan);
  if (!plan.nothing_fits()) return 0;
  // --policy dyn alone: auto was not asked, but where it fits the refusal says so.
  const bool auto_fits = o.policy == "dyn" && choose_auto(plan.planner, plan.budget).fits;
  std::fflush(stdout);  // --json's object whole before the refusal, when both go to one file
  std::fprintf(stderr, "error: --device-memory %s is too small for model '%s' at batch %lld: %s%s\n",
               describe_budget(plan.budget).c_str(), plan.graph.name().c_str(), static_cast<long long>(o.model.batch),
               (o.policy == "auto" ? plan.table.chosen.why : plan.table.dyn.why).c_str(),
               auto_fits ? "; --policy auto fits it (it keeps, offloads or recomputes each tensor)" : "");
  return 1;
}

// The configurations of one training step, planned for the model (sliced by --slice-run) under
// the budgets, with what --ranks, --scaling, --sweep and auto's slice search add.
int run_training_plan(PlanOptions& o, const DataParallel& dp, const std::vector<ScalingSeries>& others) {
  const Graph whole = o.model.load().graph;
  // --slice-run: the configurations are the sliced graph's (rewrites/slice_runs.h); the oracle stays the
  // whole graph's (none, fastest algorithms, unlimited memory, no slices).
  const std::vector<SliceRun> runs = requested_slice_runs(o);
  const std::optional<SlicedGraph> sliced =
      runs.empty() ? std::nullopt : std::optional<SlicedGraph>(slice_runs(whole, o.model.batch, runs));
  const Graph& graph = sliced ? sliced->graph : whole;
  o.source.cpu_link = parse_link(o.link_bandwidth, o.link_latency);
  o.source.calibrate_with = [&] { return o.model.load().graph; };  // measured costs: a few timed steps
  if ((o.scaling || o.ranks > 1) && o.optimizer_state != "device")
    VDNN_THROW("--optimizer-state " << o.optimizer_state << " with " << (o.scaling ? "--scaling" : "--ranks")
                                    << ": state in host memory is planned for one rank; data-parallel ranks with it "
                                       "are not built yet (give --optimizer-state device)");
  PlannerRequest request{.device_memory = parse_budget(o.device_memory, "--device-memory"),
                         .host_memory = parse_budget(o.host_memory, "--host-memory").value_or(0),
                         .optimizer = parse_optimizer(o.optimizer),
                         .sync = parse_sync_mode(o.sync),
                         .collectives = dp.collectives(o.ranks),
                         .network = dp.network};
  PlanInputs inputs = plan_inputs(graph, o.model.batch, o.source);  // this CPU's costs: measured once
  std::string state_choice;
  if (o.optimizer_state == "auto") {
    const StatePlacement p =
        choose_state_placement(graph, inputs, request, o.policy, parse_prefetch(o.prefetch), o.source.names);
    o.optimizer_state = to_string(p.place);
    state_choice = "--optimizer-state auto: " + p.summary;
  }
  request.optimizer_state = parse_state_place(o.optimizer_state);
  const DevicePlanner planned(graph, std::move(inputs), request, o.source.names);
  const PlanInputs& in = planned.in;
  const Planner& planner = planned.planner;
  TrainingPlan plan{.graph = graph, .planner = planner, .device = in.device, .state_choice = state_choice};
  plan.budget = planned.budget;
  if (in.unified_memory) plan.unified_memory_bytes = in.device_memory_bytes;
  plan.oracle = oracle_seconds(o, whole, sliced.has_value(), planner);
  plan.prefetch = parse_prefetch(o.prefetch);
  plan.sliced = sliced.has_value();
  plan.table = plan_table(planner, plan.budget, o.policy, plan.prefetch);
  plan.title = plan.sweep_title = VDNN_MSG(graph.name() << ", batch " << o.model.batch << ", " << in.device
                                                        << (o.optimizer == "sgd" ? "" : ", optimizer " + o.optimizer)
                                                        << (o.optimizer_state == "host" ? ", its state in host memory" : ""));
  if (o.ranks > 1 || o.scaling) plan.scaling = scale_rows(o, plan, in, dp);
  // --policy auto on a device profile: auto also chooses slice runs (plan/slice_search.h); in fp32
  // only, as --slice-run (no backend runs slice runs in bf16 yet).
  if (runs.empty() && !o.no_slice_search && o.ranks == 1 && o.source.precision == Precision::kFp32 &&
      o.optimizer_state == "device")  // the slice search plans the state on the device
    plan.slices = plan_slice_runs(whole, o.model.batch, o.policy, o.source, plan.budget, parse_sync_mode(o.sync),
                                  planner.host_budget(), planner.optimizer());
  if (o.sweep) sweep_plan(o, whole, plan);
  return report_plan(o, plan, dp, others);
}

// --max-seq-len: the longest token input the model takes, its position tables' rows (kMaxBatch
// without one), and what sets it; a model without token input is refused.
std::pair<int64_t, std::string> longest_sequence(const Graph& graph) {
  if (!graph.token_input())
    VDNN_THROW("--max-seq-len: model '" << graph.name() << "' has no token input (its input is "
                                        << graph.input_shape().to_string()
                                        << "); it searches the length of a token model's input");
  std::pair<int64_t, std::string> longest{kMaxBatch, VDNN_MSG("the limit of " << kMaxBatch << " tokens")};
  for (const Node& n : graph.nodes())
    if (const auto* p = dynamic_cast<const PositionEmbeddingLayer*>(n.layer.get());
        p && p->max_positions() < longest.first)
      longest = {p->max_positions(), VDNN_MSG("the " << p->max_positions() << " positions of '" << p->name() << "'")};
  return longest;
}

// --max-batch or --max-seq-len: per policy (--policy, or none, conv, all, dyn and auto), the largest
// batch (or token input length, at --batch) whose plan fits the budget (--device-memory, else the
// device's memory), each size planned from scratch. Several devices: one table each, in their order
// (JSON: {"devices": [one object each]}).
nlohmann::json largest_on_device(const PlanOptions& o, const Graph& graph);

int run_largest_plan(const PlanOptions& o) {
  refuse_state_auto(o, o.max_batch ? "--max-batch" : "--max-seq-len");
  const Graph graph = o.model.load().graph;
  const std::vector<std::string> devices = device_list(o);
  nlohmann::json each = nlohmann::json::array();
  for (const std::string& device : devices) {
    PlanOptions on = o;
    on.source.device = device;
    each.push_back(largest_on_device(on, graph));
  }
  if (o.json) std::cout << dump_json(devices.size() == 1 ? each.front() : nlohmann::json{{"devices", each}}, 2) << "\n";
  return 0;
}

// One device's table (printed unless --json) and its JSON.
nlohmann::json largest_on_device(const PlanOptions& o, const Graph& graph) {
  const std::optional<size_t> asked = parse_budget(o.device_memory, "--device-memory");
  const size_t host_memory = parse_budget(o.host_memory, "--host-memory").value_or(0);
  const SyncMode sync = parse_sync_mode(o.sync);
  const Prefetch prefetch = parse_prefetch(o.prefetch);
  const OptimizerKind optimizer = parse_optimizer(o.optimizer);
  const auto [cap, cap_is] =
      o.max_seq_len ? longest_sequence(graph) : std::pair<int64_t, std::string>{kMaxBatch, "the batch limit, 2^20"};
  LargestHeader header{.model = graph.name(),
                       .device = o.source.device,
                       .optimizer = o.optimizer,
                       .optimizer_state = o.optimizer_state,
                       .batch = o.max_seq_len ? o.model.batch : 0,
                       .cap = cap_is};
  const auto plan_of = [&](const Graph& g, int64_t batch, const std::string& policy) {
    const DevicePlanner p(g, batch, o.source,
                          {.device_memory = asked,
                           .host_memory = host_memory,
                           .optimizer = optimizer,
                           .optimizer_state = parse_state_place(o.optimizer_state),
                           .sync = sync});
    header.budget = p.budget;
    return plan_table(p.planner, p.budget, policy, prefetch);
  };
  const PlanAt plan_at = [&](const std::string& policy, int64_t size) {
    if (!o.max_seq_len) return plan_of(graph, size, policy);
    ModelFlags at_length = o.model;
    at_length.input = std::to_string(size);
    return plan_of(at_length.load().graph, o.model.batch, policy);
  };
  const std::vector<std::string> policies =
      o.policy.empty() ? std::vector<std::string>{"none", "conv", "all", "dyn", "auto"} : std::vector{o.policy};
  const std::vector<PolicyLargest> rows = largest_per_policy(plan_at, policies, cap);
  if (!o.json) print_largest_table(rows, header);
  return largest_json(rows, header);
}

// --device A,B,...: each device planned alone, one row per device (tools/plan_devices.h).
int run_devices_plan(const PlanOptions& o) {
  refuse_state_auto(o, "--device " + o.source.device);
  DeviceTableRequest request{.devices = device_list(o),
                             .budget = parse_budget(o.device_memory, "--device-memory"),
                             .host_memory = parse_budget(o.host_memory, "--host-memory").value_or(0),
                             .sync = parse_sync_mode(o.sync),
                             .prefetch = parse_prefetch(o.prefetch),
                             .optimizer = parse_optimizer(o.optimizer),
                             .optimizer_state = parse_state_place(o.optimizer_state),
                             .source = o.source};
  if (!o.policy.empty()) request.policies = {o.policy};
  const Graph graph = o.model.load().graph;
  const std::vector<DevicePlan> rows = plan_devices(graph, o.model.batch, request);
  const DeviceTableHeader header{
      .model = graph.name(), .optimizer = request.optimizer, .batch = o.model.batch, .budget = request.budget.value_or(0)};
  if (o.json)
    std::cout << dump_json(device_table_json(rows, header), 2) << "\n";
  else
    print_device_table(rows, header);
  for (const DevicePlan& r : rows)
    if (!r.fastest_fitting()) return 1;
  return 0;
}

int run_plan(PlanOptions o) {
  o.source.precision = parse_precision(o.precision);
  if (o.source.precision != Precision::kFp32 && !o.slice_runs.empty())
    VDNN_THROW("--slice-run does not combine with --precision " << o.precision << " yet (vdnn train refuses it too)");
  if (o.inference) {
    check_output_files({{"--svg-memory", o.svg_memory}});
    return run_inference(o);
  }
  check_training_flags(o);
  if (o.max_batch || o.max_seq_len) return run_largest_plan(o);
  if (device_list(o).size() > 1) return run_devices_plan(o);
  const DataParallel dp = data_parallel(o);
  const std::vector<ScalingSeries> others = read_scaling_with(o);
  return run_training_plan(o, dp, others);
}

// What to plan: the slice runs and policies, the budgets, and where sizes and costs come from.
void add_configuration_flags(CLI::App& app, PlanOptions& o) {
  app.add_option("--slice-run", o.slice_runs,
                 "FIRST:LAST:K: plan the layers FIRST..LAST in K slices of the batch, one after another (as vdnn "
                 "train --slice-run); the table's 'vs oracle' stays against the whole graph's oracle; repeatable")
      ->take_all();
  app.add_flag("--no-slice-search", o.no_slice_search,
               "--policy auto on a device profile: do not search slice runs (the search runs auto 20-60 times)");
  app.add_option("--policy", o.policy,
                 "only this configuration: none, conv, all (with the algorithms `vdnn train --policy P` runs), dyn "
                 "or auto")
      ->check(CLI::IsMember({"none", "all", "conv", "dyn", "auto"}));
  app.add_option("--sync", o.sync, "event or layer")->check(CLI::IsMember({"event", "layer"}))->capture_default_str();
  app.add_option("--optimizer", o.optimizer,
                 "as `vdnn train --optimizer`: sgd (one momentum buffer per parameter) or adamw (two moments): "
                 "the optimizer state every configuration keeps in the arena")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  app.add_option("--optimizer-state", o.optimizer_state,
                 "as `vdnn train --optimizer-state`: device, or host (the state, each weight's master and a gradient "
                 "copy in host memory, counted against --host-memory; the host's CPU updates them after the backward "
                 "pass, priced at the profile's host_memory_bytes_per_second; the oracle keeps them on the device), or auto: "
                 "both planned, the one whose fastest fitting row is faster kept (one batch, one device)")
      ->check(CLI::IsMember({"device", "host", "auto"}))
      ->capture_default_str();
  app.add_option("--prefetch", o.prefetch,
                 "as `vdnn train --prefetch`: vdnn (nearest offloaded layer, never past a conv) or ahead (as far "
                 "as the budget allows; each row names the depth train would use)")
      ->check(CLI::IsMember({"vdnn", "ahead"}))
      ->capture_default_str();
  app.add_option("--device-memory", o.device_memory,
                 "the budget, e.g. 12GiB (default: the device profile's memory; none on cpu)");
  app.add_option("--host-memory", o.host_memory,
                 "host memory for the host copies of offloaded tensors, e.g. 16GiB (default: unbounded); a "
                 "configuration needing more does not fit, and dyn and auto pick among those that do");
  app.add_option("--device", o.source.device,
                 "cpu (this machine's kernels) or a device profile: a name from profiles/devices or a JSON file; "
                 "several device profiles, comma-separated, plan each and print one row per device")
      ->capture_default_str();
  app.add_option("--link", o.source.link,
                 "a link profile for --device (pcie3, pcie4, pcie5, lpddr5-unified or a JSON file)");
  app.add_option("--costs", o.source.costs_file, "cpu: costs saved by `vdnn profile --save` (default: measure now)");
  app.add_option("--precision", o.precision,
                 "fp32, or bf16 (cpu: sizes and costs of the bf16 kernels, as `vdnn train --precision bf16` runs them; "
                 "a GPU profile with peak_bf16_flops: its tensor cores, and activations at 2 bytes)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--repeats", o.source.repeats, "cpu, measuring: timed runs per kernel")
      ->check(CLI::Range(1, kMaxRepeats))
      ->capture_default_str();
  app.add_option("--link-bandwidth", o.link_bandwidth, "cpu, measuring: emulated link GB/s (0 = unlimited)");
  app.add_option("--link-latency", o.link_latency, "cpu, measuring: emulated link latency per copy");
}

// What to show beside the table: Programs, a trace, pictures, the budget sweep.
void add_picture_flags(CLI::App& app, PlanOptions& o) {
  app.add_flag("--print", o.print,
               "print each configuration's Program, one line per step (auto: and its decisions per layer)");
  app.add_option("--trace", o.trace,
                 "write the predicted step as a Chrome trace (Perfetto, chrome://tracing): dyn's pick if a budget "
                 "is known, else none (with train's algorithms), or the configuration --policy selects");
  app.add_option("--svg", o.svg, "write an SVG comparing the configurations: peak memory by class and step time");
  app.add_option("--svg-memory", o.svg_memory,
                 "write an SVG of device memory over one step by class, one panel per configuration");
  app.add_flag("--sweep", o.sweep,
               "also sweep the budget: every policy's predicted step time (none, conv, all, dyn; with --prefetch "
               "ahead also prefetching ahead) at budgets from the largest smallest budget down to the floor, the "
               "least any policy trains in; the table is independent of --policy and marks --device-memory "
               "(JSON: \"sweep\"); with --policy auto on a device profile also auto+slices, auto with the runs "
               "the slice search chose, down to their own floor");
  app.add_option("--sweep-steps", o.sweep_steps, "--sweep: evenly spaced budgets, ends included (implies --sweep)")
      ->check(CLI::Range(SweepOptions::kMinSteps, SweepOptions::kMaxSteps))
      ->capture_default_str();
  app.add_option("--sweep-svg", o.sweep_svg,
                 "write an SVG of the sweep: step time against budget, one line per policy (implies --sweep)");
}

// Data-parallel plans: ranks, their network and gradient buckets, the scaling table and picture.
void add_plan_parallel_flags(CLI::App& app, PlanOptions& o) {
  app.add_option("--ranks", o.ranks,
                 "data parallel: plan for this many ranks (--batch is per rank, as PyTorch DDP's batch_size); "
                 "adds a table of each configuration's all-reduce, hidden fraction and efficiency against one rank "
                 "(JSON: \"data_parallel\")")
      ->capture_default_str();
  app.add_option("--network", o.network,
                 "data parallel: the network between ranks, a name from profiles/networks (ethernet-100g, "
                 "hdr-infiniband, nvlink-a100, mpi-shared-memory: this host's MPI, measured) or a JSON file");
  app.add_option("--bucket-size", o.bucket_size, "data parallel: gradient bucket size (PyTorch DDP's bucket_cap_mb)")
      ->capture_default_str();
  app.add_flag("--scaling", o.scaling,
               "data parallel: plan every configuration at 1, 2, 4, ..., 64 ranks on --network and print the "
               "predicted scaling");
  app.add_option("--scaling-svg", o.scaling_svg,
                 "write an SVG of the predicted scaling efficiency against ranks (implies --scaling)");
  app.add_option("--scaling-with", o.scaling_with,
                 "--scaling-svg: also draw the series of earlier `vdnn plan --scaling --json` outputs (e.g. the "
                 "same model at another batch or policy); repeatable");
}

// Whether the plan measures this CPU's costs now (--device lists cpu, no --costs): what --repeats and
// the emulated link are for.
bool measures_cpu_costs(const PlanOptions& o) {
  for (const std::string& d : device_list(o))
    if (d == "cpu") return o.source.costs_file.empty();
  return false;
}

// The flags that apply only to some plans (tools/flag_rules.h); `sub` tells which flags were given.
FlagRules plan_flag_rules(const CLI::App& sub, const std::shared_ptr<PlanOptions>& o) {
  FlagRules rules(sub);
  const auto sweeps = [o, &sub] { return o->sweep || sub.count("--sweep-steps") > 0 || !o->sweep_svg.empty(); };
  const auto training = [o] { return !o->inference; };
  const auto with_inference = [] { return std::string("with --inference, which plans the forward pass alone"); };
  rules.add({"--host-memory"},
            {"to training plans (`vdnn infer --host-memory` bounds an inference run)", training, with_inference});
  rules.add(
      {"--policy",      "--sync",    "--optimizer",   "--optimizer-state", "--prefetch",     "--slice-run", "--no-slice-search", "--print",
       "--trace",       "--svg",     "--sweep",       "--sweep-steps",  "--sweep-svg", "--ranks",           "--network",
       "--bucket-size", "--scaling", "--scaling-svg", "--scaling-with", "--max-batch", "--max-seq-len"},
      {"to training plans", training, with_inference});
  rules.add({"--batches"}, with_flag(sub, "--inference", "(training plans take one --batch)"));
  rules.add({"--batch"}, {"without --batches (which lists the batch sizes instead)", [o] { return o->batches.empty(); },
                          [o] { return "with --batches " + o->batches; }});
  rules.add(
      {"--repeats", "--link-bandwidth", "--link-latency"},
      {"when the plan measures this CPU's costs (--device cpu, no --costs)", [o] { return measures_cpu_costs(*o); },
       [o] {
         return o->source.costs_file.empty() ? "with --device " + o->source.device + " (a device profile's costs)"
                                             : "with --costs " + o->source.costs_file + " (costs measured before)";
       }});
  rules.add({"--network", "--bucket-size"}, {"to data-parallel plans (--ranks above 1, or --scaling)",
                                             [o] { return o->ranks > 1 || o->scaling || !o->scaling_svg.empty(); },
                                             [o] { return "with --ranks " + std::to_string(o->ranks); }});
  rules.add({"--scaling-with"}, with_flag(sub, "--scaling-svg", "FILE (it adds series to that picture)"));
  rules.add({"--no-slice-search"}, {"with --policy auto on a device profile (where auto searches slice runs)",
                                    [o] { return o->policy == "auto" && o->source.device != "cpu"; },
                                    [o] {
                                      return "with --policy " + (o->policy.empty() ? "(every row)" : o->policy) +
                                             " and --device " + o->source.device;
                                    }});
  rules.add({"--max-batch", "--max-seq-len"},
            {"with device profiles (--device NAME or A,B,...: each size is planned with its sizes and costs; this "
             "CPU's costs are measured at one batch and length)",
             [o] {
               const std::vector<std::string> devices = device_list(*o);
               return !devices.empty() && std::none_of(devices.begin(), devices.end(),
                                                       [](const std::string& d) { return d == "cpu" || d.empty(); });
             },
             [o] { return "with --device " + o->source.device; }});
  rules.add({"--max-seq-len"}, {"without --max-batch (one size is searched at a time)", [o] { return !o->max_batch; },
                                [] { return std::string("with --max-batch"); }});
  rules.add({"--batch"}, {"without --max-batch (which searches the batch)", [o] { return !o->max_batch; },
                          [] { return std::string("with --max-batch"); }});
  rules.add({"--input"}, {"without --max-seq-len (which searches the input's length)", [o] { return !o->max_seq_len; },
                          [] { return std::string("with --max-seq-len"); }});
  rules.add({"--slice-run", "--no-slice-search", "--print", "--trace", "--svg", "--svg-memory", "--sweep",
             "--sweep-steps", "--sweep-svg", "--ranks", "--network", "--bucket-size", "--scaling", "--scaling-svg"},
            {"without --max-batch and --max-seq-len (which search a size and print their own table)",
             [o] { return !o->max_batch && !o->max_seq_len; },
             [o] { return std::string(o->max_batch ? "with --max-batch" : "with --max-seq-len"); }});
  rules.add({"--slice-run", "--no-slice-search", "--print", "--trace", "--svg", "--svg-memory", "--sweep",
             "--sweep-steps", "--sweep-svg", "--ranks", "--network", "--bucket-size", "--scaling", "--scaling-svg",
             "--costs"},
            {"with one --device (a training plan over several prints one row per device)",
             [o] { return o->inference || device_list(*o).size() <= 1; },
             [o] { return "with --device " + o->source.device; }});
  rules.add({"--host-memory"}, {"with a --policy that offloads (all, conv, dyn, auto or every row) or --sweep",
                                [o, sweeps] { return o->policy != "none" || sweeps(); },
                                [] { return std::string("with --policy none and no --sweep"); }});
  return rules;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  add_model_flags(app, o->model);
  add_configuration_flags(app, *o);
  add_picture_flags(app, *o);
  add_plan_parallel_flags(app, *o);
  app.add_flag("--inference", o->inference,
               "plan the forward pass alone (vdnn infer): peak by class, smallest budget and latency per batch "
               "size; --device may list several, e.g. cpu,jetson-orin-nano");
  app.add_option("--batches", o->batches, "--inference: batch sizes, e.g. 1,8,32 (default: --batch)");
  app.add_flag("--json", o->json, "print JSON instead of a table");
  app.add_flag("--max-batch", o->max_batch,
               "on each device profile (--device A,B,...: a table each): per policy (--policy, or every one) the "
               "largest batch that trains in the budget, its step and overhead against the oracle at that batch");
  app.add_flag("--max-seq-len", o->max_seq_len,
               "on each device profile, a token model: per policy the longest input (tokens) that trains in the "
               "budget at --batch, its step and overhead against the oracle at that length");
  Runner run = [o, sub = &app] {
    o->sweep = o->sweep || sub->count("--sweep-steps") > 0 || !o->sweep_svg.empty();
    o->scaling = o->scaling || !o->scaling_svg.empty();
    return run_plan(*o);
  };
  return {run, plan_flag_rules(app, o)};
}

}  // namespace vdnn::cli
