#include "plan/batch_efficiency.h"

#include <algorithm>

#include "vdnn/error.h"

namespace vdnn {

double saturating_efficiency(double reference_efficiency, double work, double reference_work, double half_saturation) {
  VDNN_CHECK(work > 0 && reference_work > 0 && half_saturation >= 0,
             "batch efficiency: work " << work << ", reference work " << reference_work << ", half saturation "
                                       << half_saturation);
  const auto fill = [half_saturation](double w) { return w / (w + half_saturation); };
  return std::min(1.0, reference_efficiency * fill(work) / fill(reference_work));
}

double efficiency_at(const BatchEfficiency& curve, double reference_efficiency, double outputs_per_sample,
                     int64_t batch) {
  if (curve.reference_batch <= 0 || outputs_per_sample <= 0) return reference_efficiency;
  return saturating_efficiency(reference_efficiency, outputs_per_sample * static_cast<double>(batch),
                               outputs_per_sample * static_cast<double>(curve.reference_batch),
                               curve.half_saturation_outputs);
}

}  // namespace vdnn
