// report/svg.h — a small SVG document writer, so vdnn draws its own pictures (no plotting tool).
//
// Model: an SVG 1.1 document of a fixed size in pixels (y grows downwards) built from five
// primitives: rectangles, lines, polygons, polylines and text. Text and tooltips are XML-escaped (bytes that are not
// UTF-8 as `\xNN`), numbers are written with two decimals, the font is sans-serif. The result is standalone XML: it
// passes `xmllint --noout`, renders with `rsvg-convert` and in any browser. Charts live elsewhere (report/chart.h,
// report/memory_timeline_chart.h, report/configuration_chart.h, report/budget_sweep_chart.h).
//
//   Svg svg(640, 480);
//   svg.rect(10, 40, 100, 50, {.fill = "#4e79a7", .tooltip = "conv1: 12 MiB"});
//   svg.line(0, 90, 640, 90, {.stroke = "black", .dash = "6 3"});
//   svg.polygon({{0, 480}, {320, 200}, {640, 480}}, {.fill = "#f28e2b"});
//   svg.text(320, 24, "Memory over one step", {.size = 16, .anchor = "middle", .bold = true});
//   write_text_file("out.svg", svg.str());   // util/text_file.h
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace vdnn {

struct SvgStyle {
  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  std::string dash;     // stroke-dasharray, e.g. "6 3"; empty: solid
  std::string tooltip;  // a <title> child (shown on hover); empty: none
};

struct SvgText {
  double size = 12;
  std::string anchor = "start";  // start, middle, end
  bool bold = false;
  double rotate = 0;  // degrees, about the text's anchor point
  std::string fill = "#222222";
};

class Svg {
 public:
  Svg(double width, double height);

  double width() const { return width_; }
  double height() const { return height_; }

  void rect(double x, double y, double w, double h, const SvgStyle& style);
  void line(double x1, double y1, double x2, double y2, const SvgStyle& style);
  void polygon(const std::vector<std::pair<double, double>>& points, const SvgStyle& style);
  void polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style);  // not closed
  void text(double x, double y, const std::string& text, const SvgText& style = {});

  std::string str() const;  // the whole document

 private:
  void shape(const std::string& open, const SvgStyle& style);

  double width_, height_;
  std::ostringstream body_;
};

// `text` with &, <, >, " and ' replaced by XML entities, and what XML cannot hold written as `\xNN`:
// bytes that are not UTF-8 (util/utf8.h) and control characters other than tab and newlines.
std::string xml_escape(const std::string& text);
// About how wide `text` is in pixels at font size `size` (sans-serif), for layout.
double text_width(const std::string& text, double size);

}  // namespace vdnn
