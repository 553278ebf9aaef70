#include "plan/forward_order.h"

#include <algorithm>
#include <limits>

namespace vdnn {
namespace {

// Storages (a value and the in-place layers that overwrite it) and who reads them.
struct Storages {
  std::vector<int> of_value;     // value -> storage
  std::vector<size_t> bytes;     // per storage
  std::vector<int> readers;      // per storage: node reads of it (in-place writers included)
  std::vector<bool> out_is_new;  // per node: its output has a buffer of its own

  Storages(const Graph& g, int64_t batch) : of_value(g.values().size(), -1), out_is_new(g.nodes().size()) {
    auto add = [&](int v) {
      of_value[v] = static_cast<int>(bytes.size());
      bytes.push_back(static_cast<size_t>(batch * g.values()[v].shape.elements()) * sizeof(float));
      readers.push_back(0);
    };
    add(0);
    for (size_t n = 0; n < g.nodes().size(); ++n) {
      const Node& node = g.nodes()[n];
      out_is_new[n] = !g.runs_in_place(static_cast<int>(n));
      if (out_is_new[n])
        add(node.output);
      else
        of_value[node.output] = of_value[node.inputs[0]];
      for (ValueId in : node.inputs) ++readers[of_value[in]];
    }
  }
};

// Walks an order (or builds one greedily when `order` is empty) and returns the peak.
size_t walk(const Graph& g, int64_t batch, std::vector<int>& order, bool greedy) {
  Storages s(g, batch);
  const int count = static_cast<int>(g.nodes().size());
  std::vector<int> waiting(count);  // inputs whose producer has not run
  for (int n = 0; n < count; ++n)
    for (ValueId in : g.nodes()[n].inputs) waiting[n] += g.values()[in].producer >= 0;
  std::vector<int> ready;  // greedy: the nodes whose inputs are all made, in model order
  for (int n = 0; n < count; ++n)
    if (waiting[n] == 0) ready.push_back(n);
  size_t live = s.bytes[0], peak = live;
  // Bytes node n would free (inputs whose last reader it is) and allocate.
  auto freed_by = [&](int n) {
    size_t f = 0;
    std::vector<int> seen;
    for (ValueId in : g.nodes()[n].inputs) {
      const int k = s.of_value[in];
      int reads = 0;
      for (ValueId other : g.nodes()[n].inputs) reads += s.of_value[other] == k;
      bool counted = false;
      for (int x : seen) counted |= x == k;
      if (!counted && s.readers[k] == reads && s.out_is_new[n]) f += s.bytes[k];
      seen.push_back(k);
    }
    return f;
  };
  auto allocated_by = [&](int n) { return s.out_is_new[n] ? s.bytes[s.of_value[g.nodes()[n].output]] : size_t{0}; };
  for (int step = 0; step < count; ++step) {
    int next = -1;
    if (!greedy) {
      next = order[step];
    } else {
      long long best_net = std::numeric_limits<long long>::max();
      size_t best_rise = 0;
      for (int n : ready) {
        if (g.nodes()[n].layer->kind() == LayerKind::kLoss && step != count - 1) continue;
        const long long net = static_cast<long long>(allocated_by(n)) - static_cast<long long>(freed_by(n));
        const size_t rise = allocated_by(n);
        if (net < best_net || (net == best_net && rise < best_rise)) next = n, best_net = net, best_rise = rise;
      }
      order.push_back(next);
    }
    const Node& node = g.nodes()[next];
    const size_t freed = freed_by(next);
    live += allocated_by(next);
    peak = std::max(peak, live);
    live -= freed;
    for (ValueId in : node.inputs) --s.readers[s.of_value[in]];
    if (greedy) ready.erase(std::find(ready.begin(), ready.end(), next));
    for (int c : g.values()[node.output].consumers)
      if (--waiting[c] == 0 && greedy) ready.insert(std::lower_bound(ready.begin(), ready.end(), c), c);
  }
  return peak;
}

}  // namespace

size_t forward_peak(const Graph& graph, int64_t batch, const std::vector<int>& order) {
  std::vector<int> copy = order;
  return walk(graph, batch, copy, false);
}

ForwardOrder forward_order(const Graph& graph, int64_t batch) {
  ForwardOrder o;
  std::vector<int> model(graph.nodes().size());
  for (size_t n = 0; n < model.size(); ++n) model[n] = static_cast<int>(n);
  o.model_peak_bytes = forward_peak(graph, batch, model);
  std::vector<int> greedy;
  const size_t greedy_peak = walk(graph, batch, greedy, true);
  o.order = greedy_peak < o.model_peak_bytes ? greedy : model;
  o.peak_bytes = std::min(greedy_peak, o.model_peak_bytes);
  for (size_t n = 0; n < model.size(); ++n) o.moved += o.order[n] != static_cast<int>(n);
  return o;
}

}  // namespace vdnn
