// backends/cuda/cudnn_conv_algos.h — which cuDNN algorithm each pass of a convolution uses.
//
// Model (vDNN's two configurations, per layer): for forward, backward-data and backward-filter,
// cuDNN lists its algorithms with status, determinism and workspace; only fp32 (FMA math),
// deterministic ones that cuDNN accepts for these descriptors are candidates (deterministic, so
// the weights are bit-identical under every offload policy). Then
//   ConvAlgo::kDirect    memory-optimal: the least workspace (implicit GEMM: zero), from cuDNN's
//                        heuristic list (cudnnGetConvolution*Algorithm_v7), no timing;
//   ConvAlgo::kAuto      performance-optimal: the fastest, measured by
//   cudnnFindConvolution*Algorithm
//                        (which times every algorithm once on buffers cuDNN allocates itself);
//   ConvAlgo::kWinograd  the first Winograd algorithm of the heuristic list, else memory-optimal.
// The workspace of the choice is asked again on the final descriptors. Only algorithms whose
// workspace is at most `workspace_limit` are candidates: the limit is what the device-free CUDA
// target predicted and the memory plan reserved (backends/cuda_target/cuda_sizes.h), so a plan
// that fits cannot run out; a pass with no candidate within it is refused, naming the layer.
//
//   ConvAlgos a = choose_conv_algos(ctx.cudnn, {x, w, conv, y}, ConvAlgo::kDirect, true, 0, "conv1");
//   cudnnConvolutionForward(..., a.forward.algo, scratch, a.forward.workspace_bytes, ...);
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <string>

#include "core/conv_algo.h"

namespace vdnn {

struct ConvAlgoChoice {
  int algo = 0;           // the cuDNN enum value of its pass
  const char* name = "";  // "implicit_gemm", "algo_1", "winograd_nonfused", ...
  size_t workspace_bytes = 0;
  float measured_ms = -1;  // from cudnnFind*, -1 when not measured
};

struct ConvAlgos {
  ConvAlgoChoice forward, backward_data, backward_filter;
  size_t workspace_bytes() const;
  std::string to_string() const;  // "fwd implicit_gemm 0 B, bwd data algo_1 0 B, bwd filter algo_1 0 B"
};

struct ConvDescriptors {
  cudnnTensorDescriptor_t x;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnTensorDescriptor_t y;
};

// Throws vdnn::Error naming `layer` when a pass has no deterministic fp32 algorithm within
// `workspace_limit` bytes. backward_data is left at zero workspace when `need_data_grad` is false
// (the graph input).
ConvAlgos choose_conv_algos(cudnnHandle_t cudnn, const ConvDescriptors& d, ConvAlgo want, bool need_data_grad,
                            size_t workspace_limit, const std::string& layer);

}  // namespace vdnn
