// report/chrome_trace.h — a step timeline as a Chrome trace, for Perfetto and chrome://tracing.
//
// Model: Chrome's Trace Event Format, a JSON object {"traceEvents": [...]}. One process (named
// after the step: model, batch, configuration, predicted or measured) with one thread track per
// stream — compute, d2h, h2d, named by "M" thread_name events and kept in that order by
// thread_sort_index. Every op is an "X" (complete) event: name "forward conv1" / "offload
// conv1:out", category its kind, ts and dur in microseconds from the start of the step, args
// the layer's node index, the pass and the Program step. Device memory is a "C" counter named
// "device memory MiB" with one series per class (weights ... workspace): chrome://tracing stacks
// the series, Perfetto draws one track per class. The simulator's (predicted) and the executor's
// (measured) timelines are written the same way, so the two files open side by side.
//
//   SimResult r = simulate(program, costs);
//   write_chrome_trace("predicted.json", r.timeline(), "vgg16 batch 256, all+fastest, predicted");
//   nlohmann::json j = chrome_trace(recorder.timeline(), "fmnist_cnn batch 128, measured");
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/step_timeline.h"

namespace vdnn {

// The trace events of `timeline`; `title` names the process (the step).
nlohmann::json chrome_trace(const StepTimeline& timeline, const std::string& title);
// Writes chrome_trace() to `path`; throws vdnn::Error naming the file if it cannot.
void write_chrome_trace(const std::string& path, const StepTimeline& timeline, const std::string& title);

}  // namespace vdnn
