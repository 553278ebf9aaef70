// util/option_names.h — how an error message names one of the user's options: as the `vdnn`
// command's flag or as the Python API's keyword argument, so one rule in the library serves both.
//
// Model: an option's key is its Python keyword in snake_case ("host_memory"); its flag is the
// same words joined by dashes after two ("--host-memory"). A rule that refuses an option takes an
// OptionNames and writes names("host_memory") where it names it; the caller picks the style
// (the CLI: kFlags, the default; the Python API: kKeywords). A few flags say more than their
// keyword: schedule, step_epochs and gamma are --lr-schedule, --lr-step-epochs and --lr-gamma,
// and evaluate is --no-eval.
//
//   const OptionNames flags;                                        // the CLI's
//   std::string a = flags("host_memory");                          // "--host-memory"
//   std::string b = OptionNames{OptionNames::kKeywords}("host_memory");   // "host_memory"
#pragma once

#include <string>
#include <string_view>

namespace vdnn {

struct OptionNames {
  enum Style { kFlags, kKeywords };
  Style style = kFlags;

  std::string operator()(std::string_view key) const;
};

}  // namespace vdnn
