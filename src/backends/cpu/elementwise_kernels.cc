// ReLU and ReLU6 (in place, backward from their output as vDNN), dropout (mask as saved state; a recompute
// multiplies by that saved mask) and flatten (a reorder to plain NCHW, the only layout a
// flattened vector has).
#include "backends/cpu/bf16.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/elementwise.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace {

using dnnl::memory;

// relu: eltwise_relu (alpha 0: no leak); relu6: eltwise_clip_v2 to [0, 6], whose backward passes
// the gradient where 0 < y < 6 (strictly, as PyTorch's hardtanh_backward; clip without v2 would
// pass it at y == 6 too). Both from the output, so in place loses nothing the backward needs.
class ReluKernel : public CpuKernel {
 public:
  ReluKernel(const KernelSetup& s, const dnnl::engine& engine)
      : engine_(engine), done_before_(s.relu_done_before), backward_done_after_(s.relu_backward_done_after) {
    const bool six = s.layer.type() == "relu6";
    const auto algo =
        six ? dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd : dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    const float alpha = 0.f, beta = six ? Relu6Layer::kCeiling : 0.f;
    const memory::desc& md = s.in_mds[0];
    const auto attr = user_scratchpad();
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, algo, md, alpha, beta);
    fwd_pd_ = dnnl::eltwise_forward::primitive_desc(fd, attr, engine);
    dnnl::eltwise_backward::desc bd(algo, md, md, alpha, beta);
    bwd_pd_ = dnnl::eltwise_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    out_md = fwd_pd_.dst_desc();
    fwd_ = dnnl::eltwise_forward(fwd_pd_);
    bwd_ = dnnl::eltwise_backward(bwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    forward_scratch_bytes = scratch_of(fwd_pd_);
    backward_done_by_producer = backward_done_after_;
    implementation = backward_done_after_ ? "fused into the layer before it, forward and backward"
                     : done_before_       ? "fused into the layer before it"
                                          : fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    if (done_before_) return;  // the convolution before it applied it (in place, same buffer)
    fwd_.execute(stream, {{DNNL_ARG_SRC, bind(out_md, engine_, a.in[0])},
                          {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    // Batch norm's backward zeroes this gradient where the ReLU did: in place, the ReLU's input
    // gradient is its output gradient (one tensor in the Program), which batch norm reads next.
    if (backward_done_after_) return;
    bwd_.execute(stream, {{DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                          {DNNL_ARG_DIFF_SRC, bind(out_md, engine_, a.d_in[0])},
                          {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  dnnl::engine engine_;
  bool done_before_, backward_done_after_;
  dnnl::eltwise_forward::primitive_desc fwd_pd_;
  dnnl::eltwise_backward::primitive_desc bwd_pd_;
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
};

// y = x * mask, mask in {0, 1/(1-rate)} drawn per step; backward dx = dy * mask. Evaluation copies.
class DropoutKernel : public CpuKernel {
 public:
  DropoutKernel(const KernelSetup& s, const dnnl::engine& engine)
      : engine_(engine), seed_(s.seed), rate_(static_cast<const DropoutLayer&>(s.layer).rate()) {
    const memory::desc& md = s.in_mds[0];
    out_md = md;
    saved_mds = {md};
    dnnl::binary::desc bd(dnnl::algorithm::binary_mul, md, md, md);
    mul_pd_ = dnnl::binary::primitive_desc(bd, user_scratchpad(), engine);
    mul_ = dnnl::binary(mul_pd_);
    copy_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, md, engine, md));
    scratch_bytes = scratch_of(mul_pd_);
    implementation = mul_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.training) {
      run_reorder(copy_, stream, bind(out_md, engine_, a.in[0]), bind(out_md, engine_, a.out));
      return;
    }
    void* mask = a.saved[0];
    if (a.recompute) return multiply(stream, a.in[0], mask, a.out, a.scratch);  // the same mask
    const float keep = static_cast<float>(1.0 - rate_), scale = 1.0f / keep;
    Rng rng(seed_, a.step);
    if (out_md.data_type() == dt::bf16) {  // the same draws; 1/(1-rate) rounded to bf16
      const size_t count = out_md.get_size() / sizeof(uint16_t);
      const uint16_t on = float_to_bf16(scale), off = float_to_bf16(0.0f);
      uint16_t* m = static_cast<uint16_t*>(mask);
      for (size_t i = 0; i < count; ++i) m[i] = rng.uniform() < keep ? on : off;
    } else {
      const size_t count = out_md.get_size() / sizeof(float);
      float* m = static_cast<float*>(mask);
      for (size_t i = 0; i < count; ++i) m[i] = rng.uniform() < keep ? scale : 0.0f;
    }
    multiply(stream, a.in[0], mask, a.out, a.scratch);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (a.d_in[0]) multiply(stream, a.d_out, a.saved[0], a.d_in[0], a.scratch);
  }

 private:
  void multiply(dnnl::stream& stream, void* x, void* mask, void* y, void* scratch) {
    mul_.execute(stream, {{DNNL_ARG_SRC_0, bind(out_md, engine_, x)},
                          {DNNL_ARG_SRC_1, bind(out_md, engine_, mask)},
                          {DNNL_ARG_DST, bind(out_md, engine_, y)},
                          {DNNL_ARG_SCRATCHPAD, bind(mul_pd_.scratchpad_desc(), engine_, scratch)}});
  }

  dnnl::engine engine_;
  uint64_t seed_;
  double rate_;
  dnnl::binary::primitive_desc mul_pd_;
  dnnl::binary mul_;
  dnnl::reorder copy_;
};

class FlattenKernel : public CpuKernel {
 public:
  FlattenKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    src_md_ = s.in_mds[0];
    // The reorder converts where the output's type differs (bf16 maps, f32 logits).
    plain_src_md_ = plain_md(s.in_shapes[0].with_batch(s.batch), s.out_dt());
    out_md = plain_md({s.batch, s.out_shape.elements()}, s.out_dt());
    to_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, src_md_, engine, plain_src_md_));
    from_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain_src_md_, engine, src_md_));
    implementation = "reorder";
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    run_reorder(to_plain_, stream, bind(src_md_, engine_, a.in[0]), bind(plain_src_md_, engine_, a.out));
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    run_reorder(from_plain_, stream, bind(plain_src_md_, engine_, a.d_out), bind(src_md_, engine_, a.d_in[0]));
  }

 private:
  dnnl::engine engine_;
  memory::desc src_md_, plain_src_md_;
  dnnl::reorder to_plain_, from_plain_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_relu_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<ReluKernel>(s, e);
}
std::unique_ptr<CpuKernel> make_dropout_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<DropoutKernel>(s, e);
}
std::unique_ptr<CpuKernel> make_flatten_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<FlattenKernel>(s, e);
}

}  // namespace vdnn
