#include "stress/stress_case.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <memory>

#include "backends/backend_targets.h"
#include "data/synthetic.h"
#include "plan/auto_policy.h"
#include "runtime/trainer.h"
#include "stress/made_up_costs.h"
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

NetworkStress::NetworkStress(RandomNetwork network, int64_t steps) : network_(std::move(network)), steps_(steps) {
  Rng rng(network_.seed, /*stream=*/0x5736);
  conv_algo_ = rng.below(2) ? ConvAlgo::kDirect : ConvAlgo::kAuto;
  const Graph g = network_.graph();
  const Shape& s = g.input_shape();
  const int64_t b = network_.batch;
  // Two full batches and one more, often partial: the third step ends the epoch, so the
  // evaluation Program runs when a configuration asks for it.
  train_set_ = make_synthetic(2 * b + 1 + static_cast<int64_t>(rng.below(b)), s.channels(), s.height(), s.width(),
                              g.classes(), network_.seed);
  test_set_ = make_synthetic(b + 1, s.channels(), s.height(), s.width(), g.classes(), network_.seed,
                             /*split=*/1);
  try {
    reference_hash_ = train(options(StressConfig{}, 0), /*evaluate=*/true);
  } catch (const std::exception& e) {
    reference_failure_ = "network seed " + std::to_string(network_.seed) +
                         ": the reference run (none, no budget) fails: " + e.what() + "\n" + replay();
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

// The auto cases draw from streams of their own: the vDNN cases' configurations stay as they were.
StressConfig NetworkStress::auto_config(int k) const {
  Rng rng(network_.seed, /*stream=*/0x20000 + k);
  StressConfig c;
  c.policy = Policy::kAuto;
  c.sync = k % 2 ? SyncMode::kLayer : SyncMode::kEvent;
  if (rng.uniform() < 0.6) {
    c.link.bandwidth_bytes_per_second = 0.5e9 + 19.5e9 * rng.uniform();
    c.link.latency_seconds = std::array{0.0, 1e-6, 10e-6, 50e-6}[rng.below(4)];
  }
  c.evaluate = rng.uniform() < 0.3;
  c.budget_rule = rng.below(4) ? BudgetRule::kBetweenPolicies : BudgetRule::kBelowMinimum;
  c.budget_draw = rng.uniform();
  return c;
}

std::string NetworkStress::describe(int index) const {
  return describe("case " + std::to_string(index), config(index));
}

std::string NetworkStress::describe_auto(int k) const {
  return describe("auto case " + std::to_string(k), auto_config(k));
}

std::string NetworkStress::describe(const std::string& which, const StressConfig& c) const {
  char link[64] = "unlimited link";
  if (c.link.bandwidth_bytes_per_second > 0)
    std::snprintf(link, sizeof link, "link %.2f GB/s + %.0f us", c.link.bandwidth_bytes_per_second / 1e9,
                  c.link.latency_seconds * 1e6);
  const char* prefetch = c.policy == Policy::kAuto ? "auto's" : c.prefetch_ahead ? "ahead" : "vdnn";
  return VDNN_MSG("network seed " << network_.seed << ", " << which << ": policy " << to_string(c.policy) << ", sync "
                                  << to_string(c.sync) << ", " << link << ", prefetch " << prefetch
                                  << (c.evaluate ? ", evaluate" : "") << ", budget " << to_string(c.budget_rule)
                                  << " (draw " << c.budget_draw << ")");
}

std::string NetworkStress::replay() const {
  return VDNN_MSG("replay: VDNN_STRESS_SEED=" << network_.seed << " VDNN_STRESS_CASES=" << kCasesPerNetwork
                                              << " vdnn_tests --gtest_filter='Stress.*'\nmodel (batch "
                                              << network_.batch << ", conv algo " << to_string(conv_algo_)
                                              << "): " << network_.model.dump());
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
    r.message = describe(index) + ", " + (r.budget ? format_bytes(r.budget) : "0") + " (" + std::to_string(r.budget) +
                " bytes): " + what + "\n" + replay();
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
    return fail(std::string("the Net constructor throws something other than vdnn::Error: ") + e.what());
  }
  // The smallest budget is exact (plan/memory_plan.h): nothing below it may be accepted.
  if (r.budget && r.budget < smallest(c.policy, c.sync))
    return fail(VDNN_MSG("accepted below the smallest budget " << smallest(c.policy, c.sync)
                                                               << " bytes, which is then not the smallest"));
  if (const std::string what = trains_as_none(*net, r.budget, c.evaluate); !what.empty()) return fail(what);
  r.outcome = CaseResult::kTrained;
  return r;
}

std::string NetworkStress::trains_as_none(Net& net, size_t budget, bool evaluate) {
  if (budget && net.arena_bytes() != budget)
    return VDNN_MSG("the budget is accepted but the arena has " << net.arena_bytes() << " bytes");
  std::string hash;
  try {
    hash = train(net, evaluate);
  } catch (const std::exception& e) {
    return std::string("an accepted budget fails during training: ") + e.what();
  }
  if (hash != reference_hash_) return "weights_sha256 " + hash + " differs from none's " + reference_hash_;
  return "";
}

size_t NetworkStress::floor(SyncMode sync) {
  return std::min({smallest(Policy::kNone, sync), smallest(Policy::kConv, sync), smallest(Policy::kAll, sync)});
}

CaseResult NetworkStress::run_auto(int k) {
  const StressConfig c = auto_config(k);
  CaseResult r;
  std::string chosen;  // auto's choice, for the failure message
  auto fail = [&](const std::string& what) {
    r.outcome = CaseResult::kFailed;
    r.message = describe_auto(k) + ", " + (r.budget ? format_bytes(r.budget) : "0") + " (" + std::to_string(r.budget) +
                " bytes): " + what + (chosen.empty() ? "" : "\nauto chose: " + chosen) + "\n" + replay();
    return r;
  };
  if (!reference_failure_.empty()) return fail("no reference: " + reference_failure_);
  try {
    const size_t lo = floor(c.sync), none = smallest(Policy::kNone, c.sync);
    const auto draw = [&](size_t from, size_t to) {
      return from + static_cast<size_t>(c.budget_draw * static_cast<double>(to - from));
    };
    r.budget = c.budget_rule == BudgetRule::kBelowMinimum ? draw(lo / 2, lo) : draw(lo, std::max(lo, none));
    if (facts_.empty()) {
      const auto backend =
          make_backend(network_.graph(), {BackendKind::kCpu, network_.batch, network_.seed, conv_algo_});
      value_bytes_ = backend->value_bytes();
      facts_ = backend->facts();
    }
  } catch (const std::exception& e) {
    return fail(std::string("a Net without a budget (its smallest) fails: ") + e.what());
  }
  const Graph graph = network_.graph();
  AutoChoice a;
  try {
    const Planner planner(graph, value_bytes_, facts_, made_up_costs(graph, facts_, network_.seed, k, conv_algo_),
                          c.sync);
    a = choose_auto(planner, r.budget);
    chosen = vdnn::describe(a);
  } catch (const std::exception& e) {
    return fail(std::string("choose_auto throws: ") + e.what());
  }
  if (!a.fits) {
    if (r.budget >= floor(c.sync))
      return fail(VDNN_MSG("auto refuses a budget at or above the floor " << floor(c.sync)
                                                                          << " bytes, which a vDNN policy fits"));
    const std::string all = "needs " + describe_budget(smallest(Policy::kAll, c.sync));
    if (a.why.find(all) == std::string::npos)
      return fail("auto refuses, but its reason does not say `all` " + all + ": " + a.why);
    r.outcome = CaseResult::kRefused;
    r.message = a.why;
    return r;
  }
  if (a.config.policy != Policy::kAuto) {  // one of vDNN's policies at a budget it fits: what the vDNN cases train
    if (r.budget < smallest(a.config.policy, c.sync))
      return fail(VDNN_MSG("auto chose " << to_string(a.config.policy) << ", whose smallest budget is "
                                         << smallest(a.config.policy, c.sync) << " bytes"));
    r.outcome = CaseResult::kVdnnPolicy;
    r.message = a.why;
    return r;
  }
  NetOptions o = options(c, r.budget);
  o.policy = a.config.policy;
  o.decisions = a.config.decisions;
  o.prefetch_ahead = a.prefetch == Prefetch::kAhead;
  std::unique_ptr<Net> net;
  try {
    net = std::make_unique<Net>(network_.graph(), o);
  } catch (const std::exception& e) {
    return fail(std::string("auto's configuration fits the budget, but the Net refuses it: ") + e.what());
  }
  r.offloaded_bytes = net->train_program().offloaded_bytes();
  r.recomputed_bytes = net->train_program().recomputed_bytes();
  if (const std::string what = trains_as_none(*net, r.budget, c.evaluate); !what.empty()) return fail(what);
  r.outcome = CaseResult::kTrained;
  return r;
}

CaseResult NetworkStress::check_refusal(int index, size_t budget, const std::string& what) {
  const StressConfig c = config(index);
  CaseResult r;
  r.budget = budget;
  auto fail = [&](const std::string& why) {
    r.outcome = CaseResult::kFailed;
    r.message = describe(index) + ", " + format_bytes(budget) + " (" + std::to_string(budget) + " bytes): " + why +
                "\nthe refusal: " + what + "\n" + replay();
    return r;
  };
  const size_t need = smallest(c.policy, c.sync);
  if (what.find("too small") == std::string::npos ||
      what.find("needs at least " + format_bytes(need)) == std::string::npos)
    return fail("refused, but the message does not name the smallest budget " + format_bytes(need) + " (" +
                std::to_string(need) + " bytes)");
  if (budget == 0 || budget >= need)
    return fail(
        VDNN_MSG("refused although it is not below the smallest budget the message names (" << need << " bytes)"));
  std::string hash;
  try {
    hash = train(options(c, need), c.evaluate);
  } catch (const std::exception& e) {
    return fail(std::string("the smallest budget the refusal names does not train: ") + e.what());
  }
  if (hash != reference_hash_)
    return fail("at the smallest budget, weights_sha256 " + hash + " differs from none's " + reference_hash_);
  r.outcome = CaseResult::kRefused;
  r.message = what;
  return r;
}

}  // namespace vdnn::stress
