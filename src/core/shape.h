// core/shape.h — the per-sample shape of a value: [C, H, W] for feature maps, [K] for vectors,
// [T, C] for sequences (T tokens x C channels, stored plain row-major [N, T, C]), [T] for token ids.
//
// Model: graphs are batch-free; a Net multiplies by the batch size. Shapes are small value types.
//
//   Shape s{64, 56, 56};
//   s.elements();       // 200704
//   s.to_string();      // "64x56x56"
//   s.with_batch(32);   // {32, 64, 56, 56}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vdnn {

// The most elements one value or parameter tensor may have per sample: 2^36 (256 GiB of fp32), far
// beyond any device. Graph refuses more, so every size computed from a graph fits in int64_t.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 36;

// The product of `dims` (each >= 0), or -1 when it is above `limit`; never overflows.
inline int64_t elements_up_to(const std::vector<int64_t>& dims, int64_t limit = kMaxTensorElements) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d == 0) return 0;
    if (n > limit / d) return -1;
    n *= d;
  }
  return n;
}

struct Shape {
  std::vector<int64_t> dims;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit Shape(std::vector<int64_t> d) : dims(std::move(d)) {}

  size_t rank() const { return dims.size(); }
  bool is_image() const { return dims.size() == 3; }     // [C, H, W]
  bool is_sequence() const { return dims.size() == 2; }  // [T, C]
  int64_t channels() const { return dims.empty() ? 0 : dims[0]; }
  int64_t height() const { return dims.size() == 3 ? dims[1] : 1; }
  int64_t width() const { return dims.size() == 3 ? dims[2] : 1; }
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  std::vector<int64_t> with_batch(int64_t batch) const {
    std::vector<int64_t> out{batch};
    out.insert(out.end(), dims.begin(), dims.end());
    return out;
  }
  std::string to_string() const {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
    return s.empty() ? "scalar" : s;
  }
  bool operator==(const Shape& o) const { return dims == o.dims; }
};

}  // namespace vdnn
