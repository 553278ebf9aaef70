#include "report/memory_timeline_chart.h"

#include <algorithm>

#include "report/chart.h"
#include "util/size_parse.h"

namespace vdnn {
namespace {

constexpr double kTimelineWidth = 960, kTimelineLeft = 90, kTimelineRight = 30, kTimelineTop = 92;
constexpr double kHeader = 24, kPlotHeight = 150, kAxisSpace = 46;

double panel_height() { return kHeader + kPlotHeight + kAxisSpace; }

}  // namespace

std::vector<MemoryPoint> busiest_per_span(const std::vector<MemoryPoint>& m, double end, size_t spans) {
  if (m.size() <= spans || end <= 0) return m;
  std::vector<MemoryPoint> kept;
  size_t current = spans;  // no span yet
  for (const MemoryPoint& p : m) {
    const size_t span = std::min(spans - 1, static_cast<size_t>(p.seconds / end * static_cast<double>(spans)));
    if (span != current) {
      kept.push_back(p);
      current = span;
    } else if (p.bytes > kept.back().bytes) {
      const double from = kept.back().seconds;
      kept.back() = p;
      kept.back().seconds = from;
    }
  }
  return kept;
}

namespace {

// Stacked step-shaped areas: class k fills between the sums of classes < k and <= k. Two points
// per pixel at most (a 20,000-layer chain's picture held 150 MB of outline before).
void draw_areas(Svg& svg, const PlotArea& plot, const MemoryPanel& panel, const ChartUnit& bytes,
                const ChartUnit& time) {
  const double end = std::max(panel.step_seconds, panel.memory.back().seconds);
  const std::vector<MemoryPoint> m = busiest_per_span(panel.memory, end, 2 * static_cast<size_t>(plot.width));
  std::vector<double> below(m.size(), 0.0);
  for (MemoryClass c : kAllMemoryClasses) {
    std::vector<double> above(below);
    bool any = false;
    for (size_t i = 0; i < m.size(); ++i) {
      above[i] += static_cast<double>(m[i].of(c)) / bytes.scale;
      any = any || m[i].of(c) > 0;
    }
    if (any) {
      std::vector<std::pair<double, double>> outline;
      for (size_t i = 0; i < m.size(); ++i) {  // the upper edge, left to right
        const double next = i + 1 < m.size() ? m[i + 1].seconds : end;
        outline.push_back({plot.px(m[i].seconds / time.scale), plot.py(above[i])});
        outline.push_back({plot.px(next / time.scale), plot.py(above[i])});
      }
      for (size_t i = m.size(); i-- > 0;) {  // the lower edge, right to left
        const double next = i + 1 < m.size() ? m[i + 1].seconds : end;
        outline.push_back({plot.px(next / time.scale), plot.py(below[i])});
        outline.push_back({plot.px(m[i].seconds / time.scale), plot.py(below[i])});
      }
      svg.polygon(outline, {.fill = class_color(c), .tooltip = to_string(c)});
    }
    below = std::move(above);
  }
}

void draw_budget(Svg& svg, const PlotArea& plot, size_t budget, const ChartUnit& bytes) {
  const double y = plot.py(static_cast<double>(budget) / bytes.scale);
  svg.line(plot.x, y, plot.right(), y, {.stroke = "#000000", .stroke_width = 1.5, .dash = "7 4"});
  svg.text(plot.right() - 4, y - 5, "budget " + format_bytes(budget), {.size = 11, .anchor = "end"});
}

}  // namespace

std::string memory_timeline_svg(const std::string& title, const std::vector<MemoryPanel>& panels, size_t budget_bytes,
                                bool forward_only) {
  const std::string span = forward_only ? "pass" : "step";
  double max_bytes = static_cast<double>(budget_bytes), max_seconds = 0;
  for (const MemoryPanel& p : panels) {
    max_bytes = std::max(max_bytes, static_cast<double>(peak_point(p.memory).bytes));
    max_seconds = std::max({max_seconds, p.step_seconds, p.memory.empty() ? 0.0 : p.memory.back().seconds});
  }
  const ChartUnit bytes = byte_unit(max_bytes), time = time_unit(max_seconds);
  Svg svg(kTimelineWidth, kTimelineTop + panel_height() * static_cast<double>(panels.size()) + 8);
  svg.text(kTimelineLeft, 26,
           std::string("Device memory over one ") + (forward_only ? "forward pass" : "training step") + ": " + title,
           {.size = 16, .bold = true});
  svg.text(kTimelineLeft, 46,
           std::string("simulated; stacked by class; panels share both axes") +
               (budget_bytes ? "; dashed line: the " + format_bytes(budget_bytes) + " budget" : ""),
           {.size = 12, .fill = "#555555"});
  draw_class_legend(svg, kTimelineLeft, 72);
  double top = kTimelineTop;
  for (const MemoryPanel& p : panels) {
    const PlotArea plot{.x = kTimelineLeft,
                        .y = top + kHeader,
                        .width = kTimelineWidth - kTimelineLeft - kTimelineRight,
                        .height = kPlotHeight,
                        .x_max = std::max(max_seconds / time.scale, 1e-9),
                        .y_max = std::max(max_bytes * 1.08 / bytes.scale, 1e-9)};
    const MemoryPoint peak = peak_point(p.memory);
    svg.text(kTimelineLeft, top + kHeader - 7,
             p.label + ": peak " + format_bytes(peak.bytes) + ", " + span + " " +
                 tick_label(p.step_seconds / time.scale, 0.1) + " " + time.name,
             {.size = 13, .bold = true});
    plot.draw_y_axis(svg, "device memory (" + bytes.name + ")");
    plot.draw_x_axis(svg, "time in the " + span + " (" + time.name + ")");
    if (!p.memory.empty()) draw_areas(svg, plot, p, bytes, time);
    if (budget_bytes) draw_budget(svg, plot, budget_bytes, bytes);
    top += panel_height();
  }
  return svg.str();
}

}  // namespace vdnn
