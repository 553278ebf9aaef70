#include "util/option_names.h"

#include <algorithm>
#include <utility>

namespace vdnn {
namespace {

// Keys whose flag is not their words joined by dashes.
constexpr std::pair<std::string_view, std::string_view> kOtherFlags[] = {{"schedule", "--lr-schedule"},
                                                                         {"step_epochs", "--lr-step-epochs"},
                                                                         {"gamma", "--lr-gamma"},
                                                                         {"evaluate", "--no-eval"}};

}  // namespace

std::string OptionNames::operator()(std::string_view key) const {
  if (style == kKeywords) return std::string(key);
  for (const auto& [other, flag] : kOtherFlags)
    if (key == other) return std::string(flag);
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace vdnn
