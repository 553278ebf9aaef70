// tools/plan_largest.h — how `vdnn plan --max-batch` and `--max-seq-len` show their answer
// (planning/largest_fitting.h): one row per policy with the largest batch (or sequence length) that
// trains in the budget, the configuration that runs it, its step, throughput (samples or tokens per
// second) and overhead against the oracle at that size, its peak, and what the next size would need
// (none, conv, all: its smallest budget; dyn: all + leanest's) — or the same as JSON.
//
//   std::vector<PolicyLargest> rows = largest_per_policy(plan_at, {"none", "auto"}, 1 << 20);
//   print_largest_table(rows, {.model = "vgg16", .device = "titan-x-maxwell", .budget = size_t{12} << 30});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planning/largest_fitting.h"

namespace vdnn::cli {

struct LargestHeader {
  std::string model, device, optimizer = "sgd", optimizer_state = "device";
  size_t budget = 0;
  int64_t batch = 0;  // searching the sequence length: the batch it is planned at; 0: searching the batch
  std::string cap;    // what the largest size searched is: "the batch limit", "the 1024 positions of 'wpe'"
};

void print_largest_table(const std::vector<PolicyLargest>& rows, const LargestHeader& header);
nlohmann::json largest_json(const std::vector<PolicyLargest>& rows, const LargestHeader& header);

}  // namespace vdnn::cli
