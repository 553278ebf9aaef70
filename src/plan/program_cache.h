// plan/program_cache.h — the Programs (and evaluations) a Planner made lately, by what they were
// made from.
//
// Model: a Program is a pure function of the graph, its sizes and costs (fixed for a Planner) and
// of a key: the policy, the algorithms, the per-tensor decisions, training or evaluation, the
// look-ahead depth and the optimizer; an evaluation adds the budget, the prefetch rule and the host
// budget. Planning asks for the same ones many times — fits(), then evaluate() of the same
// configuration; every fits() also needs the evaluation Program, which depends on the algorithms
// alone; dyn, auto and the table's rows meet on the same configurations — and building a Program
// was 60% of `vdnn plan` on a chain of 25,000 ReLUs (most of it malloc and free under the
// builder's sets and maps), placing and simulating it most of the rest. A RecentMemo keeps the
// last `kept` values (and at most `max_weight` in all, e.g. Program steps) and hands out shared,
// immutable ones; a hit compares the whole key, never the hash alone. Thread-safe (a Planner is
// const while planning); a copied memo starts empty.
//
//   ProgramCache cache;
//   std::shared_ptr<const Program> p = cache.get(key, [&] { return build_program(g, bytes, facts, o); });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

#include "plan/optimizer_state.h"
#include "plan/program.h"
#include "plan/storage_decision.h"

namespace vdnn {

struct ProgramKey {
  Policy policy = Policy::kNone;
  std::vector<int> algos;
  StepDecisions decisions;
  bool training = true;
  int prefetch_depth = 0;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  StatePlace optimizer_state = StatePlace::kDevice;
  bool operator==(const ProgramKey&) const = default;
};

uint64_t hash_of(const ProgramKey& key);

// An evaluation: its training Program's key, the budget, the prefetch rule and the host budget.
struct EvaluationKey {
  ProgramKey train;
  size_t budget = 0;
  Prefetch prefetch = Prefetch::kVdnn;
  size_t host_budget = 0;
  bool operator==(const EvaluationKey&) const = default;
};

uint64_t hash_of(const EvaluationKey& key);

template <class Key, class Value>
class RecentMemo {
 public:
  // weight: what counts against max_weight (0: the count alone limits it).
  RecentMemo(size_t kept, size_t max_weight = 0, std::function<size_t(const Value&)> weight = nullptr)
      : kept_(kept), max_weight_(max_weight), weight_(std::move(weight)) {}
  RecentMemo(const RecentMemo& o) : kept_(o.kept_), max_weight_(o.max_weight_), weight_(o.weight_) {}
  RecentMemo& operator=(const RecentMemo&) = delete;

  std::shared_ptr<const Value> get(const Key& key, const std::function<Value()>& make) const {
    const uint64_t h = hash_of(key);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->hash == h && it->key == key) {
          entries_.splice(entries_.begin(), entries_, it);
          return entries_.front().value;
        }
    }
    auto value = std::make_shared<const Value>(make());  // outside the lock: made in parallel if asked so
    std::lock_guard<std::mutex> lock(mutex_);
    ++made_;
    entries_.push_front({h, key, value});
    size_t weight = 0, count = 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (weight_) weight += weight_(*it->value);
      if (++count > kept_ || (count > 1 && max_weight_ && weight > max_weight_))
        it = entries_.erase(it);
      else
        ++it;
    }
    return value;
  }
  size_t made() const {  // values made (misses) so far: what the tests count
    std::lock_guard<std::mutex> lock(mutex_);
    return made_;
  }

 private:
  struct Entry {
    uint64_t hash;
    Key key;
    std::shared_ptr<const Value> value;
  };
  size_t kept_, max_weight_;
  std::function<size_t(const Value&)> weight_;
  mutable std::mutex mutex_;
  mutable std::list<Entry> entries_;  // most recently used first
  mutable size_t made_ = 0;
};

// The last 12 Programs, at most 6M steps in all (a chain of 100,000 ReLUs: none's training
// Program 0.8M, the evaluation Program 0.4M, all's 1.9M; with fewer, `vdnn plan` rebuilt them).
class ProgramCache : public RecentMemo<ProgramKey, Program> {
 public:
  ProgramCache() : RecentMemo(12, size_t{6} << 20, [](const Program& p) { return p.steps.size(); }) {}
};

// One value made on first use (a Planner's oracle) until reset(); a copy starts unmade.
class Once {
 public:
  Once() = default;
  Once(const Once&) {}
  Once& operator=(const Once&) = delete;
  double get(const std::function<double()>& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!made_) {
      value_ = make();
      made_ = true;
    }
    return value_;
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    made_ = false;
  }

 private:
  mutable std::mutex mutex_;
  mutable bool made_ = false;
  mutable double value_ = 0;
};

// The last value a search found, kept as the next search's hint (a Planner's look-ahead depth);
// a copy starts at 0, no hint.
class LastFound {
 public:
  LastFound() = default;
  LastFound(const LastFound&) {}
  LastFound& operator=(const LastFound&) = delete;
  int get() const { return value_.load(); }
  void set(int value) const { value_.store(value); }

 private:
  mutable std::atomic<int> value_{0};
};

}  // namespace vdnn
