// core/precision.h — the number type a network's activations and their gradients are stored and
// computed in.
//
// Model: fp32 everywhere, or bf16 mixed precision: feature maps, gradient maps and the convolution
// and inner-product arithmetic in bfloat16 (8 exponent bits as fp32, 8 significand bits), while
// weights, their gradients, momentum, the SGD update, batch-norm statistics, the logits and the loss
// stay fp32 (docs/design.md "Mixed precision"). Each backend maps it onto its library's types; a
// tensor's bytes follow from its descriptor, so the Program and the planner see bf16 maps at half
// the bytes without knowing about precision.
//
//   Precision p = parse_precision("bf16");   // throws vdnn::Error naming --precision otherwise
//   std::printf("%s\n", to_string(p));      // "bf16"
#pragma once

#include <string>

namespace vdnn {

enum class Precision { kFp32, kBf16 };

inline const char* to_string(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

// "fp32" or "bf16"; throws vdnn::Error naming the option as the caller spells it (`vdnn train
// --precision`, Python's precision) and the valid values otherwise.
Precision parse_precision(const std::string& text, const std::string& option = "--precision");

}  // namespace vdnn
