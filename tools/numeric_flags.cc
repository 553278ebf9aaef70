#include "numeric_flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

namespace vdnn::cli {
namespace {

// "" when `text` is all of one T in decimal, else why not; `text` becomes the number's plain
// decimal spelling, since CLI11 converts with base 0, where "010" is octal 8 and "0x8" is hex.
template <typename T>
std::string whole_number(std::string& text, const char* what) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return "'" + text + "' is not " + what;
  text = std::to_string(value);
  return "";
}

std::string finite_number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (text.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return "'" + text + "' is not a number";
  if (ec == std::errc::result_out_of_range || !std::isfinite(value))
    return "'" + text + "' is not a finite number (NaN, Inf and values beyond 1.8e308 are refused)";
  return "";
}

std::string non_empty(const std::string& text) {
  return text.empty() ? "an empty value; give one, or leave the flag out for its default" : "";
}

CLI::Validator validator_for(const std::string& type) {
  if (type == "FLOAT") return {[](std::string& s) { return finite_number(s); }, "", "FINITE"};
  if (type == "INT") return {[](std::string& s) { return whole_number<int64_t>(s, "a decimal integer"); }, "", "INT64"};
  return {[](std::string& s) { return whole_number<uint64_t>(s, "a decimal integer in [0, 18446744073709551615]"); },
          "", "UINT64"};
}

}  // namespace

void check_numeric_flags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* opt : sub->get_options()) {
      // "FLOAT", or "FLOAT:FLOAT in [0 - 100]" once a Range adds its description.
      const std::string full = opt->get_type_name(), type = full.substr(0, full.find(':'));
      // First (transform puts it ahead of the command's Range): "1_0" is not a number before it is
      // out of range, and an integer reaches CLI11's conversion in plain decimal.
      if (type == "FLOAT" || type == "INT" || type == "UINT") opt->transform(validator_for(type));
      // `--device-memory "$UNSET"` is a mistake, not a request for the default.
      if (type == "TEXT") opt->check(CLI::Validator(non_empty, "", "NONEMPTY"));
    }
}

int max_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

CLI::Validator threads_check() {
  return {[](std::string& s) -> std::string {
            const int most = max_threads();
            int n = 0;
            const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
            if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || n < 1 || n > most)
              return "'" + s + "' is not a thread count from 1 to " + std::to_string(most) +
                     ", the hardware threads of this machine (more only oversubscribe the cores: 64 threads "
                     "on 2 cores ran 57x slower)";
            return "";
          },
          "1 to the hardware threads", "THREADS"};
}

}  // namespace vdnn::cli
