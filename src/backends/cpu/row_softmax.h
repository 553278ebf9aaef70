// backends/cpu/row_softmax.h — oneDNN's softmax over each row of plain [rows, classes] logits, into
// the probabilities a loss saves for its backward (cross_entropy_kernel.cc).
//
//   RowSoftmax softmax(plain_md({rows, classes}), engine);
//   kernel.scratch_bytes = softmax.scratch_bytes();
//   softmax.run(stream, a.in[0], a.saved[0], a.scratch);   // returns once the probabilities are written
#pragma once

#include <string>

#include "backends/cpu/dnnl_util.h"

namespace vdnn {

class RowSoftmax {
 public:
  RowSoftmax() = default;
  RowSoftmax(const dnnl::memory::desc& logits_md, const dnnl::engine& engine) : engine_(engine), md_(logits_md) {
    pd_ = dnnl::softmax_forward::primitive_desc(dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, md_, 1),
                                                user_scratchpad(), engine);
    fwd_ = dnnl::softmax_forward(pd_);
  }
  const dnnl::memory::desc& md() const { return md_; }
  size_t scratch_bytes() const { return scratch_of(pd_); }
  std::string implementation() const { return pd_.impl_info_str(); }

  void run(dnnl::stream& stream, void* logits, void* probabilities, void* scratch) const {
    fwd_.execute(stream, {{DNNL_ARG_SRC, bind(md_, engine_, logits)},
                          {DNNL_ARG_DST, bind(md_, engine_, probabilities)},
                          {DNNL_ARG_SCRATCHPAD, bind(pd_.scratchpad_desc(), engine_, scratch)}});
    stream.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::memory::desc md_;
  dnnl::softmax_forward::primitive_desc pd_;
  dnnl::softmax_forward fwd_;
};

}  // namespace vdnn
