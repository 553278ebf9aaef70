// plan/conv_algorithms.h — cuDNN-like convolution algorithms as a model: where each one applies, how
// much arithmetic it does and how much workspace it needs, for a GPU we cannot measure.
//
// Model (this project's assumptions, to be calibrated on a real GPU; see docs/device-profiles.md):
//   implicit_gemm          any convolution; the direct arithmetic; no workspace (memory-optimal)
//   implicit_precomp_gemm  any convolution; the direct arithmetic; a table of input offsets
//   gemm                   any convolution; the direct arithmetic; the im2col matrix of the batch
//   fft                    stride 1, no dilation, padded input <= 256 per side, padding < kernel
//                          (cuDNN's documented limits); pointwise products of spectra; the
//                          spectra are the workspace
//   winograd               3x3 stride 1, no dilation; F(2x2,3x3): 16 products per 2x2 output tile
//                          instead of 36; fused, only the transformed filters are kept
//   winograd_nonfused      3x3 stride 1, no dilation; F(4x4,3x3): 36 products per 4x4 output tile
//                          instead of 144;
//                          transformed inputs, filters and outputs are kept
// FLOPs are the forward pass of the whole batch, 2 per multiply-add (Layer::forward_flops's rule).
// gemm_outputs, the work the efficiency curve of plan/batch_efficiency.h reads: the convolution's
// outputs for the GEMMs, (m + 2)^2 per m x m output tile for Winograd, N K frequency bins for FFT.
//
//   ConvProblem p = ConvProblem::of(conv_layer, in_shape, out_shape, /*batch=*/64);
//   for (const ConvAlgoEstimate& a : conv_algorithms(p))   // implicit_gemm first
//     std::cout << a.name << " " << a.flops << " " << a.workspace_bytes << "\n";
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace vdnn {

class ConvLayer;

// One convolution at one batch size: NCHW input, K output channels, groups.
struct ConvProblem {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, oh = 1, ow = 1;       // output
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, groups = 1;
  int64_t pb = 0, pr = 0, dh = 1, dw = 1;  // bottom / right padding (ph, pw: top / left); dilation
  double direct_flops = 0;                 // the layer's own count, times the batch

  static ConvProblem of(const ConvLayer& layer, const Shape& in, const Shape& out, int64_t batch);
  ConvProblem with_batch(int64_t batch) const;  // the same convolution over `batch` samples
};

struct ConvAlgoEstimate {
  std::string name;
  double flops = 0;            // forward, whole batch (sub-batched: one slice)
  size_t workspace_bytes = 0;  // scratch the algorithm needs beyond x, w and y
  int sub_batches = 1;         // > 1: run in this many slices of the batch, one slice's figures
  double gemm_outputs = 0;     // output elements of its GEMMs, one slice's (plan/batch_efficiency.h)
};

// Every algorithm the model knows, in order of preference for memory (implicit_gemm first).
const std::vector<std::string>& conv_algorithm_names();

// The algorithms that apply to `p`, in the order of conv_algorithm_names().
std::vector<ConvAlgoEstimate> conv_algorithms(const ConvProblem& p);

// conv_algorithms(p), then the same algorithms in k = 2, 4, 8, 16 slices of the batch (k dividing
// it; μ-cuDNN's idea), each where that needs less workspace than the whole batch (im2col, FFT
// spectra and non-fused Winograd tiles grow with the batch; fused Winograd's filters do not),
// with one slice's flops and workspace.
std::vector<ConvAlgoEstimate> conv_algorithms_with_sub_batches(const ConvProblem& p);

}  // namespace vdnn
