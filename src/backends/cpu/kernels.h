// backends/cpu/kernels.h — one factory per oneDNN kernel; make_cpu_kernel dispatches on layer type.
#pragma once

#include <functional>

#include "backends/cpu/kernel.h"

namespace vdnn {

std::unique_ptr<CpuKernel> make_conv_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_pool_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_lrn_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_batch_norm_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_fc_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_relu_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_dropout_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_flatten_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_concat_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_add_kernel(const KernelSetup& s, const dnnl::engine& e);
// Whether an add of inputs in these layouts runs oneDNN's binary add (two inputs, one layout), the
// kind that applies a fused ReLU; otherwise it runs oneDNN's sum.
bool add_is_binary(const std::vector<dnnl::memory::desc>& in_mds);
std::unique_ptr<CpuKernel> make_softmax_ce_kernel(const KernelSetup& s, const dnnl::engine& e);
// attention (layers/attention.h): materialized or fused, as the layer names.
std::unique_ptr<CpuKernel> make_attention_kernel(const KernelSetup& s, const dnnl::engine& e);
// The sequence layers ([N, T, C] plain f32; sequence_kernels.h): embedding and position_embedding
// (embedding_kernels.cc), layer_norm, gelu, linear (sequence_kernels.cc), token_cross_entropy.
std::unique_ptr<CpuKernel> make_embedding_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_position_embedding_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_layer_norm_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_gelu_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_linear_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_token_ce_kernel(const KernelSetup& s, const dnnl::engine& e);
// batch_slice, batch_gather (layers/batch_slice.h): copies of a byte range per slice.
std::unique_ptr<CpuKernel> make_batch_slice_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_batch_gather_kernel(const KernelSetup& s, const dnnl::engine& e);
// bn_stats, bn_combine, bn_apply (layers/batch_norm_slices.h): batch norm over slices of the batch.
std::unique_ptr<CpuKernel> make_bn_stats_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_bn_combine_kernel(const KernelSetup& s, const dnnl::engine& e);
std::unique_ptr<CpuKernel> make_bn_apply_kernel(const KernelSetup& s, const dnnl::engine& e);
using KernelFactory = std::function<std::unique_ptr<CpuKernel>(const KernelSetup&, const dnnl::engine&)>;
// A bf16 layer (s.precision) by `factory`'s f32 kernel, its inputs and gradients cast around it;
// null when the f32 kernel is a reference kernel too (f32_island_kernel.cc). `f32_layout`: the
// layout the f32 kernel takes its 4-D inputs in (undef: the bf16 inputs' own); `bf16_layout`: the
// island's output layout (undef: the f32 kernel's).
std::unique_ptr<CpuKernel> make_f32_island_kernel(
    const KernelSetup& s, const dnnl::engine& e, const KernelFactory& factory,
    dnnl::memory::format_tag f32_layout = dnnl::memory::format_tag::undef,
    dnnl::memory::format_tag bf16_layout = dnnl::memory::format_tag::undef);
// A convolution with s.sub_batches > 1: run in that many slices of the batch.
std::unique_ptr<CpuKernel> make_sub_batched_kernel(const KernelSetup& s, const dnnl::engine& e);

}  // namespace vdnn
