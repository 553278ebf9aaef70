#include "plan/simulator.h"

#include <algorithm>
#include <cmath>

#include "vdnn/error.h"

namespace vdnn {
namespace {

// Sets of streams, one bit each.
constexpr unsigned bit(StreamKind s) { return 1u << static_cast<int>(s); }
constexpr unsigned kComputeStreams = bit(StreamKind::kCompute);
constexpr unsigned kCopyStreams = bit(StreamKind::kD2H) | bit(StreamKind::kH2D);
constexpr unsigned kCommStreams = bit(StreamKind::kComm);

// The persistent bytes of one memory class (the weight gradients: one per trainable weight).
double persistent_bytes(const Program& p, MemoryClass cls) {
  double bytes = 0;
  for (const ProgramTensor& t : p.tensors)
    if (t.persistent && t.cls == cls) bytes += static_cast<double>(t.bytes);
  return bytes;
}

// Optimizer state in host memory (Program::host_updated), after the backward pass (whose Program
// copied each gradient out): per parameter the host updates the master weight and the state
// (CostModel::host_update_seconds) and the weight crosses back, a two-stage pipeline in the
// parameters' order (one host update and one h2d copy at a time). Returns when the last weight is back.
double host_update_pipeline(const Program& p, const CostModel& costs, SimResult& r) {
  double update = 0, back = 0;
  for (const HostUpdatedParam& u : p.host_updated) {
    const size_t weight = p.tensors[u.weight].bytes;
    size_t state = 0;
    for (int t : u.state) state += p.tensors[t].bytes;
    const double h2d = costs.copy_seconds(weight);
    update += costs.host_update_seconds(weight, state);
    back = std::max(back, update) + h2d;
    r.busy_seconds[static_cast<int>(StreamKind::kH2D)] += h2d;
  }
  return back;
}

// Optimizer state bytes per trainable weight byte: 1 for SGD's momentum, 2 for AdamW's moments.
double state_per_weight(const Program& p) {
  const double weights = persistent_bytes(p, MemoryClass::kWeightGrads);
  return weights > 0 ? persistent_bytes(p, MemoryClass::kOptimizerState) / weights : 0.0;
}

class Clocks {
 public:
  Clocks(const Program& p, const CostModel& costs, SimResult& r)
      : p_(p), costs_(costs), r_(r), event_time_(p.event_count, 0.0), state_per_weight_(state_per_weight(p)) {
    for (const ProgramTensor& t : p.tensors)  // parameters, their gradients, momentum: never freed
      if (t.persistent) account(true, t);
    r_.memory.assign(1, {0.0, r_.memory_by_class.total_current, r_.memory_by_class.current_bytes});
  }

  void run(size_t step) {
    const Step& s = p_.steps[step];
    const CostModel& costs = costs_;
    switch (s.op) {
      case Op::kAlloc:
      case Op::kFree:
        account(s.op == Op::kAlloc, p_.tensors.at(s.tensor));
        break;
      case Op::kLoadInput:
        op(step, costs.load_input_seconds(bytes(s.tensor)));
        break;
      case Op::kForward:
        op(step, costs.forward_seconds(s.node));
        break;
      case Op::kBackward:
        op(step, costs.backward_seconds(s.node));
        break;
      case Op::kRecompute:
        r_.recompute_seconds += op(step, costs.forward_seconds(s.node));
        break;
      case Op::kAccumulate:
        op(step, costs.accumulate_seconds(bytes(s.tensor)));
        break;
      case Op::kOffload:
      case Op::kPrefetch:
        op(step, costs.copy_seconds(bytes(s.tensor)));
        event_time_[s.event] = free_[index(s.stream)];
        break;
      case Op::kRecord:
        event_time_[s.event] = std::max(free_[index(s.stream)], host_);
        break;
      case Op::kWait: {
        double& f = free_[index(s.stream)];
        const double ready = event_time_[s.event];
        const double from = std::max(f, host_);
        if (ready > from && s.stream == StreamKind::kCompute) r_.stall_seconds += ready - from;
        f = std::max(f, ready);
        break;
      }
      case Op::kSync:
        host_ = *std::max_element(free_.begin(), free_.end());
        break;
      case Op::kPhaseEnd:
        host_ = std::max(host_, free_[index(StreamKind::kCompute)]);
        r_.forward_seconds = host_;
        pass_ = Pass::kBackward;
        break;
      case Op::kAllReduce:
        op(step, costs.all_reduce_seconds(p_.buckets.at(s.bucket).bytes, p_.ranks));
        break;
      case Op::kUpdate: {
        size_t weights = 0;  // the bucket's trainable weights (a gradient each, as big)
        for (const auto& [node, k] : p_.buckets.at(s.bucket).params) weights += bytes(p_.nodes.at(node).params.at(k));
        const auto state = static_cast<size_t>(static_cast<double>(weights) * state_per_weight_);
        r_.update_seconds += op(step, costs.update_seconds(weights, state));
        has_updates_ = true;
        break;
      }
    }
  }

  bool has_updates() const { return has_updates_; }

  double end() const { return std::max(host_, *std::max_element(free_.begin(), free_.end())); }

 private:
  static int index(StreamKind s) { return static_cast<int>(s); }
  // The streams whose work slows an op on `s` down, per rule (simulator.h): compute vs the
  // streams of helper threads (copies, comm) on the CPU backend; comm vs copies when the network
  // shares the host link.
  static unsigned cpu_rivals(StreamKind s) {
    return s == StreamKind::kCompute ? kCopyStreams | kCommStreams : kComputeStreams;
  }
  static unsigned link_rivals(StreamKind s) {
    return s == StreamKind::kComm ? kCopyStreams : s == StreamKind::kCompute ? 0u : kCommStreams;
  }
  size_t bytes(int t) const { return p_.tensors.at(t).bytes; }
  void account(bool alloc, const ProgramTensor& t) {
    ClassStats& m = r_.memory_by_class;
    if (alloc)
      m.add(t.cls, t.bytes);
    else
      m.remove(t.cls, t.bytes);
    r_.memory.push_back({free_[index(StreamKind::kCompute)], m.total_current, m.current_bytes});
  }
  // Seconds of [begin, end) during which at least one of `streams` (a set of bit()s) is busy.
  double overlapped(unsigned streams, double begin, double end) const {
    std::vector<std::pair<double, double>> spans;
    for (int k = 0; k < kStreamCount; ++k) {
      if (!(streams & (1u << k))) continue;
      const auto& list = spans_[k];  // in time order, disjoint
      auto it = std::lower_bound(list.begin(), list.end(), begin,
                                 [](const std::pair<double, double>& x, double t) { return x.second <= t; });
      for (; it != list.end() && it->first < end; ++it)
        spans.push_back({std::max(it->first, begin), std::min(it->second, end)});
    }
    std::sort(spans.begin(), spans.end());
    double total = 0, covered = begin;
    for (const auto& [a, b] : spans) {
      const double from = std::max(a, covered);
      if (b > from) total += b - from;
      covered = std::max(covered, b);
    }
    return total;
  }

  // Issues stream work of `seconds` alone; returns how long it took (overlap slows it down).
  double op(size_t step, double seconds) {
    TimelineOp what = timeline_op(p_, step, pass_);
    VDNN_CHECK(seconds >= 0, "negative duration for " << what.name);
    const StreamKind s = what.stream;
    double& f = free_[index(s)];
    const double start = std::max(f, host_);
    // Overlapped work is stretched, per rule, by a few fixed-point steps on the duration d (the
    // overlap only grows with d). A stream no rule applies to (`rivals` 0) is never stretched.
    //  - CPU rule (as calibrated, plan/network_costs.h): d = work + (slow - 1) * overlap.
    //  - host-link rule: the op progresses at 1/slow of its rate while overlapped, so
    //    work = (d - overlap) + overlap / slow, d = work + (1 - 1/slow) * overlap: a whole op
    //    under a rival takes slow x work (the (slow - 1) form would give work / (2 - slow),
    //    unbounded as slow nears 2, the most the link rule gives).
    const double cpu = cpu_rivals(s) ? costs_.slowdown_when_overlapped(s) : 1.0;
    const double link = link_rivals(s) ? costs_.slowdown_when_sharing_host_link() : 1.0;
    // Four steps as the CPU rule always took (its figures stay as they were); with the link
    // rule, until the duration settles (each step closes a factor (1 - 1/slow) <= 1/2 of the gap).
    const double work = seconds;
    const int steps = link > 1.0 ? 40 : cpu > 1.0 ? 4 : 0;
    for (int i = 0; i < steps; ++i) {
      const double before = seconds;
      seconds = work + (cpu > 1.0 ? (cpu - 1.0) * overlapped(cpu_rivals(s), start, start + seconds) : 0.0) +
                (link > 1.0 ? (1.0 - 1.0 / link) * overlapped(link_rivals(s), start, start + seconds) : 0.0);
      if (link > 1.0 && std::abs(seconds - before) <= 1e-12 * work) break;
    }
    f = start + seconds;
    if (seconds > 0) spans_[index(s)].push_back({start, f});
    r_.busy_seconds[index(s)] += seconds;
    what.start = start;
    what.end = f;
    r_.ops.push_back(std::move(what));
    return seconds;
  }

  const Program& p_;
  const CostModel& costs_;
  SimResult& r_;
  std::array<std::vector<std::pair<double, double>>, kStreamCount> spans_;  // busy intervals
  std::vector<double> event_time_;
  double state_per_weight_;  // the update's optimizer state bytes per weight byte
  std::array<double, kStreamCount> free_{};
  double host_ = 0;
  Pass pass_ = Pass::kForward;
  bool has_updates_ = false;  // the Program updates per bucket (data parallel)
};

}  // namespace

SimResult simulate(const Program& program, const CostModel& costs) {
  SimResult result;
  Clocks clocks(program, costs, result);
  for (size_t i = 0; i < program.steps.size(); ++i) clocks.run(i);
  result.iteration_seconds = clocks.end();
  result.all_reduce_hidden = comm_overlap(result.timeline()).hidden_fraction();
  if (program.training && !clocks.has_updates()) {
    // The device updates every trainable weight whose state is on the device (one gradient each)
    // on the compute stream; the host those whose state is in host memory.
    const double weights = persistent_bytes(program, MemoryClass::kWeightGrads);  // state in host memory: none
    result.update_seconds = costs.update_seconds(static_cast<size_t>(weights),
                                                 static_cast<size_t>(persistent_bytes(program, MemoryClass::kOptimizerState)));
    result.iteration_seconds += result.update_seconds;
    result.busy_seconds[static_cast<int>(StreamKind::kCompute)] += result.update_seconds;
    result.host_update_seconds = host_update_pipeline(program, costs, result);
    result.iteration_seconds += result.host_update_seconds;
  }
  return result;
}

}  // namespace vdnn
