#include "report/svg.h"

#include <cstdio>

#include "util/utf8.h"

namespace vdnn {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string point_list(const std::vector<std::pair<double, double>>& points) {
  std::string list;
  for (const auto& [x, y] : points) {
    if (!list.empty()) list += ' ';
    list.append(num(x)).append(",").append(num(y));
  }
  return list;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : escape_invalid_utf8(text)) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      char hex[5];  // a control character, which XML 1.0 cannot hold even as a reference
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c));
      out += hex;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double text_width(const std::string& text, double size) { return 0.6 * size * static_cast<double>(text.size()); }

Svg::Svg(double width, double height) : width_(width), height_(height) {}

void Svg::shape(const std::string& open, const SvgStyle& style) {
  body_ << "<" << open << " fill=\"" << xml_escape(style.fill) << "\" stroke=\"" << xml_escape(style.stroke) << "\"";
  if (style.stroke != "none") body_ << " stroke-width=\"" << num(style.stroke_width) << "\"";
  if (!style.dash.empty()) body_ << " stroke-dasharray=\"" << xml_escape(style.dash) << "\"";
  const std::string tag = open.substr(0, open.find(' '));
  if (style.tooltip.empty())
    body_ << "/>\n";
  else
    body_ << "><title>" << xml_escape(style.tooltip) << "</title></" << tag << ">\n";
}

void Svg::rect(double x, double y, double w, double h, const SvgStyle& style) {
  shape("rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\"", style);
}

void Svg::line(double x1, double y1, double x2, double y2, const SvgStyle& style) {
  shape("line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\"", style);
}

void Svg::polygon(const std::vector<std::pair<double, double>>& points, const SvgStyle& style) {
  shape("polygon points=\"" + point_list(points) + "\"", style);
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style) {
  shape("polyline points=\"" + point_list(points) + "\"", style);
}

void Svg::text(double x, double y, const std::string& text, const SvgText& style) {
  body_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(style.size) << "\" text-anchor=\""
        << xml_escape(style.anchor) << "\" fill=\"" << xml_escape(style.fill) << "\"";
  if (style.bold) body_ << " font-weight=\"bold\"";
  if (style.rotate != 0)
    body_ << " transform=\"rotate(" << num(style.rotate) << " " << num(x) << " " << num(y) << ")\"";
  body_ << ">" << xml_escape(text) << "</text>\n";
}

std::string Svg::str() const {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << num(width_) << "\" height=\""
      << num(height_) << "\" viewBox=\"0 0 " << num(width_) << " " << num(height_)
      << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << num(width_) << "\" height=\"" << num(height_) << "\" fill=\"white\"/>\n"
      << body_.str() << "</svg>\n";
  return out.str();
}

}  // namespace vdnn
