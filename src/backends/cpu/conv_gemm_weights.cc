// A convolution's weight gradient as reorders + im2col + one dnnl_sgemm (see the header).
#include "backends/cpu/conv_gemm_weights.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/dnnl_util.h"

namespace vdnn {

ConvGemmWeights::ConvGemmWeights(const ConvGeometry& g, const dnnl::memory::desc& src_md,
                                 const dnnl::memory::desc& dst_md, const dnnl::memory::desc& weights_md,
                                 const dnnl::engine& engine)
    : g_(g), engine_(engine), src_md_(src_md), dst_md_(dst_md), weights_md_(weights_md) {
  x_plain_md_ = dnnl::memory::desc({g.n, g.ic, g.ih, g.iw}, dt::f32, tag::nhwc);
  dy_plain_md_ = dnnl::memory::desc({g.n, g.oc, g.oh, g.ow}, dt::f32, tag::nhwc);
  dw_plain_md_ = dnnl::memory::desc({g.oc, g.ic, g.kh, g.kw}, dt::f32, tag::ohwi);
  x_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, src_md, engine, x_plain_md_));
  dy_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, dst_md, engine, dy_plain_md_));
  dw_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, dw_plain_md_, engine, weights_md));
  const size_t col_bytes = sizeof(float) * g.n * g.oh * g.ow * g.kh * g.kw * g.ic;
  dy_offset_ = scratch_offset_after(x_plain_md_.get_size());
  col_offset_ = scratch_offset_after(dy_offset_ + dy_plain_md_.get_size());
  dw_offset_ = scratch_offset_after(col_offset_ + col_bytes);
}

// col[(n, oh, ow)][(kh, kw, ic)] = x[n][oh*sh + kh*dh - ph][ow*sw + kw*dw - pw][ic], 0 outside.
void ConvGemmWeights::unfold(const float* x, float* col) const {
  const int64_t row_len = g_.kh * g_.kw * g_.ic, rows = g_.n * g_.oh * g_.ow;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / (g_.oh * g_.ow), oy = row / g_.ow % g_.oh, ox = row % g_.ow;
    float* out = col + row * row_len;
    for (int64_t ky = 0; ky < g_.kh; ++ky) {
      const int64_t y = oy * g_.sh + ky * g_.dh - g_.ph;
      for (int64_t kx = 0; kx < g_.kw; ++kx, out += g_.ic) {
        const int64_t xx = ox * g_.sw + kx * g_.dw - g_.pw;
        if (y < 0 || y >= g_.ih || xx < 0 || xx >= g_.iw) {
          std::fill(out, out + g_.ic, 0.f);
        } else {
          std::memcpy(out, x + ((n * g_.ih + y) * g_.iw + xx) * g_.ic, sizeof(float) * g_.ic);
        }
      }
    }
  }
}

void ConvGemmWeights::run(dnnl::stream& stream, const void* x, const void* dy, void* weights_grad, float* bias_grad,
                          void* scratch) const {
  char* base = static_cast<char*>(scratch);
  auto* x_plain = reinterpret_cast<float*>(base);
  auto* dy_plain = reinterpret_cast<float*>(base + dy_offset_);
  auto* col = reinterpret_cast<float*>(base + col_offset_);
  auto* dw_plain = reinterpret_cast<float*>(base + dw_offset_);
  run_reorder(x_reorder_, stream, bind(src_md_, engine_, const_cast<void*>(x)), bind(x_plain_md_, engine_, x_plain));
  run_reorder(dy_reorder_, stream, bind(dst_md_, engine_, const_cast<void*>(dy)),
              bind(dy_plain_md_, engine_, dy_plain));
  stream.wait();
  unfold(x_plain, col);
  const int64_t m = g_.oc, n = g_.kh * g_.kw * g_.ic, k = g_.n * g_.oh * g_.ow;
  // Row-major: dw_plain (m x n) = dy_plainᵀ (m x k, stored k x m) · col (k x n).
  dnnl::error::wrap_c_api(dnnl_sgemm('T', 'N', m, n, k, 1.f, dy_plain, m, col, n, 0.f, dw_plain, n),
                          "could not run the weight-gradient GEMM");
  run_reorder(dw_reorder_, stream, bind(dw_plain_md_, engine_, dw_plain), bind(weights_md_, engine_, weights_grad));
  if (bias_grad) {
    std::fill(bias_grad, bias_grad + m, 0.f);
    for (int64_t row = 0; row < k; ++row) {
      for (int64_t c = 0; c < m; ++c) bias_grad[c] += dy_plain[row * m + c];
    }
  }
  stream.wait();
}

}  // namespace vdnn
