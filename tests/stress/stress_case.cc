#include "stress/stress_case.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <memory>

#include "data/synthetic.h"
#include "runtime/trainer.h"
#include "util/size_parse.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn::stress {

const char* to_string(BudgetRule rule) {
  switch (rule) {
    case BudgetRule::kNone:
      return "no budget";
    case BudgetRule::kTiny:
      return "tiny";
    case BudgetRule::kBelowMinimum:
      return "below the smallest";
    case BudgetRule::kJustBelowMinimum:
      return "just below the smallest";
    case BudgetRule::kMinimum:
      return "the smallest";
    case BudgetRule::kJustAboveMinimum:
      return "just above the smallest";
    case BudgetRule::kBetweenPolicies:
      return "between the policies' smallest";
    case BudgetRule::kGenerous:
      return "generous";
  }
  return "?";
}

NetworkStress::NetworkStress(RandomNetwork network, int64_t steps)
    : network_(std::move(network)), steps_(steps) {
  Rng rng(network_.seed, /*stream=*/0x5736);
  conv_algo_ = rng.below(2) ? ConvAlgo::kDirect : ConvAlgo::kAuto;
  const Graph g = network_.graph();
  const Shape& s = g.input_shape();
  const int64_t b = network_.batch;
  // Two full batches and one more, often partial: the third step ends the epoch, so the
  // evaluation Program runs when a configuration asks for it.
  train_set_ = make_synthetic(2 * b + 1 + static_cast<int64_t>(rng.below(b)), s.channels(),
                              s.height(), s.width(), g.classes(), network_.seed);
  test_set_ = make_synthetic(b + 1, s.channels(), s.height(), s.width(), g.classes(), network_.seed,
                             /*split=*/1);
  try {
    reference_hash_ = train(options(StressConfig{}, 0), /*evaluate=*/true);
  } catch (const std::exception& e) {
    reference_failure_ = "network seed " + std::to_string(network_.seed) +
                         ": the reference run (none, no budget) fails: " + e.what() + "\n" +
                         replay();
  }
}

StressConfig NetworkStress::config(int index) const {
  Rng rng(network_.seed, /*stream=*/0x10000 + index);
  StressConfig c;
  c.policy = std::array{Policy::kNone, Policy::kConv, Policy::kAll}[index % 3];
  c.sync = (index / 3) % 2 ? SyncMode::kLayer : SyncMode::kEvent;
  if (rng.uniform() < 0.6) {
    c.link.bandwidth_bytes_per_second = 0.5e9 + 19.5e9 * rng.uniform();
    c.link.latency_seconds = std::array{0.0, 1e-6, 10e-6, 50e-6}[rng.below(4)];
  }
  c.prefetch_ahead = rng.uniform() < 0.3;
  c.evaluate = rng.uniform() < 0.3;
  // In percent: none 8, tiny 4, below 12, just below 14, exact 14, just above 14, between 17,
  // generous 17.
  const uint64_t r = rng.below(100);
  c.budget_rule = r < 8    ? BudgetRule::kNone
                  : r < 12 ? BudgetRule::kTiny
                  : r < 24 ? BudgetRule::kBelowMinimum
                  : r < 38 ? BudgetRule::kJustBelowMinimum
                  : r < 52 ? BudgetRule::kMinimum
                  : r < 66 ? BudgetRule::kJustAboveMinimum
                  : r < 83 ? BudgetRule::kBetweenPolicies
                           : BudgetRule::kGenerous;
  c.budget_draw = rng.uniform();
  return c;
}

std::string NetworkStress::describe(int index) const {
  const StressConfig c = config(index);
  char link[64] = "unlimited link";
  if (c.link.bandwidth_bytes_per_second > 0)
    std::snprintf(link, sizeof link, "link %.2f GB/s + %.0f us",
                  c.link.bandwidth_bytes_per_second / 1e9, c.link.latency_seconds * 1e6);
  return VDNN_MSG("network seed " << network_.seed << ", case " << index << ": policy "
                                  << to_string(c.policy) << ", sync " << to_string(c.sync) << ", "
                                  << link << ", prefetch " << (c.prefetch_ahead ? "ahead" : "vdnn")
                                  << (c.evaluate ? ", evaluate" : "") << ", budget "
                                  << to_string(c.budget_rule) << " (draw " << c.budget_draw << ")");
}

std::string NetworkStress::replay() const {
  return VDNN_MSG("replay: VDNN_STRESS_SEED="
                  << network_.seed << " VDNN_STRESS_CASES=" << kCasesPerNetwork
                  << " vdnn_tests --gtest_filter='Stress.*'\nmodel (batch " << network_.batch
                  << ", conv algo " << to_string(conv_algo_) << "): " << network_.model.dump());
}

size_t NetworkStress::smallest(Policy policy, SyncMode sync) {
  const auto key = std::make_pair(policy, sync);
  auto it = smallest_.find(key);
  if (it == smallest_.end()) {
    StressConfig c;
    c.policy = policy;
    c.sync = sync;
    it = smallest_.emplace(key, Net(network_.graph(), options(c, 0)).arena_bytes()).first;
  }
  return it->second;
}

size_t NetworkStress::budget(const StressConfig& c) {
  const size_t own = smallest(c.policy, c.sync);
  const double draw = c.budget_draw;
  switch (c.budget_rule) {
    case BudgetRule::kNone:
      return 0;
    case BudgetRule::kTiny:
      return 1 + static_cast<size_t>(draw * 65536);
    case BudgetRule::kBelowMinimum:
      return own / 2 + static_cast<size_t>(draw * static_cast<double>(own / 2));
    case BudgetRule::kJustBelowMinimum:
      return own - 1 - std::min(own - 2, static_cast<size_t>(draw * 4096));
    case BudgetRule::kMinimum:
      return own;
    case BudgetRule::kJustAboveMinimum:
      return own + 1 + static_cast<size_t>(draw * 4096);
    case BudgetRule::kBetweenPolicies: {
      size_t lo = own, hi = own;
      for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll}) {
        lo = std::min(lo, smallest(p, c.sync));
        hi = std::max(hi, smallest(p, c.sync));
      }
      return lo + static_cast<size_t>(draw * static_cast<double>(hi - lo));
    }
    case BudgetRule::kGenerous:
      return own + static_cast<size_t>(draw * 2 * static_cast<double>(own));
  }
  return 0;
}

NetOptions NetworkStress::options(const StressConfig& c, size_t budget) const {
  NetOptions o;
  o.batch = network_.batch;
  o.seed = network_.seed;
  o.policy = c.policy;
  o.sync = c.sync;
  o.device_memory = budget;
  o.link = c.link;
  o.prefetch_ahead = c.prefetch_ahead;
  o.conv_algo = conv_algo_;
  return o;
}

std::string NetworkStress::train(const NetOptions& options, bool evaluate) {
  Net net(network_.graph(), options);
  return train(net, evaluate);
}

std::string NetworkStress::train(Net& net, bool evaluate) {
  TrainConfig cfg;
  cfg.iterations = steps_;
  cfg.seed = network_.seed;
  cfg.evaluate = evaluate;
  Trainer trainer(net, cfg);
  return trainer.run(train_set_, evaluate ? &test_set_ : nullptr).weights_sha256;
}

CaseResult NetworkStress::run(int index) {
  const StressConfig c = config(index);
  CaseResult r;
  auto fail = [&](const std::string& what) {
    r.outcome = CaseResult::kFailed;
    r.message = describe(index) + ", " + (r.budget ? format_bytes(r.budget) : "0") + " (" +
                std::to_string(r.budget) + " bytes): " + what + "\n" + replay();
    return r;
  };
  if (!reference_failure_.empty()) return fail("no reference: " + reference_failure_);
  try {
    r.budget = budget(c);
  } catch (const std::exception& e) {
    return fail(std::string("a Net without a budget (its smallest) fails: ") + e.what());
  }
  std::unique_ptr<Net> net;
  try {
    net = std::make_unique<Net>(network_.graph(), options(c, r.budget));
  } catch (const Error& e) {
    return check_refusal(index, r.budget, e.what());
  } catch (const std::exception& e) {
    return fail(std::string("the Net constructor throws something other than vdnn::Error: ") +
                e.what());
  }
  if (r.budget && net->arena_bytes() != r.budget)
    return fail(
        VDNN_MSG("the budget is accepted but the arena has " << net->arena_bytes() << " bytes"));
  // The smallest budget is exact (plan/memory_plan.h): nothing below it may be accepted.
  if (r.budget && r.budget < smallest(c.policy, c.sync))
    return fail(VDNN_MSG("accepted below the smallest budget " << smallest(c.policy, c.sync)
                                                                << " bytes, which is then not the smallest"));
  std::string hash;
  try {
    hash = train(*net, c.evaluate);
  } catch (const std::exception& e) {
    return fail(std::string("an accepted budget fails during training: ") + e.what());
  }
  if (hash != reference_hash_)
    return fail("weights_sha256 " + hash + " differs from none's " + reference_hash_);
  r.outcome = CaseResult::kTrained;
  return r;
}

CaseResult NetworkStress::check_refusal(int index, size_t budget, const std::string& what) {
  const StressConfig c = config(index);
  CaseResult r;
  r.budget = budget;
  auto fail = [&](const std::string& why) {
    r.outcome = CaseResult::kFailed;
    r.message = describe(index) + ", " + format_bytes(budget) + " (" + std::to_string(budget) +
                " bytes): " + why + "\nthe refusal: " + what + "\n" + replay();
    return r;
  };
  const size_t need = smallest(c.policy, c.sync);
  if (what.find("too small") == std::string::npos ||
      what.find("needs at least " + format_bytes(need)) == std::string::npos)
    return fail("refused, but the message does not name the smallest budget " + format_bytes(need) +
                " (" + std::to_string(need) + " bytes)");
  if (budget == 0 || budget >= need)
    return fail(VDNN_MSG("refused although it is not below the smallest budget the message names ("
                         << need << " bytes)"));
  std::string hash;
  try {
    hash = train(options(c, need), c.evaluate);
  } catch (const std::exception& e) {
    return fail(std::string("the smallest budget the refusal names does not train: ") + e.what());
  }
  if (hash != reference_hash_)
    return fail("at the smallest budget, weights_sha256 " + hash + " differs from none's " +
                reference_hash_);
  r.outcome = CaseResult::kRefused;
  r.message = what;
  return r;
}

}  // namespace vdnn::stress
