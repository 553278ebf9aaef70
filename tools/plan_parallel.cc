#include "plan_parallel.h"

#include <algorithm>
#include <cstdio>

#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

// The prefetch rule a row was planned with: auto's own choice, else the command's.
Prefetch prefetch_of(const PlanRow& row, const PlanTable& table, Prefetch prefetch) {
  return row.label.rfind("auto: ", 0) == 0 ? table.chosen.prefetch : prefetch;
}

}  // namespace

CollectiveOptions DataParallel::collectives(int n) const {
  return {.ranks = n, .bucket_bytes = bucket_bytes, .first_bucket_bytes = std::min(bucket_bytes, size_t{1} << 20)};
}

std::vector<int> scaling_ranks() { return {1, 2, 4, 8, 16, 32, 64}; }

std::vector<ScalingSeries> scale_table(const PlanTable& table, Prefetch prefetch, size_t budget,
                                       const std::vector<int>& ranks, const std::function<Planner(int)>& planner_at) {
  VDNN_CHECK(!ranks.empty() && ranks.front() == 1, "a scaling series starts at one rank");
  std::vector<ScalingSeries> out;
  for (const PlanRow& r : table.rows) out.push_back({r.label, {}});
  for (int n : ranks) {
    const Planner planner = planner_at(n);
    for (size_t k = 0; k < table.rows.size(); ++k) {
      const PlanRow& row = table.rows[k];
      const Evaluation e = planner.evaluate(row.e.config, budget, prefetch_of(row, table, prefetch));
      out[k].points.push_back({n, e.fits, e.time.iteration_seconds,
                               e.time.busy_seconds[static_cast<int>(StreamKind::kComm)], e.time.all_reduce_hidden});
    }
  }
  return out;
}

std::string with_batch(const std::string& label, int64_t batch) { return VDNN_MSG(label << ", batch " << batch); }

std::vector<ScalingSeries> scaling_from_json(const nlohmann::json& plan, const std::string& where) {
  const auto fail = [&](const std::string& what) -> std::vector<ScalingSeries> {
    VDNN_THROW(where << ": " << what << " (expected the output of `vdnn plan --scaling --json`)");
  };
  if (!plan.is_object() || !plan.contains("data_parallel")) return fail("no 'data_parallel'");
  const nlohmann::json& dp = plan["data_parallel"];
  std::vector<ScalingSeries> out;
  try {
    const int64_t batch = dp.at("batch_per_rank").get<int64_t>();
    for (const nlohmann::json& c : dp.at("configurations")) {
      ScalingSeries s{with_batch(c.at("configuration").get<std::string>(), batch), {}};
      for (const nlohmann::json& p : c.at("points"))
        s.points.push_back({p.at("ranks").get<int>(), p.at("fits").get<bool>(), p.at("iteration_seconds").get<double>(),
                            p.at("all_reduce_seconds").get<double>(), p.at("all_reduce_hidden").get<double>()});
      if (s.points.empty() || s.points[0].ranks != 1 || !(s.points[0].step_seconds > 0))
        return fail("configuration '" + s.label + "' does not start at one rank with a positive step time");
      out.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(VDNN_MSG("'data_parallel' is malformed: " << e.what()));
  }
  return out;
}

void print_scaling_table(const std::vector<ScalingSeries>& series, int64_t batch, const DataParallel& dp) {
  const NetworkProfile& n = dp.network;
  std::printf(
      "data parallel on %s (%.1f GB/s, %.0f us per message, %s the host link), ring all-reduce, buckets of "
      "%s (the first %s); --batch %lld is per rank (global batch = ranks x %lld)\n",
      n.name.c_str(), n.bytes_per_second / 1e9, n.latency_seconds * 1e6,
      n.shares_host_link ? "shares" : "does not share", format_bytes(dp.bucket_bytes).c_str(),
      format_bytes(dp.collectives(2).first_bucket_bytes).c_str(), static_cast<long long>(batch),
      static_cast<long long>(batch));
  std::printf("%-36s %6s %10s %14s %7s %14s %11s %s\n", "configuration", "ranks", "step ms", "all-reduce ms", "hidden",
              "samples/s/rank", "efficiency", "fits");
  for (const ScalingSeries& s : series)
    for (size_t i = 0; i < s.points.size(); ++i) {
      const ScalingPoint& p = s.points[i];
      std::printf("%-36s %6d %10.2f %14.2f %6.0f%% %14.1f %10.1f%% %s\n", s.label.c_str(), p.ranks,
                  p.step_seconds * 1e3, p.all_reduce_seconds * 1e3, p.hidden * 100,
                  static_cast<double>(batch) / p.step_seconds, s.efficiency(i) * 100, p.fits ? "yes" : "no");
    }
  std::printf(
      "efficiency = one-rank step / N-rank step at the same per-rank batch; hidden = the all-reduce time "
      "during which the compute stream is busy.\n");
}

nlohmann::json scaling_json(const std::vector<ScalingSeries>& series, int64_t batch, const DataParallel& dp) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ScalingSeries& s : series) {
    nlohmann::json points = nlohmann::json::array();
    for (size_t i = 0; i < s.points.size(); ++i) {
      const ScalingPoint& p = s.points[i];
      points.push_back({{"ranks", p.ranks},
                        {"fits", p.fits},
                        {"iteration_seconds", p.step_seconds},
                        {"all_reduce_seconds", p.all_reduce_seconds},
                        {"all_reduce_hidden", p.hidden},
                        {"samples_per_second_per_rank", static_cast<double>(batch) / p.step_seconds},
                        {"efficiency", s.efficiency(i)}});
    }
    rows.push_back({{"configuration", s.label}, {"points", points}});
  }
  return {{"network", dp.network.name},
          {"network_bytes_per_second", dp.network.bytes_per_second},
          {"network_latency_seconds", dp.network.latency_seconds},
          {"shares_host_link", dp.network.shares_host_link},
          {"bucket_bytes", dp.bucket_bytes},
          {"batch_per_rank", batch},
          {"configurations", rows}};
}

}  // namespace vdnn::cli
