// Concat along channels (or along vectors: N,K values) and elementwise add (residual joins) on oneDNN.
// Concat's backward copies channel slices of the gradient (submemory views) into each input's layout;
// when a slice does not start on a layout block, the gradient goes through plain NCHW in scratch.
// Add's backward copies the gradient to every input (each may have its own layout) but the first
// when it runs in place over it; a ReLU after a two-input add is its post-op.
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using dnnl::memory;

// Told no output layout, oneDNN's concat picks one from its inputs: from plain inputs at batch 2
// it picked one that is not plain NC, which the loss after an fc split into column blocks (vdnn
// infer under a small budget) refused. Plain inputs, plain output.
dnnl::concat::primitive_desc concat_primitive(const KernelSetup& s, const dnnl::engine& engine) {
  const memory::data_type type = s.in_mds[0].data_type();
  for (size_t i = 0; i < s.in_mds.size(); ++i)
    if (s.in_mds[i] != plain_md(s.in_shapes[i].with_batch(s.batch), type))
      return dnnl::concat::primitive_desc(1, s.in_mds, engine, user_scratchpad());
  return dnnl::concat::primitive_desc(plain_md(s.out_shape.with_batch(s.batch), type), 1, s.in_mds, engine,
                                      user_scratchpad());
}

class ConcatKernel : public CpuKernel {
 public:
  ConcatKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine), in_mds_(s.in_mds) {
    pd_ = concat_primitive(s, engine);
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
    if (scratch_of(pd_) > 0) args[DNNL_ARG_SCRATCHPAD] = bind(pd_.scratchpad_desc(), engine_, a.scratch);
    fwd_.execute(stream, args);
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    void* dy = a.d_out;
    if (via_plain_) {
      run_reorder(to_plain_, stream, bind(out_md, engine_, a.d_out), bind(plain_out_md_, engine_, a.scratch));
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

// y = x0 + x1 (+ ...). Two inputs in one layout run oneDNN's binary add, a JIT kernel that applies
// the next ReLU as a post-op when fused (KernelSetup::applies_relu); more inputs, or layouts that
// differ, run its sum (the plain loop "simple:any" here: 1.4 ms of a ResNet-18 step at 64x64, batch
// 32). Both add in one rounding, so the sums are the same.
class AddKernel : public CpuKernel {
 public:
  AddKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine), in_mds_(s.in_mds) {
    out_md = in_mds_[0];
    if (add_is_binary(in_mds_)) {
      auto attr = user_scratchpad();
      if (s.applies_relu) attr.set_post_ops(relu_post_op(s.relu_ceiling));
      dnnl::binary::desc d(dnnl::algorithm::binary_add, in_mds_[0], in_mds_[1], out_md);
      binary_pd_ = dnnl::binary::primitive_desc(d, attr, engine);
      binary_ = dnnl::binary(binary_pd_);
      scratch_bytes = scratch_of(binary_pd_);
      implementation = std::string(binary_pd_.impl_info_str()) + (s.applies_relu ? " + relu" : "");
    } else {
      VDNN_CHECK(!s.applies_relu, "an add of " << in_mds_.size() << " inputs was given a ReLU to fuse");
      std::vector<float> scales(in_mds_.size(), 1.0f);
      sum_pd_ = dnnl::sum::primitive_desc(out_md, scales, in_mds_, engine, user_scratchpad());
      sum_ = dnnl::sum(sum_pd_);
      scratch_bytes = scratch_of(sum_pd_);
      implementation = sum_pd_.impl_info_str();
    }
    for (const auto& md : in_mds_)
      copies_.push_back(dnnl::reorder(dnnl::reorder::primitive_desc(engine, out_md, engine, md)));
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    std::unordered_map<int, memory> args{{DNNL_ARG_DST, bind(out_md, engine_, a.out)}};
    if (scratch_bytes > 0) args[DNNL_ARG_SCRATCHPAD] = bind(scratchpad_md(), engine_, a.scratch);
    if (binary_) {
      args[DNNL_ARG_SRC_0] = bind(in_mds_[0], engine_, a.in[0]);
      args[DNNL_ARG_SRC_1] = bind(in_mds_[1], engine_, a.in[1]);
      binary_.execute(stream, args);
      return;
    }
    for (size_t i = 0; i < in_mds_.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = bind(in_mds_[i], engine_, a.in[i]);
    sum_.execute(stream, args);
  }

  // In place (over x0), dx0 is dy itself: only the other inputs get a copy.
  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    for (size_t i = 0; i < in_mds_.size(); ++i)
      if (a.d_in[i] && a.d_in[i] != a.d_out)
        run_reorder(copies_[i], stream, bind(out_md, engine_, a.d_out), bind(in_mds_[i], engine_, a.d_in[i]));
  }

 private:
  memory::desc scratchpad_md() const { return binary_ ? binary_pd_.scratchpad_desc() : sum_pd_.scratchpad_desc(); }

  dnnl::engine engine_;
  std::vector<memory::desc> in_mds_;
  dnnl::binary::primitive_desc binary_pd_;
  dnnl::binary binary_;  // two inputs in one layout; otherwise sum_
  dnnl::sum::primitive_desc sum_pd_;
  dnnl::sum sum_;
  std::vector<dnnl::reorder> copies_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_concat_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<ConcatKernel>(s, e);
}
// A rule of the layouts alone (kernel_setup asks it for the add and for the ReLU after it): oneDNN's
// binary add where it has a kernel that is not its reference one for them (some plain layouts and
// channel counts it has not: the sum's plain loop is faster there).
bool add_is_binary(const std::vector<dnnl::memory::desc>& in_mds) {
  if (in_mds.size() != 2 || in_mds[0] != in_mds[1]) return false;
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::binary::desc d(dnnl::algorithm::binary_add, in_mds[0], in_mds[1], in_mds[0]);
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_post_ops(relu_post_op(0.f));
  return !is_reference_implementation(dnnl::binary::primitive_desc(d, attr, engine).impl_info_str());
}

std::unique_ptr<CpuKernel> make_add_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<AddKernel>(s, e);
}

}  // namespace vdnn
