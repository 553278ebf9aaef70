// tests/io/svg_check.h — an SVG file is valid XML (xmllint) and renders (rsvg-convert to PNG).
//
// The tools come from Debian's libxml2-utils and librsvg2-bin (scripts/setup.sh installs both).
// A missing tool fails the test with the package to install; it never skips.
//
//   PngSize s = expect_svg_renders(dir / "plan.svg");   // s.width, s.height from the PNG's IHDR
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace vdnn::test {

struct PngSize {
  uint32_t width = 0, height = 0;
};

inline bool have_tool(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

// Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian); {0, 0} if not a PNG.
inline PngSize png_size(const std::filesystem::path& png) {
  std::ifstream in(png, std::ios::binary);
  unsigned char b[24] = {};
  if (!in.read(reinterpret_cast<char*>(b), sizeof b)) return {};
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!std::equal(signature, signature + 8, b) || std::string(reinterpret_cast<char*>(b + 12), 4) != "IHDR") return {};
  auto be32 = [&](int at) {
    return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
  };
  return {be32(16), be32(20)};
}

// Checks `svg` with xmllint, renders it with rsvg-convert next to it (.png) and returns the PNG's size.
inline PngSize expect_svg_renders(const std::filesystem::path& svg) {
  if (!have_tool("xmllint")) {
    ADD_FAILURE() << "xmllint not found: install the Debian package libxml2-utils (scripts/setup.sh does)";
    return {};
  }
  if (!have_tool("rsvg-convert")) {
    ADD_FAILURE() << "rsvg-convert not found: install the Debian package librsvg2-bin (scripts/setup.sh does)";
    return {};
  }
  EXPECT_EQ(std::system(("xmllint --noout '" + svg.string() + "'").c_str()), 0) << svg << " is not valid XML";
  std::filesystem::path png = svg;
  png.replace_extension(".png");
  EXPECT_EQ(std::system(("rsvg-convert -o '" + png.string() + "' '" + svg.string() + "'").c_str()), 0)
      << svg << " does not render";
  return png_size(png);
}

}  // namespace vdnn::test
