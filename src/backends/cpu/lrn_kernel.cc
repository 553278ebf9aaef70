// LRN across channels on oneDNN; its workspace is saved state for backward.
#include <string>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/lrn.h"

namespace vdnn {
namespace {

using dnnl::memory;

// oneDNN 2.6's JIT LRN (lrn_jit:avx512_core, channels-last input) crashes while creating its
// backward primitive when the local size is 1 (found by the stress test: network seed 25, an LRN
// of size 1 after a grouped convolution whose output is NHWC). For size 1 both directions move on
// to the next implementation oneDNN offers (the reference one; same results, no workspace).
template <class PrimitiveDesc>
void skip_jit_lrn(PrimitiveDesc& pd) {
  while (std::string(pd.impl_info_str()).rfind("lrn_jit", 0) == 0 && pd.next_impl()) {
  }
}

class LrnKernel : public CpuKernel {
 public:
  LrnKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& p = static_cast<const LrnLayer&>(s.layer).p();
    const auto algo = dnnl::algorithm::lrn_across_channels;
    src_md_ = s.in_mds[0];
    const auto attr = user_scratchpad();
    dnnl::lrn_forward::desc fd(dnnl::prop_kind::forward_training, algo, src_md_, p.size, static_cast<float>(p.alpha),
                               static_cast<float>(p.beta), static_cast<float>(p.k));
    fwd_pd_ = dnnl::lrn_forward::primitive_desc(fd, attr, engine);
    if (p.size == 1) skip_jit_lrn(fwd_pd_);
    out_md = fwd_pd_.dst_desc();
    saved_mds = {fwd_pd_.workspace_desc()};
    forward_writes_saved = true;
    dnnl::lrn_backward::desc bd(algo, src_md_, src_md_, p.size, static_cast<float>(p.alpha), static_cast<float>(p.beta),
                                static_cast<float>(p.k));
    bwd_pd_ = dnnl::lrn_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    if (p.size == 1) skip_jit_lrn(bwd_pd_);
    fwd_ = dnnl::lrn_forward(fwd_pd_);
    bwd_ = dnnl::lrn_backward(bwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    forward_scratch_bytes = scratch_of(fwd_pd_);
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    fwd_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                          {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_WORKSPACE, bind(saved_mds[0], engine_, a.saved[0])},
                          {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    bwd_.execute(stream, {{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                          {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                          {DNNL_ARG_WORKSPACE, bind(saved_mds[0], engine_, a.saved[0])},
                          {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, a.d_in[0])},
                          {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  dnnl::engine engine_;
  memory::desc src_md_;
  dnnl::lrn_forward::primitive_desc fwd_pd_;
  dnnl::lrn_backward::primitive_desc bwd_pd_;
  dnnl::lrn_forward fwd_;
  dnnl::lrn_backward bwd_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_lrn_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<LrnKernel>(s, e);
}

}  // namespace vdnn
