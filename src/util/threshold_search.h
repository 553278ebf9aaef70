// util/threshold_search.h — the last n in 1..cap where a monotone predicate holds, from a hint.
//
// Model: `holds` is true from 1 up to some threshold and false past it (the threshold may be 0:
// false everywhere, or cap: true everywhere). The search gallops from `hint` (outside 1..cap: none)
// in strides s, 2s, 4s, ... up while `holds` is true or down while it is false, then bisects the
// last stride. The answer is the threshold whatever the hint (only the number of questions depends
// on it), and each value is asked once at most. With s = 1 a hint at the threshold asks 2 questions
// (a depth found for a similar plan); with s = hint, a lower bound far below the threshold, the
// search doubles the value (1, 2, 4, ... from hint 1; the largest batch of one policy when
// searching another's); no hint is a bisection of 1..cap, log2(cap) questions. Used for the
// largest batch or sequence that fits (planning/largest_fitting.h) and the deepest look-ahead
// whose live bytes fit (plan/planned_step.cc).
//
//   int64_t n = last_true(99, 1 << 20, [](int64_t b) { return b <= 100; });       // 100: asks 99, 100, 101
//   int64_t m = last_true(64, 1 << 20, [](int64_t b) { return b <= 100; }, 64);   // 100: asks 64, 128, ...
//   int64_t none = last_true(0, 10, [](int64_t) { return false; });              // 0
#pragma once

#include <cstdint>
#include <functional>

namespace vdnn {

int64_t last_true(int64_t hint, int64_t cap, const std::function<bool(int64_t)>& holds, int64_t first_stride = 1);

}  // namespace vdnn
