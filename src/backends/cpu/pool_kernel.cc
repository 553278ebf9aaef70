// Max and average pooling on oneDNN; max pooling keeps its argmax workspace as saved state.
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/pool.h"

namespace vdnn {
namespace {

using dnnl::memory;

class PoolKernel : public CpuKernel {
 public:
  PoolKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& layer = static_cast<const PoolLayer&>(s.layer);
    const PoolLayer::Window w = layer.window(s.in_shapes[0]);
    const auto algo = layer.p().max ? dnnl::algorithm::pooling_max
                      : layer.p().exclude_padding ? dnnl::algorithm::pooling_avg_exclude_padding
                                                  : dnnl::algorithm::pooling_avg_include_padding;
    src_md_ = s.in_mds[0];
    memory::dims dst{s.batch, s.out_shape.channels(), w.oh, w.ow};
    memory::dims strides{w.sh, w.sw}, kernel{w.kh, w.kw}, pad_l{w.pt, w.pl}, pad_r{w.pb, w.pr};
    const auto attr = user_scratchpad();
    dnnl::pooling_forward::desc fd(dnnl::prop_kind::forward_training, algo, src_md_, any_md(dst),
                                   strides, kernel, pad_l, pad_r);
    fwd_pd_ = dnnl::pooling_forward::primitive_desc(fd, attr, engine);
    out_md = fwd_pd_.dst_desc();
    has_ws_ = layer.p().max;
    if (has_ws_) saved_mds = {fwd_pd_.workspace_desc()};
    dnnl::pooling_backward::desc bd(algo, src_md_, out_md, strides, kernel, pad_l, pad_r);
    bwd_pd_ = dnnl::pooling_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    fwd_ = dnnl::pooling_forward(fwd_pd_);
    bwd_ = dnnl::pooling_backward(bwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
        {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
        {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[0], engine_, a.saved[0]);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
        {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, a.d_in[0])},
        {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[0], engine_, a.saved[0]);
    bwd_.execute(stream, args);
  }

 private:
  dnnl::engine engine_;
  bool has_ws_ = false;
  memory::desc src_md_;
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::pooling_backward::primitive_desc bwd_pd_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_pool_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<PoolKernel>(s, e);
}

}  // namespace vdnn
