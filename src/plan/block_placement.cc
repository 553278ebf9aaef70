#include "plan/block_placement.h"

#include "memory/offset_allocator.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

namespace vdnn {
namespace {

constexpr size_t kScanBudget = 6'000'000;  // placed blocks visited, all orders together
constexpr size_t kAllOrdersUpTo = 8192;    // more blocks: the size order only
constexpr size_t kMinScan = 32;
constexpr size_t kMaxRestarts = 64;            // the scan cap is never below this

// H(t) = the highest top of any placed block alive at time t, over compressed times [0, n):
// raise(l, r, v) sets H = max(H, v) on [l, r); highest(l, r) is max H on [l, r). O(log n) each.
class Skyline {
 public:
  explicit Skyline(size_t n) : n_(std::max<size_t>(n, 1)), max_(4 * n_, 0), tag_(4 * n_, 0) {}
  size_t highest(size_t l, size_t r) const { return query(1, 0, n_, l, r); }
  void raise(size_t l, size_t r, size_t v) { update(1, 0, n_, l, r, v); }

 private:
  size_t query(size_t node, size_t lo, size_t hi, size_t l, size_t r) const {
    if (r <= lo || hi <= l) return 0;
    if (l <= lo && hi <= r) return max_[node];
    const size_t mid = (lo + hi) / 2;
    return std::max({tag_[node], query(2 * node, lo, mid, l, r), query(2 * node + 1, mid, hi, l, r)});
  }
  void update(size_t node, size_t lo, size_t hi, size_t l, size_t r, size_t v) {
    if (r <= lo || hi <= l) return;
    max_[node] = std::max(max_[node], v);
    if (l <= lo && hi <= r) {
      tag_[node] = std::max(tag_[node], v);
      return;
    }
    const size_t mid = (lo + hi) / 2;
    update(2 * node, lo, mid, l, r, v);
    update(2 * node + 1, mid, hi, l, r, v);
  }
  size_t n_;
  std::vector<size_t> max_;  // max of H over the node's range, ancestors' tags left out
  std::vector<size_t> tag_;  // a raise that covered the node's whole range
};

// A placed block, with what the scan reads (no indirection).
struct Placed {
  size_t offset, top, lo, hi;  // address range [offset, top), compressed lifetime [lo, hi)
  bool operator<(const Placed& o) const { return std::tie(offset, lo) < std::tie(o.offset, o.lo); }
};

// Placed blocks sorted by offset, in chunks of kChunk..2 kChunk: the scan reads flat memory, an
// insert moves at most 2 kChunk entries after finding its chunk among n / kChunk.
class ByOffset {
 public:
  static constexpr size_t kChunk = 256;
  void insert(const Placed& p) {
    if (chunks_.empty()) chunks_.emplace_back();
    size_t c = 0;
    while (c + 1 < chunks_.size() && chunks_[c].back() < p) ++c;
    std::vector<Placed>& v = chunks_[c];
    v.insert(std::upper_bound(v.begin(), v.end(), p), p);
    if (v.size() == 2 * kChunk) {
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1, std::vector<Placed>(v.begin() + kChunk, v.end()));
      chunks_[c].resize(kChunk);
    }
  }
  const std::vector<std::vector<Placed>>& chunks() const { return chunks_; }

 private:
  std::vector<std::vector<Placed>> chunks_;
};

// Lowest-offset placement in `order`; a block whose scan passes `cap` placed blocks goes on the
// skyline instead (block_placement.h).
std::vector<size_t> place(const std::vector<Block>& blocks, const std::vector<int>& order, size_t base, size_t cap) {
  // Times compressed to the distinct begins: two lifetimes overlap iff the later begin lies in
  // the earlier lifetime, so [rank(begin), rank(end)) overlap exactly when the lifetimes do.
  std::vector<size_t> begins;
  begins.reserve(blocks.size());
  for (const Block& b : blocks) begins.push_back(b.begin);
  std::sort(begins.begin(), begins.end());
  begins.erase(std::unique(begins.begin(), begins.end()), begins.end());
  auto rank = [&](size_t t) { return static_cast<size_t>(std::lower_bound(begins.begin(), begins.end(), t) - begins.begin()); };
  std::vector<size_t> lo(blocks.size()), hi(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    lo[i] = rank(blocks[i].begin);
    hi[i] = rank(blocks[i].end);
  }

  std::vector<size_t> at(blocks.size(), base);
  ByOffset by_offset;
  Skyline skyline(begins.size());
  for (int b : order) {
    const size_t bytes = blocks[b].bytes;
    size_t offset = base;
    size_t visited = 0;
    bool capped = false, found = false;
    for (const std::vector<Placed>& chunk : by_offset.chunks()) {
      for (const Placed& x : chunk) {
        if (++visited > cap) {
          capped = true;
          break;
        }
        if (x.lo >= hi[b] || lo[b] >= x.hi) continue;  // never alive together
        if (x.offset >= offset + bytes) {              // the gap below x holds b
          found = true;
          break;
        }
        offset = std::max(offset, x.top);
      }
      if (capped || found) break;
    }
    if (capped) offset = std::max(base, skyline.highest(lo[b], hi[b]));
    at[b] = offset;
    by_offset.insert({offset, offset + bytes, lo[b], hi[b]});
    skyline.raise(lo[b], hi[b], offset + bytes);
  }
  return at;
}

// Best fit in time order (memory/offset_allocator.h: what an online caching allocator does), in a
// pool larger than all blocks together, so its top is used only when no hole fits. Frees at a
// time come before allocations at it (lifetimes are half-open).
std::vector<size_t> best_fit_in_time_order(const std::vector<Block>& blocks, size_t base) {
  std::vector<std::pair<size_t, int>> events;  // (time, ~block for a free, block for an alloc)
  size_t total = OffsetAllocator::kAlignment;
  for (size_t i = 0; i < blocks.size(); ++i) {
    events.push_back({blocks[i].begin, static_cast<int>(i)});
    events.push_back({blocks[i].end, ~static_cast<int>(i)});
    total += OffsetAllocator::round_up(blocks[i].bytes);
  }
  std::sort(events.begin(), events.end());  // at one time, frees (negative) first
  OffsetAllocator allocator(total);
  std::vector<int32_t> handle(blocks.size(), -1);
  std::vector<size_t> at(blocks.size(), base);
  for (const auto& [time, e] : events) {
    if (e < 0) {
      allocator.free(handle[~e]);
      continue;
    }
    const std::optional<Allocation> a = allocator.allocate(blocks[e].bytes, MemoryClass::kWorkspace);
    VDNN_CHECK(a.has_value(), "a pool larger than all blocks together holds every block");
    handle[e] = a->handle;
    at[e] = base + a->offset;
  }
  return at;
}

}  // namespace

size_t high_water(const std::vector<Block>& blocks, const std::vector<size_t>& offsets, size_t base) {
  size_t top = base;
  for (size_t i = 0; i < blocks.size(); ++i) top = std::max(top, offsets[i] + blocks[i].bytes);
  return top;
}

std::vector<size_t> place_in_order(const std::vector<Block>& blocks, const std::vector<int>& order, size_t base) {
  return place(blocks, order, base, std::numeric_limits<size_t>::max());
}

std::vector<size_t> place_blocks(const std::vector<Block>& blocks, size_t base) {
  auto life = [&](int i) { return blocks[i].end - blocks[i].begin; };
  auto area = [&](int i) { return static_cast<long double>(blocks[i].bytes) * static_cast<long double>(life(i)); };
  // Each order sorts by its keys, then by index (deterministic). Of nine orders (also by lifetime,
  // begin or end alone) and two gap rules (also TFLite's smallest gap) tried on the zoo, these
  // three, lowest offset, reached everything the eighteen did (docs/design.md).
  const std::vector<std::function<bool(int, int)>> orders{
      // Size descending (TFLite's greedy by size), longer lifetimes first.
      [&](int a, int b) { return std::tuple(blocks[b].bytes, life(b), blocks[a].begin, a) < std::tuple(blocks[a].bytes, life(a), blocks[b].begin, b); },
      // Size descending, earlier first.
      [&](int a, int b) { return std::tuple(blocks[b].bytes, blocks[a].begin, a) < std::tuple(blocks[a].bytes, blocks[b].begin, b); },
      // Size x lifetime descending.
      [&](int a, int b) { return std::tuple(area(b), blocks[b].bytes, blocks[a].begin, a) < std::tuple(area(a), blocks[a].bytes, blocks[b].begin, b); },
  };
  // Bounded work: about kScanBudget visits over all orders; past kAllOrdersUpTo
  // blocks only the first order is tried.
  const size_t n = std::max<size_t>(blocks.size(), 1);
  const size_t order_count = n <= kAllOrdersUpTo ? orders.size() : 1;
  const size_t cap = std::max<size_t>(kMinScan, kScanBudget / (n * order_count));

  std::vector<size_t> best = best_fit_in_time_order(blocks, base);
  size_t best_top = high_water(blocks, best, base);
  for (size_t k = 0; k < order_count; ++k) {
    std::vector<int> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), orders[k]);
    std::vector<size_t> at = place(blocks, order, base, cap);
    const size_t top = high_water(blocks, at, base);
    if (top < best_top) {
      best_top = top;
      best = std::move(at);
    }
  }
  // Small inputs: perturbed size orders too (sizes scaled by a random factor in [0.7, 1.4)),
  // from a fixed seed, while the scans stay within the budget.
  const size_t restarts = std::min<size_t>(kMaxRestarts, kScanBudget / (n * n));
  Rng rng(1234);
  std::vector<double> key(blocks.size());
  for (size_t r = 0; r < restarts; ++r) {
    for (size_t i = 0; i < blocks.size(); ++i) key[i] = static_cast<double>(blocks[i].bytes) * (0.7 + 0.7 * rng.uniform());
    std::vector<int> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return std::tuple(key[b], a) < std::tuple(key[a], b); });
    std::vector<size_t> at = place(blocks, order, base, cap);
    const size_t top = high_water(blocks, at, base);
    if (top < best_top) {
      best_top = top;
      best = std::move(at);
    }
  }
  return best;
}

}  // namespace vdnn
