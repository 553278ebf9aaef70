#include "core/conv_algo.h"

#include "vdnn/error.h"

namespace vdnn {

ConvAlgo parse_conv_algo(const std::string& text, const std::string& option) {
  for (ConvAlgo a : {ConvAlgo::kAuto, ConvAlgo::kDirect, ConvAlgo::kWinograd})
    if (text == to_string(a)) return a;
  VDNN_THROW(option << ": '" << text << "' is not a convolution algorithm; valid: auto, direct, winograd");
}

}  // namespace vdnn
