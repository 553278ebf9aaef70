#include "plan/program_builder.h"

#include <algorithm>
#include <map>
#include <set>

#include "vdnn/error.h"

namespace vdnn {
namespace {

// A storage: a value plus the in-place layers that overwrite it, sharing one buffer.
struct Storage {
  int value = 0;  // the graph value its first writer produced
  int tensor = -1, grad = -1;
  std::vector<int> writers;                 // first writer, then its in-place layers, in order
  int first_writer = -1, last_writer = -1;  // node indices; -1: the graph input
  int last_forward_use = -1;
  std::set<int> backward_readers;  // nodes whose backward reads this storage
  bool kept_to_phase_end = false;  // the logits and the loss (read by the host)
  int recompute_at = -1;           // recomputed: the node whose backward slot re-makes it
};

class Builder {
 public:
  Builder(const Graph& g, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& f,
          const ProgramOptions& o)
      : g_(g), value_bytes_(value_bytes), facts_(f), o_(o) {
    p_.policy = o.policy;
    p_.sync = o.sync;
    p_.training = o.training;
    for (const Node& n : g.nodes()) p_.node_names.push_back(n.layer->name());
    p_.nodes.resize(g.nodes().size());
  }

  Program build() {
    make_parameters();
    make_storages();
    if (o_.decisions.empty())
      choose_offloads();
    else
      apply_decisions();
    index_storages();
    check_prefetch_points();
    emit_forward();
    if (o_.training) emit_backward();
    free_leftovers();
    return std::move(p_);
  }

 private:
  int add_tensor(std::string name, size_t bytes, MemoryClass cls, bool persistent = false) {
    p_.tensors.push_back({std::move(name), std::max<size_t>(bytes, 1), cls, persistent, false});
    return static_cast<int>(p_.tensors.size() - 1);
  }
  void emit(Step s) { p_.steps.push_back(std::move(s)); }
  int record(StreamKind s) {
    const int e = p_.event_count++;
    emit({Op::kRecord, s, -1, -1, -1, e});
    return e;
  }
  void alloc(int t, StreamKind s = StreamKind::kCompute) {
    emit({Op::kAlloc, s, -1, t});
    live_.insert(t);
  }
  void free_after(int t, std::vector<int> events) {
    Step s{Op::kFree, StreamKind::kCompute, -1, t};
    s.events = std::move(events);
    emit(std::move(s));
    live_.erase(t);
  }
  // Frees once the compute stream is past this point and, if offloaded, its copy is done.
  void free_now(int t) {
    std::vector<int> events{record(StreamKind::kCompute)};
    if (offload_event_.count(t)) events.push_back(offload_event_[t]);
    free_after(t, events);
  }

  void make_parameters();
  void make_storages();
  void choose_offloads();
  void apply_decisions();
  void check_decisions_fit_graph() const;
  void apply_storage_decision(int k);
  void mark_recomputed(int k);
  void apply_saved_state_decisions();
  StorageAction action_of(int value) const;
  void emit_recomputes(int j);
  void index_storages();
  void set_prefetch_point(int tensor, int node);
  void set_release_point(int tensor, int node, int earliest);
  void free_or_hold(int t, int i);
  void check_prefetch_points();
  void offload(int t);
  void prefetch(int t);
  void prefetch_pending(int node);
  void stream_weights_before(int node);
  void emit_forward();
  void emit_forward_frees(int i);
  void emit_backward();
  void emit_backward_node(int j);
  void sum_shared_parameter_gradients(int j, std::vector<std::pair<int, int>>& sums);
  void free_leftovers();

  const Graph& g_;
  const std::vector<size_t>& value_bytes_;
  const std::vector<NodeFacts>& facts_;
  ProgramOptions o_;
  Program p_;
  std::vector<int> group_;  // value -> storage index
  std::vector<Storage> storages_;
  std::set<int> live_;
  std::map<int, int> offload_event_, prefetch_event_;
  std::set<int> prefetched_, waited_, grad_allocated_;
  std::set<int> shares_params_;       // nodes whose parameters later slices share (Node::param_owner)
  std::map<int, std::vector<int>> streamed_grads_;  // per owner node: its gradients streamed to the host
  std::set<int> param_grad_written_;  // shared parameters' gradients already written in backward
  // Per-node indexes (index_storages), so that each step looks only at what concerns it: building
  // is O(n log n) in the graph's size, not O(n^2) (a chain of 10,000 ReLUs took minutes).
  std::vector<std::vector<int>> needs_;                // node -> tensors its backward reads
  std::vector<std::vector<int>> last_read_forward_;    // node -> storages it reads last in forward
  std::vector<std::vector<int>> first_read_backward_;  // node -> storages it reads first in backward
  std::vector<std::vector<int>> readers_;              // offloaded tensor -> nodes whose backward reads it
  std::vector<int> pending_;                           // node -> offloaded needs not yet prefetched
  std::set<int> pending_nodes_;                        // nodes with pending_ > 0
  std::vector<int> conv_before_;                       // node -> the nearest earlier convolution, or -1
  std::vector<std::vector<int>> recomputes_;           // node -> storages re-made in its backward slot
  // Per-tensor prefetch points (StorageDecision::prefetch_at >= 0): offloaded tensor -> the node
  // whose backward slot issues its prefetch, and node -> those tensors. Such a tensor is outside
  // the Program's rule (not counted in pending_), so it is prefetched at that point and no other.
  std::map<int, int> prefetch_at_;
  std::vector<std::vector<int>> prefetch_points_;
  // Release points (StorageDecision::release_at): offloaded tensor -> the node after whose forward
  // kernel its device copy is freed, and node -> the tensors held until then.
  std::map<int, int> release_at_;
  std::vector<std::vector<int>> released_after_;
  // Streamed weights: node -> the streamed layers whose weights are prefetched before its forward
  // kernel (index n: at the start of the pass, before the input upload).
  std::vector<std::vector<int>> stream_before_;
};

void Builder::make_parameters() {
  const int n = static_cast<int>(g_.nodes().size());
  const std::vector<bool>& streamed = o_.streamed_weights;
  if (!streamed.empty() && (!o_.inference || static_cast<int>(streamed.size()) != n))
    VDNN_THROW("streamed weights: " << (!o_.inference
                                            ? "only an inference Program streams its weights"
                                            : std::to_string(streamed.size()) + " flags for model '" + g_.name() +
                                                  "', which has " + std::to_string(n) + " layers"));
  stream_before_.assign(n + 1, {});
  int weighted_before = n;  // the previous layer with weights; n: none yet (the start of the pass)
  for (int i = 0; i < n; ++i) {
    const Node& node = g_.nodes()[i];
    NodeBinding& b = p_.nodes[i];
    const bool stream = !streamed.empty() && streamed[i] && !node.params.empty();
    if (stream) stream_before_[weighted_before].push_back(i);
    if (!node.params.empty()) weighted_before = i;
    if (node.param_owner >= 0) {  // another slice of a layer: its parameters, gradients summed into its
      VDNN_CHECK(node.param_owner < i && !stream,
                 "node '" << node.layer->name() << "' shares a later or streamed node's parameters");
      b.params = p_.nodes[node.param_owner].params;
      shares_params_.insert(node.param_owner);
      b.d_params = p_.nodes[node.param_owner].d_params;
      continue;
    }
    for (size_t k = 0; k < node.params.size(); ++k) {
      const ParamSpec& spec = node.params[k];
      const std::string name = node.layer->name() + "." + spec.name;
      const size_t bytes = facts_[i].param_bytes[k];
      b.params.push_back(add_tensor(name, bytes, MemoryClass::kWeights, !stream));
      p_.tensors.back().streamed = stream;
      // Gradients and optimizer state exist in every Program of a trained graph (evaluation too), so that
      // persistent tensors land at the same offsets in the training and evaluation plans; an
      // inference Program is the only one of its Net and has none.
      int grad = -1;
      if (spec.trainable && !o_.inference) {
        const int weight = b.params.back();
        // State in host memory is the training Program's alone (an evaluation one lists it, unplaced,
        // so that both place the same persistent tensors alike). Its gradients stream to the host as
        // the backward pass finishes each (emit_backward_node): on the device only while written.
        const bool on_host = o_.optimizer_state == StatePlace::kHost;
        grad = add_tensor(name + ":grad", bytes, MemoryClass::kWeightGrads, !on_host);
        HostUpdatedParam updated{weight, {}};
        for (const std::string& state : optimizer_state_suffixes(o_.optimizer)) {
          updated.state.push_back(add_tensor(name + state, bytes, MemoryClass::kOptimizerState, !on_host));
          p_.tensors.back().on_host = on_host && o_.training;
        }
        if (on_host && o_.training) {
          p_.tensors[weight].host_mirror = p_.tensors[grad].host_mirror = true;
          streamed_grads_[i].push_back(grad);
          p_.host_updated.push_back(std::move(updated));
        }
      }
      b.d_params.push_back(o_.training ? grad : -1);
    }
  }
}

void Builder::make_storages() {
  const auto& values = g_.values();
  const auto& nodes = g_.nodes();
  group_.assign(values.size(), -1);
  group_[0] = 0;
  storages_.push_back({});
  storages_[0].tensor = add_tensor("data", value_bytes_[0], MemoryClass::kFeatureMaps);
  p_.input_tensor = storages_[0].tensor;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const int v = node.output;
    if (facts_[i].in_place) {
      group_[v] = group_[node.inputs[0]];
    } else {
      group_[v] = static_cast<int>(storages_.size());
      Storage s;
      s.value = v;
      s.tensor = add_tensor(node.layer->name() + ":out", value_bytes_[v], MemoryClass::kFeatureMaps);
      s.first_writer = static_cast<int>(i);
      const bool is_loss = node.layer->kind() == LayerKind::kLoss;
      if (o_.training && !is_loss && g_.needs_gradient(v))
        s.grad = add_tensor(node.layer->name() + ":grad", value_bytes_[v], MemoryClass::kGradientMaps);
      storages_.push_back(s);
    }
    Storage& out = storages_[group_[v]];
    out.last_writer = static_cast<int>(i);
    out.writers.push_back(static_cast<int>(i));
    out.last_forward_use = static_cast<int>(i);
    NodeBinding& b = p_.nodes[i];
    const bool backward_reads = !facts_[i].backward_done_by_producer;
    b.backward_reads_in = backward_reads && node.layer->backward_reads_input();
    b.backward_reads_out = backward_reads && node.layer->backward_reads_output();
    b.out = out.tensor;
    b.d_out = out.grad;
    for (size_t k = 0; k < facts_[i].saved_bytes.size(); ++k)
      b.saved.push_back(add_tensor(node.layer->name() + ":saved" + std::to_string(k), facts_[i].saved_bytes[k],
                                   MemoryClass::kFeatureMaps));
    // An inference Program's kernels run forward only: the backward passes' scratch is not needed.
    const size_t scratch =
        o_.inference ? std::min(facts_[i].scratch_bytes, facts_[i].forward_scratch_bytes) : facts_[i].scratch_bytes;
    if (scratch > 0) b.scratch = add_tensor(node.layer->name() + ":scratch", scratch, MemoryClass::kWorkspace);
    for (ValueId in : node.inputs) {
      Storage& s = storages_[group_[in]];
      b.in.push_back(s.tensor);
      s.last_forward_use = std::max(s.last_forward_use, static_cast<int>(i));
      if (b.backward_reads_in) s.backward_readers.insert(static_cast<int>(i));
    }
    if (b.backward_reads_out) out.backward_readers.insert(static_cast<int>(i));
    if (node.layer->kind() == LayerKind::kLoss) {
      storages_[group_[node.inputs[0]]].kept_to_phase_end = true;
      out.kept_to_phase_end = true;
      p_.loss_tensor = out.tensor;
      p_.logits_tensor = storages_[group_[node.inputs[0]]].tensor;
    }
  }
}

void Builder::choose_offloads() {
  // `auto` decides per tensor (apply_decisions); none offloads nothing.
  if (!o_.training || o_.policy == Policy::kNone || o_.policy == Policy::kAuto) return;
  for (Storage& s : storages_) {
    if (s.backward_readers.empty() || s.kept_to_phase_end) continue;
    bool offload = o_.policy == Policy::kAll;
    for (int r : s.backward_readers)
      if (is_conv_class(g_, r)) offload = true;
    p_.tensors[s.tensor].offloaded = offload;
  }
  if (o_.policy != Policy::kAll) return;
  for (const NodeBinding& b : p_.nodes)
    for (int t : b.saved)
      if (p_.tensors[t].bytes >= o_.min_offload_bytes) p_.tensors[t].offloaded = true;
}

StorageAction Builder::action_of(int value) const {
  const auto& values = o_.decisions.values;
  return values.empty() ? StorageAction::kKeep : values[value].action;
}

// Explicit decisions instead of the policy's. Storages are visited last writer first: recomputing
// one makes its writers' inputs read in its backward slot, so each input's decision sees every
// reader (an input no backward read before may now have to be kept, offloaded or recomputed).
void Builder::apply_decisions() {
  if (!o_.training) return;
  check_decisions_fit_graph();
  for (int k = static_cast<int>(storages_.size()) - 1; k >= 0; --k) apply_storage_decision(k);
  apply_saved_state_decisions();
}

// One decision per value and per layer's saved state (or none), and a value written in place into
// another's storage decided on that storage, not on the in-place layer.
void Builder::check_decisions_fit_graph() const {
  const StepDecisions& d = o_.decisions;
  const auto& values = g_.values();
  const auto& nodes = g_.nodes();
  if (!d.values.empty() && d.values.size() != values.size())
    VDNN_THROW("storage decisions: " << d.values.size() << " value decisions for model '" << g_.name()
                                     << "', which has " << values.size() << " values");
  if (!d.saved.empty() && d.saved.size() != nodes.size())
    VDNN_THROW("storage decisions: saved-state decisions for " << d.saved.size() << " layers, model '" << g_.name()
                                                               << "' has " << nodes.size());
  for (int v = 0; v < static_cast<int>(d.values.size()); ++v) {
    const Storage& s = storages_[group_[v]];
    const std::string& name = p_.tensors[s.tensor].name;
    if (v != s.value && d.values[v].prefetch_at != -1 && d.values[v].prefetch_at != d.values[s.value].prefetch_at)
      VDNN_THROW("storage decision for a value written in place into '"
                 << name << "': prefetch point " << d.values[v].prefetch_at << "; decide on '" << name
                 << "' (its storage), not on the in-place layer");
    if (v != s.value && d.values[v].release_at != -1 && d.values[v].release_at != d.values[s.value].release_at)
      VDNN_THROW("storage decision for a value written in place into '"
                 << name << "': release point " << d.values[v].release_at << "; decide on '" << name
                 << "' (its storage), not on the in-place layer");
    if (v != s.value && action_of(v) != StorageAction::kKeep && action_of(v) != action_of(s.value))
      VDNN_THROW("storage decision " << to_string(action_of(v)) << " for a value written in place into '" << name
                                     << "': decide on '" << name << "' (its storage), not on the in-place layer");
  }
}

// Storage k's decision (its value's): kept; offloaded, with its prefetch and release points; or
// recomputed. Points only for an offload; the logits and the loss kept; a storage no backward
// reads is freed in forward whatever is decided.
void Builder::apply_storage_decision(int k) {
  const StepDecisions& d = o_.decisions;
  Storage& s = storages_[k];
  const StorageAction a = action_of(s.value);
  const std::string& name = p_.tensors[s.tensor].name;
  const int prefetch_at = d.values.empty() ? -1 : d.values[s.value].prefetch_at;
  const int release_at = d.values.empty() ? -1 : d.values[s.value].release_at;
  if (prefetch_at != -1 && a != StorageAction::kOffload)
    VDNN_THROW("storage decision " << to_string(a) << " for '" << name << "' with prefetch point " << prefetch_at
                                   << ": only an offloaded tensor is prefetched (offload it, or prefetch_at -1)");
  if (release_at != -1 && a != StorageAction::kOffload)
    VDNN_THROW(
        "storage decision " << to_string(a) << " for '" << name << "' with release point " << release_at
                            << ": only an offloaded tensor's device copy is held (offload it, or release_at -1)");
  if (a == StorageAction::kKeep) return;
  if (s.kept_to_phase_end)
    VDNN_THROW("storage decision " << to_string(a) << " for '" << name
                                   << "': the logits and the loss stay on the device (keep)");
  if (s.backward_readers.empty()) {  // no backward reads it: freed in forward anyway
    if (prefetch_at != -1 || release_at != -1)
      VDNN_THROW("storage decision for '" << name << "': " << (prefetch_at != -1 ? "prefetch" : "release") << " point "
                                          << std::max(prefetch_at, release_at)
                                          << ", but no backward reads it, so it is not offloaded (-1)");
    return;
  }
  if (a == StorageAction::kOffload) {
    p_.tensors[s.tensor].offloaded = true;
    if (prefetch_at != -1) set_prefetch_point(s.tensor, prefetch_at);
    if (release_at != -1) set_release_point(s.tensor, release_at, s.last_forward_use);
    return;
  }
  if (k == 0)
    VDNN_THROW("storage decision recompute for '" << name
                                                  << "': the graph input has no layer to re-run (keep or offload it)");
  mark_recomputed(k);
}

// Storage k re-made in its first backward reader's slot: its writers run again there, so their
// inputs are read there too, and the saved state their forward regenerates is dropped and re-made.
void Builder::mark_recomputed(int k) {
  Storage& s = storages_[k];
  p_.tensors[s.tensor].recomputed = true;
  s.recompute_at = *s.backward_readers.rbegin();  // the first backward reader
  for (int w : s.writers) {
    for (ValueId in : g_.nodes()[w].inputs)
      if (group_[in] != k) storages_[group_[in]].backward_readers.insert(s.recompute_at);
    const std::vector<bool>& regenerated = facts_[w].saved_regenerated;
    for (size_t m = 0; m < regenerated.size(); ++m)
      if (regenerated[m]) p_.tensors[p_.nodes[w].saved[m]].recomputed = true;  // dropped, re-made too
  }
}

// Each layer's saved state: kept or offloaded (never recomputed), with its points when offloaded.
void Builder::apply_saved_state_decisions() {
  const StepDecisions& d = o_.decisions;
  for (size_t i = 0; i < d.saved.size(); ++i) {
    const std::vector<int>& saved = p_.nodes[i].saved;
    if (d.saved[i].size() > saved.size())
      VDNN_THROW("storage decisions: " << d.saved[i].size() << " saved-state decisions for layer '" << p_.node_names[i]
                                       << "', which saves " << saved.size());
    for (size_t k = 0; k < d.saved[i].size(); ++k) {
      if (d.saved[i][k].action == StorageAction::kRecompute)
        VDNN_THROW("storage decision recompute for '" << p_.tensors[saved[k]].name
                                                      << "': kernel-saved state is kept or offloaded (a recompute of "
                                                         "its layer's output reads or rewrites it)");
      // A buffer the recompute regenerates is dropped, never offloaded.
      if (o_.training && d.saved[i][k].action == StorageAction::kOffload && !p_.tensors[saved[k]].recomputed)
        p_.tensors[saved[k]].offloaded = true;
      const int prefetch_at = d.saved[i][k].prefetch_at, release_at = d.saved[i][k].release_at;
      if (prefetch_at == -1 && release_at == -1) continue;
      if (!p_.tensors[saved[k]].offloaded)
        VDNN_THROW("storage decision " << to_string(d.saved[i][k].action) << " for '" << p_.tensors[saved[k]].name
                                       << "' with " << (prefetch_at != -1 ? "prefetch" : "release") << " point "
                                       << std::max(prefetch_at, release_at) << ": "
                                       << (p_.tensors[saved[k]].recomputed ? "its layer's recompute regenerates it"
                                                                           : "it is kept")
                                       << ", only an offloaded tensor is prefetched or held (offload it, or -1)");
      if (prefetch_at != -1) set_prefetch_point(saved[k], prefetch_at);
      if (release_at != -1) set_release_point(saved[k], release_at, static_cast<int>(i));
    }
  }
}

void Builder::index_storages() {
  const int n = static_cast<int>(g_.nodes().size());
  needs_.assign(n, {});
  last_read_forward_.assign(n, {});
  first_read_backward_.assign(n, {});
  readers_.assign(p_.tensors.size(), {});
  pending_.assign(n, 0);
  conv_before_.assign(n, -1);
  recomputes_.assign(n, {});
  for (int s = 0; s < static_cast<int>(storages_.size()); ++s) {
    const Storage& st = storages_[s];
    for (int r : st.backward_readers) needs_[r].push_back(st.tensor);
    if (st.recompute_at < 0) continue;
    recomputes_[st.recompute_at].push_back(s);  // storage order: forward order
    std::vector<int>& needs = needs_[st.recompute_at];
    for (int w : st.writers)  // saved state the re-run reads (BN statistics, dropout mask) or rewrites
      for (int t : p_.nodes[w].saved)
        if (!p_.tensors[t].recomputed && std::find(needs.begin(), needs.end(), t) == needs.end()) needs.push_back(t);
  }
  for (int s = 0; s < static_cast<int>(storages_.size()); ++s) {
    const Storage& st = storages_[s];
    if (st.last_forward_use >= 0) last_read_forward_[st.last_forward_use].push_back(s);
    if (!st.backward_readers.empty()) first_read_backward_[*st.backward_readers.begin()].push_back(s);
  }
  for (int i = 0; i < n; ++i) {
    for (int t : p_.nodes[i].saved) needs_[i].push_back(t);
    for (int t : needs_[i])
      if (p_.tensors[t].offloaded) {
        readers_[t].push_back(i);
        if (!prefetch_at_.count(t)) ++pending_[i];
      }
    if (pending_[i] > 0) pending_nodes_.insert(i);
    if (i > 0) conv_before_[i] = is_conv_class(g_, i - 1) ? i - 1 : conv_before_[i - 1];
  }
}

void Builder::set_prefetch_point(int tensor, int node) {
  const int n = static_cast<int>(g_.nodes().size());
  if (node < 0 || node >= n)
    VDNN_THROW("storage decision for '" << p_.tensors[tensor].name << "': prefetch point " << node
                                        << " is out of range: a node 0.." << n - 1 << " of model '" << g_.name()
                                        << "' (whose backward slot issues the prefetch), or -1 (the Program's rule)");
  prefetch_at_[tensor] = node;
}

// A release point runs from the tensor's last forward reader (`earliest`, its free without one) to
// the last node: the device copy is always freed within the forward pass.
void Builder::set_release_point(int tensor, int node, int earliest) {
  const int n = static_cast<int>(g_.nodes().size());
  if (node < earliest || node >= n)
    VDNN_THROW("storage decision for '"
               << p_.tensors[tensor].name << "': release point " << node << " is out of range: a node " << earliest
               << ".." << n - 1 << " of model '" << g_.name() << "' (" << earliest
               << ": its last forward reader, after whose forward kernel its device copy is freed), or -1");
  release_at_[tensor] = node;
}

// Frees offloaded tensor t after node i's forward kernel, or holds it to its release point.
void Builder::free_or_hold(int t, int i) {
  const auto it = release_at_.find(t);
  if (it == release_at_.end() || it->second <= i)
    free_now(t);
  else
    released_after_[it->second].push_back(t);
}

// A prefetch point must be issued no later than the tensor's first backward reader: the backward
// pass runs in reverse node order, so the point is a node from that reader up to the last node.
// Within a slot the prefetches go in the order the Program's rule would issue them (nearest reader
// first, each reader's tensors in its order), so points equal to the rule's give the same Program.
void Builder::check_prefetch_points() {
  const int n = static_cast<int>(g_.nodes().size());
  prefetch_points_.assign(n, {});
  std::map<std::pair<int, int>, std::vector<int>>
      order;  // (node, -reader) -> tensors by position in the reader's needs
  for (auto [t, node] : prefetch_at_) {
    const int reader = readers_[t].back();  // readers_ is in node order: the last runs first backward
    if (node < reader)
      VDNN_THROW("storage decision for '" << p_.tensors[t].name << "': prefetch point " << node << " ('"
                                          << p_.node_names[node] << "') is after its first backward reader '"
                                          << p_.node_names[reader] << "' in the backward pass; valid: " << reader
                                          << ".." << n - 1 << " (" << reader << ": just in time), or -1");
    order[{node, -reader}];
  }
  for (auto& [key, tensors] : order)
    for (int t : needs_[-key.second])
      if (prefetch_at_.count(t) && prefetch_at_.at(t) == key.first && readers_[t].back() == -key.second &&
          std::find(tensors.begin(), tensors.end(), t) == tensors.end())
        tensors.push_back(t);
  for (auto& [key, tensors] : order)
    prefetch_points_[key.first].insert(prefetch_points_[key.first].end(), tensors.begin(), tensors.end());
}

void Builder::offload(int t) {
  const int ready = record(StreamKind::kCompute);
  emit({Op::kWait, StreamKind::kD2H, -1, -1, -1, ready});
  const int done = p_.event_count++;
  emit({Op::kOffload, StreamKind::kD2H, -1, t, -1, done});
  offload_event_[t] = done;
}

void Builder::prefetch(int t) {
  alloc(t, StreamKind::kH2D);
  // The host copy must be complete before it is read back (found by ThreadSanitizer: with a slow
  // link, a tensor offloaded late in the forward pass is prefetched early in the backward pass).
  emit({Op::kWait, StreamKind::kH2D, -1, -1, -1, offload_event_.at(t)});
  const int done = p_.event_count++;
  emit({Op::kPrefetch, StreamKind::kH2D, -1, t, -1, done});
  prefetch_event_[t] = done;
  prefetched_.insert(t);
  if (prefetch_at_.count(t)) return;  // never counted as pending
  for (int k : readers_[t])
    if (--pending_[k] == 0) pending_nodes_.erase(k);
}

// Prefetches what `node`'s backward reads that is offloaded, not prefetched yet and left to the
// Program's rule (no prefetch point of its own).
void Builder::prefetch_pending(int node) {
  for (int t : needs_[node])
    if (p_.tensors[t].offloaded && !prefetched_.count(t) && !prefetch_at_.count(t)) prefetch(t);
}

// Prefetches the weights of the streamed layers whose point is before `node`'s forward kernel.
void Builder::stream_weights_before(int node) {
  for (int s : stream_before_[node])
    for (int t : p_.nodes[s].params) {
      alloc(t, StreamKind::kH2D);
      const int done = p_.event_count++;
      emit({Op::kPrefetch, StreamKind::kH2D, -1, t, -1, done});
      prefetch_event_[t] = done;
    }
}

void Builder::emit_forward() {
  const int n = static_cast<int>(g_.nodes().size());
  released_after_.assign(n, {});
  stream_weights_before(n);
  alloc(p_.input_tensor);
  emit({Op::kLoadInput, StreamKind::kCompute, -1, p_.input_tensor});
  if (p_.tensors[p_.input_tensor].offloaded) offload(p_.input_tensor);
  for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
    const NodeBinding& b = p_.nodes[i];
    for (int t : b.params)
      if (p_.tensors[t].streamed) emit({Op::kWait, StreamKind::kCompute, -1, -1, -1, prefetch_event_.at(t)});
    stream_weights_before(i);  // the next streamed layer's, copied while this one computes
    if (!facts_[i].in_place) alloc(b.out);
    for (int t : b.saved) alloc(t);
    if (b.scratch >= 0) alloc(b.scratch);
    emit({Op::kForward, StreamKind::kCompute, i});
    if (o_.sync == SyncMode::kLayer) emit({Op::kSync});
    if (b.scratch >= 0) free_now(b.scratch);
    for (int t : b.params)
      if (p_.tensors[t].streamed) free_now(t);
    const Storage& out = storages_[group_[g_.nodes()[i].output]];
    if (out.last_writer == i && p_.tensors[out.tensor].offloaded) offload(out.tensor);
    for (int t : b.saved) {
      if (!o_.training || p_.tensors[t].recomputed)
        free_now(t);  // recomputed: regenerated in backward
      else if (p_.tensors[t].offloaded) {
        offload(t);
        free_or_hold(t, i);
      }
    }
    emit_forward_frees(i);
    for (int t : released_after_[i]) free_now(t);
  }
  emit({Op::kPhaseEnd});
  for (const Storage& s : storages_)
    if (s.kept_to_phase_end && live_.count(s.tensor) && (!o_.training || s.backward_readers.empty()))
      free_now(s.tensor);
}

void Builder::emit_forward_frees(int i) {
  for (int k : last_read_forward_[i]) {
    const Storage& s = storages_[k];
    if (s.kept_to_phase_end || !live_.count(s.tensor)) continue;
    const bool needed_later = o_.training && !s.backward_readers.empty();
    if (p_.tensors[s.tensor].offloaded && needed_later)
      free_or_hold(s.tensor, i);
    else if (!needed_later || p_.tensors[s.tensor].recomputed)
      free_now(s.tensor);
  }
}

void Builder::emit_backward() {
  for (int j = static_cast<int>(g_.nodes().size()) - 1; j >= 0; --j) emit_backward_node(j);
}

void Builder::emit_backward_node(int j) {
  const Node& node = g_.nodes()[j];
  NodeBinding& b = p_.nodes[j];
  const std::vector<int>& needs = needs_[j];
  for (int t : prefetch_points_[j]) prefetch(t);  // per-tensor points first, in tensor order
  prefetch_pending(j);
  // Only nodes with pending prefetches are visited (pending_nodes_), each once over the pass.
  auto below = pending_nodes_.lower_bound(j);  // the nearest pending node before j: std::prev
  if (o_.prefetch_depth > 0) {                 // look-ahead: the next N layers of the backward pass, nearest first
    std::vector<int> ahead;
    for (auto it = below; it != pending_nodes_.begin() && *std::prev(it) >= j - o_.prefetch_depth; --it)
      ahead.push_back(*std::prev(it));
    for (int k : ahead) prefetch_pending(k);
  } else {  // vDNN's rule: the nearest earlier layer with offloaded inputs, never past a convolution
    const int pending = below == pending_nodes_.begin() ? -1 : *std::prev(below);
    if (pending >= 0 && pending >= conv_before_[j]) prefetch_pending(pending);
  }
  for (int t : needs)
    if (prefetched_.count(t) && waited_.insert(t).second)
      emit({Op::kWait, StreamKind::kCompute, -1, -1, -1, prefetch_event_[t]});
  emit_recomputes(j);
  std::vector<std::pair<int, int>> sums;
  b.d_in.clear();
  // A batch slice writes its own samples of its input's gradient, which only slices write: no sums.
  const bool writes_a_slice = node.layer->type() == "batch_slice";
  for (size_t m = 0; m < node.inputs.size(); ++m) {
    const int grad = storages_[group_[node.inputs[m]]].grad;
    if (grad < 0) {
      b.d_in.push_back(-1);
    } else if (writes_a_slice) {
      if (grad_allocated_.insert(grad).second) alloc(grad);
      b.d_in.push_back(grad);
    } else if ((facts_[j].in_place && m == 0) || grad_allocated_.insert(grad).second) {
      if (!facts_[j].in_place || m > 0) alloc(grad);  // in place: the first input's gradient is d_out
      b.d_in.push_back(grad);
    } else {
      const int temp = add_tensor(node.layer->name() + ":accum" + std::to_string(m), p_.tensors[grad].bytes,
                                  MemoryClass::kGradientMaps);
      alloc(temp);
      b.d_in.push_back(temp);
      sums.push_back({grad, temp});
    }
  }
  sum_shared_parameter_gradients(j, sums);
  for (int grad : b.d_params)  // a gradient streamed to the host: on the device from its first writer
    if (grad >= 0 && p_.tensors[grad].host_mirror && !live_.count(grad)) alloc(grad);
  if (b.scratch >= 0) alloc(b.scratch);
  emit({Op::kBackward, StreamKind::kCompute, j});
  for (auto [grad, temp] : sums) emit({Op::kAccumulate, StreamKind::kCompute, -1, grad, temp});
  if (o_.sync == SyncMode::kLayer) emit({Op::kSync});
  for (auto [grad, temp] : sums) free_now(temp);
  if (b.scratch >= 0) free_now(b.scratch);
  const Storage& out = storages_[group_[node.output]];
  if (out.first_writer == j && out.grad >= 0 && live_.count(out.grad)) free_now(out.grad);
  for (int k : first_read_backward_[j])
    if (live_.count(storages_[k].tensor)) free_now(storages_[k].tensor);
  for (int t : b.saved)
    if (live_.count(t)) free_now(t);
  // The owner of parameters comes before every layer sharing them (Node::param_owner), so its
  // backward is their last: their gradients are final, and stream to the host (state in host memory).
  if (auto it = streamed_grads_.find(j); it != streamed_grads_.end())
    for (int grad : it->second) {
      offload(grad);
      free_now(grad);
    }
}

// Slices of one layer share its parameters (Node::param_owner): the first slice in backward order
// writes the gradients, each later one writes into a temporary added to them (in backward order).
void Builder::sum_shared_parameter_gradients(int j, std::vector<std::pair<int, int>>& sums) {
  const Node& node = g_.nodes()[j];
  const int owner = node.param_owner >= 0 ? node.param_owner : j;
  if (owner == j && !shares_params_.count(j)) return;
  NodeBinding& b = p_.nodes[j];
  for (size_t k = 0; k < b.d_params.size(); ++k) {
    const int grad = p_.nodes[owner].d_params[k];
    if (grad < 0) continue;
    if (param_grad_written_.insert(grad).second) {
      b.d_params[k] = grad;
      continue;
    }
    const int temp = add_tensor(node.layer->name() + ":" + node.params[k].name + "_grad", p_.tensors[grad].bytes,
                                MemoryClass::kWeightGrads);
    alloc(temp);
    b.d_params[k] = temp;
    sums.push_back({grad, temp});
  }
}

// The storages re-made in node j's backward slot: a fresh buffer each, their writer and in-place
// layers re-run in forward order (a chain: the storages in forward order too).
void Builder::emit_recomputes(int j) {
  for (int k : recomputes_[j]) {
    const Storage& s = storages_[k];
    alloc(s.tensor);
    for (int w : s.writers) {
      const int scratch = p_.nodes[w].scratch;
      for (int t : p_.nodes[w].saved)
        if (p_.tensors[t].recomputed) alloc(t);  // regenerated here, freed after w's backward
      if (scratch >= 0) alloc(scratch);
      emit({Op::kRecompute, StreamKind::kCompute, w, s.tensor});
      if (o_.sync == SyncMode::kLayer) emit({Op::kSync});
      if (scratch >= 0) free_now(scratch);
    }
  }
}

void Builder::free_leftovers() {
  std::vector<int> rest(live_.begin(), live_.end());
  for (int t : rest) free_now(t);
}

}  // namespace

Program build_program(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                      const ProgramOptions& options) {
  VDNN_CHECK(facts.size() == graph.nodes().size(), "one NodeFacts per node");
  VDNN_CHECK(value_bytes.size() == graph.values().size(), "one size per value");
  VDNN_CHECK(!(options.inference && options.training), "an inference Program has no backward pass");
  Program p = Builder(graph, value_bytes, facts, options).build();
  std::set<std::string> names;  // tensors are found by name (Net::bind_params)
  for (const ProgramTensor& t : p.tensors)
    VDNN_CHECK(names.insert(t.name).second, "two Program tensors named '" << t.name << "'");
  return p;
}

}  // namespace vdnn
