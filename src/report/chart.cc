#include "report/chart.h"

#include <cmath>
#include <cstdio>
#include <iterator>

namespace vdnn {
namespace {

constexpr const char* kGrid = "#dddddd";
constexpr const char* kAxis = "#444444";
constexpr double kTickFont = 11, kTitleFont = 12;

double tick_step(double max, int count) {
  if (!(max > 0)) return 1;
  const double raw = max / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

}  // namespace

std::vector<double> nice_ticks(double max, int count) {
  const double step = tick_step(max, count);
  std::vector<double> ticks;
  for (int i = 0; i * step <= max * (1 + 1e-9); ++i) ticks.push_back(i * step);
  return ticks;
}

std::string tick_label(double value, double step) {
  int decimals = 0;
  while (decimals < 6 &&
         std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

void PlotArea::draw_x_axis(Svg& svg, const std::string& title) const {
  const std::vector<double> ticks = nice_ticks(x_max);
  const double step = ticks.size() > 1 ? ticks[1] : 1;
  for (double t : ticks) {
    svg.line(px(t), y, px(t), bottom(), {.stroke = kGrid});
    svg.line(px(t), bottom(), px(t), bottom() + 4, {.stroke = kAxis});
    svg.text(px(t), bottom() + 16, tick_label(t, step), {.size = kTickFont, .anchor = "middle"});
  }
  svg.line(x, bottom(), right(), bottom(), {.stroke = kAxis});
  svg.text(x + width / 2, bottom() + 32, title, {.size = kTitleFont, .anchor = "middle"});
}

void PlotArea::draw_y_axis(Svg& svg, const std::string& title) const {
  const std::vector<double> ticks = nice_ticks(y_max, 4);
  const double step = ticks.size() > 1 ? ticks[1] : 1;
  for (double t : ticks) {
    svg.line(x, py(t), right(), py(t), {.stroke = kGrid});
    svg.line(x - 4, py(t), x, py(t), {.stroke = kAxis});
    svg.text(x - 7, py(t) + 4, tick_label(t, step), {.size = kTickFont, .anchor = "end"});
  }
  svg.line(x, y, x, bottom(), {.stroke = kAxis});
  svg.text(x - 46, y + height / 2, title, {.size = kTitleFont, .anchor = "middle", .rotate = -90});
}

void PlotArea::draw_frame(Svg& svg) const { svg.rect(x, y, width, height, {.stroke = kAxis}); }

ChartUnit byte_unit(double max_bytes) {
  if (max_bytes < 2.0 * (1 << 30)) return {double(1 << 20), "MiB"};
  return {double(1 << 30), "GiB"};
}

ChartUnit time_unit(double max_seconds) {
  if (max_seconds < 10) return {1e-3, "ms"};
  return {1, "s"};
}

const char* series_color(size_t i) {
  static constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f",
                                            "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};
  return kColors[i % std::size(kColors)];
}

const char* class_color(MemoryClass cls) {
  switch (cls) {
    case MemoryClass::kWeights:
      return "#4e79a7";
    case MemoryClass::kWeightGrads:
      return "#76b7b2";
    case MemoryClass::kOptimizerState:
      return "#b07aa1";
    case MemoryClass::kFeatureMaps:
      return "#f28e2b";
    case MemoryClass::kGradientMaps:
      return "#e15759";
    case MemoryClass::kWorkspace:
      return "#edc948";
  }
  return "#999999";
}

double draw_class_legend(Svg& svg, double x, double y) {
  const double start = x;
  for (MemoryClass c : kAllMemoryClasses) {
    svg.rect(x, y - 10, 12, 12, {.fill = class_color(c)});
    svg.text(x + 16, y, to_string(c), {.size = kTitleFont});
    x += 16 + text_width(to_string(c), kTitleFont) + 14;
  }
  return x - start;
}

}  // namespace vdnn
