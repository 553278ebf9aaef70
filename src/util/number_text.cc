#include "util/number_text.h"

#include <charconv>

namespace vdnn {

std::string exact_text(double x) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, x, std::chars_format::general).ptr);
}

}  // namespace vdnn
