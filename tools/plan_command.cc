// `vdnn plan`: will a network fit, with which policy, and at what cost — before anything trains.
// One row per configuration (none with the leanest and with the fastest algorithms, conv, all,
// what vDNN_dyn picks for the budget, and what `auto` decides per tensor, plan/auto_policy.h):
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
// draws it. `--inference` plans the forward pass alone instead (tools/plan_inference.h).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iomanip>
#include <optional>
#include <sstream>

#include "commands.h"
#include "plan_inference.h"
#include "plan_parallel.h"
#include "plan_sweep.h"
#include "report/budget_sweep_chart.h"
#include "report/chrome_trace.h"
#include "report/configuration_chart.h"
#include "report/memory_timeline_chart.h"
#include "report/plan_report.h"
#include "report/scaling_chart.h"
#include "io/slice_runs.h"
#include "io/json_text.h"
#include "model_flags.h"
#include "plan/auto_policy.h"
#include "plan/device_profile.h"
#include "plan/dyn.h"
#include "plan/collectives.h"
#include "plan/memory_plan.h"
#include "plan/planner.h"
#include "plan/slice_search.h"
#include "runtime/plan_source.h"
#include "util/atomic_file.h"
#include "util/size_parse.h"
#include "util/text_file.h"
#include "util/text_list.h"

namespace vdnn::cli {
namespace {

struct PlanOptions {
  ModelFlags model{.name = "fmnist_cnn"};
  std::string policy, sync = "event", prefetch = "vdnn", device_memory, host_memory, link_bandwidth = "0",
              link_latency = "0", trace, svg, svg_memory, sweep_svg, network, bucket_size = "25MiB", scaling_svg,
              batches, precision = "fp32";
  std::vector<std::string> scaling_with;
  std::vector<std::string> slice_runs;  // --slice-run FIRST:LAST:K, repeatable
  PlanSourceOptions source;
  int sweep_steps = 20, ranks = 1;
  bool print = false, json = false, sweep = false, scaling = false, inference = false, no_slice_search = false;
};

// --inference: the forward pass alone, per device (--device may list several) and batch size.
int run_inference(const PlanOptions& o) {
  InferencePlanRequest r;
  r.load = [&o] { return o.model.load().graph; };
  std::stringstream devices(o.source.device);
  for (std::string d; std::getline(devices, d, ',');) r.devices.push_back(d);
  if (r.devices.empty()) VDNN_THROW("--device is empty; expected cpu or device profiles, e.g. cpu,jetson-orin-nano");
  r.batches = o.batches.empty() ? std::vector<int64_t>{o.model.batch} : parse_batches(o.batches, "--batches");
  r.budget = o.device_memory.empty() ? 0 : parse_size(o.device_memory, "--device-memory");
  r.source = o.source;
  r.source.cpu_link = parse_link(o.link_bandwidth, o.link_latency);
  r.svg_memory = o.svg_memory;
  r.json = o.json;
  return run_plan_inference(r);
}

std::string mib(size_t bytes) { return VDNN_MSG(static_cast<double>(bytes) / (1 << 20)); }

void print_row(const PlanRow& r, double oracle, bool with_budget) {
  const ClassStats& c = r.e.memory.by_class;
  const size_t params = c.peak(MemoryClass::kWeights) + c.peak(MemoryClass::kWeightGrads) +
                        c.peak(MemoryClass::kOptimizerState);
  const double t = r.e.time.iteration_seconds;
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %11s %10.2f %8.1f%% %7.2f %s\n", r.label.c_str(),
              mib(r.e.memory.peak_bytes).c_str(), mib(c.peak(MemoryClass::kFeatureMaps)).c_str(),
              mib(c.peak(MemoryClass::kGradientMaps)).c_str(), mib(params).c_str(),
              mib(c.peak(MemoryClass::kWorkspace)).c_str(), mib(r.e.memory.host_bytes).c_str(),
              format_bytes(r.e.minimum_budget).c_str(), t * 1e3, (t / oracle - 1) * 100,
              t / r.e.bound_seconds, !with_budget ? "" : r.e.fits ? "yes" : !r.e.device_fits || r.e.host_fits ? "no" : "no (host)");
}

// --trace, --svg, --svg-memory. The trace shows dyn's pick if there is one, else none+fastest
// (or the one --policy asked for); the memory panels skip none+leanest.
void write_pictures(const PlanOptions& o, const std::vector<PlanRow>& rows, const std::string& title, size_t budget,
                    double oracle, const NetworkCosts& costs) {
  const auto is_dyn = [](const PlanRow& r) { return r.label.rfind("dyn: ", 0) == 0; };
  if (!o.trace.empty() && !rows.empty()) {
    auto traced = std::find_if(rows.begin(), rows.end(), is_dyn);
    if (traced == rows.end())
      traced = std::find_if(rows.begin(), rows.end(), [&](const PlanRow& r) {
        return r.e.config == Configuration{Policy::kNone, costs.fastest()};
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
      if (is_dyn(r) || r.e.config.algos == costs.fastest())
        panels.push_back({r.label, r.e.time.memory, r.e.time.iteration_seconds});
    write_text_file(o.svg_memory, memory_timeline_svg(title, panels, budget));
  }
}

// --ranks, --network, --bucket-size, checked before any planning.
DataParallel data_parallel(const PlanOptions& o) {
  DataParallel dp;
  if (o.ranks < 1) VDNN_THROW("--ranks must be at least 1 (data-parallel ranks), got " << o.ranks);
  dp.ranks = o.ranks;
  dp.bucket_bytes = parse_size(o.bucket_size, "--bucket-size");
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

int run_plan(PlanOptions o) {
  o.source.precision = parse_precision(o.precision);
  if (o.source.precision != Precision::kFp32 && !o.slice_runs.empty())
    VDNN_THROW("--slice-run does not combine with --precision " << o.precision << " yet (vdnn train refuses it too)");
  if (o.inference) {
    check_output_files({{"--svg-memory", o.svg_memory}});
    for (const auto& [flag, given] : {std::pair<const char*, bool>{"--policy", !o.policy.empty()}, {"--ranks", o.ranks > 1},
                                      {"--sweep", o.sweep}, {"--scaling", o.scaling}, {"--trace", !o.trace.empty()},
                                      {"--svg", !o.svg.empty()}, {"--print", o.print},
                                      {"--host-memory", !o.host_memory.empty()}, {"--slice-run", !o.slice_runs.empty()}})
      if (given) VDNN_THROW("--inference plans the forward pass alone: " << flag << " is for training plans"
                            << (std::string(flag) == "--host-memory" ? " (vdnn infer --host-memory bounds an inference run)"
                                                                      : ""));
    return run_inference(o);
  }
  if (!o.batches.empty()) VDNN_THROW("--batches lists batch sizes for --inference; training plans take one --batch");
  check_output_files({{"--trace", o.trace}, {"--svg", o.svg}, {"--svg-memory", o.svg_memory},
                      {"--sweep-svg", o.sweep_svg}, {"--scaling-svg", o.scaling_svg}});
  const DataParallel dp = data_parallel(o);
  if (!o.scaling_with.empty() && o.scaling_svg.empty())
    VDNN_THROW("--scaling-with adds series to the --scaling-svg picture: give --scaling-svg FILE too");
  std::vector<ScalingSeries> others;  // --scaling-with, read before any planning
  for (const std::string& file : o.scaling_with) {
    const std::vector<ScalingSeries> s = scaling_from_json(parse_json_text(read_text_file(file), file), file);
    others.insert(others.end(), s.begin(), s.end());
  }
  const Graph whole = o.model.load().graph;
  // --slice-run: the configurations are the sliced graph's (io/slice_runs.h); the oracle stays the
  // whole graph's (none, fastest algorithms, unlimited memory, no slices).
  std::vector<SliceRun> runs;
  for (const std::string& r : o.slice_runs) runs.push_back(parse_slice_run(r));
  if (!runs.empty() && (o.ranks > 1 || o.scaling))
    VDNN_THROW("--slice-run: data-parallel plans (--ranks, --scaling) are not planned with slice runs yet");
  const std::optional<SlicedGraph> sliced =
      runs.empty() ? std::nullopt : std::optional<SlicedGraph>(slice_runs(whole, o.model.batch, runs));
  const Graph& graph = sliced ? sliced->graph : whole;
  o.source.cpu_link = parse_link(o.link_bandwidth, o.link_latency);
  o.source.calibrate_with = [&] { return o.model.load().graph; };  // measured costs: a few timed steps
  PlanInputs in = plan_inputs(graph, o.model.batch, o.source);
  in.costs.network = dp.network;
  Planner planner(graph, in.value_bytes, in.facts, in.costs, parse_sync_mode(o.sync), dp.collectives(o.ranks));
  planner.set_host_budget(o.host_memory.empty() ? 0 : parse_size(o.host_memory, "--host-memory"));
  const size_t budget = o.device_memory.empty() ? in.device_memory_bytes : parse_size(o.device_memory, "--device-memory");
  const NetworkCosts& costs = planner.costs();
  double oracle = planner.oracle_seconds();
  if (sliced) {  // uncalibrated, as the sliced graph's costs
    PlanSourceOptions uncalibrated = o.source;
    uncalibrated.calibrate_with = nullptr;
    const PlanInputs w = plan_inputs(whole, o.model.batch, uncalibrated);
    oracle = Planner(whole, w.value_bytes, w.facts, w.costs, parse_sync_mode(o.sync)).oracle_seconds();
  }
  const Prefetch prefetch = parse_prefetch(o.prefetch);

  const PlanTable table = plan_table(planner, budget, o.policy, prefetch);
  const std::vector<PlanRow>& rows = table.rows;
  const DynChoice& dyn = table.dyn;
  const AutoChoice& chosen = table.chosen;
  const bool one = table.one;

  std::vector<ScalingSeries> scaling;
  if (o.ranks > 1 || o.scaling)
    scaling = scale_table(table, prefetch, budget, o.scaling ? scaling_ranks() : std::vector<int>{1, o.ranks},
                          [&](int n) {
                            Planner at_n(graph, in.value_bytes, in.facts, in.costs, parse_sync_mode(o.sync),
                                         dp.collectives(n));
                            at_n.set_host_budget(planner.host_budget());
                            return at_n;
                          });

  // --policy auto on a device profile: auto also chooses slice runs (plan/slice_search.h).
  std::optional<SliceRunChoice> slices;
  if (runs.empty() && !o.no_slice_search && o.ranks == 1)
    slices = plan_slice_runs(whole, o.model.batch, o.policy, o.source, budget, parse_sync_mode(o.sync), planner.host_budget());
  auto slice_line = [&] {
    std::string runs_text;
    for (const SliceRun& r : slices->runs) runs_text += (runs_text.empty() ? "" : ", ") + to_string(r);
    if (!slices->choice.fits)
      return VDNN_MSG("auto with slice runs: nothing fits either (" << slices->evaluations << " auto searches)");
    return VDNN_MSG("auto with slice runs picks " << (runs_text.empty() ? "no slices" : runs_text) << " ("
                    << slices->evaluations << " auto searches): " << std::fixed << std::setprecision(2)
                    << slices->choice.seconds * 1e3 << " ms, " << std::setprecision(3) << slices->choice.seconds / oracle
                    << "x the oracle; "
                    << describe(slices->choice));
  };

  std::optional<BudgetSweep> sweep;
  std::string sweep_title = VDNN_MSG(graph.name() << ", batch " << o.model.batch << ", " << in.device);
  if (o.sweep)
    sweep = sweep_budgets(planner, sweep_policies(),
                          {.steps = o.sweep_steps,
                           .prefetch_ahead = prefetch == Prefetch::kAhead,
                           .extra_budget = budget});
  if (sweep && slices && slices->choice.fits && !slices->runs.empty()) {
    // The search's runs on the sweep too: `auto` on the graph sliced by them, down to its floor.
    const SlicedGraph cut = slice_runs(whole, o.model.batch, slices->runs);
    const PlanInputs ci = plan_inputs(cut.graph, o.model.batch, o.source);
    Planner cut_planner(cut.graph, ci.value_bytes, ci.facts, ci.costs, parse_sync_mode(o.sync));
    cut_planner.set_host_budget(planner.host_budget());
    add_sliced_column(*sweep, cut_planner, "auto+slices", std::max(SweepOptions::kMinSteps, o.sweep_steps / 2),
                      budget);
    sweep_title += "; auto+slices: the runs chosen at " + format_bytes(budget);  // the text and JSON name them
  }

  if (o.json) {
    nlohmann::json out = plan_json(table, {.model = graph.name(), .batch = o.model.batch, .sync = o.sync,
                                           .prefetch = o.prefetch, .device = in.device});
    if (sweep) out["sweep"] = sweep_json(*sweep, costs);
    if (sliced) {  // against the whole graph's oracle, as the table
      out["oracle_seconds"] = oracle;
      for (nlohmann::json& c : out["configurations"])
        c["overhead_vs_oracle"] = c["iteration_seconds"].get<double>() / oracle - 1;
      out["slice_runs"] = o.slice_runs;
    }
    if (slices) out["slice_runs"] = slice_runs_json(*slices, oracle);
    if (!scaling.empty()) out["data_parallel"] = scaling_json(scaling, o.model.batch, dp);
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("model %s, batch %lld, device %s%s, sync %s%s; costs: %s\n", graph.name().c_str(),
                static_cast<long long>(o.model.batch), in.device.c_str(),
                (budget ? ", budget " + format_bytes(budget) : std::string()).c_str(), o.sync.c_str(),
                prefetch == Prefetch::kAhead ? ", prefetch ahead" : "", costs.source.c_str());
    std::printf("%-36s %9s %9s %9s %9s %9s %9s %11s %10s %9s %7s %s\n", "configuration", "peak MiB", "fmaps",
                "grads", "params*", "workspace", "host MiB", "min budget", "step ms", "vs oracle", "/bound",
                budget || planner.host_budget() ? "fits" : "");
    for (const PlanRow& r : rows) print_row(r, oracle, budget || planner.host_budget());
    if (planner.host_budget())
      std::printf("host budget %s: a configuration whose host copies (host MiB) need more does not fit.\n",
                  format_bytes(planner.host_budget()).c_str());
    std::printf("* params = weights + weight gradients + momentum. oracle = none, fastest algorithms, unlimited "
                "memory: %.2f ms. /bound = step time over the busiest stream's time.\n", oracle * 1e3);
    if (budget && !one && o.policy != "auto") {
      if (dyn.fits)
        std::printf("dyn picks %s (step %d): %s.\n", describe(dyn.config, costs).c_str(), dyn.step, dyn.why.c_str());
      else
        std::printf("dyn: nothing fits: %s.\n", dyn.why.c_str());
    }
    if (budget && !one && o.policy != "dyn") std::printf("%s.\n", describe(chosen).c_str());
    if (slices) std::printf("%s.\n", slice_line().c_str());
    if (sweep) print_sweep_table(*sweep, budget);
    if (!scaling.empty()) print_scaling_table(scaling, o.model.batch, dp);
  }
  if (!o.scaling_svg.empty()) {
    std::vector<ScalingSeries> drawn = others;  // --scaling-with first, then this command's rows
    for (ScalingSeries s : scaling) {
      if (!others.empty()) s.label = with_batch(s.label, o.model.batch);
      drawn.push_back(std::move(s));
    }
    write_text_file(o.scaling_svg,
                    scaling_svg(VDNN_MSG(graph.name() << ", batch " << (others.empty() ? std::to_string(o.model.batch) : "as labelled")
                                                      << " per rank, " << in.device << ", " << dp.network.name),
                                drawn));
  }
  if (sweep && !o.sweep_svg.empty())
    write_text_file(o.sweep_svg, budget_sweep_svg(sweep_title, *sweep, costs, budget));
  write_pictures(o, rows, VDNN_MSG(graph.name() << ", batch " << o.model.batch << ", " << in.device), budget, oracle, costs);
  if (o.print)
    for (const PlanRow& r : rows) {
      Program p = planner.program(r.e.config, true, r.e.prefetch_depth);
      plan_memory(p, r.e.fits && budget ? budget : r.e.minimum_budget);
      add_collectives(p, planner.collectives());  // --ranks N: the all-reduce and update steps too
      std::cout << "# " << r.label << "\n" << p.to_text();
      if (r.e.config.policy == Policy::kAuto)
        std::cout << "# " << r.label << ": per layer\n" << decisions_by_layer(planner, r.e.config);
    }
  if (budget && !one && !dyn.fits && !chosen.fits && !(slices && slices->choice.fits)) {
    std::fprintf(stderr, "error: --device-memory %s is too small for model '%s' at batch %lld: %s\n",
                 describe_budget(budget).c_str(), graph.name().c_str(), static_cast<long long>(o.model.batch),
                 (o.policy == "auto" ? chosen.why : dyn.why).c_str());
    return 1;
  }
  return 0;
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  add_model_flags(app, o->model);
  app.add_option("--slice-run", o->slice_runs,
                 "FIRST:LAST:K: plan the layers FIRST..LAST in K slices of the batch, one after another (as vdnn "
                 "train --slice-run); the table's 'vs oracle' stays against the whole graph's oracle; repeatable")
      ->take_all();
  app.add_flag("--no-slice-search", o->no_slice_search,
               "--policy auto on a device profile: do not search slice runs (the search runs auto 20-60 times)");
  app.add_option("--policy", o->policy, "only this configuration: none, conv, all (fastest algorithms), dyn or auto")
      ->check(CLI::IsMember({"none", "all", "conv", "dyn", "auto"}));
  app.add_option("--sync", o->sync, "event or layer")->check(CLI::IsMember({"event", "layer"}))
      ->capture_default_str();
  app.add_option("--prefetch", o->prefetch,
                 "as `vdnn train --prefetch`: vdnn (nearest offloaded layer, never past a conv) or ahead (as far "
                 "as the budget allows; each row names the depth train would use)")
      ->check(CLI::IsMember({"vdnn", "ahead"}))->capture_default_str();
  app.add_option("--device-memory", o->device_memory,
                 "the budget, e.g. 12GiB (default: the device profile's memory; none on cpu)");
  app.add_option("--host-memory", o->host_memory,
                 "host memory for the host copies of offloaded tensors, e.g. 16GiB (default: unbounded); a "
                 "configuration needing more does not fit, and dyn and auto pick among those that do");
  app.add_option("--device", o->source.device,
                 "cpu (this machine's kernels) or a device profile: a name from profiles/devices or a JSON file")
      ->capture_default_str();
  app.add_option("--link", o->source.link, "a link profile for --device (pcie3, pcie4, pcie5, lpddr5-unified or a JSON file)");
  app.add_option("--costs", o->source.costs_file, "cpu: costs saved by `vdnn profile --save` (default: measure now)");
  app.add_option("--precision", o->precision,
                 "fp32, or bf16 (cpu: sizes and costs of the bf16 kernels, as `vdnn train --precision bf16` runs them)")
      ->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  app.add_option("--repeats", o->source.repeats, "cpu, measuring: timed runs per kernel")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--link-bandwidth", o->link_bandwidth, "cpu, measuring: emulated link GB/s (0 = unlimited)");
  app.add_option("--link-latency", o->link_latency, "cpu, measuring: emulated link latency per copy");
  app.add_flag("--print", o->print, "print each configuration's Program, one line per step (auto: and its decisions per layer)");
  app.add_option("--trace", o->trace,
                 "write the predicted step as a Chrome trace (Perfetto, chrome://tracing): dyn's pick if a budget "
                 "is known, else none+fastest, or the configuration --policy selects");
  app.add_option("--svg", o->svg, "write an SVG comparing the configurations: peak memory by class and step time");
  app.add_option("--svg-memory", o->svg_memory,
                 "write an SVG of device memory over one step by class, one panel per configuration");
  app.add_flag("--sweep", o->sweep,
               "also sweep the budget: every policy's predicted step time (none, conv, all, dyn; with --prefetch "
               "ahead also prefetching ahead) at budgets from the largest smallest budget down to the floor, the "
               "least any policy trains in; the table is independent of --policy and marks --device-memory "
               "(JSON: \"sweep\"); with --policy auto on a device profile also auto+slices, auto with the runs "
               "the slice search chose, down to their own floor");
  app.add_option("--sweep-steps", o->sweep_steps, "--sweep: evenly spaced budgets, ends included (implies --sweep)")
      ->check(CLI::Range(SweepOptions::kMinSteps, SweepOptions::kMaxSteps))->capture_default_str();
  app.add_option("--sweep-svg", o->sweep_svg,
                 "write an SVG of the sweep: step time against budget, one line per policy (implies --sweep)");
  app.add_option("--ranks", o->ranks,
                 "data parallel: plan for this many ranks (--batch is per rank, as PyTorch DDP's batch_size); "
                 "adds a table of each configuration's all-reduce, hidden fraction and efficiency against one rank "
                 "(JSON: \"data_parallel\")")
      ->capture_default_str();
  app.add_option("--network", o->network,
                 "data parallel: the network between ranks, a name from profiles/networks (ethernet-100g, "
                 "hdr-infiniband, nvlink-a100, mpi-shared-memory: this host's MPI, measured) or a JSON file");
  app.add_option("--bucket-size", o->bucket_size, "data parallel: gradient bucket size (PyTorch DDP's bucket_cap_mb)")
      ->capture_default_str();
  app.add_flag("--scaling", o->scaling,
               "data parallel: plan every configuration at 1, 2, 4, ..., 64 ranks on --network and print the "
               "predicted scaling");
  app.add_option("--scaling-svg", o->scaling_svg,
                 "write an SVG of the predicted scaling efficiency against ranks (implies --scaling)");
  app.add_option("--scaling-with", o->scaling_with,
                 "--scaling-svg: also draw the series of earlier `vdnn plan --scaling --json` outputs (e.g. the "
                 "same model at another batch or policy); repeatable");
  app.add_flag("--inference", o->inference,
               "plan the forward pass alone (vdnn infer): peak by class, smallest budget and latency per batch "
               "size; --device may list several, e.g. cpu,jetson-orin-nano");
  app.add_option("--batches", o->batches, "--inference: batch sizes, e.g. 1,8,32 (default: --batch)");
  app.add_flag("--json", o->json, "print JSON instead of a table");
  return [o, sub = &app] {
    o->sweep = o->sweep || sub->count("--sweep-steps") > 0 || !o->sweep_svg.empty();
    o->scaling = o->scaling || !o->scaling_svg.empty();
    return run_plan(*o);
  };
}

}  // namespace vdnn::cli
