// util/number_text.h — a number written so that it reads back as itself: 0.05 (not 0.050000),
// 1.0000001 (not 1, as a stream's default six digits print it), 1e-320.
//
// Errors that refuse a value quote this text, so a value just outside a range never reads as one
// inside it ("weight_decay 1.0000001: expected 0 to 1", not "weight_decay 1").
//
//   std::string t = exact_text(1.0000001);   // "1.0000001"
#pragma once

#include <string>

namespace vdnn {

std::string exact_text(double x);

}  // namespace vdnn
