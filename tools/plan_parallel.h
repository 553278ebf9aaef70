// tools/plan_parallel.h — `vdnn plan --ranks N --network NET` and `--scaling`: what data-parallel
// training costs, predicted (plan/collectives.h, the simulator's comm stream).
//
// Model: `--batch` is the per-rank batch (PyTorch DDP's batch_size; the global batch is ranks x
// batch). Each configuration of the plan table (the memory decisions do not depend on the rank
// count: collectives allocate nothing) is planned again at every rank count asked (1 and N, or
// 1, 2, 4, ..., 64 for --scaling) with its gradient buckets all-reduced over the network
// profile's ring; each point gives the step time, the all-reduce (comm stream) time, the fraction
// of it hidden under compute, and against one rank the per-rank throughput and the efficiency.
//
//   DataParallel dp{.ranks = 8, .network = load_network_profile("hdr-infiniband")};
//   auto series = scale_table(table, prefetch, budget, {1, 8}, [&](int n) { return Planner(..., dp.collectives(n)); });
//   print_scaling_table(series, 64, dp);   out["data_parallel"] = scaling_json(series, 64, dp);
//   auto more = scaling_from_json(earlier_output, "vgg16-b1024.json");   // --scaling-with: one SVG, several batches
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/device_profile.h"
#include "plan/planner.h"
#include "planning/plan_report.h"
#include "report/scaling_chart.h"

namespace vdnn::cli {

struct DataParallel {
  int ranks = 1;
  NetworkProfile network;
  size_t bucket_bytes = 25u << 20;  // --bucket-size (DDP's 25 MiB)

  // At `ranks` ranks: the buckets of --bucket-size, the first one DDP's 1 MiB (at most a bucket).
  CollectiveOptions collectives(int ranks) const;
};

// The counts `--scaling` plans: 1, 2, 4, ..., 64.
std::vector<int> scaling_ranks();

// Every row of `table` planned at each count of `ranks` (the first must be 1); `planner_at(n)`
// builds the planner for n ranks.
std::vector<ScalingSeries> scale_table(const PlanTable& table, Prefetch prefetch, size_t budget,
                                       const std::vector<int>& ranks, const std::function<Planner(int)>& planner_at);

// The series of an earlier `vdnn plan --scaling --json` output (`--scaling-with FILE`), labelled
// with their batch; `where` names the file in errors (one line: what is missing or wrong).
std::vector<ScalingSeries> scaling_from_json(const nlohmann::json& plan, const std::string& where);
// "none+fastest, batch 64".
std::string with_batch(const std::string& label, int64_t batch);

void print_scaling_table(const std::vector<ScalingSeries>& series, int64_t batch, const DataParallel& dp);
nlohmann::json scaling_json(const std::vector<ScalingSeries>& series, int64_t batch, const DataParallel& dp);

}  // namespace vdnn::cli
