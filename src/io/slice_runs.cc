#include "io/slice_runs.h"

#include <algorithm>
#include <set>

#include "layers/batch_slice.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

const std::set<std::string>& sliceable_types() {
  static const std::set<std::string> types = {"conv", "relu", "relu6", "max_pool", "avg_pool", "lrn", "fc", "flatten"};
  return types;
}

int node_named(const Graph& g, const SliceRun& run, const std::string& name) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].layer->name() == name) return static_cast<int>(i);
  VDNN_THROW("slice run '" << to_string(run) << "': model '" << g.name() << "' has no layer '" << name << "'");
}

struct Span {
  int first, last, slices;
};

// The run's nodes, checked: a chain of sample-independent layers whose input only it reads.
Span check_run(const Graph& g, int64_t batch, const SliceRun& run) {
  const std::string where = "slice run '" + to_string(run) + "'";
  const Span span{node_named(g, run, run.first), node_named(g, run, run.last), run.slices};
  if (span.first > span.last)
    VDNN_THROW(where << ": '" << run.first << "' comes after '" << run.last << "'; name the run's first layer first");
  if (run.slices < 2 || batch % run.slices != 0)
    VDNN_THROW(where << ": " << run.slices << " slices; expected at least 2, dividing the batch of " << batch);
  const auto& nodes = g.nodes();
  for (int i = span.first; i <= span.last; ++i) {
    const Node& node = nodes[i];
    if (!sliceable_types().count(node.layer->type()))
      node.layer->fail(where + ": a " + node.layer->type() +
                       " layer cannot run in slices of the batch (allowed: conv, relu, relu6, max_pool, avg_pool, "
                       "lrn, fc, flatten; batch norm and dropout see the whole batch)");
    if (node.inputs.size() != 1) node.layer->fail(where + ": a run is a chain of one-input layers");
    if (i > span.first && node.inputs[0] != nodes[i - 1].output)
      node.layer->fail(where + ": reads '" + g.value(node.inputs[0]).name + "', not the run's previous layer '" +
                       nodes[i - 1].layer->name() + "'");
    if (i < span.last && g.value(node.output).consumers.size() != 1)
      node.layer->fail(where + ": its output is read outside the run as well; end the run here");
  }
  const Value& in = g.value(nodes[span.first].inputs[0]);
  if (in.consumers.size() != 1)
    VDNN_THROW(where << ": its input '" << in.name << "' is read by other layers too; a run's input is read by the run alone");
  return span;
}

// Whether node i may be in a run at all, and whether it may follow node i - 1 in one.
bool sliceable(const Graph& g, int i) {
  const Node& node = g.nodes()[i];
  return sliceable_types().count(node.layer->type()) && node.inputs.size() == 1;
}
bool continues(const Graph& g, int i) {
  const auto& nodes = g.nodes();
  return i > 0 && sliceable(g, i) && nodes[i].inputs[0] == nodes[i - 1].output &&
         g.value(nodes[i - 1].output).consumers.size() == 1 && nodes[i - 1].layer->kind() != LayerKind::kPool;
}

}  // namespace

std::vector<SliceRun> slice_run_candidates(const Graph& graph) {
  std::vector<SliceRun> out;
  const auto& nodes = graph.nodes();
  const int n = static_cast<int>(nodes.size());
  for (int i = 0; i < n; ++i) {
    if (!sliceable(graph, i) || graph.value(nodes[i].inputs[0]).consumers.size() != 1) continue;
    int last = i;
    while (last + 1 < n && continues(graph, last + 1)) ++last;
    out.push_back({nodes[i].layer->name(), nodes[last].layer->name(), 1});
    i = last;
  }
  return out;
}

SliceRun parse_slice_run(const std::string& text) {
  std::vector<std::string> parts{""};
  for (char c : text) {
    if (c == ':') parts.emplace_back();
    else parts.back() += c;
  }
  const bool ok = (parts.size() == 2 || parts.size() == 3) &&
                  std::none_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }) &&
                  std::all_of(parts.back().begin(), parts.back().end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                  parts.back().size() <= 6;
  if (!ok)
    VDNN_THROW("slice run '" << text << "': expected FIRST:LAST:K or LAYER:K (layer names, K slices of the batch), "
                             << "e.g. conv1_1:pool1:4");
  return {parts[0], parts[parts.size() - 2], std::stoi(parts.back())};
}

std::string to_string(const SliceRun& run) {
  return run.first + ":" + (run.last == run.first ? "" : run.last + ":") + std::to_string(run.slices);
}

SlicedGraph slice_runs(const Graph& graph, int64_t batch, const std::vector<SliceRun>& runs) {
  std::vector<Span> spans;
  for (const SliceRun& run : runs) spans.push_back(check_run(graph, batch, run));
  std::vector<size_t> order(runs.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = r;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a].first < spans[b].first; });
  for (size_t r = 1; r < order.size(); ++r)
    if (spans[order[r]].first <= spans[order[r - 1]].last)
      VDNN_THROW("slice runs '" << to_string(runs[order[r - 1]]) << "' and '" << to_string(runs[order[r]])
                                << "' overlap at layer '" << graph.nodes()[spans[order[r]].first].layer->name() << "'");
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
  const auto& nodes = graph.nodes();
  SlicedGraph out{Graph(graph.name(), graph.input_shape(), graph.classes()), std::vector<int>(nodes.size(), -1)};
  std::vector<std::string> value_name;  // the original graph's values, by name in the sliced graph
  for (const Value& v : graph.values()) value_name.push_back(v.name);
  auto inputs_of = [&](const Node& node) {
    std::vector<std::string> in;
    for (ValueId v : node.inputs) in.push_back(value_name[v]);
    return in;
  };
  size_t next = 0;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const Layer& layer = *nodes[i].layer;
    if (next == spans.size() || spans[next].first != i) {
      out.node_of[i] = out.graph.add_sliced(std::make_unique<SliceOfLayer>(layer.original(), layer.name()),
                                            inputs_of(nodes[i]), 1, -1, i);
      continue;
    }
    const Span span = spans[next++];
    const std::string input = value_name[nodes[i].inputs[0]];
    std::vector<std::string> last_slices;
    for (int s = 0; s < span.slices; ++s) {
      const std::string tag = "/s" + std::to_string(s);
      std::string previous = input + tag;
      out.graph.add_sliced(std::make_unique<BatchSliceLayer>(previous, s, span.slices), {input}, span.slices, -1);
      for (int j = span.first; j <= span.last; ++j) {
        const Layer& original = nodes[j].layer->original();
        const int index = out.graph.add_sliced(std::make_unique<SliceOfLayer>(original, nodes[j].layer->name() + tag),
                                               {previous}, span.slices, s == 0 ? -1 : out.node_of[j], j);
        if (s == 0) out.node_of[j] = index;
        previous = out.graph.nodes()[index].layer->name();
      }
      last_slices.push_back(previous);
    }
    const std::string gathered = nodes[span.last].layer->name() + "/gather";
    out.graph.add(std::make_unique<BatchGatherLayer>(gathered, span.slices), last_slices);
    value_name[nodes[span.last].output] = gathered;
    i = span.last;
  }
  out.graph.finalize();
  return out;
}

}  // namespace vdnn
