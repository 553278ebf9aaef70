#include "report/scaling_chart.h"

#include <cmath>
#include <cstdio>

#include "report/chart.h"
#include "report/svg.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

const char* color(size_t i) { return series_color(i); }

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
  const double x_max = std::log2(static_cast<double>(max_ranks)) * 1.04;
  // Two panels: the efficiency, and how much of the all-reduce backward hides.
  const PlotArea left{.x = 80, .y = 80, .width = 380, .height = 300, .x_max = x_max, .y_max = 105};
  PlotArea right = left;
  right.x = 580;
  const double legend_y = left.bottom() + 70;
  Svg svg(kPageWidth, legend_y + kLegendRow * (static_cast<double>(series.size()) + 1) + 10);
  svg.text(kPageMargin, 26, "Predicted data-parallel scaling: " + title, {.size = 16, .bold = true});
  svg.text(kPageMargin, 46,
           "efficiency = one-rank step time / N-rank step time at the same per-rank batch; ring all-reduce of "
           "DDP-style gradient buckets on the comm stream",
           {.size = 12, .fill = "#555555"});
  const auto axes = [&](const PlotArea& plot, const std::string& y_title) {
    plot.draw_y_axis(svg, y_title);
    plot.draw_frame(svg);
    // x: log2 of the rank count, one tick per count drawn (the linear axis helper would label log2).
    for (int n = 1; n <= max_ranks; n *= 2) {
      const double x = plot.px(std::log2(static_cast<double>(n)));
      svg.line(x, plot.y, x, plot.bottom(), {.stroke = "#e0e0e0"});
      svg.line(x, plot.bottom(), x, plot.bottom() + 5, {.stroke = "#222222"});
      svg.text(x, plot.bottom() + 18, std::to_string(n), {.size = 11, .anchor = "middle"});
    }
    svg.text(plot.x + plot.width / 2, plot.bottom() + 40, "ranks (log scale)", {.size = 12, .anchor = "middle"});
  };
  axes(left, "scaling efficiency (%)");
  axes(right, "all-reduce hidden under compute (%)");
  for (size_t k = 0; k < series.size(); ++k) {
    const ScalingSeries& s = series[k];
    const std::string dash = fits(s) ? "" : "7 4";
    std::vector<std::pair<double, double>> eff, hid;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const double x = std::log2(static_cast<double>(s.points[i].ranks));
      eff.push_back({left.px(x), left.py(s.efficiency(i) * 100)});
      if (s.points[i].ranks > 1) hid.push_back({right.px(x), right.py(s.points[i].hidden * 100)});
    }
    svg.polyline(eff, {.stroke = color(k), .stroke_width = 2, .dash = dash, .tooltip = s.label});
    svg.polyline(hid, {.stroke = color(k), .stroke_width = 2, .dash = dash, .tooltip = s.label});
    for (size_t i = 0; i < eff.size(); ++i)
      svg.rect(eff[i].first - 2.5, eff[i].second - 2.5, 5, 5, {.fill = color(k), .tooltip = tip(s, i)});
    for (size_t i = 0; i < hid.size(); ++i)
      svg.rect(hid[i].first - 2.5, hid[i].second - 2.5, 5, 5, {.fill = color(k), .tooltip = tip(s, i + 1)});
  }
  double row = legend_y;
  svg.text(left.x, row,
           "configuration (efficiency at " + std::to_string(max_ranks) + " ranks; dashed: does not fit its budget)",
           {.size = 12, .bold = true});
  for (size_t k = 0; k < series.size(); ++k) {
    const ScalingSeries& s = series[k];
    row += kLegendRow;
    char eff[32];
    std::snprintf(eff, sizeof eff, "%.1f%%", s.efficiency(s.points.size() - 1) * 100);
    svg.line(left.x, row - 4, left.x + 26, row - 4,
             {.stroke = color(k), .stroke_width = 2, .dash = fits(s) ? "" : "7 4"});
    svg.text(left.x + 32, row, s.label + " (" + eff + (fits(s) ? ")" : "; does not fit)"), {.size = 12});
  }
  return svg.str();
}

}  // namespace vdnn
