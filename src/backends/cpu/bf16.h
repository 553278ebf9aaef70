// backends/cpu/bf16.h — bfloat16 values the host writes or reads itself (dropout masks, pooling's
// rescale), where no oneDNN primitive does the conversion.
//
// Model: bf16 is the top 16 bits of an IEEE fp32; a float rounds to the nearest one, ties to even,
// as oneDNN's own conversions do (NaN stays a quiet NaN).
//
//   uint16_t h = float_to_bf16(0.5f);   // 0x3f00
//   float back = bf16_to_float(h);      // 0.5f
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vdnn {

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace vdnn
