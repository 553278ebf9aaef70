// `vdnn plan`: what each policy needs on the device before anything runs — peak memory by class,
// host memory for offloaded tensors, the smallest budget, and whether a given budget fits.
// `--print` shows the Program (one line per step) of the chosen policy.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "io/model_file.h"
#include "plan/memory_plan.h"
#include "runtime/compiled_graph.h"
#include "util/size_parse.h"

namespace vdnn::cli {
namespace {

struct PlanOptions {
  std::string model = "fmnist_cnn", input, policy, sync = "event", device_memory;
  int classes = 0;
  int64_t batch = 128;
  bool print = false, json = false;
};

std::string mib(size_t bytes) { return VDNN_MSG(static_cast<double>(bytes) / (1 << 20)); }

int run_plan(const PlanOptions& o) {
  ModelOptions mo;
  if (!o.input.empty()) mo.input = parse_shape(o.input, "--input");
  if (o.classes > 0) mo.classes = o.classes;
  const Graph graph = load_model(o.model, mo);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const CompiledGraph compiled(graph, o.batch, 1, engine);
  const SyncMode sync = parse_sync_mode(o.sync);
  const size_t budget = o.device_memory.empty() ? 0 : parse_size(o.device_memory, "--device-memory");
  std::vector<Policy> policies{Policy::kNone, Policy::kConv, Policy::kAll};
  if (!o.policy.empty()) policies = {parse_policy(o.policy)};
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    std::printf("%-6s %10s %10s %10s %10s %10s %10s %12s %s\n", "policy", "peak MiB", "fmaps", "grads",
                "params*", "workspace", "host MiB", "min budget", budget ? "fits" : "");
  // Training also needs the evaluation Program to fit (as `vdnn train` checks); it does not depend
  // on the policy, so it is planned once.
  const Program eval = compiled.program(Policy::kNone, sync, false);
  const size_t eval_min = minimum_budget(eval);
  bool eval_fits = true;
  if (budget) {
    Program e = eval;
    eval_fits = plan_memory(e, budget).fits;
  }
  for (Policy policy : policies) {
    Program p = compiled.program(policy, sync, true);
    const size_t smallest = std::max(minimum_budget(p), eval_min);
    Program probe = p;
    MemoryPlan plan = plan_memory(probe, budget ? budget : smallest);
    plan.fits = plan.fits && eval_fits;
    const MemoryPlan at_min = plan.fits ? plan : [&] { Program q = p; return plan_memory(q, smallest); }();
    const ClassStats& c = at_min.by_class;
    const size_t params = c.peak(MemoryClass::kWeights) + c.peak(MemoryClass::kWeightGrads) +
                          c.peak(MemoryClass::kOptimizerState);
    rows.push_back({{"policy", to_string(policy)}, {"peak_bytes", at_min.peak_bytes},
                    {"feature_maps", c.peak(MemoryClass::kFeatureMaps)},
                    {"gradient_maps", c.peak(MemoryClass::kGradientMaps)}, {"parameters", params},
                    {"workspace", c.peak(MemoryClass::kWorkspace)}, {"host_bytes", at_min.host_bytes},
                    {"minimum_budget", smallest}, {"fits", plan.fits}});
    if (!o.json)
      std::printf("%-6s %10s %10s %10s %10s %10s %10s %12s %s\n", to_string(policy), mib(at_min.peak_bytes).c_str(),
                  mib(c.peak(MemoryClass::kFeatureMaps)).c_str(), mib(c.peak(MemoryClass::kGradientMaps)).c_str(),
                  mib(params).c_str(), mib(c.peak(MemoryClass::kWorkspace)).c_str(), mib(at_min.host_bytes).c_str(),
                  format_bytes(smallest).c_str(), budget ? (plan.fits ? "yes" : "no") : "");
    if (o.print) std::cout << (plan.fits ? probe : p).to_text();
  }
  if (o.json)
    std::cout << nlohmann::json{{"model", graph.name()}, {"batch", o.batch}, {"sync", o.sync},
                                {"device_memory", budget}, {"policies", rows}}.dump(2) << "\n";
  else
    std::printf("* params = weights + weight gradients + momentum. Sizes are oneDNN's blocked layouts on "
                "this CPU, padding included.\n");
  return 0;
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  app.add_option("--model", o->model, "model name or JSON file")->capture_default_str();
  app.add_option("--batch", o->batch, "batch size")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--input", o->input, "override the model's input shape, CxHxW");
  app.add_option("--classes", o->classes, "override the model's class count")->check(CLI::Range(2, 1 << 20));
  app.add_option("--policy", o->policy, "only this policy: none, all or conv")
      ->check(CLI::IsMember({"none", "all", "conv"}));
  app.add_option("--sync", o->sync, "event or layer")->check(CLI::IsMember({"event", "layer"}))
      ->capture_default_str();
  app.add_option("--device-memory", o->device_memory, "a budget to check, e.g. 12GiB");
  app.add_flag("--print", o->print, "print the Program, one line per step");
  app.add_flag("--json", o->json, "print JSON instead of a table");
  return [o] { return run_plan(*o); };
}

}  // namespace vdnn::cli
