// Fully connected layer on oneDNN's inner product; accepts blocked 4-D inputs directly.
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/weighted_args.h"
#include "layers/fc.h"

namespace vdnn {
namespace {

using dnnl::memory;

class FcKernel : public CpuKernel {
 public:
  FcKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& p = static_cast<const FcLayer&>(s.layer).p();
    has_bias_ = p.bias;
    src_md_ = s.in_mds[0];
    memory::dims wei{p.units};
    for (int64_t d : s.in_shapes[0].dims) wei.push_back(d);
    const memory::desc bias_md = has_bias_ ? plain_md({p.units}) : memory::desc();
    const auto attr = user_scratchpad();
    dnnl::inner_product_forward::desc fd(dnnl::prop_kind::forward_training, src_md_, any_md(wei),
                                         bias_md, plain_md({s.batch, p.units}));
    fwd_pd_ = dnnl::inner_product_forward::primitive_desc(fd, attr, engine);
    out_md = fwd_pd_.dst_desc();
    const memory::desc wei_md = fwd_pd_.weights_desc();
    param_mds = {wei_md};
    if (has_bias_) param_mds.push_back(bias_md);
    dnnl::inner_product_backward_data::desc bd(src_md_, wei_md, out_md);
    bwd_data_pd_ = dnnl::inner_product_backward_data::primitive_desc(bd, attr, engine, fwd_pd_);
    dnnl::inner_product_backward_weights::desc bw(src_md_, wei_md, bias_md, out_md);
    bwd_weights_pd_ =
        dnnl::inner_product_backward_weights::primitive_desc(bw, attr, engine, fwd_pd_);
    fwd_ = dnnl::inner_product_forward(fwd_pd_);
    bwd_data_ = dnnl::inner_product_backward_data(bwd_data_pd_);
    bwd_weights_ = dnnl::inner_product_backward_weights(bwd_weights_pd_);
    scratch_bytes = std::max({scratch_of(fwd_pd_), scratch_of(bwd_data_pd_),
                              scratch_of(bwd_weights_pd_)});
    forward_scratch_bytes = scratch_of(fwd_pd_);
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    fwd_.execute(stream, forward_args(mds(), engine_, a, fwd_pd_.scratchpad_desc()));
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    bwd_weights_.execute(stream,
                         backward_weights_args(mds(), engine_, a, bwd_weights_pd_.scratchpad_desc()));
    if (!a.d_in[0]) return;
    bwd_data_.execute(stream, {{DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                               {DNNL_ARG_WEIGHTS, bind(param_mds[0], engine_, a.params[0])},
                               {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, a.d_in[0])},
                               {DNNL_ARG_SCRATCHPAD,
                                bind(bwd_data_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  WeightedMds mds() const {
    return {src_md_, param_mds[0], has_bias_ ? param_mds[1] : memory::desc(), out_md};
  }

  dnnl::engine engine_;
  bool has_bias_ = false;
  memory::desc src_md_;
  dnnl::inner_product_forward::primitive_desc fwd_pd_;
  dnnl::inner_product_backward_data::primitive_desc bwd_data_pd_;
  dnnl::inner_product_backward_weights::primitive_desc bwd_weights_pd_;
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_data bwd_data_;
  dnnl::inner_product_backward_weights bwd_weights_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_fc_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<FcKernel>(s, e);
}

}  // namespace vdnn
