// plan/block_placement.h — offline placement of blocks whose lifetimes are known in advance.
//
// Model: the dynamic-storage-allocation problem. Each block has a size and a lifetime
// [begin, end) in Program steps; two blocks whose lifetimes overlap must not overlap in address.
// The placement puts every block at an offset >= `base` and aims for the lowest high water (the
// highest offset + bytes), whose lower bound is base + the most bytes live at once.
//
// Algorithm: TFLite's greedy-by-size arena planner (also TVM's static memory planner) with
// lowest-offset placement: blocks are taken in a fixed order and each goes to the lowest offset
// that overlaps no already-placed block whose lifetime overlaps its own (a scan of the placed
// blocks in offset order). Candidates, the lowest high water kept (ties: the earlier candidate):
// best fit in time order (what an online allocator does: memory/offset_allocator.h); three orders
// — size descending with longer lifetimes first, size descending with earlier first, size x
// lifetime descending; and, for small inputs, up to 64 perturbed size orders from a fixed seed.
// Bounded work: the orders' scans visit about 6M placed blocks in all (the perturbed orders, run
// while n^2 <= 6M, as many again); a block whose scan would pass its share goes on the skyline
// instead (the highest top of any placed block alive during its lifetime, a segment tree over
// time), which is always free, so every placement is valid. Above 8192 blocks only the first
// order is tried (beside best fit).
//
// A lowest-offset placement in SOME order is optimal (compacting an optimal placement downward in
// offset order never raises a block), so tests compare against all n! orders on small inputs.
// Deterministic: the result depends on the blocks and base only.
//
//   std::vector<Block> blocks{{1024, 0, 3}, {512, 1, 2}};
//   std::vector<size_t> at = place_blocks(blocks, 0);  // {0, 1024}; high water 1536
#pragma once

#include <cstddef>
#include <vector>

namespace vdnn {

struct Block {
  size_t bytes = 0;  // as placed (already rounded)
  size_t begin = 0;  // first step of its lifetime
  size_t end = 0;    // first step after it (> begin)
};

// Offsets (>= base) for every block, in block order, from the candidate with the lowest high water.
std::vector<size_t> place_blocks(const std::vector<Block>& blocks, size_t base);

// Whether place_blocks' high water is at most `capacity`, exactly, without finishing it: its
// candidates in its order, stopping at the first that fits (the answer to "does it fit" when the
// offsets are not needed: `auto`'s and Planner::fits' questions; a fit is often known after the
// first candidate, where place_blocks runs all of them).
bool placement_fits(const std::vector<Block>& blocks, size_t base, size_t capacity);

// Lowest-offset placement in the given order, without the scan cap (tests and small inputs).
std::vector<size_t> place_in_order(const std::vector<Block>& blocks, const std::vector<int>& order, size_t base);

// max(base, highest offset + bytes).
size_t high_water(const std::vector<Block>& blocks, const std::vector<size_t>& offsets, size_t base);

}  // namespace vdnn
