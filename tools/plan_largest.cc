#include "plan_largest.h"

#include <cstdio>
#include <optional>

#include "util/size_parse.h"

namespace vdnn::cli {
namespace {

// The smallest budget of the policy's configuration at the refused size, where the plan knows it.
std::optional<size_t> next_size_needs(const PolicyLargest& r) {
  if (!r.refused) return std::nullopt;
  if (r.policy == "dyn") return r.refused->dyn.minimum_budget;
  if (r.refused->one && !r.refused->rows.empty()) return r.refused->rows.front().e.minimum_budget;
  return std::nullopt;  // auto: its search says what fits, not the least it could need
}

std::string peak_mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// Samples per step, or tokens per step when the sequence length is searched.
double items_per_step(const PolicyLargest& r, const LargestHeader& h) {
  return static_cast<double>(r.largest) * static_cast<double>(h.batch ? h.batch : 1);
}

}  // namespace

void print_largest_table(const std::vector<PolicyLargest>& rows, const LargestHeader& h) {
  const bool seq = h.batch > 0;
  std::printf("model %s, device %s, budget %s%s%s%s: the largest %s each policy trains in\n", h.model.c_str(),
              h.device.c_str(), format_bytes(h.budget).c_str(),
              seq ? (", batch " + std::to_string(h.batch)).c_str() : "",
              h.optimizer == "sgd" ? "" : (", optimizer " + h.optimizer).c_str(),
              h.optimizer_state == "host" ? ", its state in host memory" : "", seq ? "sequence length" : "batch");
  std::printf("%-7s %11s  %-40s %10s %10s %9s %9s %15s %6s\n", "policy", seq ? "max length" : "max batch",
              "configuration", "step ms", seq ? "tokens/s" : "samples/s", "vs oracle", "peak MiB",
              seq ? "length+1 needs" : "batch+1 needs", "plans");
  for (const PolicyLargest& r : rows) {
    const std::optional<size_t> needs = next_size_needs(r);
    const std::string next = needs ? format_bytes(*needs) : r.refused ? "-" : "the cap";
    if (!r.at) {
      std::printf("%-7s %11s  %-40s %10s %10s %9s %9s %15s %6d\n", r.policy.c_str(), "none",
                  seq ? "(length 1 does not fit)" : "(batch 1 does not fit)", "", "", "", "", next.c_str(), r.plans);
      continue;
    }
    const PlanRow& p = r.at->rows.front();
    const double step = p.e.time.iteration_seconds;
    std::printf("%-7s %11lld  %-40s %10.2f %10.1f %8.1f%% %9s %15s %6d\n", r.policy.c_str(),
                static_cast<long long>(r.largest), p.label.c_str(), step * 1e3, items_per_step(r, h) / step,
                (step / r.at->oracle - 1) * 100, peak_mib(p.e.memory.peak_bytes).c_str(), next.c_str(), r.plans);
  }
  std::printf(
      "each row: the largest %s whose plan fits, found by doubling and bisection (the next was planned and does not "
      "fit, or the row is at the cap: %s); vs oracle: against none with the fastest algorithms and unlimited memory at "
      "that size; run it with `vdnn train %s` and the row's policy.\n",
      seq ? "sequence length" : "batch", h.cap.c_str(), seq ? "--input N" : "--batch N");
}

nlohmann::json largest_json(const std::vector<PolicyLargest>& rows, const LargestHeader& h) {
  const bool seq = h.batch > 0;
  nlohmann::json out{{"model", h.model},
                     {"device", h.device},
                     {"device_memory", h.budget},
                     {"optimizer", h.optimizer},
                     {"optimizer_state", h.optimizer_state}};
  if (seq) out["batch"] = h.batch;
  out["cap"] = h.cap;
  nlohmann::json list = nlohmann::json::array();
  for (const PolicyLargest& r : rows) {
    nlohmann::json j{{"policy", r.policy}, {seq ? "max_seq_len" : "max_batch", r.largest}, {"plans", r.plans}};
    if (r.at)
      j["plan"] = plan_json(
          *r.at, {.model = h.model,
                  .batch = seq ? h.batch : r.largest,
                  .device = h.device,
                  .optimizer = h.optimizer,
                  .optimizer_state = h.optimizer_state});
    const std::optional<size_t> needs = next_size_needs(r);
    j[seq ? "next_length_minimum_budget" : "next_batch_minimum_budget"] =
        needs ? nlohmann::json(*needs) : nlohmann::json();
    list.push_back(std::move(j));
  }
  out[seq ? "max_seq_len" : "max_batch"] = std::move(list);
  return out;
}

}  // namespace vdnn::cli
