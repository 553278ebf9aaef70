#include "plan/block_placement.h"

#include "memory/offset_allocator.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cstdint>
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
constexpr size_t kMaxRestarts = 64;  // the scan cap is never below this

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

// Placed blocks sorted by (offset, lifetime start), in chunks of kChunk..2 kChunk: an insert
// moves at most 2 kChunk entries after finding its chunk among n / kChunk. A chunk is a structure
// of arrays, so the scan tests four lifetimes with one compare (most placed blocks are not alive
// with the one being placed: on ResNet-152 4 in 5 of those visited, and a branch per block
// mispredicts) and walks only the ones that are.
class ByOffset {
 public:
  static constexpr size_t kChunk = 256;

  void insert(size_t offset, size_t top, int32_t lo, int32_t hi) {
    if (chunks_.empty()) chunks_.emplace_back();
    const auto before = [](size_t o1, int32_t l1, size_t o2, int32_t l2) {
      return std::tie(o1, l1) < std::tie(o2, l2);
    };
    size_t c = 0;
    while (c + 1 < chunks_.size() && before(chunks_[c].offset.back(), chunks_[c].lo.back(), offset, lo)) ++c;
    Chunk& v = chunks_[c];
    size_t at = 0;  // upper bound of (offset, lo) in the chunk
    for (size_t count = v.size(); count > 0;) {
      const size_t half = count / 2;
      if (!before(offset, lo, v.offset[at + half], v.lo[at + half])) {
        at += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    v.insert(at, offset, top, lo, hi);
    if (v.size() == 2 * kChunk)
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1, v.split_upper_half());
  }

  // The lowest-offset scan (block_placement.h) for `bytes` alive over [lo, hi), from `offset` up:
  // the placed blocks in offset order, each alive with it raising `offset` to its top, until one
  // lies above a gap that holds it. False when that takes more than `cap` visits (then the caller
  // uses the skyline and `offset` means nothing).
  bool lowest_offset(size_t bytes, int32_t lo, int32_t hi, size_t cap, size_t& offset) const {
    size_t visited = 0;
    for (const Chunk& chunk : chunks_) {
      const size_t limit = std::min(chunk.size(), cap - visited);  // visits left within the cap
      const size_t *x_offset = chunk.offset.data(), *x_top = chunk.top.data();
      size_t i = 0;
      for (; i + 4 <= limit; i += 4)
        for (unsigned alive = alive4(chunk, i, lo, hi); alive; alive &= alive - 1) {
          const size_t x = i + static_cast<size_t>(std::countr_zero(alive));
          if (x_offset[x] >= offset + bytes) return true;  // the gap below x holds it
          offset = std::max(offset, x_top[x]);
        }
      for (; i < limit; ++i) {
        if (chunk.lo[i] >= hi || lo >= chunk.hi[i]) continue;  // never alive together
        if (x_offset[i] >= offset + bytes) return true;
        offset = std::max(offset, x_top[i]);
      }
      visited += limit;
      if (limit < chunk.size()) return false;  // the cap is reached inside this chunk
    }
    return true;
  }

 private:
  struct Chunk {
    std::vector<size_t> offset, top;  // address range [offset, top)
    std::vector<int32_t> lo, hi;      // compressed lifetime [lo, hi)
    size_t size() const { return offset.size(); }
    void insert(size_t at, size_t o, size_t t, int32_t l, int32_t h) {
      const auto i = static_cast<std::ptrdiff_t>(at);
      offset.insert(offset.begin() + i, o);
      top.insert(top.begin() + i, t);
      lo.insert(lo.begin() + i, l);
      hi.insert(hi.begin() + i, h);
    }
    Chunk split_upper_half() {
      Chunk upper;
      const auto half = static_cast<std::ptrdiff_t>(size() / 2);
      auto move_half = [&](auto& from, auto& to) {
        to.assign(from.begin() + half, from.end());
        from.resize(static_cast<size_t>(half));
      };
      move_half(offset, upper.offset);
      move_half(top, upper.top);
      move_half(lo, upper.lo);
      move_half(hi, upper.hi);
      return upper;
    }
  };

  // Bit k set: block i + k of the chunk is alive together with [lo, hi).
  static unsigned alive4(const Chunk& c, size_t i, int32_t lo, int32_t hi) {
#if defined(__SSE2__)
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c.lo.data() + i));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c.hi.data() + i));
    const __m128i both = _mm_and_si128(_mm_cmpgt_epi32(_mm_set1_epi32(hi), l), _mm_cmpgt_epi32(h, _mm_set1_epi32(lo)));
    return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(both)));
#else
    unsigned alive = 0;
    for (size_t k = 0; k < 4; ++k) alive |= static_cast<unsigned>(c.lo[i + k] < hi && lo < c.hi[i + k]) << k;
    return alive;
#endif
  }

  std::vector<Chunk> chunks_;
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
  VDNN_CHECK(begins.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()),
             "more than 2^31 distinct block lifetimes to place");
  auto rank = [&](size_t t) {
    return static_cast<int32_t>(std::lower_bound(begins.begin(), begins.end(), t) - begins.begin());
  };
  std::vector<int32_t> lo(blocks.size()), hi(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    lo[i] = rank(blocks[i].begin);
    hi[i] = rank(blocks[i].end);
  }

  std::vector<size_t> at(blocks.size(), base);
  ByOffset by_offset;
  Skyline skyline(begins.size());
  for (int b : order) {
    const size_t bytes = blocks[b].bytes;
    const auto l = static_cast<size_t>(lo[b]), h = static_cast<size_t>(hi[b]);
    size_t offset = base;
    if (!by_offset.lowest_offset(bytes, lo[b], hi[b], cap, offset)) offset = std::max(base, skyline.highest(l, h));
    at[b] = offset;
    by_offset.insert(offset, offset + bytes, lo[b], hi[b]);
    skyline.raise(l, h, offset + bytes);
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

namespace {

// The candidates of place_blocks, in its order, each handed to `take` (its offsets and high water)
// until `take` returns false.
void for_each_candidate(const std::vector<Block>& blocks, size_t base,
                        const std::function<bool(std::vector<size_t>&&, size_t)>& take) {
  auto life = [&](int i) { return blocks[i].end - blocks[i].begin; };
  auto area = [&](int i) { return static_cast<long double>(blocks[i].bytes) * static_cast<long double>(life(i)); };
  // Each order sorts by its keys, then by index (deterministic). Of nine orders (also by lifetime,
  // begin or end alone) and two gap rules (also TFLite's smallest gap) tried on the zoo, these
  // three, lowest offset, reached everything the eighteen did (docs/design.md).
  const std::vector<std::function<bool(int, int)>> orders{
      // Size descending (TFLite's greedy by size), longer lifetimes first.
      [&](int a, int b) {
        return std::tuple(blocks[b].bytes, life(b), blocks[a].begin, a) <
               std::tuple(blocks[a].bytes, life(a), blocks[b].begin, b);
      },
      // Size descending, earlier first.
      [&](int a, int b) {
        return std::tuple(blocks[b].bytes, blocks[a].begin, a) < std::tuple(blocks[a].bytes, blocks[b].begin, b);
      },
      // Size x lifetime descending.
      [&](int a, int b) {
        return std::tuple(area(b), blocks[b].bytes, blocks[a].begin, a) <
               std::tuple(area(a), blocks[a].bytes, blocks[b].begin, b);
      },
  };
  // Bounded work: about kScanBudget visits over all orders; past kAllOrdersUpTo
  // blocks only the first order is tried.
  const size_t n = std::max<size_t>(blocks.size(), 1);
  const size_t order_count = n <= kAllOrdersUpTo ? orders.size() : 1;
  const size_t cap = std::max<size_t>(kMinScan, kScanBudget / (n * order_count));
  auto offer = [&](std::vector<size_t>&& at) {
    const size_t top = high_water(blocks, at, base);
    return take(std::move(at), top);
  };
  if (!offer(best_fit_in_time_order(blocks, base))) return;
  for (size_t k = 0; k < order_count; ++k) {
    std::vector<int> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), orders[k]);
    if (!offer(place(blocks, order, base, cap))) return;
  }
  // Small inputs: perturbed size orders too (sizes scaled by a random factor in [0.7, 1.4)),
  // from a fixed seed, while the scans stay within the budget.
  const size_t restarts = std::min<size_t>(kMaxRestarts, kScanBudget / (n * n));
  Rng rng(1234);
  std::vector<double> key(blocks.size());
  for (size_t r = 0; r < restarts; ++r) {
    for (size_t i = 0; i < blocks.size(); ++i)
      key[i] = static_cast<double>(blocks[i].bytes) * (0.7 + 0.7 * rng.uniform());
    std::vector<int> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return std::tuple(key[b], a) < std::tuple(key[a], b); });
    if (!offer(place(blocks, order, base, cap))) return;
  }
}

}  // namespace

std::vector<size_t> place_blocks(const std::vector<Block>& blocks, size_t base) {
  std::vector<size_t> best;
  std::optional<size_t> best_top;  // the first candidate (best fit), then any lower one
  for_each_candidate(blocks, base, [&](std::vector<size_t>&& at, size_t top) {
    if (!best_top || top < *best_top) {
      best_top = top;
      best = std::move(at);
    }
    return true;
  });
  return best;
}

bool placement_fits(const std::vector<Block>& blocks, size_t base, size_t capacity) {
  bool fits = false;
  for_each_candidate(blocks, base, [&](std::vector<size_t>&&, size_t top) {
    fits = top <= capacity;
    return !fits;
  });
  return fits;
}

}  // namespace vdnn
