// The CUDA backend's sizes from shapes alone (see cuda_sizes.h).
#include "backends/cuda_target/cuda_sizes.h"

#include <algorithm>

#include "layers/attention.h"
#include "layers/conv.h"
#include "layers/pool.h"
#include "plan/conv_algorithms.h"
#include "vdnn/error.h"

namespace vdnn {

// Attention (layers/attention.h), as the CPU kernels size it. materialized: the probabilities
// [N, H, T, T] saved (+ a byte mask with dropout), dP and the dropped probabilities in scratch;
// fused (FlashAttention-2): the per-row log-sum-exp [N, H, T] saved, D = rowsum(dO * O) and an f32
// dQ accumulator [N, T, C] in scratch (its tiles live in shared memory, not in the arena).
static CudaSizes attention_sizes(const AttentionLayer& layer, int64_t batch, const Shape& out, size_t element_bytes,
                                 CudaSizes s) {
  const int64_t t = out.dims.at(0), c = out.dims.at(1), rows = batch * layer.p().heads * t;
  const bool dropout = layer.p().dropout > 0;
  if (layer.fused()) {
    s.saved_bytes = {static_cast<size_t>(rows) * sizeof(float)};
    s.scratch_bytes = static_cast<size_t>(rows + batch * t * c) * sizeof(float);
  } else {
    const size_t probabilities = static_cast<size_t>(rows * t);
    s.saved_bytes = {probabilities * element_bytes};
    if (dropout) s.saved_bytes.push_back(probabilities);  // one byte per probability
    s.scratch_bytes = probabilities * sizeof(float) * (dropout ? 2 : 1);
  }
  s.saved_regenerated.assign(s.saved_bytes.size(), true);  // from the inputs, and the mask from (seed, step)
  return s;
}

// bf16: the fp32 master weights of a convolution, fc or linear layer cast to bf16 for its kernel
// each call, in scratch (as the CPU backend's bf16 kernels do).
static size_t weight_cast_bytes(const std::string& type, const std::vector<size_t>& param_bytes, Precision precision) {
  if (precision != Precision::kBf16 || (type != "conv" && type != "fc" && type != "linear")) return 0;
  size_t bytes = 0;
  for (size_t b : param_bytes) bytes += b / 2;
  return bytes;
}

CudaSizes cuda_kernel_sizes(const Layer& layer, int64_t batch, const std::vector<Shape>& in_shapes,
                            const Shape& out_shape, bool input0_needs_grad, ConvAlgo conv_algo, Precision precision,
                            bool f32_output) {
  const std::string& type = layer.type();
  static const char* const kTypes[] = {"conv",
                                       "max_pool",
                                       "avg_pool",
                                       "lrn",
                                       "batch_norm",
                                       "fc",
                                       "relu",
                                       "relu6",
                                       "dropout",
                                       "flatten",
                                       "concat",
                                       "add",
                                       "softmax_cross_entropy",
                                       "batch_slice",
                                       "batch_gather",
                                       "bn_stats",
                                       "bn_combine",
                                       "bn_apply",
                                       "attention",
                                       "embedding",
                                       "position_embedding",
                                       "layer_norm",
                                       "gelu",
                                       "linear",
                                       "token_cross_entropy"};
  if (std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes))
    layer.fail("the CUDA backend has no kernel for this layer type");
  CudaSizes s;
  const bool is_loss = type == "softmax_cross_entropy" || type == "token_cross_entropy";
  // The batch-mean loss; a batch norm's statistics over slices (layers/batch_norm_slices.h): 2C floats.
  const bool statistics = type == "bn_stats" || type == "bn_combine";
  const size_t element_bytes = precision == Precision::kBf16 && !f32_output ? 2 : sizeof(float);
  s.out_bytes = is_loss      ? sizeof(float)
                : statistics ? static_cast<size_t>(out_shape.elements()) * sizeof(float)
                             : static_cast<size_t>(batch * out_shape.elements()) * element_bytes;
  for (const ParamSpec& spec : layer.params(in_shapes))
    s.param_bytes.push_back(static_cast<size_t>(spec.elements()) * sizeof(float));
  const size_t weight_casts = weight_cast_bytes(type, s.param_bytes, precision);  // added to scratch below
  if (type == "max_pool" || type == "avg_pool") {
    const PoolLayer::Params& p = static_cast<const PoolLayer&>(layer).p();
    if (!p.symmetric_padding())  // its kernels take one pad per dimension (device_kernels.h PoolWindow)
      layer.fail(VDNN_MSG("the CUDA backend supports only symmetric pooling padding, pad_end == pad; this pool has pad "
                          << p.ph << "x" << p.pw << " and pad_end " << p.pb() << "x" << p.pr()
                          << " (the CPU backend runs it)"));
  }
  if (type == "conv") {
    const ConvLayer::Params& p = static_cast<const ConvLayer&>(layer).p();
    if (!p.symmetric_padding())  // cudnnSetConvolution2dDescriptor takes one pad per dimension
      layer.fail(VDNN_MSG(
          "the CUDA backend (cuDNN) supports only symmetric padding, pad_end == pad; "
          "this convolution has pad "
          << p.ph << "x" << p.pw << " and pad_end " << p.pb() << "x" << p.pr() << " (the CPU backend runs it)"));
    s.scratch_bytes =
        cuda_conv_workspace_bytes(static_cast<const ConvLayer&>(layer), in_shapes.at(0), out_shape, batch, conv_algo);
  } else if (type == "max_pool") {
    s.saved_bytes = {static_cast<size_t>(batch * out_shape.elements()) * sizeof(int32_t)};  // argmax
    s.saved_regenerated = {true};
  } else if (type == "lrn" || type == "dropout") {
    s.saved_bytes = {s.out_bytes};  // lrn: y, for backward; dropout: the float mask
    s.saved_regenerated = {type == "lrn"};
  } else if (type == "bn_stats") {
    s.scratch_bytes = activation_bytes(batch, in_shapes.at(0), precision);  // the normalized output, unused
  } else if (type == "bn_apply") {
    if (!input0_needs_grad) s.scratch_bytes = s.out_bytes;  // its data gradient, as batch_norm's
  } else if (type == "batch_norm") {
    const size_t c_bytes = static_cast<size_t>(in_shapes.at(0).channels()) * sizeof(float);
    s.saved_bytes = {c_bytes, c_bytes};  // batch mean, inverse std
    // The scale/shift gradients need the full backward even when the input needs no gradient:
    // its data gradient then goes to scratch.
    if (!input0_needs_grad) s.scratch_bytes = s.out_bytes;
  } else if (type == "attention") {
    s = attention_sizes(static_cast<const AttentionLayer&>(layer), batch, out_shape, element_bytes, s);
  } else if (type == "layer_norm") {
    const Shape& in = in_shapes.at(0);
    const size_t row_bytes = static_cast<size_t>(batch * in.elements() / in.dims.back()) * sizeof(float);
    s.saved_bytes = {row_bytes, row_bytes};  // per-token mean and inverse std
    if (!input0_needs_grad) s.scratch_bytes = s.out_bytes;
  } else if (is_loss) {
    // A token loss reads one label per token ([T, V] logits: T of them per sample).
    const int64_t labels = type == "token_cross_entropy" ? in_shapes.at(0).dims.at(0) : 1;
    s.saved_bytes = {float_bytes(batch, in_shapes.at(0))};                    // probabilities
    s.scratch_bytes = static_cast<size_t>(batch * labels) * sizeof(int32_t);  // labels
  }
  s.scratch_bytes += weight_casts;
  return s;
}

size_t cuda_conv_workspace_bytes(const ConvLayer& layer, const Shape& in, const Shape& out, int64_t batch,
                                 ConvAlgo algo) {
  const std::vector<ConvAlgoEstimate> options = conv_algorithms(ConvProblem::of(layer, in, out, batch));
  auto named = [&](const char* name) -> const ConvAlgoEstimate* {
    for (const ConvAlgoEstimate& a : options)
      if (a.name == name) return &a;
    return nullptr;
  };
  switch (algo) {
    case ConvAlgo::kDirect:
      return named("implicit_gemm")->workspace_bytes;
    case ConvAlgo::kWinograd:
      if (const ConvAlgoEstimate* w = named("winograd")) return w->workspace_bytes;
      return named("implicit_gemm")->workspace_bytes;
    case ConvAlgo::kAuto:
      break;
  }
  size_t most = 0;
  for (const ConvAlgoEstimate& a : options) most = std::max(most, a.workspace_bytes);
  return most;
}

CudaKernelSetup cuda_kernel_setup(const Graph& graph, int node, int64_t batch, ConvAlgo conv_algo,
                                  Precision precision) {
  const Node& n = graph.nodes().at(static_cast<size_t>(node));
  // A slice of a layer (layers/batch_slice.h) runs its original's computation on batch / slices samples.
  CudaKernelSetup setup{n.layer->original(), n.batch(batch), {}, graph.value(n.output).shape};
  for (ValueId v : n.inputs) {
    setup.in_shapes.push_back(graph.value(v).shape);
    setup.input_needs_grad.push_back(graph.needs_gradient(v));
  }
  setup.in_place = graph.runs_in_place(node);
  setup.conv_algo = conv_algo;
  setup.precision = precision;
  if (precision == Precision::kBf16)  // the logits rule: a loss reads fp32
    for (int reader : graph.value(n.output).consumers) {
      const std::string& type = graph.nodes()[static_cast<size_t>(reader)].layer->type();
      if (type == "softmax_cross_entropy" || type == "token_cross_entropy") setup.f32_output = true;
    }
  return setup;
}

CudaSizes cuda_kernel_sizes(const CudaKernelSetup& s) {
  CudaSizes sizes =
      cuda_kernel_sizes(s.layer, s.batch, s.in_shapes, s.out_shape, s.needs_grad(0), s.conv_algo, s.precision,
                        s.f32_output);
  const size_t casts = weight_cast_bytes(s.layer.type(), sizes.param_bytes, s.precision);  // in scratch already
  if (s.sub_batches > 1) {
    if (s.layer.type() != "conv" || s.batch % s.sub_batches != 0)
      s.layer.fail(VDNN_MSG(s.sub_batches << " sub-batches: only a convolution runs in sub-batches, and they "
                                             "must divide the batch of "
                                          << s.batch));
    sizes.scratch_bytes = cuda_conv_workspace_bytes(static_cast<const ConvLayer&>(s.layer), s.in_shapes.at(0),
                                                    s.out_shape, s.batch / s.sub_batches, s.conv_algo) +
                          casts;
  }
  if (s.workspace_cap && s.layer.type() == "conv")  // the cap is the workspace's; the weights' cast is beside it
    sizes.scratch_bytes = std::min(sizes.scratch_bytes - casts, *s.workspace_cap) + casts;
  return sizes;
}

}  // namespace vdnn
