// Max and average pooling on oneDNN; max pooling keeps its argmax workspace as saved state.
//
// Average pooling with padding included divides by the window clipped to the PADDED input, as
// Caffe and PyTorch (count_include_pad, ceil_mode) do: in ceil mode the last window may run past
// the padding, and those overhanging cells do not count. oneDNN divides by kh*kw always, so for
// outputs whose window overhangs, forward rescales oneDNN's result by kh*kw / cells and backward
// rescales a copy of dy the same way before oneDNN's backward (only when some window overhangs).
#include <cstring>

#include "backends/cpu/bf16.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/pool.h"

namespace vdnn {
namespace {

using dnnl::memory;

// The offset, in elements, of logical index (n, c, h, w) in a blocked memory descriptor (plain
// and channel-blocked layouts alike): inner blocks innermost, in oneDNN's order.
int64_t element_offset(const memory::desc& md, const int64_t (&index)[4]) {
  const dnnl_blocking_desc_t& b = md.data.format_desc.blocking;
  int64_t pos[4] = {index[0], index[1], index[2], index[3]};
  int64_t off = 0, inner_stride = 1;
  for (int k = b.inner_nblks - 1; k >= 0; --k) {
    const int d = static_cast<int>(b.inner_idxs[k]);
    off += pos[d] % b.inner_blks[k] * inner_stride;
    pos[d] /= b.inner_blks[k];
    inner_stride *= b.inner_blks[k];
  }
  for (int d = 0; d < 4; ++d) off += pos[d] * b.strides[d];
  return md.data.offset0 + off;
}

// One output position whose window overhangs the padded input, and kh*kw / its counted cells.
struct Rescale {
  int64_t oh, ow;
  float factor;
};

// Cells of the window starting at `start` (may be negative: padding) up to the padded end.
int64_t counted(int64_t start, int64_t k, int64_t in, int64_t pad_end) {
  return std::min(start + k, in + pad_end) - start;
}

std::vector<Rescale> overhang_rescales(const PoolLayer::Window& w, const Shape& in) {
  std::vector<Rescale> out;
  for (int64_t oh = 0; oh < w.oh; ++oh)
    for (int64_t ow = 0; ow < w.ow; ++ow) {
      const int64_t rows = counted(oh * w.sh - w.pt, w.kh, in.height(), w.eh);
      const int64_t cols = counted(ow * w.sw - w.pl, w.kw, in.width(), w.ew);
      if (rows < w.kh || cols < w.kw)
        out.push_back({oh, ow, static_cast<float>(w.kh * w.kw) / static_cast<float>(rows * cols)});
    }
  return out;
}

// In bf16 each rescaled value is rounded back to bf16 (one more rounding than fp32 has).
void apply_rescales(const memory::desc& md, void* data, const std::vector<Rescale>& rescales) {
  const memory::dims dims = md.dims();
  const bool bf16 = md.data_type() == dt::bf16;
  for (const Rescale& r : rescales)
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < dims[1]; ++c) {
        const int64_t at = element_offset(md, {n, c, r.oh, r.ow});
        if (bf16) {
          uint16_t& v = static_cast<uint16_t*>(data)[at];
          v = float_to_bf16(bf16_to_float(v) * r.factor);
        } else {
          static_cast<float*>(data)[at] *= r.factor;
        }
      }
}

class PoolKernel : public CpuKernel {
 public:
  PoolKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    const auto& layer = static_cast<const PoolLayer&>(s.layer);
    const PoolLayer::Window w = layer.window(s.in_shapes[0]);
    const auto algo = layer.p().max               ? dnnl::algorithm::pooling_max
                      : layer.p().exclude_padding ? dnnl::algorithm::pooling_avg_exclude_padding
                                                  : dnnl::algorithm::pooling_avg_include_padding;
    src_md_ = s.in_mds[0];
    memory::dims dst{s.batch, s.out_shape.channels(), w.oh, w.ow};
    memory::dims strides{w.sh, w.sw}, kernel{w.kh, w.kw}, pad_l{w.pt, w.pl}, pad_r{w.pb, w.pr};
    const auto attr = user_scratchpad();
    dnnl::pooling_forward::desc fd(dnnl::prop_kind::forward_training, algo, src_md_, any_md(dst, s.act_dt()), strides,
                                   kernel, pad_l, pad_r);
    fwd_pd_ = dnnl::pooling_forward::primitive_desc(fd, attr, engine);
    out_md = fwd_pd_.dst_desc();
    has_ws_ = layer.p().max;
    if (has_ws_) saved_mds = {fwd_pd_.workspace_desc()};
    forward_writes_saved = true;  // the argmax workspace
    dnnl::pooling_backward::desc bd(algo, src_md_, out_md, strides, kernel, pad_l, pad_r);
    bwd_pd_ = dnnl::pooling_backward::primitive_desc(bd, attr, engine, fwd_pd_);
    fwd_ = dnnl::pooling_forward(fwd_pd_);
    bwd_ = dnnl::pooling_backward(bwd_pd_);
    scratch_bytes = std::max(scratch_of(fwd_pd_), scratch_of(bwd_pd_));
    forward_scratch_bytes = scratch_of(fwd_pd_);  // dy_offset_: backward only
    if (algo == dnnl::algorithm::pooling_avg_include_padding) rescales_ = overhang_rescales(w, s.in_shapes[0]);
    if (!rescales_.empty()) {  // backward rescales a copy of dy, after its own scratchpad
      dy_offset_ = scratch_offset_after(scratch_of(bwd_pd_));
      scratch_bytes = std::max(scratch_bytes, dy_offset_ + out_md.get_size());
    }
    implementation = fwd_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, bind(src_md_, engine_, a.in[0])},
                                         {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                                         {DNNL_ARG_SCRATCHPAD, bind(fwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[0], engine_, a.saved[0]);
    fwd_.execute(stream, args);
    if (!rescales_.empty()) {
      stream.wait();
      apply_rescales(out_md, a.out, rescales_);
    }
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    void* dy = a.d_out;
    if (!rescales_.empty()) {
      dy = static_cast<char*>(a.scratch) + dy_offset_;
      std::memcpy(dy, a.d_out, out_md.get_size());
      apply_rescales(out_md, dy, rescales_);
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, bind(out_md, engine_, dy)},
                                         {DNNL_ARG_DIFF_SRC, bind(src_md_, engine_, a.d_in[0])},
                                         {DNNL_ARG_SCRATCHPAD, bind(bwd_pd_.scratchpad_desc(), engine_, a.scratch)}};
    if (has_ws_) args[DNNL_ARG_WORKSPACE] = bind(saved_mds[0], engine_, a.saved[0]);
    bwd_.execute(stream, args);
  }

 private:
  dnnl::engine engine_;
  bool has_ws_ = false;
  std::vector<Rescale> rescales_;  // average pooling with padding, ceil mode's overhang
  size_t dy_offset_ = 0;           // where backward keeps its rescaled copy of dy in scratch
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
