// The attention layer's kernel: the shared checks, and the implementation the layer names
// (attention_materialized_kernel.cc, attention_fused_kernel.cc). bf16 runs the fp32 kernel with
// casts around it (make_f32_island_kernel): the softmax and its statistics stay in f32.
#include "backends/cpu/attention_common.h"
#include "backends/cpu/kernels.h"
#include "vdnn/error.h"

namespace vdnn {

AttentionShape AttentionShape::of(const KernelSetup& s) {
  AttentionShape a;
  a.layer = &static_cast<const AttentionLayer&>(s.layer);
  a.n = s.batch;
  a.t = s.out_shape.dims.at(0);
  a.c = s.out_shape.dims.at(1);
  a.heads = a.layer->p().heads;
  a.d = a.c / a.heads;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.d)));
  const dnnl::memory::desc plain = plain_md({a.n, a.t, 3 * a.c});
  if (s.in_mds.at(0) != plain)
    s.layer.fail("the CPU attention kernel takes its [T, 3C] input plain row-major [N, T, 3C] in f32");
  return a;
}

AttentionMatmul::AttentionMatmul(const dnnl::engine& engine, const dnnl::memory::desc& src,
                                 const dnnl::memory::desc& wei, const dnnl::memory::desc& dst, float scale,
                                 bool accumulate) {
  dnnl::primitive_attr attr = user_scratchpad();
  if (scale != 1.f) attr.set_output_scales(0, {scale});
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, engine);
  prim = dnnl::matmul(pd);
}

void AttentionMatmul::run(dnnl::stream& stream, const dnnl::engine& engine, const void* src, const void* wei, void* dst,
                          void* scratch) const {
  prim.execute(stream, {{DNNL_ARG_SRC, bind(pd.src_desc(), engine, const_cast<void*>(src))},
                        {DNNL_ARG_WEIGHTS, bind(pd.weights_desc(), engine, const_cast<void*>(wei))},
                        {DNNL_ARG_DST, bind(pd.dst_desc(), engine, dst)},
                        {DNNL_ARG_SCRATCHPAD, bind(pd.scratchpad_desc(), engine, scratch)}});
}

void AttentionMatmul::note_if_slow(const char* what, std::vector<std::string>& slow) const {
  const std::string impl = pd.impl_info_str();
  if (is_reference_implementation(impl)) slow.push_back(std::string(what) + ": " + impl);
}

std::unique_ptr<CpuKernel> make_attention_kernel(const KernelSetup& s, const dnnl::engine& e) {
  if (s.precision != Precision::kFp32) {
    if (auto island = make_f32_island_kernel(s, e, make_attention_kernel)) return island;
    s.layer.fail("runs in fp32 only, and its fp32 kernel is oneDNN's reference kernel here");
  }
  const auto& layer = static_cast<const AttentionLayer&>(s.layer);
  return layer.fused() ? make_fused_attention_kernel(s, e) : make_materialized_attention_kernel(s, e);
}

}  // namespace vdnn
