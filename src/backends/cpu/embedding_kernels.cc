// The lookup layers of a sequence model: embedding (a gather of table rows by token id, and its
// scatter-add; no oneDNN primitive gathers, so plain loops) and position_embedding (oneDNN binary
// add of the table's first T rows, broadcast over the batch; its weight gradient a oneDNN reduction).
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/sequence_kernel.h"
#include "layers/embedding.h"
#include "layers/position_embedding.h"

namespace vdnn {
namespace {

using dnnl::memory;

class EmbeddingKernel : public CpuKernel {
 public:
  EmbeddingKernel(const KernelSetup& s, const dnnl::engine&) : layer_(s.layer) {
    require_plain_f32(s);
    const auto& p = static_cast<const EmbeddingLayer&>(s.layer).p();
    vocab_ = p.vocab, dim_ = p.dim, positions_ = s.in_shapes[0].dims[0], rows_ = s.batch * positions_;
    out_md = plain_md(s.out_shape.with_batch(s.batch));
    param_mds = {plain_md({vocab_, dim_})};
    implementation = "gather (plain loop)";
  }

  void forward(dnnl::stream&, const KernelArgs& a) override {
    const int32_t* ids = checked_ids(a);
    const float* table = static_cast<const float*>(a.params[0]);
    float* y = static_cast<float*>(a.out);
#pragma omp parallel for if (rows_ * dim_ > 65536)
    for (int64_t r = 0; r < rows_; ++r) std::memcpy(y + r * dim_, table + ids[r] * dim_, dim_ * sizeof(float));
  }

  // dweight[id] = sum of dy over the tokens with that id: each thread owns a range of columns and
  // adds the rows in order, so the sums are the same for any thread count.
  void backward(dnnl::stream&, const KernelArgs& a) override {
    if (!a.d_params[0]) return;
    const int32_t* ids = checked_ids(a);
    const float* dy = static_cast<const float*>(a.d_out);
    float* dw = static_cast<float*>(a.d_params[0]);
    std::fill(dw, dw + vocab_ * dim_, 0.0f);
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (dim_ + kBlock - 1) / kBlock;
#pragma omp parallel for if (rows_ * dim_ > 65536)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t begin = b * kBlock, end = std::min(dim_, begin + kBlock);
      for (int64_t r = 0; r < rows_; ++r) {
        float* to = dw + ids[r] * dim_;
        const float* from = dy + r * dim_;
        for (int64_t c = begin; c < end; ++c) to[c] += from[c];
      }
    }
  }

 private:
  // The ids, each checked against the vocabulary before any is used as a row.
  const int32_t* checked_ids(const KernelArgs& a) const {
    const int32_t* ids = static_cast<const int32_t*>(a.in[0]);
    for (int64_t r = 0; r < rows_; ++r)
      if (ids[r] < 0 || ids[r] >= vocab_)
        layer_.fail(VDNN_MSG("token id " << ids[r] << " at sample " << r / positions_ << ", position " << r % positions_
                                         << " is outside the vocabulary [0, " << vocab_ << ")"));
    return ids;
  }

  const Layer& layer_;
  int64_t vocab_ = 0, dim_ = 0, positions_ = 0, rows_ = 0;
};

class PositionEmbeddingKernel : public CpuKernel {
 public:
  PositionEmbeddingKernel(const KernelSetup& s, const dnnl::engine& engine) : engine_(engine) {
    require_plain_f32(s);
    const int64_t positions = s.in_shapes[0].dims[0], channels = s.in_shapes[0].dims[1];
    const int64_t max_positions = static_cast<const PositionEmbeddingLayer&>(s.layer).max_positions();
    out_md = s.in_mds[0];
    param_mds = {plain_md({max_positions, channels})};
    used_md_ = plain_md({1, positions, channels});  // rows 0..T-1 of the table, broadcast over the batch
    used_bytes_ = used_md_.get_size();
    const auto attr = user_scratchpad();
    add_pd_ = dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_add, out_md, used_md_, out_md),
                                           attr, engine);
    add_ = dnnl::binary(add_pd_);
    forward_scratch_bytes = scratch_bytes = scratch_of(add_pd_);
    // Batch 1: the weight gradient is dy itself (oneDNN refuses a reduction over nothing).
    if (s.batch > 1) {
      sum_pd_ = dnnl::reduction::primitive_desc(
          dnnl::reduction::desc(dnnl::algorithm::reduction_sum, out_md, used_md_, 0.f, 0.f), attr, engine);
      sum_ = dnnl::reduction(sum_pd_);
      scratch_bytes = std::max(scratch_bytes, scratch_of(sum_pd_));
    }
    implementation = add_pd_.impl_info_str();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {  // in place: a.out == a.in[0]
    add_.execute(stream, {{DNNL_ARG_SRC_0, bind(out_md, engine_, a.in[0])},
                          {DNNL_ARG_SRC_1, bind(used_md_, engine_, a.params[0])},
                          {DNNL_ARG_DST, bind(out_md, engine_, a.out)},
                          {DNNL_ARG_SCRATCHPAD, bind(add_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    if (a.d_in[0] && a.d_in[0] != a.d_out) std::memcpy(a.d_in[0], a.d_out, out_md.get_size());  // dx = dy
    if (!a.d_params[0]) return;
    char* dw = static_cast<char*>(a.d_params[0]);
    std::memset(dw + used_bytes_, 0, param_mds[0].get_size() - used_bytes_);  // positions >= T: no gradient
    if (!sum_) {
      std::memcpy(dw, a.d_out, used_bytes_);
      return;
    }
    sum_.execute(stream, {{DNNL_ARG_SRC, bind(out_md, engine_, a.d_out)},
                          {DNNL_ARG_DST, bind(used_md_, engine_, dw)},
                          {DNNL_ARG_SCRATCHPAD, bind(sum_pd_.scratchpad_desc(), engine_, a.scratch)}});
  }

 private:
  dnnl::engine engine_;
  memory::desc used_md_;
  size_t used_bytes_ = 0;
  dnnl::binary::primitive_desc add_pd_;
  dnnl::reduction::primitive_desc sum_pd_;  // batch > 1
  dnnl::binary add_;
  dnnl::reduction sum_;  // empty at batch 1
};

}  // namespace

std::unique_ptr<CpuKernel> make_embedding_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<EmbeddingKernel>(s, e);
}

std::unique_ptr<CpuKernel> make_position_embedding_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<PositionEmbeddingKernel>(s, e);
}

}  // namespace vdnn
