#include "layers/batch_slice.h"

#include "vdnn/error.h"

namespace vdnn {

BatchSliceLayer::BatchSliceLayer(std::string name, int index, int count)
    : Layer(std::move(name), "batch_slice", LayerKind::kReshape), index_(index), count_(count) {
  if (count < 2 || index < 0 || index >= count)
    fail(VDNN_MSG("slice " << index << " of " << count << ": expected 0 <= index < count, count >= 2"));
}

BatchGatherLayer::BatchGatherLayer(std::string name, int count)
    : Layer(std::move(name), "batch_gather", LayerKind::kJoin), count_(count) {
  if (count < 2) fail(VDNN_MSG("gathers " << count << " slices; expected at least 2"));
}

Shape BatchGatherLayer::infer_shape(const std::vector<Shape>& in) const {
  for (const Shape& s : in)
    if (s.dims != in.at(0).dims)
      fail("its slices differ per sample: " + in.at(0).to_string() + " and " + s.to_string());
  return in.at(0);
}

}  // namespace vdnn
