// backends/cpu/batch_slice_kernels.cc — batch_slice and batch_gather (layers/batch_slice.h) as copies.
//
// In every layout oneDNN picks for a value here (nchw, nChw16c, nc, ...) the batch is the outermost
// dimension, so samples [a, b) are one contiguous byte range: a slice's layout is its whole value's
// with n / k samples, and slicing or gathering (forward, and the gradient backward) is a memcpy of
// that range. A layout with the batch blocked or inside is refused, naming the layer.
#include <cstring>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/batch_slice.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using dnnl::memory;

// `md` with `samples` in its batch dimension; throws unless the batch is outermost and unblocked.
memory::desc with_samples(const memory::desc& md, int64_t samples, const Layer& layer) {
  dnnl_memory_desc_t d = md.data;
  bool outermost = d.format_kind == dnnl_blocked && d.offset0 == 0 && d.dims[0] == d.padded_dims[0];
  const auto& blocking = d.format_desc.blocking;
  for (int b = 0; outermost && b < blocking.inner_nblks; ++b) outermost = blocking.inner_idxs[b] != 0;
  for (int k = 1; outermost && k < d.ndims; ++k) {
    int64_t inner = 1;
    for (int b = 0; b < blocking.inner_nblks; ++b)
      if (blocking.inner_idxs[b] == k) inner *= blocking.inner_blks[b];
    outermost = blocking.strides[k] * (d.padded_dims[k] / inner) <= blocking.strides[0];
  }
  if (!outermost) layer.fail("its value's layout does not keep the batch outermost, so a slice is not one byte range");
  d.dims[0] = d.padded_dims[0] = samples;
  return memory::desc(d);
}

class BatchSliceKernel : public CpuKernel {
 public:
  explicit BatchSliceKernel(const KernelSetup& s) : index_(static_cast<const BatchSliceLayer&>(s.layer).index()) {
    out_md = with_samples(s.in_mds[0], s.batch, s.layer);
    bytes_ = out_md.get_size();
    implementation = "memcpy";
  }
  void forward(dnnl::stream&, const KernelArgs& a) override {
    std::memcpy(a.out, static_cast<const char*>(a.in[0]) + bytes_ * index_, bytes_);
  }
  void backward(dnnl::stream&, const KernelArgs& a) override {
    if (a.d_in[0]) std::memcpy(static_cast<char*>(a.d_in[0]) + bytes_ * index_, a.d_out, bytes_);
  }

 private:
  size_t index_, bytes_ = 0;
};

class BatchGatherKernel : public CpuKernel {
 public:
  explicit BatchGatherKernel(const KernelSetup& s) {
    for (const memory::desc& md : s.in_mds)
      if (md != s.in_mds[0]) s.layer.fail("its slices have different layouts");
    out_md = with_samples(s.in_mds[0], s.batch, s.layer);
    bytes_ = s.in_mds[0].get_size();
    implementation = "memcpy";
  }
  void forward(dnnl::stream&, const KernelArgs& a) override {
    for (size_t k = 0; k < a.in.size(); ++k) std::memcpy(static_cast<char*>(a.out) + bytes_ * k, a.in[k], bytes_);
  }
  void backward(dnnl::stream&, const KernelArgs& a) override {
    for (size_t k = 0; k < a.d_in.size(); ++k)
      if (a.d_in[k]) std::memcpy(a.d_in[k], static_cast<const char*>(a.d_out) + bytes_ * k, bytes_);
  }

 private:
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<CpuKernel> make_batch_slice_kernel(const KernelSetup& s, const dnnl::engine&) {
  return std::make_unique<BatchSliceKernel>(s);
}

std::unique_ptr<CpuKernel> make_batch_gather_kernel(const KernelSetup& s, const dnnl::engine&) {
  return std::make_unique<BatchGatherKernel>(s);
}

}  // namespace vdnn
