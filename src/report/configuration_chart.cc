#include "report/configuration_chart.h"

#include <algorithm>

#include "report/chart.h"
#include "util/size_parse.h"

namespace vdnn {
namespace {

constexpr double kBarsTop = 130, kBarRow = 30, kBar = 18, kBarGap = 40, kBarsRight = 20;
constexpr const char* kTimeColor = "#7f7f7f";
constexpr const char* kTooBig = "#c0392b";

double row_middle(const PlotArea& plot, size_t i) { return plot.y + 8 + kBarRow * (static_cast<double>(i) + 0.5); }

void draw_memory_row(Svg& svg, const PlotArea& plot, const ConfigurationBar& b, size_t i, const ChartUnit& unit) {
  const double top = row_middle(plot, i) - kBar / 2;
  double x = 0;
  for (MemoryClass c : kAllMemoryClasses) {
    const double w = static_cast<double>(b.peak.of(c)) / unit.scale;
    if (w <= 0) continue;
    svg.rect(plot.px(x), top, plot.px(x + w) - plot.px(x), kBar,
             {.fill = class_color(c), .tooltip = std::string(to_string(c)) + ": " + format_bytes(b.peak.of(c))});
    x += w;
  }
  const double min_budget = static_cast<double>(b.minimum_budget) / unit.scale;
  svg.line(plot.px(min_budget), top - 3, plot.px(min_budget), top + kBar + 3, {.stroke = "#000000", .stroke_width = 2});
  const double label_x = plot.px(std::max(x, min_budget)) + 6;
  svg.text(label_x, top + 13, format_bytes(b.peak.bytes), {.size = 11});
  if (!b.fits)
    svg.text(label_x + text_width(format_bytes(b.peak.bytes), 11) + 6, top + 13, "does not fit",
             {.size = 11, .bold = true, .fill = kTooBig});
}

void draw_time_row(Svg& svg, const PlotArea& plot, const ConfigurationBar& b, size_t i, const ChartUnit& unit,
                   double oracle) {
  const double top = row_middle(plot, i) - kBar / 2, v = b.step_seconds / unit.scale;
  svg.rect(plot.px(0), top, plot.px(v) - plot.px(0), kBar, {.fill = kTimeColor});
  std::string label = tick_label(v, v >= 100 ? 1 : 0.01) + " " + unit.name;
  if (oracle > 0) label += " (+" + tick_label(100 * (b.step_seconds / oracle - 1), 1) + "%)";
  svg.text(plot.px(v) + 6, top + 13, label, {.size = 11});
}

void draw_vertical_marker(Svg& svg, const PlotArea& plot, double v, const std::string& label) {
  svg.line(plot.px(v), plot.y, plot.px(v), plot.bottom(), {.stroke = "#000000", .stroke_width = 1.5, .dash = "7 4"});
  svg.text(plot.px(v) + 4, plot.y - 4, label, {.size = 11});
}

}  // namespace

std::string configuration_chart_svg(const std::string& title, const std::vector<ConfigurationBar>& bars,
                                    size_t budget_bytes, double oracle_seconds) {
  double label_width = 120, max_bytes = static_cast<double>(budget_bytes), max_seconds = oracle_seconds;
  for (const ConfigurationBar& b : bars) {
    label_width = std::max(label_width, text_width(b.label, 12) + 16);
    max_bytes = std::max({max_bytes, static_cast<double>(b.peak.bytes), static_cast<double>(b.minimum_budget)});
    max_seconds = std::max(max_seconds, b.step_seconds);
  }
  const ChartUnit bytes = byte_unit(max_bytes), time = time_unit(max_seconds);
  const double left = label_width + 10, plots = kPageWidth - left - kBarGap - kBarsRight;
  const double height = kBarRow * static_cast<double>(bars.size()) + 16;
  // Room right of the longest bar for its label.
  const PlotArea memory{.x = left,
                        .y = kBarsTop,
                        .width = plots * 0.56,
                        .height = height,
                        .x_max = std::max(max_bytes * 1.45 / bytes.scale, 1e-9),
                        .y_max = 1};
  const PlotArea step{.x = memory.right() + kBarGap,
                      .y = kBarsTop,
                      .width = plots * 0.44,
                      .height = height,
                      .x_max = std::max(max_seconds * 1.5 / time.scale, 1e-9),
                      .y_max = 1};

  Svg svg(kPageWidth, kBarsTop + height + 50);
  svg.text(kPageMargin, 26, "Configurations compared: " + title, {.size = 16, .bold = true});
  svg.text(kPageMargin, 46, "predicted by the planner: peak device memory by class (at the peak) and time per step",
           {.size = 12, .fill = "#555555"});
  svg.text(kPageMargin, 63,
           "black tick: the smallest budget each trains in; dashed: the budget, and the oracle "
           "(none, fastest algorithms, unlimited memory)",
           {.size = 12, .fill = "#555555"});
  draw_class_legend(svg, kPageMargin, 88);
  svg.text(memory.x, kBarsTop - 22, "peak device memory", {.size = 13, .bold = true});
  svg.text(step.x, kBarsTop - 22, "predicted step time", {.size = 13, .bold = true});
  memory.draw_x_axis(svg, "device memory (" + bytes.name + ")");
  step.draw_x_axis(svg, "time per training step (" + time.name + ")");
  for (size_t i = 0; i < bars.size(); ++i) {
    svg.text(left - 10, row_middle(memory, i) + 4, bars[i].label, {.size = 12, .anchor = "end"});
    draw_memory_row(svg, memory, bars[i], i, bytes);
    draw_time_row(svg, step, bars[i], i, time, oracle_seconds);
  }
  if (budget_bytes)
    draw_vertical_marker(svg, memory, static_cast<double>(budget_bytes) / bytes.scale,
                         "budget " + format_bytes(budget_bytes));
  if (oracle_seconds > 0) {
    const double oracle = oracle_seconds / time.scale;
    draw_vertical_marker(svg, step, oracle, "oracle " + tick_label(oracle, 0.1) + " " + time.name);
  }
  return svg.str();
}

}  // namespace vdnn
