#include "plan/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "memory/offset_allocator.h"
#include "plan/block_placement.h"
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
  // [begin, end) is free again once `events` complete (a tenant without events never used it:
  // the tenants before it stay the ones to wait for).
  void freed(size_t begin, size_t end, const std::vector<int>& events) {
    if (events.empty()) return;
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

// place_blocks remembered: it is a pure function of (blocks, base), and planning asks for the same
// placement again and again (a configuration's fit, then its evaluation; the evaluation Program,
// which depends on the algorithms only, for every policy; `auto` and `vdnn plan` pricing the same
// vDNN configurations). The last kKept distinct inputs (at most kKeptBlocks blocks in all) are
// kept with their offsets and compared in full (a hash only finds the candidate), so an answer is
// always the one place_blocks gives. `vdnn plan` on ResNet-152 at batch 256: 178 placements asked,
// 74 distinct, 2.3 s down to 1.2 s (docs/benchmarks.md, "Planning time (issue 17)").
class PlacementMemo {
 public:
  std::vector<size_t> place(const std::vector<Block>& blocks, size_t base) {
    const uint64_t key = hash(blocks, base);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = kept_.begin(); it != kept_.end(); ++it)
        if (it->key == key && it->base == base && same(it->blocks, blocks)) {
          kept_.splice(kept_.begin(), kept_, it);  // most recently used first
          return kept_.front().offsets;
        }
    }
    std::vector<size_t> offsets = place_blocks(blocks, base);  // outside the lock: the slow part
    return keep(key, blocks, base, offsets);
  }
  // The offsets when this input was placed lately; nullopt otherwise (nothing is placed).
  std::optional<std::vector<size_t>> known(const std::vector<Block>& blocks, size_t base) {
    const uint64_t key = hash(blocks, base);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : kept_)
      if (e.key == key && e.base == base && same(e.blocks, blocks)) return e.offsets;
    return std::nullopt;
  }

 private:
  std::vector<size_t> keep(uint64_t key, const std::vector<Block>& blocks, size_t base,
                           const std::vector<size_t>& offsets) {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.push_front({key, base, blocks, offsets});
    kept_blocks_ += blocks.size();
    while (kept_.size() > kKept || (kept_.size() > 1 && kept_blocks_ > kKeptBlocks)) {
      kept_blocks_ -= kept_.back().blocks.size();
      kept_.pop_back();
    }
    return offsets;
  }

  static constexpr size_t kKept = 64;                     // placements
  static constexpr size_t kKeptBlocks = size_t{1} << 20;  // blocks in all (32 B each with its offset)
  struct Entry {
    uint64_t key;
    size_t base;
    std::vector<Block> blocks;
    std::vector<size_t> offsets;
  };
  static uint64_t hash(const std::vector<Block>& blocks, size_t base) {
    uint64_t h = 1469598103934665603ull ^ base;  // FNV-1a over the words
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(blocks.size());
    for (const Block& b : blocks) {
      mix(b.bytes);
      mix(b.begin);
      mix(b.end);
    }
    return h;
  }
  static bool same(const std::vector<Block>& a, const std::vector<Block>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const Block& x, const Block& y) {
             return x.bytes == y.bytes && x.begin == y.begin && x.end == y.end;
           });
  }
  std::mutex mutex_;
  std::list<Entry> kept_;  // most recently used first
  size_t kept_blocks_ = 0;
};

PlacementMemo& placements() {
  static PlacementMemo memo;
  return memo;
}

// Where every allocation of a Program goes: persistent tensors first, in tensor order, from 0
// (so every Program of a graph puts them alike), then one block per alloc..free pair of the steps
// (a tensor offloaded and prefetched back has two), placed offline above them (block_placement.h).
struct Layout {
  std::vector<size_t> persistent_offsets;  // per tensor; 0 for the others
  std::vector<size_t> alloc_offsets;       // per kAlloc step, in step order
  size_t smallest_bytes = 0;               // the highest address any of them reaches
};

// The blocks of a Program's allocations and the base above its persistent tensors (their offsets
// into `persistent_offsets` when given).
std::vector<Block> blocks_of(const Program& program, size_t& base, std::vector<size_t>* persistent_offsets) {
  base = 0;
  for (size_t t = 0; t < program.tensors.size(); ++t)
    if (program.tensors[t].persistent) {
      if (persistent_offsets) (*persistent_offsets)[t] = base;
      base += OffsetAllocator::round_up(program.tensors[t].bytes);
    }
  std::vector<Block> blocks;
  std::vector<int> open(program.tensors.size(), -1);  // tensor -> its block while allocated
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (s.op == Op::kAlloc) {
      VDNN_CHECK(open.at(s.tensor) < 0, "alloc of '" << program.tensors[s.tensor].name << "', which is allocated");
      open[s.tensor] = static_cast<int>(blocks.size());
      blocks.push_back({OffsetAllocator::round_up(program.tensors[s.tensor].bytes), i, program.steps.size()});
    } else if (s.op == Op::kFree) {
      VDNN_CHECK(open.at(s.tensor) >= 0, "free of '" << program.tensors[s.tensor].name << "', which is not allocated");
      blocks[open[s.tensor]].end = i;
      open[s.tensor] = -1;
    }
  }
  return blocks;
}

Layout lay_out(const Program& program) {
  Layout layout;
  layout.persistent_offsets.assign(program.tensors.size(), 0);
  size_t base = 0;
  const std::vector<Block> blocks = blocks_of(program, base, &layout.persistent_offsets);
  layout.alloc_offsets = placements().place(blocks, base);
  layout.smallest_bytes = high_water(blocks, layout.alloc_offsets, base);
  return layout;
}

// One pass over a Program's steps in order with the offsets of `layout`: the bytes in use (peaks,
// averages, per class), and, with `out` (may be &program), the offsets and the reuse waits
// written into it. An allocation that ends above `capacity` stops the pass: the plan says where it
// went and what was in use.
class Replay {
 public:
  Replay(const Program& program, const Layout& layout, size_t capacity, Program* out)
      : program_(program),
        layout_(layout),
        capacity_(capacity),
        out_(out),
        offset_of_(out ? program.tensors.size() : 0),
        event_stream_(static_cast<size_t>(std::max(program.event_count, 0)), StreamKind::kCompute) {
    plan_.capacity_bytes = capacity;
    plan_.persistent_offsets = layout.persistent_offsets;
    if (out_) steps_.reserve(program.steps.size() * 2);
    for (const Step& s : program.steps)
      if (s.event >= 0 && s.op != Op::kWait) event_stream_.at(s.event) = s.stream;
  }

  bool place_persistent() {
    for (size_t t = 0; t < program_.tensors.size(); ++t)
      if (program_.tensors[t].persistent && !take(static_cast<int>(t), layout_.persistent_offsets[t])) return false;
    return true;
  }

  // One step of the Program; false when its allocation does not fit.
  bool apply(const Step& step) {
    if (step.op == Op::kAlloc) {
      const size_t offset = layout_.alloc_offsets[allocs_++];
      if (!take(step.tensor, offset)) return false;
      if (out_) emit_alloc(step, offset);
    } else if (step.op == Op::kFree) {
      const ProgramTensor& t = program_.tensors[step.tensor];
      stats_.remove(t.cls, OffsetAllocator::round_up(t.bytes));
      if (out_) {
        const size_t offset = offset_of_.at(step.tensor);
        last_tenants_.freed(offset, offset + OffsetAllocator::round_up(t.bytes), step.events);
        steps_.push_back(step);
      }
    } else {
      if (out_ && step.op == Op::kWait) waited_[step.stream].insert(step.event);
      if (step.op == Op::kPhaseEnd) plan_.at_forward_end = stats_;
      if (out_) steps_.push_back(step);
    }
    sample();
    return true;
  }

  // The plan of a pass that placed every step (writes `out`).
  MemoryPlan finish() {
    if (out_) {
      for (size_t t = 0; t < out_->tensors.size(); ++t)
        if (out_->tensors[t].persistent) out_->tensors[t].offset = plan_.persistent_offsets[t];
      out_->steps = std::move(steps_);
    }
    const size_t step_count = program_.steps.size();
    plan_.fits = true;
    plan_.peak_bytes = stats_.total_peak;
    plan_.high_water_bytes = high_water_;
    plan_.average_bytes = step_count == 0 ? 0 : in_use_sum_ / static_cast<double>(step_count);
    for (double& a : plan_.average_by_class) a = step_count == 0 ? 0 : a / static_cast<double>(step_count);
    plan_.by_class = stats_;
    // Host copies, one after another: every offload is issued in forward and every prefetch in
    // backward, so all of a step's copies are live at once when the loss is ready (streamed
    // weights live for the whole run): their sum is the host peak, and no placement does better.
    plan_.host_bytes = host_copies_bytes(program_);
    if (out_) {
      size_t offset = 0;
      for (ProgramTensor& tensor : out_->tensors)
        if (tensor.has_host_copy())
          tensor.host_offset = std::exchange(offset, offset + OffsetAllocator::round_up(tensor.bytes));
    }
    return std::move(plan_);
  }

  // The plan of a pass that stopped at a misfit (fits false, first_misfit and failure set).
  MemoryPlan misfit() { return std::move(plan_); }

 private:
  // Tensor t goes to `offset`; false, with the plan saying where and what is in use, past the capacity.
  bool take(int t, size_t offset) {
    const ProgramTensor& tensor = program_.tensors[t];
    const size_t bytes = OffsetAllocator::round_up(tensor.bytes);
    if (offset + bytes > capacity_) {
      plan_.first_misfit =
          VDNN_MSG("'" << tensor.name << "' (" << format_bytes(tensor.bytes) << ", " << to_string(tensor.cls)
                       << ") is placed at " << format_bytes(offset) << ".." << format_bytes(offset + bytes) << ", past "
                       << format_bytes(capacity_) << " (" << format_bytes(stats_.total_current) << " in use)");
      plan_.failure = plan_.first_misfit;
      return false;
    }
    stats_.add(tensor.cls, bytes);
    high_water_ = std::max(high_water_, offset + bytes);
    if (out_) offset_of_[t] = offset;
    return true;
  }

  // The alloc at its offset, then a wait for each event that ended an earlier tenant of its range
  // (a wait on an event of the same stream, or a repeated one, is dropped). Earlier tenants of one
  // byte never overlap in time, so the last one waited for all before it: waiting for the last
  // tenant of every byte orders the new tensor after every earlier one.
  void emit_alloc(const Step& step, size_t offset) {
    steps_.push_back(step);
    steps_.back().offset = offset;
    std::vector<int> waits;
    last_tenants_.collect(offset, offset + OffsetAllocator::round_up(program_.tensors[step.tensor].bytes), waits);
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    for (int e : waits)
      if (event_stream_.at(e) != step.stream && waited_[step.stream].insert(e).second)
        steps_.push_back({Op::kWait, step.stream, -1, -1, -1, e});
  }

  // Bytes in use after a step, in all and per class, for the averages.
  void sample() {
    in_use_sum_ += static_cast<double>(stats_.total_current);
    for (MemoryClass c : kAllMemoryClasses)
      plan_.average_by_class[index_of(c)] += static_cast<double>(stats_.current(c));
  }

  const Program& program_;
  const Layout& layout_;
  const size_t capacity_;
  Program* const out_;
  MemoryPlan plan_;
  ClassStats stats_;
  size_t high_water_ = 0;
  size_t allocs_ = 0;              // kAlloc steps passed
  std::vector<size_t> offset_of_;  // tensor -> offset while on the device (with `out`)
  std::vector<Step> steps_;        // `out`'s new steps
  // Which stream completes each event, and which events each stream already waited for.
  std::vector<StreamKind> event_stream_;
  std::map<StreamKind, std::set<int>> waited_;
  LastTenants last_tenants_;
  double in_use_sum_ = 0;
};

MemoryPlan replay(const Program& program, const Layout& layout, size_t capacity, Program* out) {
  Replay r(program, layout, capacity, out);
  if (!r.place_persistent()) return r.misfit();
  for (const Step& step : program.steps)
    if (!r.apply(step)) return r.misfit();
  return r.finish();
}

}  // namespace

MemoryPlan plan_memory(Program& program, size_t capacity_bytes) {
  const Layout layout = lay_out(program);
  MemoryPlan plan = replay(program, layout, capacity_bytes, &program);
  VDNN_CHECK(plan.fits == (capacity_bytes >= layout.smallest_bytes),
             "the placement fits exactly the capacities from its high water up");
  plan.smallest_bytes = layout.smallest_bytes;
  if (!plan.fits) plan.failure += "; this Program needs at least " + describe_budget(layout.smallest_bytes);
  return plan;
}

size_t minimum_budget(const Program& program) { return lay_out(program).smallest_bytes; }

bool fits_within(const Program& program, size_t capacity) {
  if (live_bytes_floor(program) > capacity) return false;
  size_t base = 0;
  const std::vector<Block> blocks = blocks_of(program, base, nullptr);
  if (std::optional<std::vector<size_t>> known = placements().known(blocks, base))
    return high_water(blocks, *known, base) <= capacity;
  return placement_fits(blocks, base, capacity);
}

size_t minimum_budget(const Program& train, const Program& eval) {
  return std::max(minimum_budget(train), minimum_budget(eval));
}

size_t live_bytes_floor(const Program& program) {
  size_t persistent = 0, live = 0, most = 0;
  for (const ProgramTensor& t : program.tensors)
    if (t.persistent) persistent += OffsetAllocator::round_up(t.bytes);
  for (const Step& s : program.steps)
    if (s.op == Op::kAlloc) {
      live += OffsetAllocator::round_up(program.tensors[s.tensor].bytes);
      most = std::max(most, live);
    } else if (s.op == Op::kFree) {
      live -= OffsetAllocator::round_up(program.tensors[s.tensor].bytes);
    }
  return persistent + most;
}

size_t host_copies_bytes(const Program& program, bool activations_only) {
  size_t bytes = 0;
  for (const ProgramTensor& t : program.tensors)
    if (activations_only ? t.offloaded || t.streamed : t.has_host_copy()) bytes += OffsetAllocator::round_up(t.bytes);
  return bytes;
}

std::string describe_budget(size_t bytes) { return VDNN_MSG(format_bytes(bytes) << " (" << bytes << " bytes)"); }

std::string host_refusal(const std::string& model, int64_t batch, size_t host_budget, const Program& program,
                         size_t host_bytes, const OptionNames& names) {
  int copies = 0, largest = -1;
  bool weights = false;
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    const ProgramTensor& tensor = program.tensors[t];
    if (!tensor.offloaded && !tensor.streamed) continue;
    ++copies;
    weights = weights || tensor.streamed;
    if (largest < 0 || tensor.bytes > program.tensors[largest].bytes) largest = static_cast<int>(t);
  }
  std::string what = VDNN_MSG(copies << (weights ? " streamed weights" : " offloaded tensors"));
  if (!program.host_updated.empty()) {
    const size_t model_states = host_copies_bytes(program) - host_copies_bytes(program, /*activations_only=*/true);
    what += VDNN_MSG(", and the optimizer state in host memory with each trainable weight's master and gradient copy, "
                     << format_bytes(model_states));
  }
  if (largest >= 0)
    what += VDNN_MSG(", the largest '" << program.tensors[largest].name << "' of "
                                       << format_bytes(program.tensors[largest].bytes));
  const std::string host = names("host_memory");
  return VDNN_MSG(host << " " << describe_budget(host_budget) << " is too small for model '" << model << "' at batch "
                       << batch << ": its host copies (" << what << ") need " << describe_budget(host_bytes)
                       << ", the smallest " << host << " that works for this plan; "
                       << (weights                            ? "a larger " + names("device_memory") + " streams fewer weights"
                           : copies == 0 && !program.host_updated.empty() ? names("optimizer_state") + " device keeps them on the device"
                                   : "a plan that offloads less needs less (conv offloads less than all; " +
                                         names("policy") + " dyn or auto choose one within " + host + ")"));
}

}  // namespace vdnn
