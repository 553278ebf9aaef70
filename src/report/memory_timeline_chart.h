// report/memory_timeline_chart.h — the picture a vDNN user wants: device memory over one training
// step, stacked by class, one panel per configuration (none, conv, all, dyn's pick).
//
// Model: each panel draws a step's memory timeline (plan/step_timeline.h: bytes per class after
// every alloc and free) as stacked step-shaped areas, weights at the bottom and workspace on top.
// All panels share both axes — time in the step and device memory — so a longer step (offload
// overhead) and a lower peak (offload savings) read directly; the budget is a dashed line. A
// timeline of more points than two per pixel (a network of thousands of layers) is drawn at two
// per pixel, each the busiest of its span of time, so the peak always shows and the file stays
// small.
//
//   std::vector<MemoryPanel> panels;
//   for (const Row& r : rows) panels.push_back({r.label, r.e.time.memory, r.e.time.iteration_seconds});
//   write_text_file("memory.svg", memory_timeline_svg("vgg16, batch 256, titan-x-maxwell", panels,
//                                                     size_t{12} << 30));
#pragma once

#include <string>
#include <vector>

#include "plan/step_timeline.h"

namespace vdnn {

struct MemoryPanel {
  std::string label;                // "all+fastest"
  std::vector<MemoryPoint> memory;  // one step, in time order from 0
  double step_seconds = 0;          // when the step ends (the last area runs to here)
};

// At most `spans` points, in time order: the step (0 to `end`) cut into that many equal spans, each
// the point of its span that holds the most bytes, from the span's first point on (the peak is
// never lost; a dip shorter than a span is). A timeline of no more points comes back as it is.
std::vector<MemoryPoint> busiest_per_span(const std::vector<MemoryPoint>& memory, double end, size_t spans);

// The SVG document; `title` names model, batch and device; budget 0: no budget line.
// forward_only: the panels are forward passes of an inference Net (plan/planned_inference.h).
std::string memory_timeline_svg(const std::string& title, const std::vector<MemoryPanel>& panels, size_t budget_bytes,
                                bool forward_only = false);

}  // namespace vdnn
