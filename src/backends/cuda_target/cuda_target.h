// backends/cuda_target/cuda_target.h — the CUDA backend as a planning target
// (backend_api/backend_target.h), on any machine: plain C++, no CUDA header, no GPU.
//
// Model: sizes are the CUDA kernels' own, from the shape-only functions they call themselves
// (cuda_sizes.h: plain fp32 NCHW, int32 max-pool argmax, float dropout masks, ...); a
// convolution's options are plan/conv_algorithms.h's cuDNN-like algorithms with their modelled
// workspace; costs are the roofline of a device profile (plan/roofline.h) over these sizes.
// instantiate() needs a GPU (make_cuda_backend); without one, or in a vdnn built without the CUDA
// backend, it throws naming why (unavailable_reason).
//
//   TargetFacts f = cuda_target().facts(load_model("vgg16"), 64, {});
//   f.facts[pool1].saved_bytes;   // {64 x 64 x 112 x 112 x 4}: the int32 argmax
#pragma once

#include "backend_api/backend_target.h"

namespace vdnn {

const BackendTarget& cuda_target();

}  // namespace vdnn
