// util/size_parse.h — byte counts from command-line text, and back to text.
//
// Model: a size is a non-negative decimal number, optionally with a fraction, optionally followed
// (after optional spaces) by a case-insensitive unit: B; KiB MiB GiB TiB (powers of 1024); K M G T
// (also powers of 1024, as memory sizes usually mean); KB MB GB TB (powers of 1000). A fractional
// value is rounded down to whole bytes; a fraction without a unit ("1.5") is an error. Negative
// numbers, exponents, garbage and values above SIZE_MAX throw a one-line vdnn::Error naming the
// flag and showing valid examples. format_bytes() prints a size with binary units.
//
//   size_t budget = vdnn::parse_size("12GiB", "--device-memory");   // 12884901888
//   size_t a = vdnn::parse_size("1.5GB", "--host-memory");          // 1500000000
//   size_t b = vdnn::parse_size("2G", "--device-memory");           // 2147483648
//   std::optional<size_t> m = vdnn::parse_budget("", "--host-memory");  // none: the default
//   vdnn::parse_budget("0", "--device-memory");    // throws: a budget must be above 0
//   vdnn::parse_size("-1MiB", "--device-memory");  // throws: --device-memory: ... e.g. 512MiB, ...
//   std::string s = vdnn::format_bytes(size_t{3} << 29);            // "1.50 GiB"
//   std::string t = vdnn::format_bytes(512);                        // "512 B"
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace vdnn {

// Parses `text` as a byte count; `flag` (e.g. "--device-memory") names the source in errors.
size_t parse_size(const std::string& text, const std::string& flag);

// A budget (device or host memory, a gradient bucket) must be above 0: 0 read as "no budget" in
// one command and "what the plan needs" in another, so it has no meaning of its own; leaving the
// option out gives the default. Throws vdnn::Error naming `option` (as the caller spells it).
size_t check_budget(size_t bytes, const std::string& option);
// A budget flag: none when `text` is empty (not given), else parse_size's bytes, checked above.
std::optional<size_t> parse_budget(const std::string& text, const std::string& flag);

// "512 B", "64.00 KiB", "1.50 GiB", "2.00 TiB": two decimals from KiB up.
std::string format_bytes(size_t bytes);

}  // namespace vdnn
