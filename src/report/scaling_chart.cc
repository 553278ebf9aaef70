#include "report/scaling_chart.h"

#include <cmath>
#include <cstdio>

#include "report/chart.h"
#include "report/svg.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr double kWidth = 1000, kMargin = 20, kLegendRow = 20;
constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f",
                                   "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};

const char* color(size_t i) { return kColors[i % std::size(kColors)]; }

bool fits(const ScalingSeries& s) {
  for (const ScalingPoint& p : s.points)
    if (!p.fits) return false;
  return true;
}

std::string tip(const ScalingSeries& s, size_t i) {
  const ScalingPoint& p = s.points[i];
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %d ranks: step %.2f ms, all-reduce %.2f ms (%.0f%% hidden), efficiency %.1f%%",
                s.label.c_str(), p.ranks, p.step_seconds * 1e3, p.all_reduce_seconds * 1e3, p.hidden * 100,
                s.efficiency(i) * 100);
  return buf;
}

}  // namespace

double ScalingSeries::efficiency(size_t i) const {
  VDNN_CHECK(!points.empty() && points[0].ranks == 1, "a scaling series starts at one rank");
  return points.at(i).step_seconds > 0 ? points[0].step_seconds / points[i].step_seconds : 1.0;
}

std::string scaling_svg(const std::string& title, const std::vector<ScalingSeries>& series) {
  int max_ranks = 2;
  for (const ScalingSeries& s : series)
    for (const ScalingPoint& p : s.points) max_ranks = std::max(max_ranks, p.ranks);
  const double x_max = std::log2(static_cast<double>(max_ranks));
  const PlotArea plot{.x = 80, .y = 80, .width = 560, .height = 340, .x_max = x_max * 1.04, .y_max = 105};

  Svg svg(kWidth, plot.bottom() + 60);
  svg.text(kMargin, 26, "Predicted data-parallel scaling: " + title, {.size = 16, .bold = true});
  svg.text(kMargin, 46,
           "efficiency = one-rank step time / N-rank step time at the same per-rank batch (ring all-reduce of "
           "DDP-style gradient buckets, overlapped with backward)",
           {.size = 12, .fill = "#555555"});
  plot.draw_y_axis(svg, "scaling efficiency (%)");
  plot.draw_frame(svg);
  // x: log2 of the rank count, one tick per count drawn (the linear axis helper would label log2).
  for (int n = 1; n <= max_ranks; n *= 2) {
    const double x = plot.px(std::log2(static_cast<double>(n)));
    svg.line(x, plot.y, x, plot.bottom(), {.stroke = "#e0e0e0"});
    svg.line(x, plot.bottom(), x, plot.bottom() + 5, {.stroke = "#222222"});
    svg.text(x, plot.bottom() + 18, std::to_string(n), {.size = 11, .anchor = "middle"});
  }
  svg.text(plot.x + plot.width / 2, plot.bottom() + 40, "ranks (log scale)", {.size = 12, .anchor = "middle"});
  for (size_t k = 0; k < series.size(); ++k) {
    const ScalingSeries& s = series[k];
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < s.points.size(); ++i)
      points.push_back({plot.px(std::log2(static_cast<double>(s.points[i].ranks))), plot.py(s.efficiency(i) * 100)});
    const std::string dash = fits(s) ? "" : "7 4";
    svg.polyline(points, {.stroke = color(k), .stroke_width = 2, .dash = dash, .tooltip = s.label});
    for (size_t i = 0; i < points.size(); ++i)
      svg.rect(points[i].first - 2.5, points[i].second - 2.5, 5, 5, {.fill = color(k), .tooltip = tip(s, i)});
  }
  double row = plot.y + 4;
  const double x = plot.right() + 30;
  svg.text(x, row, "configuration (efficiency at " + std::to_string(max_ranks) + " ranks)", {.size = 12, .bold = true});
  for (size_t k = 0; k < series.size(); ++k) {
    const ScalingSeries& s = series[k];
    row += kLegendRow;
    char eff[32];
    std::snprintf(eff, sizeof eff, "%.0f%%", s.efficiency(s.points.size() - 1) * 100);
    svg.line(x, row - 4, x + 26, row - 4, {.stroke = color(k), .stroke_width = 2, .dash = fits(s) ? "" : "7 4"});
    svg.text(x + 32, row, s.label + " (" + eff + (fits(s) ? ")" : "; does not fit)"), {.size = 12});
  }
  return svg.str();
}

}  // namespace vdnn
