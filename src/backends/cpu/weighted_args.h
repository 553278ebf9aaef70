// backends/cpu/weighted_args.h — the argument maps shared by the layers with weights and an
// optional bias (convolution, inner product): forward and backward-weights bind the same tensors.
//
//   fwd_.execute(stream, forward_args(mds_, engine_, a, fwd_pd_.scratchpad_desc()));
//   bwd_weights_.execute(stream, backward_weights_args(mds_, engine_, a, bwd_pd_.scratchpad_desc()));
#pragma once

#include <unordered_map>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernel.h"

namespace vdnn {

struct WeightedMds {
  dnnl::memory::desc src, weights, bias, dst;  // bias is empty (zero) when the layer has none
  bool has_bias() const { return bias.get_size() > 0; }
};

inline std::unordered_map<int, dnnl::memory> forward_args(const WeightedMds& m, const dnnl::engine& e,
                                                          const KernelArgs& a, const dnnl::memory::desc& scratch) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, bind(m.src, e, a.in[0])},
                                             {DNNL_ARG_WEIGHTS, bind(m.weights, e, a.params[0])},
                                             {DNNL_ARG_DST, bind(m.dst, e, a.out)},
                                             {DNNL_ARG_SCRATCHPAD, bind(scratch, e, a.scratch)}};
  if (m.has_bias()) args[DNNL_ARG_BIAS] = bind(m.bias, e, a.params[1]);
  return args;
}

inline std::unordered_map<int, dnnl::memory> backward_weights_args(const WeightedMds& m, const dnnl::engine& e,
                                                                   const KernelArgs& a,
                                                                   const dnnl::memory::desc& scratch) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, bind(m.src, e, a.in[0])},
                                             {DNNL_ARG_DIFF_DST, bind(m.dst, e, a.d_out)},
                                             {DNNL_ARG_DIFF_WEIGHTS, bind(m.weights, e, a.d_params[0])},
                                             {DNNL_ARG_SCRATCHPAD, bind(scratch, e, a.scratch)}};
  if (m.has_bias()) args[DNNL_ARG_DIFF_BIAS] = bind(m.bias, e, a.d_params[1]);
  return args;
}

}  // namespace vdnn
