#include "runtime/compiled_graph.h"

#include "backends/cpu/dnnl_util.h"
#include "vdnn/error.h"

namespace vdnn {

CompiledGraph::CompiledGraph(const Graph& graph, int64_t batch, uint64_t seed,
                             const dnnl::engine& engine, ConvAlgo conv_algo,
                             std::vector<ConvAlgo> per_node)
    : graph_(graph), batch_(batch) {
  const auto& values = graph.values();
  VDNN_CHECK(per_node.empty() || per_node.size() == graph.nodes().size(),
             "per-node convolution algorithms: " << per_node.size() << " for " << graph.nodes().size() << " nodes");
  value_mds_.resize(values.size());
  value_mds_[0] = plain_md(graph.input_shape().with_batch(batch));
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    KernelSetup setup{*node.layer, batch, {}, values[node.output].shape, {}, false, {}, 0};
    for (ValueId v : node.inputs) {
      setup.in_shapes.push_back(values[v].shape);
      setup.in_mds.push_back(value_mds_[v]);
      setup.input_needs_grad.push_back(v != 0);
    }
    setup.in_place = graph.runs_in_place(static_cast<int>(i));
    setup.seed = seed * 0x9E3779B97F4A7C15ULL + i;
    setup.conv_algo = per_node.empty() ? conv_algo : per_node[i];
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
    f.scratch_bytes = k.scratch_bytes;
    for (const auto& md : k.param_mds) f.param_bytes.push_back(md.get_size());
    f.in_place = in_place_[i];
    out.push_back(f);
  }
  return out;
}

Program CompiledGraph::program(Policy policy, SyncMode sync, bool training,
                               int prefetch_depth) const {
  ProgramOptions o{policy, sync, training};
  o.prefetch_depth = prefetch_depth;
  return build_program(graph_, value_bytes(), facts(), o);
}

}  // namespace vdnn
