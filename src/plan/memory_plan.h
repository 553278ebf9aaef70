// plan/memory_plan.h — fixes every device offset of a Program before it runs.
//
// Model: the whole step's allocations are known before it runs, so they are placed offline
// (plan/block_placement.h: each alloc..free pair is a block with a known lifetime, placed by
// greedy-by-size lowest-offset in a few orders, the lowest high water kept), and the executor uses
// exactly these addresses: a budget the plan accepts can never run out of memory mid-step.
// Stream-ordered reuse: a pass over the steps in order inserts, after each alloc, waits on the
// stream that first writes the new tensor for the events that ended the previous tenants of its
// address range (PyTorch's caching-allocator rule, made static; tenants of one byte never overlap
// in time, so the last one of each byte orders it after all earlier ones).
// Persistent tensors (weights, their gradients, momentum) are placed first, from offset 0 in
// tensor order, so every Program of the same graph puts them at the same offsets.
//
// One placement per Program, whatever the capacity: it depends on the Program only, and its
// highest address is THE smallest budget: every capacity from it up fits with exactly the same
// offsets, every capacity below fails (first_misfit: the first allocation that ends past it).
// Train's refusal, `vdnn plan`, `vdnn profile --check` and dyn all report minimum_budget(). On the
// zoo it is within 1.02x of the peak of live bytes (tests/plan/test_block_placement.cc).
// Cost: the placement (block_placement.h, bounded scans) plus one O(S log S) pass for S steps.
//
//   MemoryPlan m = plan_memory(program, 512 << 20);
//   if (!m.fits) throw Error(m.failure);
//   size_t smallest = minimum_budget(program);     // fits iff capacity >= smallest
#pragma once

#include <array>
#include <string>

#include "memory/memory_class.h"
#include "plan/program.h"
#include "util/option_names.h"

namespace vdnn {

struct MemoryPlan {
  bool fits = false;
  size_t capacity_bytes = 0;
  size_t peak_bytes = 0;        // most bytes in use at once (rounded sizes)
  size_t high_water_bytes = 0;  // highest address used: the budget this placement needs
  size_t smallest_bytes = 0;    // minimum_budget(program), known to plan_memory whether it fits or not
  double average_bytes = 0;     // mean bytes in use over the steps
  std::array<double, kMemoryClassCount> average_by_class{};  // the same, per class (index_of)
  ClassStats by_class;                                       // current (at the end) and peak per memory class
  // Current bytes per class when the forward pass ends (the loss is ready), in program order:
  // what the device holds for backward. Offloaded tensors count as freed once their copy is issued
  // (their space is reusable as soon as it ends).
  ClassStats at_forward_end;
  // Host memory for the copies of offloaded tensors and streamed weights, each rounded to
  // OffsetAllocator::kAlignment and placed at its ProgramTensor::host_offset: the region's exact size.
  size_t host_bytes = 0;
  // When !fits: the first allocation (in step order) that ends past the capacity, where the
  // placement puts it and what is in use then (first_misfit); failure adds the smallest budget.
  std::string first_misfit, failure;
  std::vector<size_t> persistent_offsets;  // per tensor; meaningful for persistent tensors
};

// Fills the offsets of `program`'s kAlloc steps and inserts the reuse waits. capacity_bytes of the
// result is always `capacity_bytes`, even when the placement stays below a smaller one.
MemoryPlan plan_memory(Program& program, size_t capacity_bytes);
// The smallest capacity for which plan_memory(program, capacity) fits; every larger one fits too.
size_t minimum_budget(const Program& program);
// minimum_budget(program) <= capacity, answered without finishing the placement when it can be:
// no when the live-bytes floor is above it, else the placement's candidates until one fits
// (block_placement.h placement_fits), or the remembered placement. For questions that need only
// the answer (Planner::fits, `auto`'s search).
bool fits_within(const Program& program, size_t capacity);
// The smallest budget of a network: its training and evaluation Programs share the device.
size_t minimum_budget(const Program& train, const Program& eval);
// A lower bound of minimum_budget(program) without placing it, in one pass over the steps: the
// persistent tensors plus the most bytes allocated at once, rounded as placed. No placement needs
// less, so a capacity below it never fits: searches that only ask "does it fit" (the look-ahead
// depth, Planner::fits) skip the placement then, with the same answer.
size_t live_bytes_floor(const Program& program);
// The host copies of `program` (offloaded tensors, streamed weights; optimizer state in host memory
// with its weights' and gradients' copies), each rounded to OffsetAllocator::kAlignment: the
// MemoryPlan::host_bytes every placement of it reports. activations_only: the first two alone.
size_t host_copies_bytes(const Program& program, bool activations_only = false);
// A budget as error messages name it, exact to the byte: "46.97 MiB (49254912 bytes)".
std::string describe_budget(size_t bytes);
// Why a plan whose host copies need `host_bytes` (the sum of its Programs' MemoryPlan::host_bytes)
// is refused under --host-memory `host_budget`, in one sentence: the smallest host budget that works
// for this plan, to the byte, what takes it (from `program`: the copies and the largest) and what
// plan needs less. `names` spells the options it names (util/option_names.h: flags or keywords).
std::string host_refusal(const std::string& model, int64_t batch, size_t host_budget, const Program& program,
                         size_t host_bytes, const OptionNames& names = {});

}  // namespace vdnn
