#include "plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "memory/offset_allocator.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {


// Freed address ranges, cut into disjoint segments, each with the events that end every use of
// its last tenant (a tenant's events supersede those of the tenants it overlapped: it waited for
// them before its first write). Each operation touches O(log n + segments it overlaps), and every
// segment it overlaps but does not keep is one a free created: O(n log n) over a Program.
class LastTenants {
 public:
  // The events that end every earlier use of [begin, end), appended to `out`.
  void collect(size_t begin, size_t end, std::vector<int>& out) const {
    auto it = segments_.upper_bound(begin);
    if (it != segments_.begin()) --it;
    for (; it != segments_.end() && it->first < end; ++it)
      if (it->second.end > begin) out.insert(out.end(), it->second.events.begin(), it->second.events.end());
  }
  // [begin, end) is free again once `events` complete.
  void freed(size_t begin, size_t end, const std::vector<int>& events) {
    split_at(begin);
    split_at(end);
    segments_.erase(segments_.lower_bound(begin), segments_.lower_bound(end));
    segments_.emplace(begin, Segment{end, events});
  }

 private:
  struct Segment {
    size_t end;
    std::vector<int> events;
  };
  void split_at(size_t x) {
    auto it = segments_.upper_bound(x);
    if (it == segments_.begin()) return;
    --it;
    if (it->first < x && it->second.end > x) {
      segments_.emplace(x, Segment{it->second.end, it->second.events});
      it->second.end = x;
    }
  }
  std::map<size_t, Segment> segments_;  // begin -> segment
};

// Every byte the Program allocates, rounded as the allocator rounds (persistent tensors once).
size_t total_alloc_bytes(const Program& program) {
  size_t total = 0;
  for (const ProgramTensor& t : program.tensors)
    if (t.persistent) total += OffsetAllocator::round_up(t.bytes);
  for (const Step& s : program.steps)
    if (s.op == Op::kAlloc) total += OffsetAllocator::round_up(program.tensors[s.tensor].bytes);
  return total;
}

// One best-fit replay of a Program's allocs and frees through the allocator, in order:
// place_persistent(), then apply() each step, then finish() (or misfit() at the first that fails). An allocation that ends
// above `limit_bytes` (<= pool_bytes) does not fit: the plan says where it went and the replay
// stops. With `out` (may be &program) the replay also writes the offsets and the reuse waits into
// it; without, it only measures (no copy of the Program).
class Replay {
 public:
  Replay(const Program& program, size_t pool_bytes, size_t limit_bytes, Program* out)
      : program_(program), limit_(limit_bytes), out_(out), allocator_(pool_bytes),
        handle_of_(program.tensors.size(), -1),
        event_stream_(static_cast<size_t>(std::max(program.event_count, 0)), StreamKind::kCompute) {
    plan_.capacity_bytes = limit_bytes;
    if (out_) steps_.reserve(program.steps.size() * 2);
    for (const Step& s : program.steps)
      if (s.event >= 0 && s.op != Op::kWait) event_stream_.at(s.event) = s.stream;
  }

  // Persistent tensors first, in tensor order (every Program of a graph puts them alike).
  bool place_persistent() {
    plan_.persistent_offsets.assign(program_.tensors.size(), 0);
    for (size_t t = 0; t < program_.tensors.size(); ++t) {
      if (!program_.tensors[t].persistent) continue;
      auto a = place(static_cast<int>(t));
      if (!a) return false;
      plan_.persistent_offsets[t] = a->offset;
    }
    return true;
  }

  // One step of the Program; false when its allocation does not fit.
  bool apply(const Step& step) {
    if (step.op == Op::kAlloc) {
      auto a = place(step.tensor);
      if (!a) return false;
      if (out_) emit_alloc(step, *a);
    } else if (step.op == Op::kFree) {
      free(step);
    } else {
      if (out_ && step.op == Op::kWait) waited_[step.stream].insert(step.event);
      if (step.op == Op::kPhaseEnd) plan_.at_forward_end = allocator_.stats();
      if (out_) steps_.push_back(step);
    }
    sample();
    return true;
  }

  // The plan of a replay that placed every step (writes `out`).
  MemoryPlan finish() {
    if (out_) {
      for (size_t t = 0; t < out_->tensors.size(); ++t)
        if (out_->tensors[t].persistent) out_->tensors[t].offset = plan_.persistent_offsets[t];
      out_->steps = std::move(steps_);
    }
    const size_t step_count = program_.steps.size();
    plan_.fits = true;
    plan_.peak_bytes = allocator_.peak_in_use_bytes();
    plan_.high_water_bytes = allocator_.high_water_offset();
    plan_.average_bytes = step_count == 0 ? 0 : in_use_sum_ / static_cast<double>(step_count);
    for (double& a : plan_.average_by_class) a = step_count == 0 ? 0 : a / static_cast<double>(step_count);
    plan_.by_class = allocator_.stats();
    for (const ProgramTensor& t : program_.tensors)
      if (t.offloaded) plan_.host_bytes += t.bytes;
    return std::move(plan_);
  }

  // The plan of a replay that stopped at a misfit (fits false, first_misfit and failure set).
  MemoryPlan misfit() { return std::move(plan_); }

 private:
  // Best fit for tensor t below the limit, or nullopt with the plan saying where it went and why.
  std::optional<Allocation> place(int t) {
    const ProgramTensor& tensor = program_.tensors[t];
    auto a = allocator_.allocate(tensor.bytes, tensor.cls);
    if (!a || a->offset + a->bytes > limit_) {
      const std::string what = VDNN_MSG("'" << tensor.name << "' (" << format_bytes(tensor.bytes) << ", "
                                            << to_string(tensor.cls) << ")");
      const std::string in_use = format_bytes(allocator_.in_use_bytes() - (a ? a->bytes : 0));
      // Where the placement puts it says why it misses with room to spare: the holes below the
      // limit are all smaller than it.
      plan_.first_misfit =
          a ? VDNN_MSG(what << " is placed at " << format_bytes(a->offset) << ".." << format_bytes(a->offset + a->bytes)
                            << ", past " << format_bytes(limit_) << " (" << in_use << " in use, no hole below it large enough)")
            : VDNN_MSG(what << " does not fit: " << in_use << " in use of " << format_bytes(limit_));
      plan_.failure = plan_.first_misfit;
      return std::nullopt;
    }
    handle_of_[t] = a->handle;
    return a;
  }

  // The alloc at its offset, then a wait for each event that ended an earlier tenant of its range
  // (a wait on an event of the same stream, or a repeated one, is dropped).
  void emit_alloc(const Step& step, const Allocation& a) {
    steps_.push_back(step);
    steps_.back().offset = a.offset;
    std::vector<int> waits;
    last_tenants_.collect(a.offset, a.offset + a.bytes, waits);
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    for (int e : waits)
      if (event_stream_.at(e) != step.stream && waited_[step.stream].insert(e).second)
        steps_.push_back({Op::kWait, step.stream, -1, -1, -1, e});
  }

  void free(const Step& step) {
    const int32_t handle = handle_of_.at(step.tensor);
    VDNN_CHECK(handle >= 0, "free of '" << program_.tensors[step.tensor].name << "', which is not allocated");
    const Allocation a = allocator_.allocation(handle);
    if (out_) last_tenants_.freed(a.offset, a.offset + a.bytes, step.events);
    allocator_.free(handle);
    handle_of_[step.tensor] = -1;
    if (out_) steps_.push_back(step);
  }

  // Bytes in use after a step, in all and per class, for the averages.
  void sample() {
    in_use_sum_ += static_cast<double>(allocator_.in_use_bytes());
    const ClassStats now = allocator_.stats();
    for (MemoryClass c : kAllMemoryClasses) plan_.average_by_class[index_of(c)] += static_cast<double>(now.current(c));
  }

  const Program& program_;
  const size_t limit_;
  Program* const out_;
  MemoryPlan plan_;
  OffsetAllocator allocator_;
  std::vector<int32_t> handle_of_;  // tensor -> handle while on the device
  std::vector<Step> steps_;         // `out`'s new steps
  // Which stream completes each event, and which events each stream already waited for.
  std::vector<StreamKind> event_stream_;
  std::map<StreamKind, std::set<int>> waited_;
  LastTenants last_tenants_;
  double in_use_sum_ = 0;
};

MemoryPlan replay(const Program& program, size_t pool_bytes, size_t limit_bytes, Program* out) {
  Replay r(program, pool_bytes, limit_bytes, out);
  if (!r.place_persistent()) return r.misfit();
  for (const Step& step : program.steps)
    if (!r.apply(step)) return r.misfit();
  return r.finish();
}

struct Choice {
  size_t pool_bytes;      // the pool best fit runs in
  size_t smallest_bytes;  // the highest address that placement reaches
};

// The placement every capacity uses: best fit in the pool, among a fixed set, whose placement
// reaches the lowest address. The set: a pool larger than everything the Program allocates (its
// untouched top is then larger than any hole, so the top is used only when no hole fits, and the
// placement is the same in any larger pool), and kTightPools pools between the peak and the best
// high water found so far (best fit in a tight pool places small tensors in the top's remainder
// and keeps holes for large ones: up to 8% lower on fmnist_dag). Nothing here depends on the
// capacity asked for, so a capacity fits iff it is at least smallest_bytes: the one true smallest
// budget, monotone by construction. kTightPools + 1 replays, each O(n log n).
Choice choose_placement(const Program& program) {
  constexpr size_t kTightPools = 8;
  const size_t unbounded = 2 * total_alloc_bytes(program) + OffsetAllocator::kAlignment;
  const MemoryPlan open = replay(program, unbounded, unbounded, nullptr);
  VDNN_CHECK(open.fits, "a plan must fit when the pool is larger than all its allocations");
  Choice best{unbounded, open.high_water_bytes};
  for (size_t i = 0; i < kTightPools; ++i) {
    const size_t pool = open.peak_bytes + (best.smallest_bytes - open.peak_bytes) * i / kTightPools;
    const MemoryPlan tight = replay(program, pool, pool, nullptr);
    if (tight.fits && tight.high_water_bytes < best.smallest_bytes) best = {pool, tight.high_water_bytes};
  }
  return best;
}

}  // namespace

MemoryPlan plan_memory(Program& program, size_t capacity_bytes) {
  const Choice choice = choose_placement(program);
  MemoryPlan plan = replay(program, choice.pool_bytes, std::min(capacity_bytes, choice.pool_bytes), &program);
  VDNN_CHECK(plan.fits == (capacity_bytes >= choice.smallest_bytes),
             "the placement fits exactly the capacities from its high water up");
  plan.capacity_bytes = capacity_bytes;
  plan.smallest_bytes = choice.smallest_bytes;
  if (!plan.fits)
    plan.failure += "; this Program needs at least " + describe_budget(choice.smallest_bytes);
  return plan;
}

size_t minimum_budget(const Program& program) { return choose_placement(program).smallest_bytes; }

size_t minimum_budget(const Program& train, const Program& eval) {
  return std::max(minimum_budget(train), minimum_budget(eval));
}

std::string describe_budget(size_t bytes) { return VDNN_MSG(format_bytes(bytes) << " (" << bytes << " bytes)"); }

}  // namespace vdnn
