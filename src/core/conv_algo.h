// core/conv_algo.h — which convolution algorithm family a layer asks its backend for.
//
// Model: a choice every backend interprets with its own library. CPU (oneDNN): direct, Winograd
// (3x3, stride 1; more workspace, slightly different rounding) or auto (oneDNN picks per layer).
// CUDA (cuDNN): direct = memory-optimal (the deterministic algorithm with the least workspace,
// implicit GEMM: zero), winograd = a Winograd algorithm where cuDNN has one, auto = the fastest
// deterministic algorithm as measured by cudnnFind* (performance-optimal). vDNN_dyn picks per node.
//
//   ConvAlgo a = parse_conv_algo("direct");   // throws vdnn::Error naming --conv-algo otherwise
//   std::printf("%s\n", to_string(a));        // "direct"
#pragma once

#include <string>

namespace vdnn {

enum class ConvAlgo { kAuto, kDirect, kWinograd };

inline const char* to_string(ConvAlgo a) {
  return a == ConvAlgo::kDirect ? "direct" : a == ConvAlgo::kWinograd ? "winograd" : "auto";
}

// "auto", "direct" or "winograd" (what to_string gives); throws vdnn::Error naming the option as the
// caller spells it (`vdnn train --conv-algo`, Python's conv_algo) and the valid values otherwise.
ConvAlgo parse_conv_algo(const std::string& text, const std::string& option = "--conv-algo");

}  // namespace vdnn
