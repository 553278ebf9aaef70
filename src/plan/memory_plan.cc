#include "plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "memory/offset_allocator.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

struct Tenant {
  size_t begin, end;
  std::vector<int> events;  // completing these ends every use of [begin, end)
};

std::string format_mib(size_t bytes) { return VDNN_MSG(static_cast<double>(bytes) / (1 << 20) << " MiB"); }

// Every byte the Program has on the device at once, rounded as the allocator rounds: no placement
// in a pool smaller than this fits.
size_t live_bytes_bound(const Program& program) {
  size_t now = 0;
  for (const ProgramTensor& t : program.tensors)
    if (t.persistent) now += OffsetAllocator::round_up(t.bytes);
  size_t peak = now;
  for (const Step& s : program.steps) {
    const size_t bytes = s.tensor >= 0 ? OffsetAllocator::round_up(program.tensors[s.tensor].bytes) : 0;
    if (s.op == Op::kAlloc) peak = std::max(peak, now += bytes);
    if (s.op == Op::kFree) now -= bytes;
  }
  return peak;
}

// Best fit over the Program's allocs and frees in a pool of exactly `capacity_bytes`.
MemoryPlan place(Program& program, size_t capacity_bytes) {
  MemoryPlan plan;
  plan.capacity_bytes = capacity_bytes;
  OffsetAllocator allocator(capacity_bytes);
  std::map<int, int32_t> handle_of;  // tensor -> allocator handle while on the device
  std::vector<Tenant> history;
  auto place = [&](int t) -> std::optional<Allocation> {
    const ProgramTensor& tensor = program.tensors[t];
    auto a = allocator.allocate(tensor.bytes, tensor.cls);
    if (!a) {
      plan.failure = VDNN_MSG("'" << tensor.name << "' (" << format_mib(tensor.bytes) << ", "
                                  << to_string(tensor.cls) << ") does not fit: "
                                  << format_mib(allocator.in_use_bytes()) << " in use of "
                                  << format_mib(capacity_bytes) << ", largest free block "
                                  << format_mib(allocator.largest_free_block()));
      return std::nullopt;
    }
    handle_of[t] = a->handle;
    return a;
  };
  plan.persistent_offsets.assign(program.tensors.size(), 0);
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    if (!program.tensors[t].persistent) continue;
    auto a = place(static_cast<int>(t));
    if (!a) return plan;
    plan.persistent_offsets[t] = a->offset;
    program.tensors[t].offset = a->offset;
  }

  std::vector<Step> out;
  out.reserve(program.steps.size() * 2);
  // Which stream completes each event, and which events each stream already waited for: a wait
  // on an event of the same stream, or a repeated wait, is dropped.
  std::map<int, StreamKind> event_stream;
  for (const Step& s : program.steps)
    if (s.event >= 0 && s.op != Op::kWait) event_stream[s.event] = s.stream;
  std::map<StreamKind, std::set<int>> waited;
  double in_use_sum = 0;
  const size_t step_count = program.steps.size();
  for (Step& step : program.steps) {
    if (step.op == Op::kAlloc) {
      auto a = place(step.tensor);
      if (!a) return plan;
      step.offset = a->offset;
      out.push_back(step);
      const size_t begin = a->offset, end = a->offset + a->bytes;
      std::vector<int> waits;
      std::erase_if(history, [&](const Tenant& old) {
        if (old.end <= begin || old.begin >= end) return false;
        waits.insert(waits.end(), old.events.begin(), old.events.end());
        return old.begin >= begin && old.end <= end;  // fully covered: superseded
      });
      std::sort(waits.begin(), waits.end());
      waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
      for (int e : waits)
        if (event_stream.at(e) != step.stream && waited[step.stream].insert(e).second)
          out.push_back({Op::kWait, step.stream, -1, -1, -1, e});
    } else if (step.op == Op::kFree) {
      const Allocation a = allocator.allocation(handle_of.at(step.tensor));
      history.push_back({a.offset, a.offset + a.bytes, step.events});
      allocator.free(handle_of.at(step.tensor));
      handle_of.erase(step.tensor);
      out.push_back(step);
    } else {
      if (step.op == Op::kWait) waited[step.stream].insert(step.event);
      if (step.op == Op::kPhaseEnd) plan.at_forward_end = allocator.stats();
      out.push_back(step);
    }
    in_use_sum += static_cast<double>(allocator.in_use_bytes());
    const ClassStats now = allocator.stats();
    for (MemoryClass c : kAllMemoryClasses) plan.average_by_class[index_of(c)] += static_cast<double>(now.current(c));
  }
  program.steps = std::move(out);
  plan.fits = true;
  plan.peak_bytes = allocator.peak_in_use_bytes();
  plan.high_water_bytes = allocator.high_water_offset();
  plan.average_bytes = step_count == 0 ? 0 : in_use_sum / static_cast<double>(step_count);
  for (double& a : plan.average_by_class) a = step_count == 0 ? 0 : a / static_cast<double>(step_count);
  plan.by_class = allocator.stats();
  for (const ProgramTensor& t : program.tensors)
    if (t.offloaded) plan.host_bytes += t.bytes;
  return plan;
}

}  // namespace

MemoryPlan plan_memory(Program& program, size_t capacity_bytes) {
  MemoryPlan plan = place(program, capacity_bytes);
  if (plan.fits || capacity_bytes < live_bytes_bound(program)) return plan;
  // Best fit places differently in a smaller pool, so fitting is not monotone in the capacity: a
  // pool at least as large as the smallest budget takes the placement found there (its offsets
  // are valid in any larger pool). Without this, a budget above the smallest one that an error
  // names could be refused (found by the stress test, tests/stress).
  const size_t smallest = minimum_budget(program);
  if (smallest > capacity_bytes) return plan;
  MemoryPlan at_smallest = place(program, smallest);
  VDNN_CHECK(at_smallest.fits, "a Program must fit its smallest budget");
  at_smallest.capacity_bytes = capacity_bytes;
  return at_smallest;
}

size_t minimum_budget(const Program& program) {
  // Room for every allocation the Program makes always fits: the pool's untouched top is then at
  // least what is still to come. (Not every tensor's size once: an offloaded tensor is allocated
  // again for its prefetch, and best fit may have put others into its first place meanwhile —
  // found by the stress test.)
  size_t total = 0;
  for (const ProgramTensor& t : program.tensors)
    if (t.persistent) total += OffsetAllocator::round_up(t.bytes);
  for (const Step& s : program.steps)
    if (s.op == Op::kAlloc) total += OffsetAllocator::round_up(program.tensors[s.tensor].bytes);
  Program probe = program;
  const MemoryPlan unlimited = place(probe, total);
  VDNN_CHECK(unlimited.fits, "a plan must fit when every allocation has its own memory");
  // Best fit places differently in a smaller pool (often better: a tight pool leaves no tail to
  // spread into), so fitting is not monotone in the capacity. Search up from the peak, the bound
  // no placement beats, in steps of 1/256 (it fits at `total` at the latest).
  const size_t step = std::max<size_t>(OffsetAllocator::kAlignment, unlimited.peak_bytes / 256);
  for (size_t capacity = unlimited.peak_bytes;; capacity += step) {
    Program again = program;
    if (place(again, std::min(capacity, total)).fits) return std::min(capacity, total);
  }
}

}  // namespace vdnn
