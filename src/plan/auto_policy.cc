#include "plan/auto_policy.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <queue>

#include "memory/offset_allocator.h"
#include "plan/dyn.h"
#include "plan/memory_plan.h"
#include "plan/planned_step.h"
#include "plan/prefetch_points.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// A decision the search can take: a storage (by the graph value its first writer produced), one
// saved buffer of a kernel, or a convolution's algorithm.
struct Unit {
  enum Kind { kValue, kSaved, kAlgo } kind = kValue;
  int index = -1;  // the value, or the node
  int saved = -1;  // kSaved: which saved buffer of the node
};

// What the training Program says about memory: the step where the most bytes are live, the
// tensors live there, and which tensors outlive the forward pass (what the backward pass reads).
struct LivePeak {
  size_t bytes = 0;
  std::vector<int> live;  // tensors live at the peak
  int busy_node = -1;     // the node whose kernel runs at the peak
  std::vector<bool> live_at_phase_end;
  // Per tensor: how much backward compute runs before its first backward reader's kernel (the
  // last `window_kernels` backward kernels before it), the window a prefetch can hide behind.
  std::vector<double> prefetch_window;
};

// The prefetch windows the fit phase prices offloads with (backward kernels a prefetch hides
// behind): each is fitted and refined, the faster goes on. Two suits VGG-16 (1.20x against 1.39x with
// four), four suits ResNet-152 (1.24x against 1.27x); one window for all would lose one of them.
constexpr int kBackwardWindows[] = {2, 4};
// The prefetch-point phase: how many prefetches it places (those read first), and how many slots
// before the Program rule's it looks for each (a bounded search keeps `vdnn plan` interactive).
constexpr size_t kPlacedPrefetches = 8;
constexpr int kEarliestSlots = 16;

LivePeak live_peak(const Program& p, const CostModel& costs, int window_kernels) {
  LivePeak out;
  out.live_at_phase_end.assign(p.tensors.size(), false);
  std::vector<bool> live(p.tensors.size(), false);
  size_t bytes = 0;  // persistent tensors (weights, gradients, momentum) are placed, never allocated
  for (const ProgramTensor& t : p.tensors)
    if (t.persistent) bytes += t.bytes;
  out.bytes = bytes;
  size_t peak_step = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.op == Op::kAlloc) {
      live[s.tensor] = true;
      bytes += p.tensors[s.tensor].bytes;
      if (bytes > out.bytes) {
        out.bytes = bytes;
        peak_step = i;
      }
    } else if (s.op == Op::kFree) {
      live[s.tensor] = false;
      bytes -= p.tensors[s.tensor].bytes;
    } else if (s.op == Op::kPhaseEnd) {
      out.live_at_phase_end = live;
    }
  }
  // Replay to the peak for its live set, and find the kernel it was allocated for.
  std::vector<bool> at(p.tensors.size(), false);
  for (size_t i = 0; i <= peak_step && i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.op == Op::kAlloc) at[s.tensor] = true;
    if (s.op == Op::kFree) at[s.tensor] = false;
  }
  for (size_t t = 0; t < at.size(); ++t)
    if (at[t] && !p.tensors[t].persistent) out.live.push_back(static_cast<int>(t));
  for (size_t i = peak_step; i < p.steps.size(); ++i) {
    const Op op = p.steps[i].op;
    if (op == Op::kForward || op == Op::kBackward || op == Op::kRecompute) {
      out.busy_node = p.steps[i].node;
      break;
    }
  }
  out.prefetch_window.assign(p.tensors.size(), -1);
  std::vector<double> recent;  // the backward kernels issued so far, latest last
  for (const Step& s : p.steps) {
    if (s.op != Op::kBackward && s.op != Op::kRecompute) continue;
    double window = 0;
    for (size_t k = recent.size(); k > 0 && recent.size() - k < static_cast<size_t>(window_kernels); --k)
      window += recent[k - 1];
    const NodeBinding& b = p.nodes[s.node];
    auto reads = [&](int t) {
      if (t >= 0 && out.prefetch_window[t] < 0) out.prefetch_window[t] = window;
    };
    for (int t : b.in) reads(t);
    for (int t : b.saved) reads(t);
    if (s.op == Op::kBackward && b.backward_reads_out) reads(b.out);
    recent.push_back(s.op == Op::kBackward ? costs.backward_seconds(s.node) : costs.forward_seconds(s.node));
  }
  return out;
}

class Search {
 public:
  // sub_batches: whether a leaner algorithm may be a sub-batched one (AlgoCost::sub_batches).
  Search(const Planner& planner, size_t budget, int window_kernels, bool sub_batches)
      : p_(planner),
        g_(planner.graph()),
        costs_(planner.costs()),
        budget_(budget),
        window_(window_kernels),
        sub_batches_(sub_batches),
        algo_(costs_.fastest()) {
    const int n = static_cast<int>(g_.nodes().size());
    forward_end_.assign(n, 0);
    double t = 0;
    for (int i = 0; i < n; ++i) forward_end_[i] = t += forward(i);
    forward_total_ = t;
  }

  // Phase 1: the peak-driven greedy. False when no decision lowers the peak enough.
  bool fit(Configuration& c, std::vector<std::string>& tried) {
    size_t target = budget_;
    const int max_rounds = 4 * static_cast<int>(g_.nodes().size()) + 32;
    for (int round = 0; round < max_rounds; ++round) {
      const std::shared_ptr<const Program> built = p_.built(c, true);
      const Program& train = *built;
      const LivePeak peak = live_peak(train, ChosenCosts(costs_, c.algos), window_);
      if (peak.bytes <= target) {
        const size_t train_smallest = vdnn::minimum_budget(train), eval = eval_smallest(c);
        if (std::max(train_smallest, eval) <= budget_) {
          tried.push_back(VDNN_MSG("fit: " << round << " round(s), " << picks_.size() << " decision(s), live peak "
                                           << format_bytes(peak.bytes) << ", smallest budget "
                                           << format_bytes(train_smallest)
                                           << " (the evaluation pass: " << format_bytes(eval) << ")"));
          return true;
        }
        if (eval > budget_) {  // the evaluation Program keeps everything: only a leaner algorithm helps it
          if (!lean_evaluation(c)) {
            tried.push_back(VDNN_MSG("fit: the evaluation pass needs " << format_bytes(eval)
                                                                       << " and no leaner algorithm is left"));
            return false;
          }
          continue;
        }
        const size_t excess = train_smallest - budget_;  // the placement's fragmentation
        if (excess >= target) return false;
        target -= excess;
        continue;
      }
      if (!lower_peak(c, train, peak, peak.bytes - target)) {
        tried.push_back(VDNN_MSG("fit: no decision lowers the live peak of "
                                 << format_bytes(peak.bytes) << " at layer '" << busy_name(peak) << "'"));
        return false;
      }
    }
    return false;
  }

  // Phase 1, when the fit finds no decision that lowers the peak enough (the kernel at the peak
  // touches what would have to go): start instead from what `all` offloads, which fits, each
  // offload a decision priced at its copy time, for refine to undo those the step does not need.
  bool seed_from_all(Configuration& c, std::vector<std::string>& tried) {
    const std::shared_ptr<const Program> built = p_.built({Policy::kAll, c.algos}, true);
    const Program& all = *built;
    Configuration seeded = c;
    seeded.decisions = decisions_of(all, g_);
    if (!fits(seeded)) return false;
    for (const PrefetchSlot& slot : prefetch_slots(all)) {
      const Unit u = slot.saved >= 0 ? Unit{Unit::kSaved, slot.node, slot.saved}
                                     : Unit{Unit::kValue, slot.node < 0 ? 0 : g_.nodes()[slot.node].output};
      picks_.push_back({u, StorageAction::kOffload, -1, copy_seconds(all.tensors[slot.tensor].bytes)});
    }
    tried.push_back(VDNN_MSG("fit: started instead from all's " << picks_.size() << " offload(s)"));
    c = std::move(seeded);
    return true;
  }

  // Phase 3a: each offloaded tensor's prefetch as early as the budget allows (Capuchin's in-trigger),
  // the tensors the backward pass needs first placed first. Returns how many moved earlier.
  int place_prefetches(Configuration& trial) {
    std::vector<PrefetchSlot> slots = prefetch_slots(*p_.built(trial, true));
    if (slots.empty()) return 0;
    std::stable_sort(slots.begin(), slots.end(),
                     [](const PrefetchSlot& a, const PrefetchSlot& b) { return a.reader > b.reader; });
    const int last = static_cast<int>(g_.nodes().size()) - 1;
    const size_t limit = std::min<size_t>(slots.size(), kPlacedPrefetches);
    int moved = 0;
    for (size_t k = 0; k < limit; ++k) {
      StorageDecision& d = decision_for(trial.decisions, g_, slots[k]);
      int lo = slots[k].issued_at, hi = std::min(last, lo + kEarliestSlots);
      d.prefetch_at = lo;
      if (!fits(trial)) {
        d.prefetch_at = -1;
        continue;
      }
      while (lo < hi) {  // the earliest slot that still fits (earlier holds more memory)
        const int mid = lo + (hi - lo + 1) / 2;
        d.prefetch_at = mid;
        if (fits(trial))
          lo = mid;
        else
          hi = mid - 1;
      }
      d.prefetch_at = lo;
      moved += lo > slots[k].issued_at;
    }
    return moved;
  }

  // Phase 3b: release points. In the simulated step (under `prefetch`), each offloaded tensor's device copy is held
  // until the first forward kernel that starts after its copy has ended: nothing is placed over a
  // range the link may still be reading, so no kernel waits to reuse it. Holding costs memory, so
  // every hold is scaled by one factor, the largest of 1, 1/2 ... 1/32 that still fits (a handful
  // of placements however many tensors are offloaded). Two rounds (the timeline moves once the
  // waits are gone). Returns how many copies are held.
  int place_releases(Configuration& trial, Prefetch prefetch, int& evaluations) {
    const int last = static_cast<int>(g_.nodes().size()) - 1;
    std::map<StorageDecision*, int> natural;  // each held decision -> where its free was before any hold
    for (int round = 0; round < 2; ++round) {
      const PlannedStep step = p_.step(trial, prefetch, budget_);
      if (!step.fits) break;
      const Program& train = step.train;
      const SimResult r = simulate(train, ChosenCosts(costs_, trial.algos));
      ++evaluations;
      std::vector<double> forward_start(g_.nodes().size(), 0);
      std::vector<int> freed_after(train.tensors.size(), -1);  // the forward node its free follows
      for (int i = 0, node = -1; i < static_cast<int>(train.steps.size()); ++i) {
        const Step& s = train.steps[i];
        if (s.op == Op::kPhaseEnd) break;
        if (s.op == Op::kForward) node = s.node;
        if (s.op == Op::kFree && freed_after[s.tensor] < 0) freed_after[s.tensor] = node;
      }
      for (const TimelineOp& op : r.ops)
        if (op.op == Op::kForward && op.node >= 0) forward_start[op.node] = op.start;
      std::map<int, PrefetchSlot> slot_of;
      for (const PrefetchSlot& slot : prefetch_slots(train)) slot_of[slot.tensor] = slot;
      struct Hold {
        StorageDecision* decision;
        int from, to;  // its free now, the first forward kernel after its copy ends
      };
      std::vector<Hold> holds;
      for (const TimelineOp& op : r.ops) {
        if (op.stream != StreamKind::kD2H || train.steps[op.step].op != Op::kOffload) continue;
        const int t = train.steps[op.step].tensor;
        const auto slot = slot_of.find(t);
        if (slot == slot_of.end() || slot->second.node < 0 || freed_after[t] < 0) continue;  // the input: loaded
        int to = last;
        for (int k = freed_after[t] + 1; k <= last; ++k)
          if (forward_start[k] >= op.end) {
            to = k;
            break;
          }
        if (to <= freed_after[t]) continue;
        StorageDecision* d = &decision_for(trial.decisions, g_, slot->second);
        natural.emplace(d, freed_after[t]);
        holds.push_back({d, freed_after[t], to});
      }
      if (holds.empty()) break;
      auto scale = [&](int shift) {
        for (const Hold& h : holds) h.decision->release_at = h.from + ((h.to - h.from) >> shift);
      };
      int shift = 0;
      for (scale(0); !fits(trial);)
        if (++shift <= 5)
          scale(shift);
        else {
          scale(31);  // every hold back where it was: that fitted
          break;
        }
    }
    int held = 0;
    for (auto [d, from] : natural)
      if (d->release_at > from)
        ++held;
      else
        d->release_at = -1;  // not held after all: freed where it would be anyway
    return held;
  }

  // Phase 2: undo the costliest decisions while the step still fits and gets faster, then try the
  // other way off the device for each storage still decided.
  // Trials are simulated under vDNN's prefetch rule (two placements each; the look-ahead's depth
  // search would cost log2(n) more), the rule is chosen after.
  void refine(Configuration& c, std::vector<std::string>& tried, int& evaluations) {
    Evaluation best = p_.evaluate(c, budget_, Prefetch::kVdnn);
    ++evaluations;
    std::vector<Pick> order = picks_;
    std::stable_sort(order.begin(), order.end(), [](const Pick& a, const Pick& b) { return a.cost > b.cost; });
    const size_t steps = std::max<size_t>(p_.built(c, true)->steps.size(), 1);
    const size_t trials = std::clamp<size_t>(400000 / steps, 2, 16);
    int undone = 0;
    for (size_t k = 0; k < order.size() && k < trials; ++k) {
      Configuration trial = c;
      undo(trial, order[k]);
      if (!fits(trial)) continue;
      Evaluation e = p_.evaluate(trial, budget_, Prefetch::kVdnn);
      ++evaluations;
      if (e.fits && e.time.iteration_seconds < best.time.iteration_seconds) {
        c = std::move(trial);
        best = std::move(e);
        ++undone;
      }
    }
    // Then each storage still off the device the other way (offload <-> recompute): the fit chose
    // between them on modelled prices, the simulator sees the link and the placement as they are.
    // A swap must not lose under the look-ahead either (the points phase may pick it).
    int swapped = 0;
    size_t swaps = 0;
    std::optional<double> ahead;  // c's step under the look-ahead, once needed
    for (size_t k = 0; k < order.size() && swaps < trials; ++k) {
      const Unit& u = order[k].unit;
      if (u.kind != Unit::kValue || u.index == 0 || c.decisions.values[u.index].action == StorageAction::kKeep)
        continue;
      Configuration trial = c;
      StorageDecision& d = trial.decisions.values[u.index];
      d = {d.action == StorageAction::kOffload ? StorageAction::kRecompute : StorageAction::kOffload};
      ++swaps;
      if (!fits(trial)) continue;
      Evaluation e = p_.evaluate(trial, budget_, Prefetch::kVdnn);
      ++evaluations;
      if (!e.fits || e.time.iteration_seconds >= best.time.iteration_seconds) continue;
      if (!ahead) ahead = p_.evaluate(c, budget_, Prefetch::kAhead).time.iteration_seconds;
      const double trial_ahead = p_.evaluate(trial, budget_, Prefetch::kAhead).time.iteration_seconds;
      evaluations += 2;
      if (trial_ahead > *ahead) continue;
      c = std::move(trial);
      best = std::move(e);
      ahead = trial_ahead;
      ++swapped;
    }
    tried.push_back(VDNN_MSG("refine: " << undone << " of " << std::min(order.size(), trials)
                                        << " costliest decision(s) undone, " << swapped << " of " << swaps
                                        << " swapped between offload and recompute"));
  }

 private:
  // Both Programs placed, the evaluation Program's once per algorithm choice (decisions do not
  // change it): what Planner::minimum_budget answers, for half the placements.
  size_t eval_smallest(const Configuration& c) {
    if (eval_algos_ != c.algos) {
      eval_algos_ = c.algos;
      const std::shared_ptr<const Program> eval = p_.built(c, false);
      eval_smallest_ = vdnn::minimum_budget(*eval);
      eval_host_bytes_ = host_copies_bytes(*eval);
    }
    return eval_smallest_;
  }
  size_t smallest_budget(const Configuration& c) {
    return std::max(vdnn::minimum_budget(*p_.built(c, true)), eval_smallest(c));
  }
  // What Planner::host_bytes answers, `train` being c's training Program.
  size_t host_bytes(const Configuration& c, const Program& train) {
    eval_smallest(c);
    return host_copies_bytes(train) + eval_host_bytes_;
  }

  // The largest workspace live at the evaluation Program's peak steps down to a leaner algorithm.
  bool lean_evaluation(Configuration& c) {
    const std::shared_ptr<const Program> eval = p_.built(c, false);
    const LivePeak peak = live_peak(*eval, ChosenCosts(costs_, c.algos), window_);
    int node = -1;
    size_t largest = 0;
    for (int t : peak.live)
      for (size_t i = 0; i < eval->nodes.size(); ++i)
        if (eval->nodes[i].scratch == t && eval->tensors[t].bytes > largest &&
            costs_.nodes[i].next_leaner(c.algos[i], sub_batches_) >= 0) {
          largest = eval->tensors[t].bytes;
          node = static_cast<int>(i);
        }
    Option o;
    if (node < 0 || !leaner_option(c, node, o)) return false;
    apply(c, o.pick);
    picks_.push_back(o.pick);
    return true;
  }
  bool fits(const Configuration& c) {
    if (eval_smallest(c) > budget_) return false;
    const std::shared_ptr<const Program> train = p_.built(c, true);
    if (!fits_within(*train, budget_)) return false;  // exact, without finishing the placement (memory_plan.h)
    return !p_.host_budget() || host_bytes(c, *train) <= p_.host_budget();
  }

  struct Pick {
    Unit unit;
    StorageAction action = StorageAction::kKeep;
    int old_algo = -1;  // kAlgo: the algorithm before
    double cost = 0;    // seconds the cost model charged
  };
  struct Offload {
    double produced = 0, copy = 0;
  };

  double forward(int node) const { return algo_cost(node).forward_seconds; }
  const AlgoCost& algo_cost(int node) const { return costs_.nodes[node].algos[algo_[node]]; }
  std::string busy_name(const LivePeak& peak) const {
    return peak.busy_node < 0 ? "(none)" : g_.nodes()[peak.busy_node].layer->name();
  }
  double copy_seconds(size_t bytes) const {
    return costs_.link_bytes_per_second > 0 ? costs_.link_latency_seconds + bytes / costs_.link_bytes_per_second : 0;
  }

  // The forward pass's exposed copy time with `extra` added to the committed offloads: the d2h
  // link copies in production order and the forward pass ends at forward_total_.
  double exposed(const Offload* extra) const {
    std::vector<Offload> all = offloads_;
    if (extra) all.push_back(*extra);
    std::sort(all.begin(), all.end(), [](const Offload& a, const Offload& b) { return a.produced < b.produced; });
    double link = 0;
    for (const Offload& o : all) link = std::max(link, o.produced) + o.copy;
    return std::max(0.0, link - forward_total_);
  }

  // The storage of `value` as the builder makes it: written by its producer and the layers that
  // run in place over it.
  std::vector<int> writers(int value) const {
    std::vector<int> out;
    for (int v = value; v >= 0;) {
      const Value& val = g_.value(v);
      if (val.producer >= 0 && (out.empty() || g_.runs_in_place(val.producer))) out.push_back(val.producer);
      int next = -1;
      for (int c : val.consumers)
        if (g_.runs_in_place_over(c, v)) next = g_.nodes()[c].output;
      v = next;
    }
    return out;
  }

  struct Option {
    Pick pick;
    size_t bytes = 0;
    Offload offload;              // when pick.action is kOffload
    double backward_exposed = 0;  // the prefetch's copy time its backward window cannot hide
  };

  // Node `node`'s next leaner algorithm as an option: the workspace it saves, its extra time.
  bool leaner_option(const Configuration& c, int node, Option& out) const {
    const NodeCost& cost = costs_.nodes[node];
    const int leaner = cost.next_leaner(c.algos[node], sub_batches_);
    if (leaner < 0) return false;
    const AlgoCost &now = cost.algos[c.algos[node]], &lean = cost.algos[leaner];
    out.bytes = now.workspace_bytes - lean.workspace_bytes;
    out.pick = {{Unit::kAlgo, node},
                StorageAction::kKeep,
                c.algos[node],
                (lean.forward_seconds + lean.backward_seconds) - (now.forward_seconds + now.backward_seconds)};
    return true;
  }

  // The cheapest way to take `tensor` (live at the peak) off the device, if it is a unit.
  // host_room: the host bytes an offload may still take (the host budget less the copies decided).
  bool option_for(const Program& train, const LivePeak& peak, int tensor, const Configuration& c, size_t host_room,
                  Option& out) const {
    const auto it = unit_of_.find(tensor);
    if (it == unit_of_.end()) return false;
    const Unit u = it->second;
    const size_t bytes = train.tensors[tensor].bytes;
    out.bytes = bytes;
    out.pick.unit = u;
    if (u.kind == Unit::kAlgo) {
      if (u.index != peak.busy_node) return false;  // a workspace lives only around its kernel
      return leaner_option(c, u.index, out);
    }
    if (!peak.live_at_phase_end[tensor]) return false;  // the backward pass does not read it
    const double copy = copy_seconds(bytes);
    const std::vector<int> w = u.kind == Unit::kSaved ? std::vector<int>{u.index} : writers(u.index);
    out.offload = {w.empty() ? 0.0 : forward_end_[w.back()], copy};  // the graph input: loaded first
    out.backward_exposed = std::max(0.0, copy - std::max(0.0, peak.prefetch_window[tensor]));
    const double offload_cost = exposed(&out.offload) - exposed(nullptr) + out.backward_exposed + 1e-3 * copy;
    out.pick.action = StorageAction::kOffload;
    out.pick.cost = offload_cost;
    const bool host_full = OffsetAllocator::round_up(bytes) > host_room;  // then only a recompute frees it
    if (u.kind == Unit::kValue && u.index != 0) {
      double recompute = 0;
      for (int w : writers(u.index)) recompute += forward(w);
      if (recompute < offload_cost || host_full) {
        out.pick.action = StorageAction::kRecompute;
        out.pick.cost = recompute;
      }
    }
    return out.pick.action == StorageAction::kRecompute || !host_full;
  }

  void index_units(const Program& train) {
    unit_of_.clear();
    for (size_t i = 0; i < train.nodes.size(); ++i) {
      const NodeBinding& b = train.nodes[i];
      if (b.out >= 0 && !g_.runs_in_place(static_cast<int>(i)) && b.out != train.logits_tensor &&
          b.out != train.loss_tensor)
        unit_of_[b.out] = {Unit::kValue, g_.nodes()[i].output};
      for (size_t k = 0; k < b.saved.size(); ++k)
        unit_of_[b.saved[k]] = {Unit::kSaved, static_cast<int>(i), static_cast<int>(k)};
      if (b.scratch >= 0 && costs_.nodes[i].algos.size() > 1) unit_of_[b.scratch] = {Unit::kAlgo, static_cast<int>(i)};
    }
    if (train.input_tensor >= 0) unit_of_[train.input_tensor] = {Unit::kValue, 0};
  }

  bool decided(const Configuration& c, const Unit& u) const {
    if (u.kind == Unit::kValue) return c.decisions.values[u.index].action != StorageAction::kKeep;
    if (u.kind == Unit::kSaved) return c.decisions.saved[u.index][u.saved].action != StorageAction::kKeep;
    return false;
  }

  void apply(Configuration& c, const Pick& p) {
    if (p.unit.kind == Unit::kValue)
      c.decisions.values[p.unit.index].action = p.action;
    else if (p.unit.kind == Unit::kSaved)
      c.decisions.saved[p.unit.index][p.unit.saved].action = p.action;
    else
      c.algos[p.unit.index] = costs_.nodes[p.unit.index].next_leaner(c.algos[p.unit.index], sub_batches_);
  }
  void undo(Configuration& c, const Pick& p) const {
    if (p.unit.kind == Unit::kValue)
      c.decisions.values[p.unit.index].action = StorageAction::kKeep;
    else if (p.unit.kind == Unit::kSaved)
      c.decisions.saved[p.unit.index][p.unit.saved].action = StorageAction::kKeep;
    else
      c.algos[p.unit.index] = p.old_algo;
  }

  // Takes the cheapest units per byte among those live at the peak until `deficit` bytes are
  // freed (lazily re-pricing offloads, whose cost only grows as the link fills).
  bool lower_peak(Configuration& c, const Program& train, const LivePeak& peak, size_t deficit) {
    algo_ = c.algos;
    index_units(train);
    std::vector<bool> busy(train.tensors.size(), false);
    if (peak.busy_node >= 0) {
      const NodeBinding& b = train.nodes[peak.busy_node];
      for (const std::vector<int>* list : {&b.in, &b.saved, &b.d_in})
        for (int t : *list)
          if (t >= 0) busy[t] = true;
      for (int t : {b.out, b.d_out})
        if (t >= 0) busy[t] = true;
    }
    using Entry = std::pair<double, size_t>;  // cost per byte, option index
    std::vector<Option> options;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
    // Under a host budget an offload must find room for its host copy; past it, a value is
    // recomputed instead (and saved state, which cannot be, stays).
    const size_t host_budget = p_.host_budget() ? p_.host_budget() : SIZE_MAX;
    const size_t host_used = p_.host_budget() ? host_bytes(c, train) : 0;
    size_t host_room = host_budget > host_used ? host_budget - host_used : 0;
    for (int t : peak.live) {
      if (busy[t]) continue;
      Option o;
      if (!option_for(train, peak, t, c, host_room, o) || o.bytes == 0) continue;
      if (o.pick.unit.kind != Unit::kAlgo && decided(c, o.pick.unit)) continue;
      options.push_back(o);
      queue.push({o.pick.cost / static_cast<double>(o.bytes), options.size() - 1});
    }
    size_t freed = 0;
    bool any = false;
    while (!queue.empty() && freed < deficit) {
      const auto [price, k] = queue.top();
      queue.pop();
      Option& o = options[k];
      if (o.pick.action == StorageAction::kOffload) {  // re-price against the offloads taken since
        const size_t copy = OffsetAllocator::round_up(o.bytes);
        if (copy > host_room) {  // the host budget was spent since this was priced: a value is recomputed instead
          if (o.pick.unit.kind != Unit::kValue || o.pick.unit.index == 0) continue;
          double recompute = 0;
          for (int w : writers(o.pick.unit.index)) recompute += forward(w);
          o.pick.action = StorageAction::kRecompute;
          o.pick.cost = recompute;
          queue.push({recompute / static_cast<double>(o.bytes), k});
          continue;
        }
        const double now = exposed(&o.offload) - exposed(nullptr) + o.backward_exposed + 1e-3 * o.offload.copy;
        if (now > o.pick.cost * (1 + 1e-9) + 1e-12) {
          o.pick.cost = now;
          queue.push({now / static_cast<double>(o.bytes), k});
          continue;
        }
        offloads_.push_back(o.offload);
        host_room -= copy;
      }
      apply(c, o.pick);
      picks_.push_back(o.pick);
      freed += o.bytes;
      any = true;
    }
    return any;
  }

  const Planner& p_;
  const Graph& g_;
  const NetworkCosts& costs_;
  size_t budget_;
  int window_;                       // backward kernels a prefetch is priced to hide behind
  bool sub_batches_;                 // leaner algorithms may be sub-batched ones
  AlgoChoice algo_;                  // the algorithms the costs are read at
  std::vector<double> forward_end_;  // per node: when its forward kernel ends (fastest algorithms)
  double forward_total_ = 0;
  std::map<int, Unit> unit_of_;  // Program tensor -> the unit deciding it
  std::vector<Offload> offloads_;
  std::vector<Pick> picks_;
  AlgoChoice eval_algos_;
  size_t eval_smallest_ = 0, eval_host_bytes_ = 0;
};

Configuration all_kept(const Planner& p) {
  Configuration c{Policy::kAuto, p.costs().fastest()};
  const Program probe = p.program({Policy::kNone, c.algos}, true);
  c.decisions.values.assign(p.graph().values().size(), {});
  c.decisions.saved.resize(probe.nodes.size());
  for (size_t i = 0; i < probe.nodes.size(); ++i) c.decisions.saved[i].assign(probe.nodes[i].saved.size(), {});
  return c;
}

}  // namespace

AutoSummary summarize(const Planner& planner, const Configuration& config) {
  AutoSummary s;
  const Program train = planner.program(config, true);
  const ChosenCosts costs(planner.costs(), config.algos);
  const LivePeak peak = live_peak(train, costs, kBackwardWindows[0]);
  for (size_t t = 0; t < train.tensors.size(); ++t) {
    const ProgramTensor& tensor = train.tensors[t];
    if (tensor.persistent || tensor.cls != MemoryClass::kFeatureMaps) continue;  // saved state included
    if (tensor.offloaded)
      s.offloaded_bytes += tensor.bytes;
    else if (tensor.recomputed)
      s.recomputed_bytes += tensor.bytes;
    else if (peak.live_at_phase_end[t])
      s.kept_bytes += tensor.bytes;
  }
  for (const Step& step : train.steps)
    if (step.op == Op::kRecompute) s.recompute_seconds += costs.forward_seconds(step.node);
  const AlgoChoice fast = planner.costs().fastest();
  for (size_t i = 0; i < fast.size(); ++i) {
    s.leaner_algorithms += config.algos[i] != fast[i];
    s.sub_batched += planner.costs().nodes[i].algos[config.algos[i]].sub_batches > 1;
  }
  return s;
}

std::string decisions_by_layer(const Planner& planner, const Configuration& config) {
  const Program train = planner.program(config, true);
  const Graph& g = planner.graph();
  const AlgoChoice fast = planner.costs().fastest();
  std::string out;
  char line[256];
  for (size_t i = 0; i < train.nodes.size(); ++i) {
    const NodeBinding& b = train.nodes[i];
    std::string what = "in place";
    size_t bytes = 0;
    if (!g.runs_in_place(static_cast<int>(i)) && b.out >= 0) {
      const ProgramTensor& t = train.tensors[b.out];
      bytes = t.bytes;
      what = t.offloaded ? "offload" : t.recomputed ? "recompute" : "keep";
      const std::vector<StorageDecision>& values = config.decisions.values;
      const int v = g.nodes()[i].output;
      if (t.offloaded && !values.empty() && values[v].release_at >= 0)
        what += ", held until " + train.node_names[values[v].release_at] + "'s forward";
      if (t.offloaded && !values.empty() && values[v].prefetch_at >= 0)
        what += ", prefetched in " + train.node_names[values[v].prefetch_at] + "'s backward slot";
    }
    size_t saved_offloaded = 0;
    for (int t : b.saved)
      if (train.tensors[t].offloaded) saved_offloaded += train.tensors[t].bytes;
    const NodeCost& cost = planner.costs().nodes[i];
    std::string extra;
    if (saved_offloaded) extra += ", saved state " + format_bytes(saved_offloaded) + " offloaded";
    if (config.algos[i] != fast[i])
      extra += ", algorithm " + cost.algos[config.algos[i]].label() +
               (cost.algos[config.algos[i]].sub_batches > 1 ? " (sub-batched)" : " (leaner)");
    std::snprintf(line, sizeof line, "%-24s %12s  %s%s\n", train.node_names[i].c_str(),
                  bytes ? format_bytes(bytes).c_str() : "", what.c_str(), extra.c_str());
    out += line;
  }
  return out;
}

std::string describe(const AutoChoice& a) {
  if (!a.fits) return "auto: nothing fits: " + a.why;
  const AutoSummary& s = a.summary;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f", s.recompute_seconds * 1e3);
  return VDNN_MSG(
      "auto picks " << (a.config.policy == Policy::kAuto ? "per-tensor decisions" : to_string(a.config.policy))
                    << ", prefetch " << to_string(a.prefetch) << ": " << a.why << "; " << format_bytes(s.kept_bytes)
                    << " kept, " << format_bytes(s.offloaded_bytes) << " offloaded, "
                    << format_bytes(s.recomputed_bytes) << " recomputed (" << ms << " ms of forward kernels again), "
                    << s.leaner_algorithms << " convolution(s) on a leaner algorithm"
                    << (s.sub_batched ? VDNN_MSG(" (" << s.sub_batched << " of them in sub-batches)") : ""));
}

namespace {

// Evaluates `c` at `budget` when it fits, and keeps it in `out` when it is the fastest so far (each
// try a line of out.tried).
void consider(const Planner& planner, size_t budget, const Configuration& c, Prefetch prefetch,
              const std::string& label, AutoChoice& out) {
  if (!planner.fits(c, budget)) {
    out.tried.push_back(label + ": does not fit");
    return;
  }
  const Evaluation e = planner.evaluate(c, budget, prefetch);
  ++out.evaluations;
  out.tried.push_back(VDNN_MSG(label << ": " << e.time.iteration_seconds * 1e3 << " ms"));
  if (!out.fits || e.time.iteration_seconds < out.seconds) {
    out.fits = true;
    out.config = c;
    out.prefetch = prefetch;
    out.seconds = e.time.iteration_seconds;
    out.why = label;
  }
}

// What phases 1 and 2 leave: the search that made the decisions, and the decisions evaluated under
// vDNN's prefetch rule and the look-ahead.
struct Refined {
  Search search;
  Configuration config;
  std::array<Evaluation, 2> evaluations;
};

// Phases 1 and 2: each window's fit, refined; the fastest under either prefetch rule goes on to the
// points (the window that fits faster is not always the one that refines faster). With
// sub-batched algorithms among the leaner ones, and without: the greedy takes the cheapest bytes
// first, and a sub-batch's cheap workspace bytes can lead it where nothing else fits (VGG-16 b256
// on the Titan X at its floor, 10.88 GiB). When no window fits, the search from what `all`
// offloads. Empty: no decisions fit.
std::optional<Refined> fit_and_refine(const Planner& planner, size_t budget, AutoChoice& out) {
  std::optional<Refined> best;
  auto refine = [&](Search s, Configuration fitted) {
    s.refine(fitted, out.tried, out.evaluations);
    std::array<Evaluation, 2> e{planner.evaluate(fitted, budget, Prefetch::kVdnn),
                                planner.evaluate(fitted, budget, Prefetch::kAhead)};
    out.evaluations += 2;
    auto fastest = [](const std::array<Evaluation, 2>& x) {
      return std::min(x[0].time.iteration_seconds, x[1].time.iteration_seconds);
    };
    if (best && fastest(e) >= fastest(best->evaluations)) return;
    best.emplace(Refined{std::move(s), std::move(fitted), std::move(e)});
  };
  const bool has_sub_batches =
      std::any_of(planner.costs().nodes.begin(), planner.costs().nodes.end(), [](const NodeCost& n) {
        return std::any_of(n.algos.begin(), n.algos.end(), [](const AlgoCost& a) { return a.sub_batches > 1; });
      });
  for (const bool sub_batches : {true, false}) {
    if (sub_batches && !has_sub_batches) continue;
    const char* which =
        has_sub_batches ? (sub_batches ? ", sub-batched algorithms too" : ", whole-batch algorithms only") : "";
    for (const int window : kBackwardWindows) {
      Search s(planner, budget, window, sub_batches);
      Configuration fitted = all_kept(planner);
      out.tried.push_back(VDNN_MSG("window of " << window << " backward kernels" << which << ":"));
      if (s.fit(fitted, out.tried)) refine(s, std::move(fitted));
    }
  }
  if (!best) {
    Search s(planner, budget, kBackwardWindows[0], has_sub_batches);
    Configuration seeded = all_kept(planner);
    if (s.seed_from_all(seeded, out.tried)) refine(s, std::move(seeded));
  }
  return best;
}

// Phase 3: the decisions as they are, with release points, with prefetch points and with both;
// each under vDNN's prefetch rule and the look-ahead (with prefetch points: the rule, which they
// extend), the fastest kept. The phases are tried together because each can pay only with the
// other (an early prefetch needs the memory a late release would hold, and the reverse).
void place_points(const Planner& planner, size_t budget, Refined& r, AutoChoice& out) {
  struct Variant {
    Configuration config;
    Prefetch prefetch;
    std::string label;
    const Evaluation* known = nullptr;  // evaluated already (the refined decisions)
  };
  std::vector<Variant> variants;
  const Configuration& c = r.config;
  Configuration released = c, pointed = c;
  const int held = r.search.place_releases(released, Prefetch::kAhead, out.evaluations);
  const int moved = r.search.place_prefetches(pointed);
  Configuration both = pointed;
  const int held_too = r.search.place_releases(both, Prefetch::kVdnn, out.evaluations);
  for (Prefetch f : {Prefetch::kVdnn, Prefetch::kAhead}) {
    variants.push_back({c, f, "decisions", &r.evaluations[f == Prefetch::kAhead]});
    if (held) variants.push_back({released, f, VDNN_MSG(held << " release point(s)")});
  }
  if (moved) variants.push_back({pointed, Prefetch::kVdnn, VDNN_MSG(moved << " prefetch point(s)")});
  if (moved && held_too)
    variants.push_back({both, Prefetch::kVdnn, VDNN_MSG(moved << " prefetch and " << held_too << " release point(s)")});
  for (Variant& v : variants) {
    const Evaluation ve = v.known ? *v.known : planner.evaluate(v.config, budget, v.prefetch);
    out.evaluations += v.known == nullptr;
    const bool better = ve.fits && (!out.fits || ve.time.iteration_seconds < out.seconds);
    out.tried.push_back(VDNN_MSG(v.label << ", prefetch " << to_string(v.prefetch) << ": "
                                         << ve.time.iteration_seconds * 1e3 << " ms"
                                         << (better ? " (best so far)" : "")));
    if (!better) continue;
    out.fits = true;
    out.config = std::move(v.config);
    out.prefetch = v.prefetch;
    out.seconds = ve.time.iteration_seconds;
  }
  out.why = "per-tensor decisions";
  out.tried.push_back(VDNN_MSG("per-tensor decisions: " << out.seconds * 1e3 << " ms"));
}

// vDNN's own answers at this budget (none, conv and all with the fastest algorithms, and dyn's
// pick; both prefetch rules): auto is never slower than the best of them. Returns dyn's choice.
DynChoice consider_vdnn_policies(const Planner& planner, size_t budget, AutoChoice& out) {
  const AlgoChoice fast = planner.costs().fastest();
  for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll})
    for (Prefetch f : {Prefetch::kVdnn, Prefetch::kAhead}) {
      if (p == Policy::kNone && f == Prefetch::kAhead) continue;
      consider(planner, budget, {p, fast}, f, VDNN_MSG(to_string(p) << "+fastest, prefetch " << to_string(f)), out);
    }
  DynChoice dyn = choose_dyn(planner, budget);
  if (dyn.fits)
    for (Prefetch f : {Prefetch::kVdnn, Prefetch::kAhead})
      consider(planner, budget, dyn.config, f,
               VDNN_MSG("dyn's pick " << describe(dyn.config, planner.costs()) << ", prefetch " << to_string(f)), out);
  return dyn;
}

}  // namespace

AutoChoice choose_auto(const Planner& planner, size_t budget) {
  AutoChoice out;
  // Everything kept with the fastest algorithms fits: that is the oracle's step, nothing is faster.
  const Configuration oracle{Policy::kNone, planner.costs().fastest()};
  if (planner.fits(oracle, budget)) {
    consider(planner, budget, oracle, Prefetch::kVdnn, "none+fastest (everything fits)", out);
    out.summary = summarize(planner, out.config);
    out.why = "everything fits on the device with the fastest algorithms";
    return out;
  }
  if (std::optional<Refined> refined = fit_and_refine(planner, budget, out))
    place_points(planner, budget, *refined, out);
  const DynChoice dyn = consider_vdnn_policies(planner, budget, out);
  if (!out.fits) {
    out.why = planner.host_budget() && budget >= dyn.minimum_budget
                  ? VDNN_MSG("nothing fits " << format_bytes(budget) << " with host copies within "
                                             << format_bytes(planner.host_budget()) << ": " << dyn.why)
                  : VDNN_MSG("nothing fits " << format_bytes(budget) << "; `all` with the leanest algorithms needs "
                                             << describe_budget(dyn.minimum_budget));
    return out;
  }
  out.summary = summarize(planner, out.config);
  if (out.config.policy != Policy::kAuto)
    out.why =
        VDNN_MSG("vDNN's " << out.why << " is the fastest that fits (the per-tensor search found no faster step)");
  return out;
}

}  // namespace vdnn
