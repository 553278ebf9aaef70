// A bf16 layer run by its fp32 kernel, where oneDNN 2.6 has no fast bf16 one (LRN, ReLU6 from its
// output: only the reference kernels take bf16 there, orders of magnitude slower). The inputs are
// cast to f32 in scratch, the f32 kernel runs on the copies, and its output and input gradients
// are cast back; values between layers stay bf16. Saved state and parameters are the f32 kernel's.
//
// Scratch: [the f32 kernel's scratch][inputs in f32][output in f32][dy in f32][dx in f32].
//
// Also where a bf16 kernel exists but loses to the f32 one: convolutions with outputs below 8x8 on
// AMX (conv_kernel.cc), whose f32 copies are in the f32 kernel's own (blocked) layout and whose
// output is cast back to the bf16 network's channels-last layout.
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"

namespace vdnn {
namespace {

using dnnl::memory;

class F32IslandKernel : public CpuKernel {
 public:
  F32IslandKernel(const KernelSetup& bf16_setup, const std::vector<memory::desc>& f32_in_mds,
                  std::unique_ptr<CpuKernel> inner, tag bf16_layout, const dnnl::engine& engine)
      : engine_(engine), inner_(std::move(inner)), in_place_(bf16_setup.in_place), in_mds_(bf16_setup.in_mds) {
    out_md = bf16_layout == tag::undef ? with_type(inner_->out_md, bf16_setup.out_dt())
                                       : memory::desc(inner_->out_md.dims(), bf16_setup.out_dt(), bf16_layout);
    param_mds = inner_->param_mds;
    saved_mds = inner_->saved_mds;
    forward_writes_saved = inner_->forward_writes_saved;
    implementation = "f32 (bf16 cast around it): " + inner_->implementation;
    size_t at = scratch_offset_after(inner_->scratch_bytes);
    auto place = [&at](const memory::desc& md) {
      const size_t offset = at;
      at = scratch_offset_after(at + md.get_size());
      return offset;
    };
    for (const memory::desc& md : f32_in_mds) in_.push_back({md, place(md)});
    out_ = {inner_->out_md, in_place_ ? in_[0].offset : place(inner_->out_md)};
    forward_scratch_bytes = at;
    // dy takes the output's place when backward does not read the output (a convolution's).
    reads_output_ = in_place_ || bf16_setup.layer.backward_reads_output();
    d_out_ = {inner_->out_md, reads_output_ ? place(inner_->out_md) : out_.offset};
    for (const Buffer& b : in_) d_in_.push_back({b.md, place(b.md)});
    scratch_bytes = at;
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    KernelArgs f = on_copies(stream, a);
    inner_->forward(stream, f);
    cast(stream, out_.md, f.out, out_md, a.out);
  }

  // Backward reads only what the layer's backward reads: a map it does not read may be gone (a null
  // pointer: freed, or offloaded and not prefetched), so only the pointers given are cast.
  // In place, the input is gone by backward (the executor passes a null input where the backward
  // does not read it, a ReLU's): the output, which holds it, is cast into the input's place.
  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    KernelArgs f = on_copies(stream, a);
    f.out = nullptr;
    if (reads_output_ && a.out) {
      f.out = at(a, out_);
      cast(stream, out_md, a.out, out_.md, f.out);
      if (in_place_) f.in[0] = f.out;
    }
    f.d_out = at(a, d_out_);
    cast(stream, out_md, a.d_out, d_out_.md, f.d_out);
    for (size_t i = 0; i < in_.size(); ++i) f.d_in[i] = a.d_in[i] ? at(a, d_in_[i]) : nullptr;
    inner_->backward(stream, f);
    for (size_t i = 0; i < in_.size(); ++i)
      if (a.d_in[i]) cast(stream, d_in_[i].md, f.d_in[i], in_mds_[i], a.d_in[i]);
  }

 private:
  struct Buffer {
    memory::desc md;
    size_t offset = 0;
  };

  static void* at(const KernelArgs& a, const Buffer& b) { return static_cast<char*>(a.scratch) + b.offset; }

  void cast(dnnl::stream& stream, const memory::desc& from_md, void* from, const memory::desc& to_md, void* to) const {
    dnnl::memory src(from_md, engine_, from), dst(to_md, engine_, to);
    dnnl::reorder(src, dst).execute(stream, src, dst);
  }

  // The arguments with the inputs given (in place: the output, which holds them) cast into scratch.
  KernelArgs on_copies(dnnl::stream& stream, const KernelArgs& a) const {
    KernelArgs f = a;
    for (size_t i = 0; i < in_.size(); ++i) {
      f.in[i] = a.in[i] ? at(a, in_[i]) : nullptr;
      if (a.in[i]) cast(stream, in_mds_[i], a.in[i], in_[i].md, f.in[i]);
    }
    f.out = in_place_ ? f.in[0] : a.out ? at(a, out_) : nullptr;
    return f;
  }

  dnnl::engine engine_;
  std::unique_ptr<CpuKernel> inner_;
  bool in_place_;
  bool reads_output_ = true;          // the layer's backward reads its output (in place: always)
  std::vector<memory::desc> in_mds_;  // bf16, the producers' layouts
  std::vector<Buffer> in_, d_in_;     // f32 copies in scratch
  Buffer out_, d_out_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_f32_island_kernel(const KernelSetup& s, const dnnl::engine& e,
                                                  const KernelFactory& factory, tag f32_layout, tag bf16_layout) {
  KernelSetup f32 = s;
  f32.precision = Precision::kFp32;
  f32.f32_output = false;
  for (auto& md : f32.in_mds)
    md = f32_layout != tag::undef && md.dims().size() == 4 ? memory::desc(md.dims(), dt::f32, f32_layout)
                                                           : with_type(md, dt::f32);
  auto inner = factory(f32, e);
  if (!inner->slow_kernels.empty() || is_reference_implementation(inner->implementation))
    return nullptr;  // no faster in f32 either
  return std::make_unique<F32IslandKernel>(s, f32.in_mds, std::move(inner), bf16_layout, e);
}

}  // namespace vdnn
