#include "util/option_names.h"

#include <algorithm>

namespace vdnn {

std::string OptionNames::operator()(std::string_view key) const {
  if (style == kKeywords) return std::string(key);
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace vdnn
