#include "rewrites/fc_split.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "layers/fc.h"
#include "layers/join.h"
#include "rewrites/param_lookup.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// One fc layer to cut: its node and the number of units of each block, in order.
struct Cut {
  int node = -1;
  std::vector<int64_t> units;
  std::string layer;
  std::vector<std::string> params;  // "weight" and, with a bias, "bias"
  std::string note;
};

std::string block_name(const std::string& layer, size_t j) { return layer + "_block" + std::to_string(j); }

std::string mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return s;
}

// `units` in `blocks` contiguous ranges as even as possible: the first units % blocks one larger.
std::vector<int64_t> even_blocks(int64_t units, int64_t blocks) {
  std::vector<int64_t> out(static_cast<size_t>(blocks), units / blocks);
  for (int64_t j = 0; j < units % blocks; ++j) ++out[static_cast<size_t>(j)];
  return out;
}

// How fc `node` is cut (no units: it fits), after checking that it can be and that its tensors
// are there; throws vdnn::Error naming the layer otherwise.
Cut plan_cut(const Graph& g, const SafeTensors* weights, int node, size_t max_block_bytes) {
  const auto& fc = static_cast<const FcLayer&>(*g.nodes()[node].layer);
  const int64_t units = fc.p().units;
  const int64_t inputs = g.value(g.nodes()[node].inputs[0]).shape.elements();
  const size_t unit_bytes = static_cast<size_t>(inputs + (fc.p().bias ? 1 : 0)) * sizeof(float);
  const size_t bytes = static_cast<size_t>(units) * unit_bytes;
  if (bytes <= max_block_bytes) return {node, {}, fc.name(), {}, ""};
  const std::string layer = "fc layer '" + fc.name() + "'";
  if (unit_bytes > max_block_bytes)
    VDNN_THROW(layer << " cannot be split into blocks of at most " << max_block_bytes << " bytes: one output unit's "
                     << inputs << " weights" << (fc.p().bias ? " and bias" : "") << " alone take " << unit_bytes
                     << " bytes");
  const int64_t per_block = static_cast<int64_t>(max_block_bytes / unit_bytes);
  const int64_t blocks = (units + per_block - 1) / per_block;
  const int most = ConcatLayer("").max_inputs();
  if (blocks > most)
    VDNN_THROW(layer << " (" << bytes << " bytes) would need " << blocks << " blocks of at most " << max_block_bytes
                     << " bytes, more than the " << most << " inputs a concat takes; give a larger block size");
  for (int64_t j = 0; j < blocks; ++j) {
    const std::string name = block_name(fc.name(), static_cast<size_t>(j));
    if (g.find_value(name) >= 0)
      VDNN_THROW(layer << " cannot be split: its block name '" << name << "' is taken by a value of model '" << g.name()
                       << "'");
    for (const ParamSpec& spec : g.nodes()[node].params)
      if (weights && weights->find(name + "." + spec.name))
        VDNN_THROW(layer << " cannot be split: " << (weights->path.empty() ? "the weights" : weights->path)
                         << " already hold a tensor '" << name << "." << spec.name << "'");
  }
  const std::vector<int64_t> sizes = even_blocks(units, blocks);
  Cut cut{node,
          sizes,
          fc.name(),
          {},
          "fc '" + fc.name() + "' (" + std::to_string(units) + " units x " + std::to_string(inputs) + " inputs, " +
              mib(bytes) + ") split into " + std::to_string(blocks) + " blocks of " + std::to_string(sizes.back()) +
              (sizes.front() == sizes.back() ? "" : " to " + std::to_string(sizes.front())) + " units (at most " +
              mib(static_cast<size_t>(sizes.front()) * unit_bytes) + " each)"};
  for (const ParamSpec& spec : g.nodes()[node].params) {
    cut.params.push_back(spec.name);
    if (!weights) continue;
    const SafeTensor& t =
        require_param(*weights, g, node, spec, "the fc split of model '" + g.name() + "' (" + layer + ")");
    VDNN_CHECK(t.data.size() == static_cast<size_t>(spec.elements()),
               "tensor '" << t.name << "' holds " << t.data.size() << " values, not its shape's " << spec.elements());
  }
  return cut;
}

// Shrinks `v` to its first `keep` floats in place, giving the whole pages past them back to the
// system (Linux: MADV_DONTNEED; they would read as zeros, but nothing reads past size()): how a
// tensor lets go of its rows as they are cut off its end, without a copy of what stays. Elsewhere
// the pages stay until the vector is freed.
void release_tail(std::vector<float>& v, size_t keep) {
  v.resize(keep);
#ifdef __linux__
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(v.data() + keep) + page - 1) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(v.data() + v.capacity()) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#endif
}

// Replaces tensor "<layer>.<param>" (units rows, in whatever shape it has) with its row blocks, in
// its place. The blocks are cut from the last: each copied out, then released from the original,
// whose remaining rows become block 0 without a copy; so the tensor is held once plus one block.
// Its momentum goes too; returns whether it had one.
bool cut_tensor(SafeTensors& weights, const std::string& layer, const std::string& param,
                const std::vector<int64_t>& units) {
  const std::string name = layer + "." + param;
  auto at = std::find_if(weights.tensors.begin(), weights.tensors.end(), [&](auto& t) { return t.name == name; });
  SafeTensor whole = std::move(*at);
  at = weights.tensors.erase(at);
  const size_t row = whole.data.size() / static_cast<size_t>(whole.shape[0]);
  std::vector<SafeTensor> blocks(units.size());
  size_t end = whole.data.size();
  for (size_t j = units.size(); j-- > 0;) {
    SafeTensor& b = blocks[j];
    b = {block_name(layer, j) + "." + param, whole.shape, {}};
    b.shape[0] = units[j];
    const size_t first = end - static_cast<size_t>(units[j]) * row;
    if (j == 0) {
      b.data = std::move(whole.data);  // what is left: rows [0, units[0])
    } else {
      b.data.assign(whole.data.begin() + static_cast<std::ptrdiff_t>(first),
                    whole.data.begin() + static_cast<std::ptrdiff_t>(end));
      release_tail(whole.data, first);
    }
    end = first;
  }
  weights.tensors.insert(at, std::make_move_iterator(blocks.begin()), std::make_move_iterator(blocks.end()));
  return std::erase_if(weights.tensors, [&](const SafeTensor& t) { return t.name == name + kMomentumSuffix; }) > 0;
}

// The split of the graph, and of `weights` when given.
FcSplit split(Graph& graph, SafeTensors* weights, size_t max_block_bytes) {
  if (max_block_bytes == 0)
    VDNN_THROW("the fc split of model '" << graph.name() << "' needs a block size above 0 bytes");
  FcSplit r;
  const std::vector<Node>& nodes = graph.nodes();
  const int count = static_cast<int>(nodes.size());
  std::vector<Cut> cuts;
  for (int i = 0; i < count; ++i)
    if (nodes[i].layer->type() == "fc") {  // not linear (per token: its weight is [units, C])
      Cut c = plan_cut(graph, weights, i, max_block_bytes);
      if (!c.units.empty()) cuts.push_back(std::move(c));
    }
  if (cuts.empty()) return r;

  // Each layer's inputs by name, while the graph still has them.
  std::vector<std::vector<std::string>> inputs(count);
  for (int i = 0; i < count; ++i)
    for (ValueId in : nodes[i].inputs) inputs[i].push_back(graph.value(in).name);
  std::vector<const Cut*> cut_of(count, nullptr);
  for (const Cut& c : cuts) {
    cut_of[c.node] = &c;
    r.notes.push_back(c.note);
    r.blocks += static_cast<int>(c.units.size());
  }
  r.layers_split = static_cast<int>(cuts.size());

  // The new graph: each cut fc as its blocks over its input, then the concat under its name.
  Graph rewritten(graph.name(), graph.input_shape(), graph.classes(), graph.input_type());
  std::vector<std::unique_ptr<Layer>> layers = std::move(graph).release_layers();
  for (int i = 0; i < count; ++i) {
    if (!cut_of[i]) {
      rewritten.add(std::move(layers[i]), inputs[i]);
      continue;
    }
    const auto& fc = static_cast<const FcLayer&>(*layers[i]);
    std::vector<std::string> blocks;
    for (size_t j = 0; j < cut_of[i]->units.size(); ++j) {
      FcLayer::Params p = fc.p();
      p.units = cut_of[i]->units[j];
      blocks.push_back(block_name(fc.name(), j));
      rewritten.add(std::make_unique<FcLayer>(blocks.back(), p), inputs[i]);
    }
    rewritten.add(std::make_unique<ConcatLayer>(fc.name()), blocks);
  }
  rewritten.finalize();
  graph = std::move(rewritten);

  if (!weights) return r;
  int momentum = 0;
  for (const Cut& c : cuts)
    for (const std::string& param : c.params) momentum += cut_tensor(*weights, c.layer, param, c.units) ? 1 : 0;
  if (momentum > 0)
    r.notes.push_back(std::to_string(momentum) + " momentum tensor" + (momentum > 1 ? "s" : "") +
                      " of the split layers removed: the blocks are for inference");
  if (weights->metadata.erase("weights_sha256") > 0)
    r.notes.push_back("the weights' metadata 'weights_sha256' was removed: the blocks no longer hash to it");
  return r;
}

}  // namespace

FcSplit split_wide_fc(Graph& graph, SafeTensors& weights, size_t max_block_bytes) {
  return split(graph, &weights, max_block_bytes);
}

FcSplit split_wide_fc(Graph& graph, size_t max_block_bytes) { return split(graph, nullptr, max_block_bytes); }

size_t streaming_block_bytes(const Graph& graph) {
  size_t bytes = 0, widest_unit = 1;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    for (const ParamSpec& p : node.params) bytes += static_cast<size_t>(p.elements()) * sizeof(float);
    if (node.layer->type() != "fc") continue;
    const auto& fc = static_cast<const FcLayer&>(*node.layer);
    const int64_t inputs = graph.value(node.inputs[0]).shape.elements();
    widest_unit = std::max(widest_unit, static_cast<size_t>(inputs + (fc.p().bias ? 1 : 0)) * sizeof(float));
  }
  return std::max(bytes / 8, widest_unit);
}

}  // namespace vdnn
