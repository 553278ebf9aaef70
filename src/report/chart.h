// report/chart.h — what vdnn's charts share: a plot area with linear axes from zero, round tick
// values, the units to show bytes and seconds in, and one colour per memory class with a legend.
//
// Model: a PlotArea maps data [0, x_max] x [0, y_max] onto a pixel rectangle (y up). Its axes
// get ticks at 1, 2, 2.5 or 5 times a power of ten, grid lines and a title that names the unit
// ("device memory (GiB)", "time in the step (ms)"). Colours are fixed per class in every picture.
//
//   Svg svg(960, 400);
//   const ChartUnit gib = byte_unit(peak_bytes), ms = time_unit(step_seconds);
//   PlotArea plot{.x = 80, .y = 60, .width = 840, .height = 260,
//                 .x_max = step_seconds / ms.scale, .y_max = peak_bytes / gib.scale};
//   plot.draw_x_axis(svg, "time in the step (" + ms.name + ")");
//   plot.draw_y_axis(svg, "device memory (" + gib.name + ")");
//   svg.rect(plot.px(0), plot.py(4), plot.px(1) - plot.px(0), plot.py(0) - plot.py(4), {.fill = "red"});
//   draw_class_legend(svg, 80, 40);
#pragma once

#include <string>
#include <vector>

#include "memory/memory_class.h"
#include "report/svg.h"

namespace vdnn {

struct PlotArea {
  double x = 0, y = 0, width = 0, height = 0;  // pixels: the top-left corner and the size
  double x_max = 1, y_max = 1;                 // data range: [0, x_max] x [0, y_max]

  double px(double v) const { return x + width * v / x_max; }
  double py(double v) const { return y + height - height * v / y_max; }
  double bottom() const { return y + height; }
  double right() const { return x + width; }

  // Ticks, labels and vertical grid lines below the area, the title under them.
  void draw_x_axis(Svg& svg, const std::string& title) const;
  // Ticks, labels and horizontal grid lines left of the area, the title rotated beside them.
  void draw_y_axis(Svg& svg, const std::string& title) const;
  void draw_frame(Svg& svg) const;
};

// Round tick values 0, s, 2s, ... <= max, with s = 1, 2, 2.5 or 5 x 10^k giving about `count`.
std::vector<double> nice_ticks(double max, int count = 5);
// A tick's label with as many decimals as the tick step needs ("0", "2.5", "0.25").
std::string tick_label(double value, double step);

struct ChartUnit {
  double scale = 1;  // data units per chart unit (bytes per GiB, seconds per ms)
  std::string name;  // "GiB", "ms"
};
ChartUnit byte_unit(double max_bytes);    // MiB below 2 GiB, else GiB
ChartUnit time_unit(double max_seconds);  // ms below 10 s, else s

const char* class_color(MemoryClass cls);
// The i-th colour of the charts' eight-colour palette (series, policies), cycling.
const char* series_color(size_t i);
// The page of the wide charts (budget sweep, scaling, configurations): its width, its margins and
// the height of a legend row, in pixels.
inline constexpr double kPageWidth = 1000, kPageMargin = 20, kLegendRow = 20;
// One swatch and name per class in a row from (x, y); returns the row's width in pixels.
double draw_class_legend(Svg& svg, double x, double y);

}  // namespace vdnn
