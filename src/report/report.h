// report/report.h — the JSON run report written by `vdnn train --report FILE.json`.
//
//   nlohmann::json r = train_report(model_name, config, batch, result);
//   write_json_file("run.json", r);      // throws vdnn::Error naming the file on failure
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/trainer.h"

namespace vdnn {

nlohmann::json train_report(const std::string& model, const TrainConfig& config, int64_t batch,
                            const TrainResult& result);
// The memory runtime's figures: planned peaks by class, average, bytes moved, stall time.
nlohmann::json memory_report(Net& net, const TrainResult& result);
// What the run decided, per layer: its kernel, its convolution algorithm and why (`algo_reason`,
// e.g. "--conv-algo auto" or dyn's sentence), and which of its values are offloaded (or recomputed:
// per layer "recomputed" and "recomputed_bytes_per_step", present only under recompute decisions;
// an offloaded tensor with release or prefetch points of its own names the layers they are at).
nlohmann::json decisions_report(Net& net, const std::string& algo_reason);
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace vdnn
