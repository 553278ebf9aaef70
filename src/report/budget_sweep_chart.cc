#include "report/budget_sweep_chart.h"

#include <algorithm>

#include "report/chart.h"
#include "util/size_parse.h"

namespace vdnn {
namespace {

const char* policy_color(size_t policy) { return series_color(policy); }
std::string dash_of(const SweepColumn& c) { return c.prefetch == Prefetch::kAhead ? "7 4" : ""; }

std::string ms_label(double seconds) { return tick_label(seconds * 1e3, seconds * 1e3 >= 100 ? 1 : 0.01) + " ms"; }

void draw_column(Svg& svg, const PlotArea& plot, const BudgetSweep& s, size_t column, const ChartUnit& bytes,
                 const ChartUnit& time, const NetworkCosts& costs) {
  const SweepColumn& c = s.columns[column];
  std::vector<std::pair<double, double>> points;
  for (size_t r = 0; r < s.budgets.size(); ++r)
    if (const SweepCell& cell = s.cells[r][column]; cell.fits)
      points.push_back(
          {plot.px(static_cast<double>(s.budgets[r]) / bytes.scale), plot.py(cell.step_seconds / time.scale)});
  svg.polyline(points, {.stroke = policy_color(c.policy), .stroke_width = 2, .dash = dash_of(c), .tooltip = c.name});
  for (size_t r = 0, k = 0; r < s.budgets.size(); ++r) {
    const SweepCell& cell = s.cells[r][column];
    if (!cell.fits) continue;
    std::string tip = c.name + " at " + format_bytes(s.budgets[r]) + ": " + ms_label(cell.step_seconds) + ", " +
                      describe(cell.config, c.costs_or(costs));
    if (cell.prefetch_depth) tip += ", ahead " + std::to_string(cell.prefetch_depth);
    const auto [x, y] = points[k++];
    svg.rect(x - 2.5, y - 2.5, 5, 5, {.fill = policy_color(c.policy), .tooltip = tip});
  }
}

void draw_legend(Svg& svg, double x, double y, const BudgetSweep& s) {
  svg.text(x, y, "policy (smallest budget)", {.size = 12, .bold = true});
  for (size_t i = 0; i < s.columns.size(); ++i) {
    const SweepColumn& c = s.columns[i];
    const double row = y + kLegendRow * static_cast<double>(i + 1);
    svg.line(x, row - 4, x + 26, row - 4, {.stroke = policy_color(c.policy), .stroke_width = 2, .dash = dash_of(c)});
    svg.text(x + 32, row, c.name + " (" + format_bytes(c.smallest_budget) + ")", {.size = 12});
  }
  const double row = y + kLegendRow * static_cast<double>(s.columns.size() + 1);
  svg.line(x, row - 4, x + 26, row - 4, {.stroke = "#000000", .stroke_width = 1.5, .dash = "3 3"});
  svg.text(x + 32, row, "oracle", {.size = 12});
}

}  // namespace

std::string budget_sweep_svg(const std::string& title, const BudgetSweep& sweep, const NetworkCosts& costs,
                             size_t budget_bytes) {
  double max_seconds = sweep.oracle_seconds;
  for (const auto& row : sweep.cells)
    for (const SweepCell& cell : row)
      if (cell.fits) max_seconds = std::max(max_seconds, cell.step_seconds);
  const double max_bytes = static_cast<double>(std::max(sweep.top, budget_bytes));
  const ChartUnit bytes = byte_unit(max_bytes), time = time_unit(max_seconds);
  const PlotArea plot{.x = 80,
                      .y = 90,
                      .width = 640,
                      .height = 380,
                      .x_max = std::max(max_bytes * 1.05 / bytes.scale, 1e-9),
                      .y_max = std::max(max_seconds * 1.1 / time.scale, 1e-9)};

  Svg svg(kPageWidth, plot.bottom() + 60);
  svg.text(kPageMargin, 26, "Step time against budget: " + title, {.size = 16, .bold = true});
  svg.text(kPageMargin, 46,
           "predicted by the planner at " + std::to_string(sweep.budgets.size()) + " budgets from " +
               format_bytes(sweep.top) + " down to the floor, " + format_bytes(sweep.floor) +
               "; a line ends where its policy no longer fits",
           {.size = 12, .fill = "#555555"});
  svg.text(kPageMargin, 63, "dashed: --prefetch ahead; dotted: the oracle (none, fastest algorithms, unlimited memory)",
           {.size = 12, .fill = "#555555"});
  plot.draw_x_axis(svg, "device budget (" + bytes.name + ")");
  plot.draw_y_axis(svg, "time per training step (" + time.name + ")");
  plot.draw_frame(svg);
  const double oracle = plot.py(sweep.oracle_seconds / time.scale);
  svg.line(plot.x, oracle, plot.right(), oracle, {.stroke = "#000000", .stroke_width = 1.5, .dash = "3 3"});
  svg.text(plot.x + 4, oracle - 4, "oracle " + ms_label(sweep.oracle_seconds), {.size = 11});
  if (budget_bytes) {
    const double x = plot.px(static_cast<double>(budget_bytes) / bytes.scale);
    svg.line(x, plot.y, x, plot.bottom(), {.stroke = "#555555", .stroke_width = 1, .dash = "7 4"});
    svg.text(x + 4, plot.y + 12, "budget " + format_bytes(budget_bytes), {.size = 11});
  }
  for (size_t c = 0; c < sweep.columns.size(); ++c) draw_column(svg, plot, sweep, c, bytes, time, costs);
  draw_legend(svg, plot.right() + 30, plot.y + 4, sweep);
  return svg.str();
}

}  // namespace vdnn
