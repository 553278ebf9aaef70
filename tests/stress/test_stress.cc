// The stress test (issue 9): random DAG networks x budgets x policies x sync modes x links. Every
// case trains to the same weights as `none` or is refused before training with the smallest
// budget (stress/stress_case.h). Each network also gets kAutoCasesPerNetwork `auto` cases: its
// per-tensor decisions train to the same weights, or it refuses a budget below the floor.
// CI runs kCiCases (the auto cases come on top); longer runs (docs/reliability.md):
//   VDNN_STRESS_CASES=1200 VDNN_STRESS_SEED=1000 build/vdnn_tests --gtest_filter='Stress.*'
// VDNN_STRESS_TIMEOUT: seconds one case may take before it counts as hung (default 120).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "core/layer_registry.h"

#include "stress/random_network.h"
#include "stress/stress_case.h"
#include "stress/watchdog.h"

namespace vdnn::stress {
namespace test_stress {

constexpr int64_t kCiCases = 300;

// The fewest networks over which the auto cases must have offloaded and recomputed (a replay of
// one network may do neither).
constexpr int64_t kAutoCountedNetworks = 8;

// What the `auto` cases did (stress_case.h), for the summary and the check that they decide.
struct AutoTally {
  int64_t trained = 0, refused = 0, failed = 0, vdnn_won = 0, offloading = 0, recomputing = 0;
  double seconds = 0;
  void add(const CaseResult& r) {
    trained += r.outcome == CaseResult::kTrained;
    refused += r.outcome == CaseResult::kRefused;
    failed += r.outcome == CaseResult::kFailed;
    vdnn_won += r.outcome == CaseResult::kVdnnPolicy;
    offloading += r.outcome == CaseResult::kTrained && r.offloaded_bytes > 0;
    recomputing += r.outcome == CaseResult::kTrained && r.recomputed_bytes > 0;
  }
  void print() const {
    std::printf(
        "auto: %lld cases in %.1f s: %lld trained on its own decisions (offloading in %lld, "
        "recomputing in %lld), %lld on a vDNN policy (not trained again), %lld refused, %lld failed\n",
        static_cast<long long>(trained + refused + failed + vdnn_won), seconds, static_cast<long long>(trained),
        static_cast<long long>(offloading), static_cast<long long>(recomputing), static_cast<long long>(vdnn_won),
        static_cast<long long>(refused), static_cast<long long>(failed));
  }
};

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtod(text, nullptr) : fallback;
}

TEST(StressGenerator, SameSeedGivesTheSameNetworkAndEveryLayerKindAppears) {
  EXPECT_EQ(random_network(5).model, random_network(5).model);
  EXPECT_NE(random_network(5).model, random_network(6).model);
  std::set<std::string> types;
  int multi_input = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const RandomNetwork n = random_network(seed);
    EXPECT_NO_THROW(n.graph()) << n.model.dump();
    for (const auto& layer : n.model["layers"]) {
      types.insert(layer["type"].get<std::string>());
      multi_input += layer.contains("inputs") && layer["inputs"].size() > 1;
    }
  }
  for (const char* t : {"conv", "batch_norm", "relu", "relu6", "max_pool", "avg_pool", "lrn", "dropout", "concat",
                        "add", "flatten", "fc", "softmax_cross_entropy"})
    EXPECT_TRUE(types.count(t)) << t << " never generated";
  EXPECT_GE(multi_input, 50);
}

// What let issue 15's crash through: every generated network read the input with a block of the
// stem and fed the loss from an FC. Now layers of every kind read "data", and the loss reads
// "data" itself, joins, and networks with at most one hidden layer.
TEST(StressGenerator, EveryLayerKindReadsTheInputAndTheLossReadsJoinsAndTheInput) {
  std::set<std::string> reads_data;
  int loss_on_data = 0, loss_on_join = 0, join_of_data_twice = 0, vector_input = 0, shallow = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    const Graph g = random_network(seed).graph();
    for (const Node& node : g.nodes()) {
      if (std::count(node.inputs.begin(), node.inputs.end(), 0) > 0) reads_data.insert(node.layer->type());
      join_of_data_twice += std::count(node.inputs.begin(), node.inputs.end(), 0) > 1;
    }
    const int logits = g.nodes().back().inputs[0];
    loss_on_data += logits == 0;
    loss_on_join += logits > 0 && g.nodes()[g.value(logits).producer].layer->type() == "add";
    vector_input += !g.input_shape().is_image();
    shallow += g.nodes().size() <= 3;  // at most one layer besides the classifier and the loss
  }
  std::printf(
      "1000 networks: loss on data %d, on an add %d; a join reading data twice %d; [K] input %d; "
      "<= 3 layers %d\n",
      loss_on_data, loss_on_join, join_of_data_twice, vector_input, shallow);
  // The generator builds CNNs; the sequence layers (design/sequences.md) and attention
  // (design/attention.md) are checked in whole token networks by tests/runtime/test_sequence_training.cc.
  const std::set<std::string> sequence_layers{"embedding", "position_embedding", "layer_norm", "gelu",
                                              "linear",    "token_cross_entropy", "attention"};
  for (const std::string& t : layer_types())
    if (!sequence_layers.count(t)) EXPECT_TRUE(reads_data.count(t)) << "no generated '" << t << "' reads \"data\"";
  EXPECT_GE(loss_on_data, 20);
  EXPECT_GE(loss_on_join, 100);
  EXPECT_GE(join_of_data_twice, 10);
  EXPECT_GE(vector_input, 80);
  EXPECT_GE(shallow, 80);
}

TEST(StressWatchdog, AbortsNamingTheWorkThatHangs) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Watchdog watchdog(0.05);
        watchdog.arm("network seed 7, case 3");
        std::this_thread::sleep_for(std::chrono::seconds(5));
      },
      "no result after 0 s, the case hangs:\nnetwork seed 7, case 3");
  Watchdog quiet(0.05);  // disarmed in time: nothing happens
  quiet.arm("fast");
  quiet.disarm();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// Issue 15's crash killed the stress run without saying which network it was on.
TEST(StressWatchdog, ACrashNamesTheCaseItHappenedIn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Watchdog watchdog(60);
        watchdog.arm("network seed 93, case 0");
        std::raise(SIGSEGV);
      },
      "crashed \\(fatal signal\\) in this case:\nnetwork seed 93, case 0");
}

TEST(Stress, RandomNetworksTrainIdenticallyOrAreRefusedBeforeTraining) {
  const auto cases = static_cast<int64_t>(env_number("VDNN_STRESS_CASES", kCiCases));
  const auto first_seed = static_cast<uint64_t>(env_number("VDNN_STRESS_SEED", 1));
  Watchdog watchdog(env_number("VDNN_STRESS_TIMEOUT", 120));
  std::map<CaseResult::Outcome, int64_t> outcomes;
  std::map<std::string, int64_t> by_rule;  // "rule: outcome"
  AutoTally auto_tally;
  const auto start = std::chrono::steady_clock::now();
  int64_t done = 0, networks = 0;
  for (uint64_t seed = first_seed; done < cases; ++seed, ++networks) {
    RandomNetwork network = random_network(seed);
    watchdog.arm("network seed " + std::to_string(seed) + ": the reference run\n" + network.model.dump());
    NetworkStress stress(std::move(network));
    if (!stress.reference_failure().empty()) ADD_FAILURE() << stress.reference_failure();
    for (int i = 0; i < kCasesPerNetwork && done < cases; ++i, ++done) {
      watchdog.arm(stress.describe(i) + "\n" + stress.replay());
      const CaseResult r = stress.run(i);
      watchdog.disarm();
      ++outcomes[r.outcome];
      const char* outcome = r.outcome == CaseResult::kTrained   ? "trained"
                            : r.outcome == CaseResult::kRefused ? "refused"
                                                                : "FAILED";
      ++by_rule[std::string(to_string(stress.config(i).budget_rule)) + ": " + outcome];
      if (r.outcome == CaseResult::kFailed) ADD_FAILURE() << r.message;
    }
    for (int k = 0; k < kAutoCasesPerNetwork; ++k) {
      watchdog.arm(stress.describe_auto(k) + "\n" + stress.replay());
      const auto auto_start = std::chrono::steady_clock::now();
      const CaseResult r = stress.run_auto(k);
      auto_tally.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - auto_start).count();
      watchdog.disarm();
      auto_tally.add(r);
      if (r.outcome == CaseResult::kFailed) ADD_FAILURE() << r.message;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "stress: %lld cases on %lld networks (seeds %llu..%llu) in %.1f s: %lld trained, %lld "
      "refused, %lld failed\n",
      static_cast<long long>(done), static_cast<long long>(networks), static_cast<unsigned long long>(first_seed),
      static_cast<unsigned long long>(first_seed + networks - 1), seconds,
      static_cast<long long>(outcomes[CaseResult::kTrained]), static_cast<long long>(outcomes[CaseResult::kRefused]),
      static_cast<long long>(outcomes[CaseResult::kFailed]));
  for (const auto& [what, n] : by_rule) std::printf("  %-40s %lld\n", what.c_str(), static_cast<long long>(n));
  auto_tally.print();
  EXPECT_GT(outcomes[CaseResult::kTrained], 0);
  EXPECT_GT(outcomes[CaseResult::kRefused], 0);
  // So that `auto` cannot silently keep everything: its own decisions offload and recompute in
  // some cases of every run of kAutoCountedNetworks networks or more (CI's, ASan's and TSan's).
  if (networks >= kAutoCountedNetworks) {
    EXPECT_GT(auto_tally.offloading, 0) << "no auto case offloaded anything";
    EXPECT_GT(auto_tally.recomputing, 0) << "no auto case recomputed anything";
  }
}

}  // namespace test_stress
}  // namespace vdnn::stress
