// plan/batch_efficiency.h — a kernel's fraction of peak falls as its work shrinks (issue 43): a
// convolution cut into 16 slices, or a network planned at batch 16, does not run at the whole
// batch's efficiency.
//
// Model: a GEMM-like kernel (every convolution algorithm, a fully connected layer) tiles its output
// and runs the tiles in waves of one tile per SM; its last wave is partly idle (NVIDIA, "Matrix
// Multiplication Background", tile and wave quantization). Averaged over sizes, the idle share of a
// kernel with `w` output elements tends to h / w, h = half a wave of output elements, so
//     efficiency(w) = e_max · w / (w + h)
// — monotone, saturating at e_max, half of it at w = h. `w` is the output elements of the
// algorithm's GEMMs (ConvAlgoEstimate::gemm_outputs: the convolution's outputs for the implicit and
// explicit GEMMs, transformed tiles for Winograd, frequency bins for FFT), which grows with the
// batch; e_max is set so that at the profile's reference batch the efficiency is the profile's own
// figure (read as measured at that batch), so plans at that batch do not move. h and the reference
// batch are the profile's "batch_efficiency" (device_profile.h; docs/device-profiles.md gives the
// sources); a profile without it keeps its efficiencies at every batch.
//
//   DeviceProfile gpu = load_device_profile("titan-x-maxwell");   // reference batch 256
//   double e = efficiency_at(gpu.batch_efficiency, 0.6, /*outputs per sample=*/512 * 14 * 14, 16);
//   // e < 0.6: conv5_1's 16-sample slice fills 4 waves of 24 SMs, not 65
#pragma once

#include <cstdint>

namespace vdnn {

// A device's curve: off when reference_batch is 0.
struct BatchEfficiency {
  int64_t reference_batch = 0;         // the batch the profile's efficiencies hold at
  double half_saturation_outputs = 0;  // h: output elements of half a wave of GEMM tiles
};

// e_max · w / (w + h) with e_max such that the value at `reference_work` is `reference_efficiency`;
// at most 1. Needs w, reference_work > 0 and h >= 0 (h = 0: the reference efficiency everywhere).
double saturating_efficiency(double reference_efficiency, double work, double reference_work, double half_saturation);

// The efficiency of a kernel over `batch` samples with `outputs_per_sample` GEMM output elements
// each, whose efficiency at curve.reference_batch is `reference_efficiency`.
double efficiency_at(const BatchEfficiency& curve, double reference_efficiency, double outputs_per_sample,
                     int64_t batch);

}  // namespace vdnn
