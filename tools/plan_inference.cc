#include "plan_inference.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/planner.h"
#include "planning/device_planner.h"
#include "report/memory_timeline_chart.h"
#include "rewrites/fc_split.h"
#include "runtime/net_settings.h"
#include "util/json_dump.h"
#include "util/size_parse.h"
#include "util/text_file.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

struct InferenceRow {
  std::string device;
  int64_t batch = 0;
  size_t budget = 0;  // 0: none
  InferenceEvaluation e;
};

double mib_of(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

nlohmann::json row_json(const InferenceRow& r) {
  const InferencePeak p = inference_peak(r.e.planned.plan);
  nlohmann::json j = {
      {"device", r.device},
      {"batch", r.batch},
      {"fits", r.e.fits},
      {"peak_bytes", p.total},
      {"smallest_budget_bytes", r.e.planned.smallest_budget},
      {"peak_by_class", {{"weights", p.weights}, {"activations", p.activations}, {"workspace", p.workspace}}},
      {"latency_seconds", r.e.time.iteration_seconds},
      {"images_per_second", static_cast<double>(r.batch) / r.e.time.iteration_seconds},
      {"leaner_layers", r.e.leaner_layers},
      {"streamed_bytes_per_batch", r.e.streamed_bytes},
      {"smallest_streamed_budget_bytes", r.e.planned.smallest_streamed_budget}};
  if (r.budget) j["budget_bytes"] = r.budget;
  return j;
}

void print_inference_row(const InferenceRow& r) {
  const InferencePeak p = inference_peak(r.e.planned.plan);
  const double t = r.e.time.iteration_seconds;
  std::printf("%-22s %6lld %9.1f %9.1f %9.1f %9.1f %11s %9.1f %11.3f %11.1f %6d %s\n", r.device.c_str(),
              static_cast<long long>(r.batch), mib_of(p.total), mib_of(p.weights), mib_of(p.activations),
              mib_of(p.workspace), format_bytes(r.e.planned.smallest_budget).c_str(), mib_of(r.e.streamed_bytes),
              t * 1e3, static_cast<double>(r.batch) / t, r.e.leaner_layers, r.budget ? (r.e.fits ? "yes" : "no") : "");
}

}  // namespace

std::vector<int64_t> parse_batches(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long b = 0;
    try {
      b = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || b < 1 || b > kMaxBatch)
      VDNN_THROW(flag << " '" << text << "': '" << item << "' is not a batch size 1.." << kMaxBatch
                      << "; expected a comma-separated list, e.g. 1,8,32");
    out.push_back(b);
  }
  if (out.empty()) VDNN_THROW(flag << " is empty; expected a comma-separated list, e.g. 1,8,32");
  return out;
}

int run_plan_inference(const InferencePlanRequest& request) {
  std::vector<InferenceRow> rows;
  std::string model;
  for (const std::string& device : request.devices)
    for (int64_t batch : request.batches) {
      // Under a budget, wide fc layers in column blocks, as `vdnn infer` cuts them (rewrites/fc_split.h;
      // not in bf16, where the blocks' concat would write the logits).
      auto load = [&request] {
        Graph g = request.load();
        if (request.budget && request.source.precision == Precision::kFp32) split_wide_fc(g, streaming_block_bytes(g));
        return g;
      };
      const Graph graph = load();
      model = graph.name();
      PlanSourceOptions source = request.source;
      source.device = device;
      source.calibrate_with = load;  // cpu, measuring: a few timed forward passes of that graph
      source.calibrate_inference = true;
      // A unified-memory board: its host budget holds the streamed weights too.
      const DevicePlanner p(graph, batch, source,
                            {.device_memory = request.budget ? std::optional<size_t>(request.budget) : std::nullopt});
      rows.push_back({p.in.device, batch, p.budget, p.planner.infer(p.budget)});
    }
  if (request.json) {
    nlohmann::json out = {{"model", model}, {"inference", true}, {"rows", nlohmann::json::array()}};
    for (const InferenceRow& r : rows) out["rows"].push_back(row_json(r));
    std::cout << dump_json(out, 2) << "\n";
  } else {
    std::printf("model %s, inference (forward only: weights + activations + workspace)%s\n", model.c_str(),
                request.budget ? (", budget " + format_bytes(request.budget)).c_str() : "");
    std::printf("%-22s %6s %9s %9s %9s %9s %11s %9s %11s %11s %6s %s\n", "device", "batch", "peak MiB", "weights",
                "activ.", "workspace", "min budget", "streamed", "latency ms", "images/s", "leaner", "fits");
    for (const InferenceRow& r : rows) print_inference_row(r);
    std::printf(
        "peak = the most bytes in use at once (the classes' peaks need not coincide); min budget = the "
        "smallest arena the placement needs with every weight resident; streamed = weight MiB streamed from "
        "host memory per batch (under a budget below the weights and working set); leaner = layers on a "
        "leaner algorithm than their fastest so that the budget fits.\n");
  }
  if (!request.svg_memory.empty()) {
    std::vector<MemoryPanel> panels;
    for (const InferenceRow& r : rows)
      if (r.device == rows.front().device)
        panels.push_back({VDNN_MSG("batch " << r.batch), r.e.time.memory, r.e.time.iteration_seconds});
    write_text_file(request.svg_memory,
                    memory_timeline_svg(VDNN_MSG(model << ", " << rows.front().device), panels, request.budget,
                                        /*forward_only=*/true));
  }
  for (const InferenceRow& r : rows)
    if (!r.e.fits) {
      std::fprintf(stderr,
                   "error: model '%s' at batch %lld does not fit %s on %s: it needs at least %s (every weight "
                   "streamed from host memory)\n",
                   model.c_str(), static_cast<long long>(r.batch), describe_budget(r.budget).c_str(), r.device.c_str(),
                   describe_budget(r.e.planned.smallest_streamed_budget).c_str());
      return 1;
    }
  return 0;
}

}  // namespace vdnn::cli
