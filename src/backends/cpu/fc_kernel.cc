// Fully connected layer on oneDNN's inner product; accepts blocked 4-D inputs directly.
//
// In bf16 the input and its gradient are bf16, the weights stay f32 (the master copy, in the layout
// of their f32 gradient) and are cast to bf16 in scratch for forward and backward data. The output
// is bf16, or f32 where it is the logits (KernelSetup::f32_output): backward then casts dy to bf16
// in scratch first, as oneDNN's bf16 backward passes take it.
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
    const dt act = s.act_dt();
    has_bias_ = p.bias;
    src_md_ = s.in_mds[0];
    memory::dims wei{p.units};
    for (int64_t d : s.in_shapes[0].dims) wei.push_back(d);
    const memory::desc bias_md = has_bias_ ? plain_md({p.units}) : memory::desc();
    const auto attr = user_scratchpad();
    dnnl::inner_product_forward::desc fd(dnnl::prop_kind::forward_training, src_md_, any_md(wei, act), bias_md,
                                         plain_md({s.batch, p.units}, s.out_dt()));
    fwd_pd_ = dnnl::inner_product_forward::primitive_desc(fd, attr, engine);
    out_md = fwd_pd_.dst_desc();
    dy_md_ = plain_md({s.batch, p.units}, act);
    compute_wei_md_ = fwd_pd_.weights_desc();
    memory::desc wei_md = compute_wei_md_;  // the parameter
    if (act != dt::f32) {                   // bf16: the f32 master weights, in their gradient's layout
      dnnl::inner_product_backward_weights::desc bw(src_md_, any_md(wei), bias_md, dy_md_);
      wei_md = dnnl::inner_product_backward_weights::primitive_desc(bw, attr, engine, fwd_pd_).diff_weights_desc();
    }
    param_mds = {wei_md};
    if (has_bias_) param_mds.push_back(bias_md);
    dnnl::inner_product_backward_data::desc bd(src_md_, compute_wei_md_, dy_md_);
    bwd_data_pd_ = dnnl::inner_product_backward_data::primitive_desc(bd, attr, engine, fwd_pd_);
    dnnl::inner_product_backward_weights::desc bw(src_md_, wei_md, bias_md, dy_md_);
    bwd_weights_pd_ = dnnl::inner_product_backward_weights::primitive_desc(bw, attr, engine, fwd_pd_);
    fwd_ = dnnl::inner_product_forward(fwd_pd_);
    bwd_data_ = dnnl::inner_product_backward_data(bwd_data_pd_);
    bwd_weights_ = dnnl::inner_product_backward_weights(bwd_weights_pd_);
    // Forward: [its scratchpad][bf16 weights]; backward: [its scratchpads][bf16 weights][bf16 dy].
    size_t forward = scratch_of(fwd_pd_), backward = std::max(scratch_of(bwd_data_pd_), scratch_of(bwd_weights_pd_));
    if (compute_wei_md_ != wei_md) {
      wei_cast_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, wei_md, engine, compute_wei_md_));
      fwd_wei_offset_ = scratch_offset_after(forward);
      forward = fwd_wei_offset_ + compute_wei_md_.get_size();
      bwd_wei_offset_ = scratch_offset_after(backward);
      backward = bwd_wei_offset_ + compute_wei_md_.get_size();
    }
    if (dy_md_ != out_md) {
      dy_cast_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, out_md, engine, dy_md_));
      dy_offset_ = scratch_offset_after(backward);
      backward = dy_offset_ + dy_md_.get_size();
    }
    forward_scratch_bytes = forward;
    scratch_bytes = std::max(forward, backward);
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& given) override {
    KernelArgs a = given;
    a.params[0] = compute_weights(stream, a, fwd_wei_offset_);
    fwd_.execute(stream, forward_args(mds(compute_wei_md_, out_md), engine_, a, fwd_pd_.scratchpad_desc()));
  }

  void backward(dnnl::stream& stream, const KernelArgs& given) override {
    KernelArgs a = given;
    if (dy_md_ != out_md) {  // the f32 logits' gradient, cast
      a.d_out = static_cast<char*>(a.scratch) + dy_offset_;
      run_reorder(dy_cast_, stream, bind(out_md, engine_, given.d_out), bind(dy_md_, engine_, a.d_out));
    }
    bwd_weights_.execute(
        stream, backward_weights_args(mds(param_mds[0], dy_md_), engine_, a, bwd_weights_pd_.scratchpad_desc()));
    if (!a.d_in[0]) return;
    bwd_data_.execute(stream,
                      {{DNNL_ARG_DIFF_DST, bind(dy_md_, engine_, a.d_out)},
                       {DNNL_ARG_WEIGHTS, bind(compute_wei_md_, engine_, compute_weights(stream, a, bwd_wei_offset_))},
                       {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, a.d_in[0])},
                       {DNNL_ARG_SCRATCHPAD, bind(bwd_data_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  // The weights as the primitives take them: the parameter itself, or (bf16) its cast in scratch.
  void* compute_weights(dnnl::stream& stream, const KernelArgs& a, size_t offset) const {
    if (compute_wei_md_ == param_mds[0]) return a.params[0];
    void* cast = static_cast<char*>(a.scratch) + offset;
    run_reorder(wei_cast_, stream, bind(param_mds[0], engine_, a.params[0]), bind(compute_wei_md_, engine_, cast));
    return cast;
  }

  WeightedMds mds(const memory::desc& weights, const memory::desc& dst) const {
    return {src_md_, weights, has_bias_ ? param_mds[1] : memory::desc(), dst};
  }

  dnnl::engine engine_;
  bool has_bias_ = false;
  memory::desc src_md_, compute_wei_md_, dy_md_;                    // dy_md_: out_md, or its bf16 form for the logits
  size_t fwd_wei_offset_ = 0, bwd_wei_offset_ = 0, dy_offset_ = 0;  // bf16: the casts' places in scratch
  dnnl::reorder wei_cast_, dy_cast_;
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
