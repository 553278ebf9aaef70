#include "rewrites/slice_runs.h"

#include <algorithm>
#include <map>
#include <set>

#include "layers/batch_norm.h"
#include "layers/batch_norm_slices.h"
#include "layers/batch_slice.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

const std::set<std::string>& sliceable_types() {
  static const std::set<std::string> types = {"conv", "relu", "relu6",   "max_pool",  "avg_pool",
                                              "lrn",  "fc",   "flatten", "batch_norm"};
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
                       "lrn, fc, flatten, batch_norm; dropout draws its mask per batch)");
    if (node.inputs.size() != 1) node.layer->fail(where + ": a run is a chain of one-input layers");
    if (i > span.first && node.inputs[0] != nodes[i - 1].output)
      node.layer->fail(where + ": reads '" + g.value(node.inputs[0]).name + "', not the run's previous layer '" +
                       nodes[i - 1].layer->name() + "'");
    if (i < span.last && g.value(node.output).consumers.size() != 1)
      node.layer->fail(where + ": its output is read outside the run as well; end the run here");
  }
  const Value& in = g.value(nodes[span.first].inputs[0]);
  if (in.consumers.size() != 1)
    VDNN_THROW(where << ": its input '" << in.name
                     << "' is read by other layers too; a run's input is read by the run alone");
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
    if (c == ':')
      parts.emplace_back();
    else
      parts.back() += c;
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

namespace {

// Builds the sliced graph: layers outside runs copied, each run emitted by emit_run.
class SliceBuilder {
 public:
  SliceBuilder(const Graph& graph, SlicedGraph& out) : g_(graph), out_(out) {
    for (const Value& v : graph.values()) value_name_.push_back(v.name);
  }

  void copy(int i) {
    const Layer& layer = *g_.nodes()[i].layer;
    out_.node_of[i] = out_.graph.add_sliced(std::make_unique<SliceOfLayer>(layer.original(), layer.name()),
                                            inputs_of(g_.nodes()[i]), 1, -1, i);
  }

  // Per batch norm in the run, its statistics pass (every slice's input to it, made again from
  // the slice, and its bn_stats; one bn_combine); then the run's own pass, slice-major, each batch
  // norm a bn_apply; last the gather. Each slice of the run's input is taken where first read.
  void emit_run(const Span& span) {
    const auto& nodes = g_.nodes();
    input_ = value_name_[nodes[span.first].inputs[0]];
    k_ = span.slices;
    slice_values_.assign(k_, "");
    stats_of_.clear();
    for (int b = span.first; b <= span.last; ++b) {
      if (nodes[b].layer->type() != "batch_norm") continue;
      const std::string stats = nodes[b].layer->name() + "/stats";
      std::vector<std::string> parts;
      for (int s = 0; s < k_; ++s) {
        const std::string x = chain(span.first, b - 1, s, "/for_" + nodes[b].layer->name());
        parts.push_back(stats + "/s" + std::to_string(s));
        out_.graph.add_sliced(std::make_unique<BnStatsLayer>(parts.back(), batch_norm(b)), {x}, k_, -1, b);
      }
      out_.graph.add_sliced(std::make_unique<BnCombineLayer>(stats, k_), parts, k_, -1, b);
      stats_of_[b] = stats;
    }
    std::vector<std::string> last_slices;
    for (int s = 0; s < k_; ++s) last_slices.push_back(chain(span.first, span.last, s, ""));
    const std::string gathered = nodes[span.last].layer->name() + "/gather";
    out_.graph.add(std::make_unique<BatchGatherLayer>(gathered, k_), last_slices);
    value_name_[nodes[span.last].output] = gathered;
  }

 private:
  std::vector<std::string> inputs_of(const Node& node) const {
    std::vector<std::string> in;
    for (ValueId v : node.inputs) in.push_back(value_name_[v]);
    return in;
  }
  const BatchNormLayer& batch_norm(int j) const {
    return static_cast<const BatchNormLayer&>(g_.nodes()[j].layer->original());
  }

  // Slice s of the run's layers first..last (none when last < first), named "<layer>/s<s><tag>";
  // returns the name of its last value (the slice itself when empty). The first node made of a
  // layer owns its parameters; the run's own pass (empty tag) updates batch norms' averages.
  std::string chain(int first, int last, int s, const std::string& tag) {
    std::string& slice = slice_values_[s];
    if (slice.empty()) {
      slice = input_ + "/s" + std::to_string(s);
      out_.graph.add_sliced(std::make_unique<BatchSliceLayer>(slice, s, k_), {input_}, k_, -1);
    }
    std::string previous = slice;
    for (int j = first; j <= last; ++j) {
      const Layer& original = g_.nodes()[j].layer->original();
      const std::string name = original.name() + "/s" + std::to_string(s) + tag;
      std::unique_ptr<Layer> layer;
      std::vector<std::string> inputs{previous};
      if (original.type() == "batch_norm") {
        layer = std::make_unique<BnApplyLayer>(name, batch_norm(j), k_, s == 0 && tag.empty());
        inputs.push_back(stats_of_.at(j));
      } else {
        layer = std::make_unique<SliceOfLayer>(original, name);
      }
      const int index = out_.graph.add_sliced(std::move(layer), inputs, k_, out_.node_of[j], j);
      if (out_.node_of[j] < 0) out_.node_of[j] = index;
      previous = name;
    }
    return previous;
  }

  const Graph& g_;
  SlicedGraph& out_;
  std::vector<std::string> value_name_;  // the original graph's values, by name in the sliced graph
  // The run being emitted: its input, slice count, and the input's slices made so far.
  std::string input_;
  int k_ = 1;
  std::vector<std::string> slice_values_;
  std::map<int, std::string> stats_of_;  // batch norm node -> its statistics' value
};

}  // namespace

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
  SlicedGraph out{Graph(graph.name(), graph.input_shape(), graph.classes(), graph.input_type()),
                  std::vector<int>(nodes.size(), -1)};
  SliceBuilder builder(graph, out);
  size_t next = 0;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (next < spans.size() && spans[next].first == i) {
      builder.emit_run(spans[next]);
      i = spans[next++].last;
    } else {
      builder.copy(i);
    }
  }
  out.graph.finalize();
  return out;
}

}  // namespace vdnn
