// A convolution run in k sub-batches (issue 21, μ-cuDNN's idea): one oneDNN convolution compiled at
// batch N/k runs k times over consecutive slices of the batch, so its scratchpad (Winograd's
// transformed tiles, a GEMM's im2col matrix) is that of N/k samples, not N.
//
// Model: the input and the output keep a layout whose batch dimension is outermost (nChw16c,
// nchw, nhwc: what oneDNN picks for f32), so slice i of a tensor is the bytes at i * size / k: no
// copy, no reorder. Forward and the gradient of the input are per sample, so each slice's result is
// the full batch's, as exact as the kernel at N/k is. The weight (and bias) gradient sums over the
// batch: slice 0 writes it, each later slice writes its own into scratch, added by oneDNN's binary
// add in slice order (a fixed order: two runs give the same bits; against one pass over N the
// summation order differs, by float rounding).
//
// Scratch: [the convolution's scratchpad at N/k][a weight gradient][a bias gradient].
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using dnnl::memory;

// Whether `md` holds each sample as one contiguous block, samples in order (batch outermost and
// not blocked): then sample s starts at s * size / batch.
bool batch_is_outermost(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 1 || d.offset0 != 0) return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  for (int i = 0; i < b.inner_nblks; ++i)
    if (b.inner_idxs[i] == 0) return false;
  const int64_t batch = d.dims[0];
  return batch > 0 && d.padded_dims[0] == batch &&
         static_cast<size_t>(b.strides[0]) * static_cast<size_t>(batch) * memory::data_type_size(md.data_type()) ==
             md.get_size();
}

// `md` (batch outermost) with another batch size: the same layout, more or fewer samples.
memory::desc with_batch(const memory::desc& md, int64_t batch) {
  dnnl_memory_desc_t d = md.data;
  d.dims[0] = batch;
  d.padded_dims[0] = batch;
  return memory::desc(d);
}

class SubBatchedKernel : public CpuKernel {
 public:
  SubBatchedKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine), slices_(s.sub_batches) {
    const Layer& layer = s.layer;
    if (s.batch % slices_ != 0)
      layer.fail(VDNN_MSG(slices_ << " sub-batches do not divide the batch of " << s.batch << " (valid: a divisor of "
                                  << s.batch << ")"));
    if (!batch_is_outermost(s.in_mds[0]))
      layer.fail("its input's layout does not keep each sample contiguous, so it cannot run in sub-batches");
    KernelSetup slice = s;
    slice.batch = s.batch / slices_;
    slice.sub_batches = 1;
    slice.in_mds[0] = with_batch(s.in_mds[0], slice.batch);
    inner_ = make_conv_kernel(slice, engine);
    if (!batch_is_outermost(inner_->out_md))
      layer.fail("oneDNN's output layout at batch " + std::to_string(slice.batch) +
                 " does not keep each sample contiguous, so it cannot run in sub-batches");
    in_slice_bytes_ = s.in_mds[0].get_size() / static_cast<size_t>(slices_);
    out_slice_bytes_ = inner_->out_md.get_size();
    out_md = with_batch(inner_->out_md, s.batch);
    param_mds = inner_->param_mds;
    VDNN_CHECK(inner_->saved_mds.empty(), "a sub-batched kernel with saved state");  // a convolution saves none
    size_t offset = scratch_offset_after(inner_->scratch_bytes);
    for (const memory::desc& md : param_mds) {  // one slice's parameter gradients
      grad_offsets_.push_back(offset);
      sums_.emplace_back(
          dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_add, md, md, md), engine));
      offset = scratch_offset_after(offset + md.get_size());
    }
    scratch_bytes = offset;
    forward_scratch_bytes = inner_->forward_scratch_bytes.value_or(inner_->scratch_bytes);
    implementation =
        inner_->implementation + ", " + std::to_string(slices_) + " sub-batches of " + std::to_string(slice.batch);
    slow_kernels = inner_->slow_kernels;
  }

  void forward(dnnl::stream& stream, const KernelArgs& args) override {
    for (int i = 0; i < slices_; ++i) inner_->forward(stream, slice(args, i));
  }

  void backward(dnnl::stream& stream, const KernelArgs& args) override {
    for (int i = 0; i < slices_; ++i) {
      KernelArgs a = slice(args, i);
      if (i == 0) {
        inner_->backward(stream, a);
        continue;
      }
      for (size_t p = 0; p < a.d_params.size(); ++p)
        if (a.d_params[p]) a.d_params[p] = static_cast<char*>(args.scratch) + grad_offsets_[p];
      inner_->backward(stream, a);
      for (size_t p = 0; p < args.d_params.size(); ++p) {
        if (!args.d_params[p]) continue;
        const memory total = bind(param_mds[p], engine_, args.d_params[p]);
        sums_[p].execute(stream, {{DNNL_ARG_SRC_0, total},
                                  {DNNL_ARG_SRC_1, bind(param_mds[p], engine_, a.d_params[p])},
                                  {DNNL_ARG_DST, total}});
      }
    }
  }

 private:
  KernelArgs slice(const KernelArgs& args, int i) const {
    return batch_slice(args, i, in_slice_bytes_, out_slice_bytes_);
  }

  dnnl::engine engine_;
  int slices_;
  std::unique_ptr<CpuKernel> inner_;  // the convolution at batch N / slices_
  size_t in_slice_bytes_ = 0, out_slice_bytes_ = 0;
  std::vector<size_t> grad_offsets_;  // in scratch: a slice's gradient of each parameter
  std::vector<dnnl::binary> sums_;    // per parameter: total += a slice's gradient
};

}  // namespace

std::unique_ptr<CpuKernel> make_sub_batched_kernel(const KernelSetup& s, const dnnl::engine& e) {
  if (s.layer.kind() != LayerKind::kConv)
    s.layer.fail(VDNN_MSG("only convolutions run in sub-batches (asked for " << s.sub_batches << ")"));
  return std::make_unique<SubBatchedKernel>(s, e);
}

}  // namespace vdnn
