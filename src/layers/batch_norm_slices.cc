#include "layers/batch_norm_slices.h"

#include "vdnn/error.h"

namespace vdnn {

BnCombineLayer::BnCombineLayer(std::string name, int count)
    : Layer(std::move(name), "bn_combine", LayerKind::kNorm), count_(count) {
  if (count < 2) fail(VDNN_MSG("combines " << count << " slices' statistics; expected at least 2"));
}

Shape BnCombineLayer::infer_shape(const std::vector<Shape>& in) const {
  for (const Shape& s : in)
    if (s.dims != in.at(0).dims)
      fail("its slices' statistics differ: " + in.at(0).to_string() + " and " + s.to_string());
  return in.at(0);
}

BnApplyLayer::BnApplyLayer(std::string name, const BatchNormLayer& bn, int count, bool updates_running)
    : Layer(std::move(name), "bn_apply", LayerKind::kNorm), bn_(bn), count_(count), updates_running_(updates_running) {
  if (count < 2) fail(VDNN_MSG("normalizes one of " << count << " slices; expected at least 2"));
}

Shape BnApplyLayer::infer_shape(const std::vector<Shape>& in) const {
  if (in.at(1).dims != std::vector<int64_t>{2 * in.at(0).channels()})
    fail("expects a slice of C channels and its batch's statistics (2C values), got " + in.at(0).to_string() + " and " +
         in.at(1).to_string());
  return in.at(0);
}

}  // namespace vdnn
