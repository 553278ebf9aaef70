#include "core/precision.h"

#include "vdnn/error.h"

namespace vdnn {

Precision parse_precision(const std::string& text, const std::string& option) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  VDNN_THROW(option << ": '" << text << "' is not a precision; valid: fp32, bf16");
}

}  // namespace vdnn
