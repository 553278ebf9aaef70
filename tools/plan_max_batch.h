// tools/plan_max_batch.h — how `vdnn plan --max-batch` shows its answer (planning/max_batch.h): one
// row per policy with the largest batch that trains in the budget, the configuration that runs it,
// its step, samples per second and overhead against the oracle at that batch, its peak, and what
// the next batch would need (none, conv, all: its smallest budget; dyn: all + leanest's) — or the
// same as JSON.
//
//   std::vector<MaxBatchRow> rows = max_batch_rows(plan_at, {"none", "auto"}, kMaxBatch);
//   print_max_batch_table(rows, {.model = "vgg16", .device = "titan-x-maxwell", .budget = size_t{12} << 30});
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planning/max_batch.h"

namespace vdnn::cli {

struct MaxBatchHeader {
  std::string model, device, optimizer = "sgd";
  size_t budget = 0;
};

void print_max_batch_table(const std::vector<MaxBatchRow>& rows, const MaxBatchHeader& header);
nlohmann::json max_batch_json(const std::vector<MaxBatchRow>& rows, const MaxBatchHeader& header);

}  // namespace vdnn::cli
