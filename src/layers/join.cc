#include "layers/join.h"

#include "vdnn/error.h"

namespace vdnn {

static std::string list_shapes(const std::vector<Shape>& in) {
  std::string s;
  for (const auto& x : in) s += (s.empty() ? "" : ", ") + x.to_string();
  return s;
}

Shape ConcatLayer::infer_shape(const std::vector<Shape>& in) const {
  int64_t channels = 0;
  if (in[0].rank() == 1) {  // fc outputs: K values each, joined end to end
    for (const auto& x : in) {
      if (x.rank() != 1) fail("concat needs all inputs CxHxW or all vectors K, got " + list_shapes(in));
      channels += x.channels();
    }
    return Shape{channels};
  }
  for (const auto& x : in) {
    if (!x.is_image() || x.height() != in[0].height() || x.width() != in[0].width())
      fail("concat needs CxHxW inputs with equal H and W (or all vectors K), got " + list_shapes(in));
    channels += x.channels();
  }
  return Shape{channels, in[0].height(), in[0].width()};
}

Shape AddLayer::infer_shape(const std::vector<Shape>& in) const {
  for (const auto& x : in)
    if (!(x == in[0])) fail("add needs inputs of equal shape, got " + list_shapes(in));
  return in[0];
}

}  // namespace vdnn
