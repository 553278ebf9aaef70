#include "plan_max_batch.h"

#include <cstdio>
#include <optional>

#include "util/size_parse.h"

namespace vdnn::cli {
namespace {

// The smallest budget of the policy's configuration at the refused batch, where the plan knows it.
std::optional<size_t> next_batch_needs(const MaxBatchRow& r) {
  if (!r.refused) return std::nullopt;
  if (r.policy == "dyn") return r.refused->dyn.minimum_budget;
  if (r.refused->one && !r.refused->rows.empty()) return r.refused->rows.front().e.minimum_budget;
  return std::nullopt;  // auto: its search says what fits, not the least it could need
}

std::string mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

void print_max_batch_table(const std::vector<MaxBatchRow>& rows, const MaxBatchHeader& h) {
  std::printf("model %s, device %s, budget %s%s: the largest batch each policy trains in\n", h.model.c_str(),
              h.device.c_str(), format_bytes(h.budget).c_str(), h.optimizer == "sgd" ? "" : (", optimizer " + h.optimizer).c_str());
  std::printf("%-7s %9s  %-40s %10s %10s %9s %9s %15s %6s\n", "policy", "max batch", "configuration", "step ms",
              "samples/s", "vs oracle", "peak MiB", "batch+1 needs", "plans");
  for (const MaxBatchRow& r : rows) {
    const std::optional<size_t> needs = next_batch_needs(r);
    const std::string next = needs ? format_bytes(*needs) : r.refused ? "-" : "past the cap";
    if (!r.at) {
      std::printf("%-7s %9s  %-40s %10s %10s %9s %9s %15s %6d\n", r.policy.c_str(), "none", "(batch 1 does not fit)",
                  "", "", "", "", next.c_str(), r.plans);
      continue;
    }
    const PlanRow& p = r.at->rows.front();
    const double step = p.e.time.iteration_seconds;
    std::printf("%-7s %9lld  %-40s %10.2f %10.1f %8.1f%% %9s %15s %6d\n", r.policy.c_str(),
                static_cast<long long>(r.batch), p.label.c_str(), step * 1e3, static_cast<double>(r.batch) / step,
                (step / r.at->oracle - 1) * 100, mib(p.e.memory.peak_bytes).c_str(), next.c_str(), r.plans);
  }
  std::printf(
      "each row: the largest batch whose plan fits, found by doubling and bisection (the next batch was planned and "
      "does not fit); vs oracle: against none with the fastest algorithms and unlimited memory at that batch; "
      "run it with `vdnn train --batch N` and the row's policy.\n");
}

nlohmann::json max_batch_json(const std::vector<MaxBatchRow>& rows, const MaxBatchHeader& h) {
  nlohmann::json out{{"model", h.model}, {"device", h.device}, {"device_memory", h.budget}, {"optimizer", h.optimizer}};
  nlohmann::json list = nlohmann::json::array();
  for (const MaxBatchRow& r : rows) {
    nlohmann::json j{{"policy", r.policy}, {"max_batch", r.batch}, {"plans", r.plans}};
    if (r.at)
      j["plan"] = plan_json(*r.at, {.model = h.model, .batch = r.batch, .device = h.device, .optimizer = h.optimizer});
    const std::optional<size_t> needs = next_batch_needs(r);
    j["next_batch_minimum_budget"] = needs ? nlohmann::json(*needs) : nlohmann::json();
    list.push_back(std::move(j));
  }
  out["max_batch"] = std::move(list);
  return out;
}

}  // namespace vdnn::cli
