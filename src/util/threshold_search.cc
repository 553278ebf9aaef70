#include "util/threshold_search.h"

#include "vdnn/error.h"

namespace vdnn {

int64_t last_true(int64_t hint, int64_t cap, const std::function<bool(int64_t)>& holds, int64_t first_stride) {
  VDNN_CHECK(cap >= 1, "a threshold search needs at least one value to ask about, not cap " << cap);
  VDNN_CHECK(first_stride >= 1, "a threshold search's first stride must be at least 1, not " << first_stride);
  int64_t lo = 0, hi = cap + 1;  // holds at lo (0: by definition), not at hi (cap + 1: by definition)
  if (hint < 1 || hint > cap) {
    // no hint: bisection alone
  } else if (holds(hint)) {  // up: hint + s, then + 2s, + 4s, ... while it holds
    lo = hint;
    for (int64_t stride = first_stride; stride < hi - lo; stride *= 2) {
      if (!holds(lo + stride)) {
        hi = lo + stride;
        break;
      }
      lo += stride;
    }
  } else {  // down: hint - s, then - 2s, - 4s, ... while it does not
    hi = hint;
    for (int64_t stride = first_stride; stride < hi - lo; stride *= 2) {
      if (holds(hi - stride)) {
        lo = hi - stride;
        break;
      }
      hi -= stride;
    }
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (holds(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace vdnn
