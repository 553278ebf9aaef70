// Convolution on oneDNN: forward (with the next ReLU as a post-op when fused), backward data,
// backward weights (+bias), all in blocked layouts.
//
// Some shapes have only oneDNN's reference kernel ("ref:any") in the blocked layouts: a grouped
// convolution with 4 channels per group ran 5.2 s forward and 6.7 s backward weights per batch of
// 128 (64 channels, 16x16, 2 threads) where the GEMM-based kernel on plain nchw takes 37 and 52 ms.
// make_conv_kernel therefore checks all three passes; if one is a reference kernel it tries input
// and output in plain nchw, then nhwc (the input reordered into scratch, its gradient back),
// keeps the first choice without one, and otherwise names the slow passes in `slow_kernels`.
//
// In bf16 the input, output and their gradients are bf16 and the weights stay f32 (the master copy
// SGD updates, in the layout backward weights writes its f32 gradient in); forward and backward
// data cast them to bf16 in scratch each call. oneDNN 2.6 has no bf16 Winograd: `auto` is direct.
#include "backends/cpu/conv_gemm_weights.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/weighted_args.h"
#include "layers/conv.h"

#include <optional>

namespace vdnn {
namespace {

using dnnl::memory;
using dnnl::prop_kind;

// oneDNN 2.6's `auto` takes Winograd even for outputs of 2x2, where its 4x4 output tiles are
// three-quarters padding: ResNet-18's layer4 at 64x64 input ran 2.5x slower than direct (fwd 7.8 vs
// 2.8 ms, bwd 19-24 vs 11-14 ms, batch 32). At 4x4 outputs Winograd wins again (256 channels,
// batch 32: fwd 1.6 vs 1.9 ms, bwd data 1.8 vs 2.0, bwd weights 1.6 vs 2.8). Below 4x4 outputs,
// `auto` therefore means direct. The rule is fixed, not timed, so that two runs choose the same
// algorithms and give the same weights.
bool is_tiny(const Shape& out) { return out.height() < 4 || out.width() < 4; }

dnnl::algorithm algorithm_for(ConvAlgo algo, const Shape& out) {
  if (algo == ConvAlgo::kDirect) return dnnl::algorithm::convolution_direct;
  if (algo == ConvAlgo::kWinograd) return dnnl::algorithm::convolution_winograd;
  if (is_tiny(out)) return dnnl::algorithm::convolution_direct;
  return dnnl::algorithm::convolution_auto;
}

// There, oneDNN's direct backward-weights kernel is slow too (80 GFLOP/s at 512 channels, 2x2
// outputs, batch 32); `auto` computes the weight gradient as one GEMM instead (conv_gemm_weights.h).
bool gemm_weights_for(const ConvLayer::Params& p, const Shape& out) { return p.groups == 1 && is_tiny(out); }

bool is_winograd(const dnnl::convolution_forward::primitive_desc& pd) {
  const dnnl_convolution_desc_t* d = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd.get(), dnnl_query_convolution_d, 0, &d),
                          "could not query a convolution descriptor");
  return d->alg_kind == dnnl_convolution_winograd;
}

// What every primitive of one convolution is described with: oneDNN's dims (dilation counted from
// 0, dense; padding may differ at the end, bottom/right), the bias, the algorithm and the
// activations' type, the attributes (the forward's with the next ReLU fused; backward primitives
// take no post-ops).
struct ConvDescs {
  memory::dims src, dst, wei, strides, dilates, pad, pad_end;
  memory::desc bias_md;
  dnnl::algorithm algo;
  dt act;
  dnnl::primitive_attr attr, fwd_attr;
};

ConvDescs conv_descs(const KernelSetup& s) {
  const auto& p = static_cast<const ConvLayer&>(s.layer).p();
  const Shape& x = s.in_shapes[0];
  const int64_t n = s.batch, ic = x.channels(), oc = p.channels;
  ConvDescs d;
  d.src = {n, ic, x.height(), x.width()};
  d.dst = {n, oc, s.out_shape.height(), s.out_shape.width()};
  d.wei = p.groups > 1 ? memory::dims{p.groups, oc / p.groups, ic / p.groups, p.kh, p.kw}
                       : memory::dims{oc, ic, p.kh, p.kw};
  d.strides = {p.sh, p.sw};
  d.dilates = {p.dh - 1, p.dw - 1};
  d.pad = {p.ph, p.pw};
  d.pad_end = {p.pb(), p.pr()};
  d.bias_md = p.bias ? plain_md({oc}) : memory::desc();
  d.attr = user_scratchpad();
  d.fwd_attr = user_scratchpad();
  if (s.applies_relu)  // the next ReLU (ReLU6: clipped to [0, 6]), fused: one pass over the output saved
    d.fwd_attr.set_post_ops(relu_post_op(s.relu_ceiling));
  d.algo = algorithm_for(s.conv_algo, s.out_shape);
  d.act = s.act_dt();
  return d;
}

class ConvKernel : public CpuKernel {
 public:
  // `layout`: tag::undef for the usual choice (oneDNN's, or the producer's layout); otherwise the
  // layout of the output and of the input the primitives take, reordered from the producer's.
  ConvKernel(const KernelSetup& s, const dnnl::engine& engine, tag layout = tag::undef) : engine_(engine) {
    const ConvDescs d = conv_descs(s);
    has_bias_ = static_cast<const ConvLayer&>(s.layer).p().bias;
    const memory::desc wei_md = choose_forward(s, d, layout);
    const size_t bwd_data_scratch = choose_backward_data(d, wei_md);
    const size_t bwd_weights_scratch = choose_backward_weights(s, d, wei_md);
    fwd_ = dnnl::convolution_forward(fwd_pd_);
    bwd_data_ = dnnl::convolution_backward_data(bwd_data_pd_);
    const size_t fwd_scratch = with_weights_cast(scratch_of(fwd_pd_), wei_md);
    lay_out_scratch(fwd_scratch, bwd_data_scratch, bwd_weights_scratch);
    describe(s, layout);
  }

  void forward(dnnl::stream& stream, const KernelArgs& given) override {
    KernelArgs a = on_scratchpad(with_src_layout(stream, given));
    WeightedMds m = mds();
    if (cast_weights_) {  // bf16: the weights cast after the scratchpad
      void* cast = static_cast<char*>(a.scratch) + fwd_wei_offset_;
      run_reorder(wei_cast_, stream, bind(param_mds[0], engine_, a.params[0]), bind(fwd_wei_md_, engine_, cast));
      a.params[0] = cast;
      m.weights = fwd_wei_md_;
    }
    fwd_.execute(stream, forward_args(m, engine_, a, fwd_pd_.scratchpad_desc()));
  }

  void backward(dnnl::stream& stream, const KernelArgs& given) override {
    const KernelArgs a = on_scratchpad(given.d_params[0] ? with_src_layout(stream, given) : given);
    if (a.d_params[0] && gemm_weights_) {
      gemm_weights_->run(stream, a.in[0], a.d_out, a.d_params[0],
                         has_bias_ ? static_cast<float*>(a.d_params[1]) : nullptr, a.scratch);
    } else if (a.d_params[0]) {
      bwd_weights_.execute(stream, backward_weights_args(mds(), engine_, a, bwd_weights_pd_.scratchpad_desc()));
    }
    if (a.d_in[0]) {
      void* weights = a.params[0];
      if (reorder_weights_) {
        weights = static_cast<char*>(a.scratch) + bwd_wei_offset_;
        run_reorder(wei_reorder_, stream, bind(param_mds[0], engine_, a.params[0]),
                    bind(bwd_wei_md_, engine_, weights));
      }
      void* dx = reorder_src_ ? static_cast<char*>(given.scratch) + dx_offset_ : a.d_in[0];
      bwd_data_.execute(stream, {{DNNL_ARG_DIFF_DST, bind(out_md, engine_, a.d_out)},
                                 {DNNL_ARG_WEIGHTS, bind(bwd_wei_md_, engine_, weights)},
                                 {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, dx)},
                                 {DNNL_ARG_SCRATCHPAD, bind(bwd_data_pd_.scratchpad_desc(), engine_, a.scratch)}});
      if (reorder_src_) run_reorder(from_src_, stream, bind(src_md_, engine_, dx), bind(in_md_, engine_, a.d_in[0]));
    }
  }

 private:
  // The arguments with the input reordered into scratch (at its start) when the primitives take
  // another layout.
  KernelArgs with_src_layout(dnnl::stream& stream, const KernelArgs& a) const {
    if (!reorder_src_) return a;
    KernelArgs r = a;
    r.in[0] = a.scratch;
    run_reorder(to_src_, stream, bind(in_md_, engine_, a.in[0]), bind(src_md_, engine_, r.in[0]));
    return r;
  }

  // The arguments with `scratch` at the oneDNN scratchpad, past the reordered input.
  KernelArgs on_scratchpad(KernelArgs a) const {
    a.scratch = static_cast<char*>(a.scratch) + pad_offset_;
    return a;
  }

  WeightedMds mds() const { return {src_md_, param_mds[0], has_bias_ ? param_mds[1] : memory::desc(), out_md}; }

  // The forward primitive: oneDNN picks the layouts; the producer's layout is kept for src if
  // oneDNN wants another one (a reorder per step would cost more than a slightly slower kernel).
  // Sets the input's, src's, output's and forward weights' layouts and the parameters'; returns the
  // weight parameter's (f32: in the forward's layout in fp32, in that of its f32 gradient in bf16).
  memory::desc choose_forward(const KernelSetup& s, const ConvDescs& d, tag layout) {
    auto make_fwd = [&](const memory::desc& src_md) {
      const memory::desc dst_md = layout == tag::undef ? any_md(d.dst, d.act) : memory::desc(d.dst, d.act, layout);
      dnnl::convolution_forward::desc fd(prop_kind::forward_training, d.algo, src_md, any_md(d.wei, d.act), d.bias_md,
                                         dst_md, d.strides, d.dilates, d.pad, d.pad_end);
      return dnnl::convolution_forward::primitive_desc(fd, d.fwd_attr, engine_);
    };
    in_md_ = s.in_mds[0];
    if (layout == tag::undef) {
      fwd_pd_ = make_fwd(any_md(d.src, d.act));
      if (fwd_pd_.src_desc() != in_md_) fwd_pd_ = make_fwd(in_md_);
    } else {
      fwd_pd_ = make_fwd(memory::desc(d.src, d.act, layout));
    }
    src_md_ = fwd_pd_.src_desc();
    out_md = fwd_pd_.dst_desc();
    fwd_wei_md_ = fwd_pd_.weights_desc();
    memory::desc wei_md = fwd_wei_md_;
    if (d.act != dt::f32) {  // the master weights in the layout of their f32 gradient
      dnnl::convolution_backward_weights::desc bw(d.algo, src_md_, any_md(d.wei), d.bias_md, out_md, d.strides,
                                                  d.dilates, d.pad, d.pad_end);
      wei_md = dnnl::convolution_backward_weights::primitive_desc(bw, d.attr, engine_, fwd_pd_).diff_weights_desc();
    }
    param_mds = {wei_md};
    if (has_bias_) param_mds.push_back(d.bias_md);
    return wei_md;
  }

  // Backward data usually wants the weights in another blocking (e.g. OIhw16o16i, not
  // OIhw16i16o); reorder them into scratch each step rather than fall back to a reference kernel.
  // Returns its scratch bytes (its scratchpad, then the reordered weights).
  size_t choose_backward_data(const ConvDescs& d, const memory::desc& wei_md) {
    dnnl::convolution_backward_data::desc bd(d.algo, src_md_, any_md(d.wei, d.act), out_md, d.strides, d.dilates, d.pad,
                                             d.pad_end);
    bwd_data_pd_ = dnnl::convolution_backward_data::primitive_desc(bd, d.attr, engine_, fwd_pd_);
    bwd_wei_md_ = bwd_data_pd_.weights_desc();
    size_t scratch = scratch_of(bwd_data_pd_);
    if (bwd_wei_md_ != wei_md) {
      wei_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, wei_md, engine_, bwd_wei_md_));
      reorder_weights_ = true;
      bwd_wei_offset_ = scratch_offset_after(scratch);
      scratch = bwd_wei_offset_ + bwd_wei_md_.get_size();
    }
    return scratch;
  }

  // The weight gradient: one GEMM where `auto` takes it (tiny outputs, conv_gemm_weights.h);
  // otherwise Winograd where the forward runs it and oneDNN has one for this shape (oneDNN's `auto`
  // takes direct for backward weights even there, and Winograd's is 1.7-2.4x faster here:
  // ResNet-18, batch 32, 4x4 to 16x16 outputs), else the forward's algorithm. Returns its scratch.
  size_t choose_backward_weights(const KernelSetup& s, const ConvDescs& d, const memory::desc& wei_md) {
    if (s.conv_algo == ConvAlgo::kAuto && conv_auto_uses_gemm_weights(s)) {
      const auto& p = static_cast<const ConvLayer&>(s.layer).p();
      const Shape& x = s.in_shapes[0];
      const ConvGeometry g{s.batch,
                           x.channels(),
                           x.height(),
                           x.width(),
                           p.channels,
                           s.out_shape.height(),
                           s.out_shape.width(),
                           p.kh,
                           p.kw,
                           p.sh,
                           p.sw,
                           p.ph,
                           p.pw,
                           p.dh,
                           p.dw};
      gemm_weights_.emplace(g, src_md_, out_md, wei_md, engine_);
      return gemm_weights_->scratch_bytes();
    }
    auto make_bwd_weights = [&](dnnl::algorithm a) {
      dnnl::convolution_backward_weights::desc bw(a, src_md_, wei_md, d.bias_md, out_md, d.strides, d.dilates, d.pad,
                                                  d.pad_end);
      return dnnl::convolution_backward_weights::primitive_desc(bw, d.attr, engine_, fwd_pd_);
    };
    bool winograd_weights = is_winograd(fwd_pd_);
    if (winograd_weights) {
      try {
        bwd_weights_pd_ = make_bwd_weights(dnnl::algorithm::convolution_winograd);
      } catch (const dnnl::error&) {  // none for this shape
        winograd_weights = false;
      }
    }
    if (!winograd_weights) bwd_weights_pd_ = make_bwd_weights(d.algo);
    bwd_weights_ = dnnl::convolution_backward_weights(bwd_weights_pd_);
    return scratch_of(bwd_weights_pd_);
  }

  // bf16: the forward reads the weights cast to bf16, placed after its scratchpad (`fwd_scratch`
  // bytes). Returns the forward's scratch bytes with them.
  size_t with_weights_cast(size_t fwd_scratch, const memory::desc& wei_md) {
    if (fwd_wei_md_ == wei_md) return fwd_scratch;
    wei_cast_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, wei_md, engine_, fwd_wei_md_));
    cast_weights_ = true;
    fwd_wei_offset_ = scratch_offset_after(fwd_scratch);
    return fwd_wei_offset_ + fwd_wei_md_.get_size();
  }

  // The scratch: the passes share the scratchpad; with the input in another layout than its
  // producer's, the reordered input first, the scratchpad, then dx (backward only).
  void lay_out_scratch(size_t fwd_scratch, size_t bwd_data_scratch, size_t bwd_weights_scratch) {
    scratch_bytes = std::max({fwd_scratch, bwd_data_scratch, bwd_weights_scratch});
    reorder_src_ = src_md_ != in_md_;
    if (reorder_src_) {
      to_src_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, in_md_, engine_, src_md_));
      from_src_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, src_md_, engine_, in_md_));
      pad_offset_ = scratch_offset_after(src_md_.get_size());
      dx_offset_ = scratch_offset_after(pad_offset_ + scratch_bytes);
      scratch_bytes = dx_offset_ + src_md_.get_size();
    }
    forward_scratch_bytes = pad_offset_ + fwd_scratch;  // the reordered input, the forward's scratchpad (+ cast)
  }

  // The implementation line, and the passes that run a reference kernel (slow_kernels).
  void describe(const KernelSetup& s, tag layout) {
    implementation =
        std::string(fwd_pd_.impl_info_str()) + (s.applies_relu ? (s.relu_ceiling > 0 ? " + relu6" : " + relu") : "") +
        (gemm_weights_ ? ", weight gradient by gemm" : "") +
        (reorder_src_ ? (layout == tag::nchw ? ", input reordered to nchw" : ", input reordered to nhwc") : "");
    const auto note = [&](const char* pass, const std::string& impl) {
      if (is_reference_implementation(impl)) slow_kernels.push_back(std::string(pass) + ": " + impl);
    };
    note("forward", fwd_pd_.impl_info_str());
    const bool needs_dx = s.input_needs_grad.empty() || s.input_needs_grad[0];  // not the graph input
    if (needs_dx) note("backward data", bwd_data_pd_.impl_info_str());
    if (!gemm_weights_) note("backward weights", bwd_weights_pd_.impl_info_str());
  }

  dnnl::engine engine_;
  bool has_bias_ = false;
  memory::desc in_md_;                             // the input's layout (its producer's)
  memory::desc src_md_, fwd_wei_md_, bwd_wei_md_;  // the layouts the primitives take
  bool reorder_src_ = false;                       // src_md_ != in_md_: the input and its gradient go via scratch
  size_t pad_offset_ = 0, dx_offset_ = 0;          // scratch: [reordered x][scratchpad][reordered dx]
  dnnl::reorder to_src_, from_src_;
  bool reorder_weights_ = false;  // backward data reads weights reordered into scratch
  size_t bwd_wei_offset_ = 0;     // ... at this offset
  dnnl::reorder wei_reorder_;
  bool cast_weights_ = false;  // bf16: forward reads the weights cast to bf16 in scratch
  size_t fwd_wei_offset_ = 0;  // ... at this offset
  dnnl::reorder wei_cast_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
  dnnl::convolution_forward fwd_;
  dnnl::convolution_backward_data bwd_data_;
  dnnl::convolution_backward_weights bwd_weights_;
  std::optional<ConvGemmWeights> gemm_weights_;  // instead of bwd_weights_ (then unset) when tiny
};

// Where a bf16 convolution computes in bf16, and where in fp32 (measured on a Xeon with AMX,
// oneDNN 2.6, per step):
// - oneDNN's fast bf16 convolutions are its AMX brgemm kernels ("brgconv:avx512_core_amx_bf16"),
//   which take channels-last (nhwc) only. In the blocked layouts fp32 uses it runs
//   "jit_bf16:avx512_core_bf16", 5-6x slower (vgg_cifar b64, 128 channels at 16x16: 68 ms forward
//   against 12 ms for fp32's Winograd) — the kernels a CPU with AVX512_BF16 and no AMX runs in any
//   layout. So a bf16 convolution runs in nhwc wherever a kernel that is not a reference one takes it;
//   the layers between convolutions keep their input's layout, so the network stays channels-last
//   (a blocked map beside an nhwc one cost a reorder per step, and ResNet's residual add of the two
//   ran oneDNN's reference sum).
// - Even on AMX, its bf16 backward kernels lose to fp32's where the output is small (ResNet-18 at
//   64x64, batch 32, bf16 against fp32 over the three passes: 2x2 outputs 40.8 against 18.1 ms, 4x4
//   29.7 against 23.7, 8x8 15.8 against 14.8, 16x16 14.1 against 19.0). A convolution with an output
//   below 8x8 therefore runs its fp32 kernels (Winograd included) on f32 copies of its bf16 input and
//   gradient, in oneDNN's blocked layout, its output cast back to bf16 nhwc (an f32 island,
//   f32_island_kernel.cc). Its maps are small, and so are the copies in its scratch; larger ones
//   would cost the memory bf16 saves (fmnist_cnn b32 with every convolution an island: a higher
//   peak than fp32's).
// Null: neither exists here (the caller goes on to the usual choices).
std::unique_ptr<CpuKernel> make_bf16_conv_kernel(const KernelSetup& s, const dnnl::engine& e) {
  if (s.out_shape.height() < 8 || s.out_shape.width() < 8)
    return make_f32_island_kernel(s, e, make_conv_kernel, tag::aBcd16b, tag::nhwc);
  try {
    auto nhwc = std::make_unique<ConvKernel>(s, e, tag::nhwc);
    if (nhwc->slow_kernels.empty()) return nhwc;
  } catch (const dnnl::error&) {  // none in nhwc here
  }
  return nullptr;
}

}  // namespace

bool conv_auto_uses_gemm_weights(const KernelSetup& s) {
  if (s.layer.kind() != LayerKind::kConv) return false;
  return gemm_weights_for(static_cast<const ConvLayer&>(s.layer).p(), s.out_shape);
}

std::unique_ptr<CpuKernel> make_conv_kernel(const KernelSetup& s, const dnnl::engine& e) {
  if (s.precision == Precision::kBf16)
    if (auto bf16 = make_bf16_conv_kernel(s, e)) return bf16;
  auto kernel = std::make_unique<ConvKernel>(s, e);
  if (kernel->slow_kernels.empty()) return kernel;
  for (tag layout : {tag::nchw, tag::nhwc}) {  // GEMM-based and channels-last kernels
    try {
      auto other = std::make_unique<ConvKernel>(s, e, layout);
      if (other->slow_kernels.empty()) return other;
    } catch (const dnnl::error&) {  // no kernel in this layout: keep looking
    }
  }
  return kernel;  // make_cpu_kernel reports its slow_kernels
}

}  // namespace vdnn
