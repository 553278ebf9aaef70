#include "util/size_parse.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>

#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr const char* kSizeExamples = "e.g. 512MiB, 12GiB, 1.5GB, 64KiB, 2G, 1000000";

[[noreturn]] void bad_size(const std::string& text, const std::string& flag, const char* why) {
  VDNN_THROW(flag << ": '" << text << "' is not a valid size (" << why << "); use " << kSizeExamples);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The multiplier of a unit (already lower-cased), or 0 when unknown.
uint64_t unit_multiplier(const std::string& unit) {
  struct Unit {
    const char* name;
    uint64_t multiplier;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", uint64_t{1} << 10},
      {"kib", uint64_t{1} << 10},
      {"kb", 1000},
      {"m", uint64_t{1} << 20},
      {"mib", uint64_t{1} << 20},
      {"mb", 1000000},
      {"g", uint64_t{1} << 30},
      {"gib", uint64_t{1} << 30},
      {"gb", 1000000000},
      {"t", uint64_t{1} << 40},
      {"tib", uint64_t{1} << 40},
      {"tb", 1000000000000},
  };
  for (const Unit& u : kUnits)
    if (unit == u.name) return u.multiplier;
  return 0;
}

}  // namespace

size_t parse_size(const std::string& text, const std::string& flag) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && text[i] == ' ') ++i;
  if (i < n && text[i] == '-') bad_size(text, flag, "negative");
  // Integer part, exactly, in 128 bits so overflow is caught.
  unsigned __int128 whole = 0;
  size_t digits = 0;
  for (; i < n && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > std::numeric_limits<uint64_t>::max()) bad_size(text, flag, "too large");
  }
  // Fraction: up to 18 digits kept exactly as numerator / 10^k; further digits are ignored.
  uint64_t frac_num = 0;
  uint64_t frac_den = 1;
  bool has_fraction = false;
  if (i < n && text[i] == '.') {
    ++i;
    for (; i < n && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
      has_fraction = true;
      if (frac_den < uint64_t{1000000000000000000}) {
        frac_num = frac_num * 10 + static_cast<unsigned>(text[i] - '0');
        frac_den *= 10;
      }
    }
  }
  if (digits == 0) bad_size(text, flag, "no number");
  while (i < n && text[i] == ' ') ++i;
  size_t end = n;
  while (end > i && text[end - 1] == ' ') --end;
  const uint64_t multiplier = unit_multiplier(lower(text.substr(i, end - i)));
  if (multiplier == 0) bad_size(text, flag, "unknown unit");
  if (has_fraction && multiplier == 1 && frac_num != 0) bad_size(text, flag, "fractional bytes");

  // whole * multiplier + floor(frac_num * multiplier / frac_den), all exact in 128 bits.
  const unsigned __int128 bytes = whole * multiplier + static_cast<unsigned __int128>(frac_num) * multiplier / frac_den;
  if (bytes > std::numeric_limits<size_t>::max()) bad_size(text, flag, "too large");
  return static_cast<size_t>(bytes);
}

size_t check_budget(size_t bytes, const std::string& option) {
  if (bytes == 0)
    VDNN_THROW(option << " 0: expected a size above 0, e.g. 512MiB (leave " << option << " out for the default)");
  return bytes;
}

std::optional<size_t> parse_budget(const std::string& text, const std::string& flag) {
  if (text.empty()) return std::nullopt;
  return check_budget(parse_size(text, flag), flag);
}

std::string format_bytes(size_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  // 1023.995 and up would print as "1024.00"; show the next unit instead.
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1023.995 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", value, kUnits[unit]);
  return buf;
}

}  // namespace vdnn
