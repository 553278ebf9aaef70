// report/configuration_chart.h — `vdnn plan --svg`: the configurations side by side, memory and time.
//
// Model: one row per configuration (none+leanest, none+fastest, conv, all, dyn's pick). Left:
// its peak device memory as a bar stacked by class — the classes at the moment of the peak, so
// the bar's length is the peak — with a tick at the smallest budget it trains in
// (fragmentation included) and the budget as a dashed line. Right: its predicted step time,
// with the oracle (none, fastest algorithms, unlimited memory) as a dashed line.
//
//   std::vector<ConfigurationBar> bars;
//   for (const Row& r : rows)
//     bars.push_back({r.label, peak_point(r.e.time.memory), r.e.minimum_budget,
//                     r.e.time.iteration_seconds, r.e.fits});
//   write_text_file("plan.svg", configuration_chart_svg("vgg16, batch 256, titan-x-maxwell", bars,
//                                                       size_t{12} << 30, oracle_seconds));
#pragma once

#include <string>
#include <vector>

#include "plan/step_timeline.h"

namespace vdnn {

struct ConfigurationBar {
  std::string label;          // "all+fastest"
  MemoryPoint peak;           // bytes by class when the step's memory peaks
  size_t minimum_budget = 0;  // the least device memory it trains in
  double step_seconds = 0;    // predicted
  bool fits = true;           // within the budget
};

// The SVG document; `title` names model, batch and device. budget 0 / oracle 0: no such line.
std::string configuration_chart_svg(const std::string& title, const std::vector<ConfigurationBar>& bars,
                                    size_t budget_bytes, double oracle_seconds);

}  // namespace vdnn
