// Concat along channels (or along vectors: N,K values) and elementwise add (residual joins) on oneDNN.
// Concat's backward copies channel slices of the gradient (submemory views) into each input's layout;
// when a slice does not start on a layout block, the gradient goes through plain NCHW in scratch.
// Add's backward copies the gradient to every input (each may have its own layout).
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"

namespace vdnn {
namespace {

using dnnl::memory;

class ConcatKernel : public CpuKernel {
 public:
  ConcatKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine), in_mds_(s.in_mds) {
    pd_ = dnnl::concat::primitive_desc(1, in_mds_, engine, user_scratchpad());
    out_md = pd_.dst_desc();
    fwd_ = dnnl::concat(pd_);
    scratch_bytes = scratch_of(pd_);
    implementation = pd_.impl_info_str();
    // Backward: one reorder per input from a channel slice of dy.
    const Shape& o = s.out_shape;
    try {
      slice_from(out_md, s);
    } catch (const dnnl::error&) {
      via_plain_ = true;
      plain_out_md_ = plain_md(o.with_batch(s.batch), out_md.data_type());
      to_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, out_md, engine, plain_out_md_));
      slices_.clear();
      slice_mds_.clear();
      slice_from(plain_out_md_, s);
      scratch_bytes = std::max(scratch_bytes, plain_out_md_.get_size());
    }
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{{DNNL_ARG_DST, bind(out_md, engine_, a.out)}};
    for (size_t i = 0; i < in_mds_.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = bind(in_mds_[i], engine_, a.in[i]);
    if (scratch_of(pd_) > 0)
      args[DNNL_ARG_SCRATCHPAD] = bind(pd_.scratchpad_desc(), engine_, a.scratch);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    void* dy = a.d_out;
    if (via_plain_) {
      run_reorder(to_plain_, stream, bind(out_md, engine_, a.d_out),
                        bind(plain_out_md_, engine_, a.scratch));
      dy = a.scratch;
    }
    for (size_t i = 0; i < in_mds_.size(); ++i) {
      if (!a.d_in[i]) continue;
      run_reorder(slices_[i], stream, bind(slice_mds_[i], engine_, dy), bind(in_mds_[i], engine_, a.d_in[i]));
    }
  }

 private:
  void slice_from(const memory::desc& whole, const KernelSetup& s) {
    int64_t offset = 0;
    for (size_t i = 0; i < in_mds_.size(); ++i) {
      memory::dims dims = s.in_shapes[i].with_batch(s.batch);  // N,C,H,W or N,K
      memory::dims at(dims.size(), 0);
      at[1] = offset;
      memory::desc view = whole.submemory_desc(dims, at);
      slice_mds_.push_back(view);
      slices_.push_back(dnnl::reorder(dnnl::reorder::primitive_desc(engine_, view, engine_, in_mds_[i])));
      offset += s.in_shapes[i].channels();
    }
  }

  dnnl::engine engine_;
  std::vector<memory::desc> in_mds_, slice_mds_;
  dnnl::concat::primitive_desc pd_;
  dnnl::concat fwd_;
  bool via_plain_ = false;
  memory::desc plain_out_md_;
  dnnl::reorder to_plain_;
  std::vector<dnnl::reorder> slices_;
};

class AddKernel : public CpuKernel {
 public:
  AddKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine), in_mds_(s.in_mds) {
    out_md = in_mds_[0];
    std::vector<float> scales(in_mds_.size(), 1.0f);
    pd_ = dnnl::sum::primitive_desc(out_md, scales, in_mds_, engine, user_scratchpad());
    fwd_ = dnnl::sum(pd_);
    for (const auto& md : in_mds_)
      copies_.push_back(dnnl::reorder(dnnl::reorder::primitive_desc(engine, out_md, engine, md)));
    scratch_bytes = scratch_of(pd_);
    implementation = pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{{DNNL_ARG_DST, bind(out_md, engine_, a.out)}};
    for (size_t i = 0; i < in_mds_.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = bind(in_mds_[i], engine_, a.in[i]);
    if (scratch_bytes > 0)
      args[DNNL_ARG_SCRATCHPAD] = bind(pd_.scratchpad_desc(), engine_, a.scratch);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    for (size_t i = 0; i < in_mds_.size(); ++i)
      if (a.d_in[i])
        run_reorder(copies_[i], stream, bind(out_md, engine_, a.d_out), bind(in_mds_[i], engine_, a.d_in[i]));
  }

 private:
  dnnl::engine engine_;
  std::vector<memory::desc> in_mds_;
  dnnl::sum::primitive_desc pd_;
  dnnl::sum fwd_;
  std::vector<dnnl::reorder> copies_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_concat_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<ConcatKernel>(s, e);
}
std::unique_ptr<CpuKernel> make_add_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<AddKernel>(s, e);
}

}  // namespace vdnn
