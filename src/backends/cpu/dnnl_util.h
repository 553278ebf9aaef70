// backends/cpu/dnnl_util.h — small helpers shared by the oneDNN kernels.
//
//   auto d = plain_md({n, c, h, w});                  // nchw (or x / nc / oihw / goihw by rank), f32
//   auto b = any_md({n, c, h, w}, dt::bf16);          // bf16, layout left to oneDNN
//   auto f = with_type(b_chosen, dt::f32);            // f32 in a chosen md's layout
//   auto m = bind(md, engine, ptr);                   // a dnnl::memory over a caller's buffer
//   dnnl::primitive_attr attr = user_scratchpad();    // kernels get scratch from the executor
//   attr.set_post_ops(relu_post_op(0.f));             // a fused ReLU (6.f: ReLU6)
//   size_t next = scratch_offset_after(used);         // the next buffer in one scratch, aligned
#pragma once

#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace vdnn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

inline dnnl::memory::desc plain_md(const std::vector<int64_t>& dims, dt type = dt::f32) {
  static const tag by_rank[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  return dnnl::memory::desc(dims, type, by_rank[dims.size()]);
}

inline dnnl::memory::desc any_md(const std::vector<int64_t>& dims, dt type = dt::f32) {
  return dnnl::memory::desc(dims, type, tag::any);
}

// The same dims and layout, another element type (strides count elements, so they carry over).
inline dnnl::memory::desc with_type(const dnnl::memory::desc& md, dt type) {
  dnnl_memory_desc_t c = md.data;
  c.data_type = static_cast<dnnl_data_type_t>(type);
  return dnnl::memory::desc(c);
}

inline dnnl::memory bind(const dnnl::memory::desc& md, const dnnl::engine& engine, void* ptr) {
  return dnnl::memory(md, engine, ptr);
}

inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The post-op a producer applies a fused ReLU with (KernelSetup::applies_relu): ReLU for ceiling
// 0, otherwise a clip to [0, ceiling] (ReLU6).
inline dnnl::post_ops relu_post_op(float ceiling) {
  dnnl::post_ops ops;
  if (ceiling > 0)
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, 0.f, ceiling);
  else
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  return ops;
}

// Runs a reorder between two bound memories (the C++ API wants lvalues).
inline void run_reorder(const dnnl::reorder& r, dnnl::stream& stream, const dnnl::memory& from,
                        const dnnl::memory& to) {
  r.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// A kernel that lays several buffers out in its one scratch starts each at a 64-byte boundary.
inline size_t scratch_offset_after(size_t used_bytes) { return (used_bytes + 63) / 64 * 64; }

template <typename PrimitiveDesc>
size_t scratch_of(const PrimitiveDesc& pd) {
  return pd.scratchpad_desc().get_size();
}

}  // namespace vdnn
