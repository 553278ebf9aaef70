// backends/cpu/sequence_kernel.h — what the sequence kernels share: plain f32 [N, T, C] values.
//
// Model: a sequence value [T, C] per sample is stored plain row-major [N, T, C] (format_tag::abc);
// every sequence kernel reads N·T rows of C contiguous floats. They run in fp32 only (bf16 is
// refused naming the layer), and a kernel handed an input in another layout refuses it clearly.
//
//   require_plain_f32(setup);                 // throws "layer 'ln1' (layer_norm): ..." otherwise
//   int64_t rows = token_rows(setup);         // N * T for [T, C] inputs, N for [C]; N*C*H for [C, H, W]
//   auto md = rows_md(setup, setup.in_shapes[0].dims.back());   // {N * T, C}, plain f32
#pragma once

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernel.h"
#include "vdnn/error.h"

namespace vdnn {

// Throws naming the layer unless it runs in fp32 and every input is plain (int32 for token ids).
inline void require_plain_f32(const KernelSetup& s) {
  if (s.precision != Precision::kFp32)
    s.layer.fail("runs in fp32 only (the sequence layers have no bf16 kernels yet); use --precision fp32");
  for (size_t i = 0; i < s.in_mds.size(); ++i) {
    const dt type = s.layer.takes_tokens() ? dt::s32 : dt::f32;
    if (s.in_mds[i] != plain_md(s.in_shapes[i].with_batch(s.batch), type))
      s.layer.fail(VDNN_MSG("input " << i << " (" << s.in_shapes[i].to_string() << ") must be plain row-major "
                                     << (type == dt::s32 ? "int32" : "f32")
                                     << "; its producer wrote another layout or type"));
  }
}

// The rows a sequence kernel maps one at a time: batch x every axis but the last.
inline int64_t token_rows(const KernelSetup& s) {
  return s.batch * s.in_shapes[0].elements() / s.in_shapes[0].dims.back();
}

// token_rows x `columns`, plain f32: the same bytes as the [N, T, columns] value.
inline dnnl::memory::desc rows_md(const KernelSetup& s, int64_t columns) { return plain_md({token_rows(s), columns}); }

}  // namespace vdnn
