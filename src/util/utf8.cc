#include "util/utf8.h"

#include <cstdint>
#include <cstdio>

namespace vdnn {

namespace {

// The length of the valid UTF-8 sequence at the start of `s`, 0 if none (Unicode's table 3-7:
// the second byte's range depends on the first, which rules out overlong forms, surrogates and
// code points above U+10FFFF).
size_t valid_sequence(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the second byte's range
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return n;
}

}  // namespace

bool is_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = valid_sequence(bytes.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool next_code_point(std::string_view bytes, size_t* at, char32_t* code_point) {
  if (*at >= bytes.size()) return false;
  const std::string_view s = bytes.substr(*at);
  const size_t n = valid_sequence(s);
  if (n == 0) return false;
  static constexpr uint8_t kLeadBits[] = {0, 0x7f, 0x1f, 0x0f, 0x07};  // the first byte's payload by length
  char32_t c = static_cast<uint8_t>(s[0]) & kLeadBits[n];
  for (size_t i = 1; i < n; ++i) c = (c << 6) | (static_cast<uint8_t>(s[i]) & 0x3f);
  *code_point = c;
  *at += n;
  return true;
}

std::string escape_invalid_utf8(std::string_view bytes) {
  if (is_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = valid_sequence(bytes.substr(i));
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(bytes[i])));
    out += hex;
    ++i;
  }
  return out;
}

std::string as_one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace vdnn
