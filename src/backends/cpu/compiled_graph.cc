#include "backends/cpu/compiled_graph.h"

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "layers/elementwise.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// A ReLU or ReLU6 that runs in place on its producer's output (its only consumer) is applied by the
// producer, whose kernel writes max(0, y) (ReLU6: min(max(0, y), 6)) and the ReLU's forward does
// nothing. The producers that can:
// - a convolution (a oneDNN post-op);
// - an add of two inputs in one layout (oneDNN's binary add with the post-op; ResNet's join);
// - batch normalization, ReLU only (oneDNN's fuse_norm_relu; ResNet's and most CNNs' BN-ReLU),
//   whose backward applies the ReLU's too, from a mask it saves (relu_fused_into_batch_norm).
// After a convolution or an add the ReLU's backward, from the output, runs as before.
bool relu_fused_into_producer(const Graph& graph, int n, const std::vector<dnnl::memory::desc>& value_mds) {
  const Node& node = graph.nodes()[n];
  if ((node.layer->type() != "relu" && node.layer->type() != "relu6") || !graph.runs_in_place(n)) return false;
  const int producer = graph.values()[node.inputs[0]].producer;
  if (producer < 0) return false;
  const Node& p = graph.nodes()[producer];
  const std::string& type = p.layer->type();
  if (type == "conv") return true;
  if (type == "add") {
    std::vector<dnnl::memory::desc> in_mds;
    for (ValueId v : p.inputs) in_mds.push_back(value_mds[v]);
    return add_is_binary(in_mds);
  }
  return type == "batch_norm" && node.layer->type() == "relu";
}

bool relu_fused_into_batch_norm(const Graph& graph, int n, const std::vector<dnnl::memory::desc>& value_mds) {
  if (!relu_fused_into_producer(graph, n, value_mds)) return false;
  const int producer = graph.values()[graph.nodes()[n].inputs[0]].producer;
  return graph.nodes()[producer].layer->type() == "batch_norm";
}

// Whether value `v` is the loss's input, directly or through layers that run in place on it.
bool feeds_loss(const Graph& graph, ValueId v) {
  for (int c : graph.values()[v].consumers) {
    const Node& consumer = graph.nodes()[c];
    if (consumer.layer->kind() == LayerKind::kLoss) return true;
    if (graph.runs_in_place_over(c, v) && feeds_loss(graph, consumer.output)) return true;
  }
  return false;
}

// The logits rule: in bf16 the layer writing the loss's input writes it in f32 (fc natively,
// flatten by its reorder), so the loss and the results read back stay f32.
bool writes_f32_logits(const Graph& graph, int n) {
  if (graph.runs_in_place(n)) return false;  // it keeps its input's type, f32 if the writer's is
  const Node& node = graph.nodes()[n];
  if (!feeds_loss(graph, node.output)) return false;
  const std::string& type = node.layer->type();
  if (type != "fc" && type != "flatten")
    VDNN_THROW("layer '" << node.layer->name() << "' (" << type
                         << ") writes the loss's input; in bf16 only fc or flatten may (they write f32 logits)");
  // The logits' storage, through any layers in place on it up to the loss, has one reader each: a
  // second would read f32 in a bf16 network, and its gradient sum would add f32 bytes as bf16.
  for (ValueId v = node.output;;) {
    const auto& readers = graph.values()[v].consumers;
    if (readers.size() != 1)
      VDNN_THROW("layer '" << node.layer->name()
                           << "' writes the logits, which other layers read besides the loss; bf16 needs the loss "
                              "to be their only reader");
    const Node& reader = graph.nodes()[readers[0]];
    if (reader.layer->kind() == LayerKind::kLoss) return true;
    v = reader.output;  // a layer in place on the logits (feeds_loss followed only those)
  }
}

}  // namespace

KernelSetup kernel_setup(const Graph& graph, int n, int64_t batch, const std::vector<dnnl::memory::desc>& value_mds,
                         Precision precision) {
  const Node& node = graph.nodes()[n];
  const auto& values = graph.values();
  // A slice of a layer (layers/batch_slice.h) runs its original's computation on batch / slices samples.
  KernelSetup setup{
      node.layer->original(), node.batch(batch), {}, values[node.output].shape, {}, graph.runs_in_place(n), {}, 0};
  for (ValueId v : node.inputs) {
    setup.in_shapes.push_back(values[v].shape);
    setup.in_mds.push_back(value_mds[v]);
    setup.input_needs_grad.push_back(graph.needs_gradient(v));
  }
  setup.relu_done_before = relu_fused_into_producer(graph, n, value_mds);
  setup.relu_backward_done_after = relu_fused_into_batch_norm(graph, n, value_mds);
  const auto& consumers = values[node.output].consumers;
  setup.applies_relu = consumers.size() == 1 && relu_fused_into_producer(graph, consumers[0], value_mds);
  if (setup.applies_relu && graph.nodes()[consumers[0]].layer->type() == "relu6")
    setup.relu_ceiling = Relu6Layer::kCeiling;
  setup.precision = precision;
  setup.f32_output = precision != Precision::kFp32 && writes_f32_logits(graph, n);
  return setup;
}

namespace {

// The same oneDNN implementation, layouts and scratch: one kernel for the cost model.
bool same_kernel(const CpuKernel& a, const CpuKernel& b) {
  return a.implementation == b.implementation && a.scratch_bytes == b.scratch_bytes &&
         a.forward_scratch_bytes == b.forward_scratch_bytes && a.out_md == b.out_md && a.param_mds == b.param_mds &&
         a.saved_mds == b.saved_mds;
}

}  // namespace

std::vector<CpuConvAlternative> cpu_conv_alternatives(KernelSetup setup, const CpuKernel& base,
                                                      const dnnl::engine& engine) {
  std::vector<CpuConvAlternative> out;
  auto keep = [&](const char* name, ConvAlgo algo, std::unique_ptr<CpuKernel> k) {
    if (k && k->out_md == base.out_md && k->param_mds == base.param_mds) out.push_back({name, algo, std::move(k)});
  };
  setup.conv_algo = ConvAlgo::kWinograd;
  std::unique_ptr<CpuKernel> winograd;
  try {
    winograd = make_cpu_kernel(setup, engine);
  } catch (const Error&) {
    // oneDNN has no Winograd for this convolution (not 3x3 stride 1, or not on this CPU).
  }
  keep("winograd", ConvAlgo::kWinograd, std::move(winograd));
  setup.conv_algo = ConvAlgo::kAuto;
  if (conv_auto_uses_gemm_weights(setup)) {  // direct, but the weight gradient by GEMM
    keep("gemm", ConvAlgo::kAuto, make_cpu_kernel(setup, engine));
    return out;
  }
  // What kAuto runs (`vdnn train` by default): oneDNN's pick, mostly one of the kernels above.
  std::unique_ptr<CpuKernel> chosen = make_cpu_kernel(setup, engine);
  int same_as = same_kernel(*chosen, base) ? 0 : -1;
  for (size_t k = 0; same_as < 0 && k < out.size(); ++k)
    if (same_kernel(*chosen, *out[k].kernel)) same_as = static_cast<int>(k) + 1;
  keep("auto", ConvAlgo::kAuto, std::move(chosen));
  if (!out.empty() && out.back().algo == ConvAlgo::kAuto) out.back().same_as = same_as;
  return out;
}

CompiledGraph::CompiledGraph(const Graph& graph, int64_t batch, uint64_t seed, const dnnl::engine& engine,
                             ConvAlgo conv_algo, std::vector<ConvAlgo> per_node, std::vector<int> sub_batches,
                             Precision precision)
    : graph_(graph), batch_(batch), precision_(precision) {
  const auto& values = graph.values();
  VDNN_CHECK(per_node.empty() || per_node.size() == graph.nodes().size(),
             "per-node convolution algorithms: " << per_node.size() << " for " << graph.nodes().size() << " nodes");
  VDNN_CHECK(sub_batches.empty() || sub_batches.size() == graph.nodes().size(),
             "per-node sub-batches: " << sub_batches.size() << " for " << graph.nodes().size() << " nodes");
  value_mds_.resize(values.size());
  // The input: token ids as int32 (Graph::token_input), otherwise values in the activations' type.
  const dt input_type = graph.token_input() ? dt::s32 : precision == Precision::kBf16 ? dt::bf16 : dt::f32;
  value_mds_[0] = plain_md(graph.input_shape().with_batch(batch), input_type);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    KernelSetup setup = kernel_setup(graph, static_cast<int>(i), batch, value_mds_, precision);
    setup.seed = seed * 0x9E3779B97F4A7C15ULL + node.seed_index(static_cast<int>(i));
    setup.conv_algo = per_node.empty() ? conv_algo : per_node[i];
    setup.sub_batches = sub_batches.empty() ? 1 : sub_batches[i];
    kernels_.push_back(make_cpu_kernel(setup, engine));
    in_place_.push_back(setup.in_place);
    value_mds_[node.output] = kernels_.back()->out_md;
  }
}

std::vector<CpuKernel*> CompiledGraph::kernels() const {
  std::vector<CpuKernel*> out;
  for (const auto& k : kernels_) out.push_back(k.get());
  return out;
}

std::vector<size_t> CompiledGraph::value_bytes() const {
  std::vector<size_t> out;
  for (const auto& md : value_mds_) out.push_back(md.get_size());
  return out;
}

std::vector<NodeFacts> CompiledGraph::facts() const {
  std::vector<NodeFacts> out;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const CpuKernel& k = *kernels_[i];
    NodeFacts f;
    f.out_bytes = k.out_md.get_size();
    for (const auto& md : k.saved_mds) f.saved_bytes.push_back(md.get_size());
    f.saved_regenerated.assign(k.saved_mds.size(), k.forward_writes_saved);
    f.scratch_bytes = k.scratch_bytes;
    f.forward_scratch_bytes = k.forward_scratch_bytes.value_or(k.scratch_bytes);
    for (const auto& md : k.param_mds) f.param_bytes.push_back(md.get_size());
    f.in_place = in_place_[i];
    f.backward_done_by_producer = k.backward_done_by_producer;
    out.push_back(f);
  }
  return out;
}

Program CompiledGraph::program(Policy policy, SyncMode sync, bool training, int prefetch_depth) const {
  ProgramOptions o{policy, sync, training};
  o.prefetch_depth = prefetch_depth;
  return build_program(graph_, value_bytes(), facts(), o);
}

}  // namespace vdnn
