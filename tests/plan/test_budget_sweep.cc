// The budget sweep (plan/budget_sweep.h): its budgets run from the largest smallest budget down to
// the floor; a policy that fits a budget fits every larger one and exactly those from its smallest
// up; no step beats the oracle; and every cell — planned once per configuration where the
// placement does not depend on the budget — is exactly what planning that budget alone answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "io/model_file.h"
#include "plan/budget_sweep.h"
#include "plan/dyn.h"
#include "planning/plan_source.h"
#include "rewrites/slice_runs.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_budget_sweep {

struct Case {
  const char* model;
  int64_t batch;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " b" << c.batch; }

class BudgetSweepTest : public ::testing::TestWithParam<Case> {
 protected:
  BudgetSweepTest()
      : graph_(load_model(GetParam().model)),
        in_(plan_inputs(graph_, GetParam().batch, {.device = "titan-x-maxwell"})),
        planner_(graph_, in_.value_bytes, in_.facts, in_.costs, SyncMode::kEvent) {}
  Graph graph_;
  PlanInputs in_;
  Planner planner_;
};

TEST_P(BudgetSweepTest, FitsAreMonotoneExactAndNoStepBeatsTheOracle) {
  const BudgetSweep s = sweep_budgets(planner_, sweep_policies(), {.steps = 12, .prefetch_ahead = true});
  ASSERT_EQ(s.cells.size(), s.budgets.size());
  EXPECT_EQ(s.budgets.front(), s.top);
  EXPECT_EQ(s.budgets.back(), s.floor);
  EXPECT_TRUE(std::is_sorted(s.budgets.rbegin(), s.budgets.rend()) &&
              std::adjacent_find(s.budgets.begin(), s.budgets.end()) == s.budgets.end())
      << "strictly from the largest down";
  EXPECT_GE(s.budgets.size(), 12u);
  EXPECT_EQ(s.oracle_seconds, planner_.oracle_seconds());
  size_t largest_smallest = 0, least_smallest = SIZE_MAX;
  for (size_t c = 0; c < s.columns.size(); ++c) {
    const SweepColumn& col = s.columns[c];
    SCOPED_TRACE(col.name);
    largest_smallest = std::max(largest_smallest, col.smallest_budget);
    least_smallest = std::min(least_smallest, col.smallest_budget);
    EXPECT_NE(std::find(s.budgets.begin(), s.budgets.end(), col.smallest_budget), s.budgets.end())
        << "each policy's smallest budget is a row";
    bool fitted_below = false;
    double below = 0;  // auto's step at the next smaller budget
    for (size_t r = s.budgets.size(); r-- > 0;) {  // from the floor up
      const SweepCell& cell = s.cells[r][c];
      EXPECT_EQ(cell.fits, s.budgets[r] >= col.smallest_budget) << "at " << s.budgets[r];
      EXPECT_TRUE(cell.fits || !fitted_below) << "fits at a smaller budget but not at " << s.budgets[r];
      if (cell.fits) EXPECT_GE(cell.step_seconds, s.oracle_seconds * (1 - 1e-12)) << "at " << s.budgets[r];
      if (col.name == "auto" && cell.fits && fitted_below)  // monotone_upward: never slower with more memory
        EXPECT_LE(cell.step_seconds, below) << "at " << s.budgets[r];
      fitted_below |= cell.fits;
      if (cell.fits) below = cell.step_seconds;
    }
  }
  EXPECT_EQ(s.top, largest_smallest);
  EXPECT_EQ(s.floor, least_smallest);
  for (size_t c = 0; c < s.columns.size(); ++c) EXPECT_TRUE(s.cells.front()[c].fits) << "every policy fits the top";
  // none with the fastest algorithms is the oracle wherever it fits.
  ASSERT_EQ(s.columns[0].name, "none");
  EXPECT_EQ(s.cells.front()[0].step_seconds, s.oracle_seconds);
}

// The shortcut (a configuration under vDNN's prefetch rule is simulated once) answers exactly what
// planning each budget alone does; dyn's column is choose_dyn's pick at that budget.
TEST_P(BudgetSweepTest, EveryCellIsWhatPlanningThatBudgetAloneAnswers) {
  const std::vector<SweepPolicy> policies = sweep_policies();
  const BudgetSweep s = sweep_budgets(planner_, policies, {.steps = 5, .prefetch_ahead = true});
  for (size_t r = 0; r < s.budgets.size(); ++r) {
    for (size_t c = 0; c < s.columns.size(); ++c) {
      const SweepColumn& col = s.columns[c];
      const SweepCell& cell = s.cells[r][c];
      SCOPED_TRACE(col.name + " at " + std::to_string(s.budgets[r]));
      // A cell monotone_upward filled holds the plan chosen at a smaller budget, faster than this one's own.
      const size_t found_at = cell.found_at ? cell.found_at : s.budgets[r];
      EXPECT_LE(found_at, s.budgets[r]);
      if (cell.found_at) {
        EXPECT_TRUE(policies[col.policy].carry_upward) << "only auto's column is made monotone";
        const std::optional<SweepChoice> own = policies[col.policy].choose(planner_, s.budgets[r]);
        if (own)
          EXPECT_GT(planner_.evaluate(own->config, s.budgets[r], own->prefetch.value_or(col.prefetch)).time.iteration_seconds,
                    cell.step_seconds);
      }
      const std::optional<SweepChoice> chosen = policies[col.policy].choose(planner_, found_at);
      ASSERT_TRUE(chosen.has_value());
      EXPECT_EQ(cell.config, chosen->config);
      EXPECT_EQ(cell.prefetch, chosen->prefetch.value_or(col.prefetch));
      if (policies[col.policy].name == "dyn") {
        EXPECT_EQ(cell.config, choose_dyn(planner_, s.budgets[r]).config);
      } else if (policies[col.policy].name != "auto") {
        EXPECT_EQ(cell.config, (Configuration{cell.config.policy, planner_.costs().fastest()}));
        EXPECT_EQ(to_string(cell.config.policy), policies[col.policy].name);
      }
      const Evaluation e = planner_.evaluate(cell.config, found_at, cell.prefetch);
      EXPECT_EQ(cell.fits, e.fits);
      if (!e.fits) continue;
      EXPECT_EQ(cell.step_seconds, e.time.iteration_seconds);
      EXPECT_EQ(cell.prefetch_depth, e.prefetch_depth);
    }
  }
}

// A policy whose step depends on the budget is planned at each budget, with the same answers.
TEST_P(BudgetSweepTest, APolicyPlannedAtEveryBudgetAnswersTheSame) {
  std::vector<SweepPolicy> replanned = sweep_policies();
  for (SweepPolicy& p : replanned) p.same_step_above_smallest = false;
  const BudgetSweep once = sweep_budgets(planner_, sweep_policies(), {.steps = 4, .prefetch_ahead = true});
  const BudgetSweep every = sweep_budgets(planner_, replanned, {.steps = 4, .prefetch_ahead = true});
  ASSERT_EQ(once.budgets, every.budgets);
  for (size_t r = 0; r < once.budgets.size(); ++r)
    for (size_t c = 0; c < once.columns.size(); ++c) {
      EXPECT_EQ(once.cells[r][c].fits, every.cells[r][c].fits) << once.columns[c].name << " at " << once.budgets[r];
      if (once.cells[r][c].fits)
        EXPECT_EQ(once.cells[r][c].step_seconds, every.cells[r][c].step_seconds) << once.columns[c].name;
    }
}

// monotone_upward on a column made by hand: walking up from the smallest budget, a cell slower
// than the best below it, or not fitting, takes that plan and says where it was found.
TEST(BudgetSweep, MonotoneUpwardCarriesTheBestPlanOfASmallerBudget) {
  BudgetSweep s;
  s.columns.push_back({"auto", 0});
  s.budgets = {50, 40, 30, 20, 10};
  const double steps[] = {3.0, 5.0, 4.0, 0.0, 6.0};  // 0: does not fit (20)
  for (size_t r = 0; r < 5; ++r) {
    SweepCell cell;
    cell.fits = steps[r] > 0;
    cell.step_seconds = steps[r];
    cell.prefetch_depth = static_cast<int>(r);
    s.cells.push_back({cell});
  }
  monotone_upward(s, 0);
  const double want[] = {3.0, 4.0, 4.0, 6.0, 6.0};
  const size_t found_at[] = {0, 30, 0, 10, 0};
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_TRUE(s.cells[r][0].fits) << s.budgets[r];
    EXPECT_EQ(s.cells[r][0].step_seconds, want[r]) << s.budgets[r];
    EXPECT_EQ(s.cells[r][0].found_at, found_at[r]) << s.budgets[r];
  }
  EXPECT_EQ(s.cells[1][0].prefetch_depth, 2) << "the whole plan is carried, its look-ahead depth too";
}

INSTANTIATE_TEST_SUITE_P(Models, BudgetSweepTest,
                         ::testing::Values(Case{"fmnist_dag", 64}, Case{"resnet18", 32}, Case{"vgg16", 64}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(BudgetSweep, ColumnsComeFromThePolicyListAndTheDeviceBudgetIsARow) {
  const Graph g = load_model("fmnist_cnn");
  const PlanInputs in = plan_inputs(g, 32, {.device = "titan-x-maxwell"});
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const std::vector<SweepPolicy> all = sweep_policies();
  std::vector<std::string> names;
  for (const SweepPolicy& p : all) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"none", "conv", "all", "dyn", "auto"}));

  const BudgetSweep s = sweep_budgets(planner, all, {.steps = 4, .prefetch_ahead = true});
  names.clear();
  for (const SweepColumn& c : s.columns) names.push_back(c.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"none", "conv", "all", "dyn", "auto", "conv/ahead", "all/ahead", "dyn/ahead"}))
      << "none offloads nothing: no column for prefetching ahead";
  const BudgetSweep vdnn_only = sweep_budgets(planner, all, {.steps = 4});
  EXPECT_EQ(vdnn_only.columns.size(), 5u) << "vDNN's prefetch rule only, unless asked";

  // One policy alone (a list of one): its column only, and a range of one budget.
  const BudgetSweep none_only = sweep_budgets(planner, {all[0]}, {.steps = 4, .prefetch_ahead = true});
  ASSERT_EQ(none_only.columns.size(), 1u);
  EXPECT_EQ(none_only.budgets, std::vector<size_t>{none_only.top});

  const size_t middle = (s.top + s.floor) / 2 + 1;
  const BudgetSweep with = sweep_budgets(planner, all, {.steps = 4, .extra_budget = middle});
  EXPECT_NE(std::find(with.budgets.begin(), with.budgets.end(), middle), with.budgets.end());
  const BudgetSweep outside = sweep_budgets(planner, all, {.steps = 4, .extra_budget = s.top * 2});
  EXPECT_EQ(outside.budgets, s.budgets) << "a budget above the range is no row";
}

// A policy that picks its prefetch rule itself (as `auto` does) gets one column, planned at every
// budget with its rule: here `all` always prefetching ahead equals the all/ahead column.
TEST(BudgetSweep, APolicyThatChoosesItsOwnPrefetchRuleIsPlannedWithIt) {
  const Graph g = load_model("fmnist_dag");
  const PlanInputs in = plan_inputs(g, 32, {.device = "titan-x-maxwell"});
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  SweepPolicy ahead = sweep_policies()[2];
  ASSERT_EQ(ahead.name, "all");
  ahead.name = "all-ahead";
  ahead.offloads = false;
  ahead.same_step_above_smallest = false;
  ahead.choose = [](const Planner& p, size_t) {
    return std::optional<SweepChoice>({{Policy::kAll, p.costs().fastest()}, Prefetch::kAhead});
  };
  const std::vector<SweepPolicy> standard = sweep_policies();
  const BudgetSweep mine = sweep_budgets(planner, {standard[0], ahead}, {.steps = 6, .prefetch_ahead = true});
  const BudgetSweep both = sweep_budgets(planner, standard, {.steps = 6, .prefetch_ahead = true});
  ASSERT_EQ(mine.columns.size(), 2u) << "no /ahead column for a policy that chose its rule";
  const auto all_ahead = std::find_if(both.columns.begin(), both.columns.end(),
                                      [](const SweepColumn& c) { return c.name == "all/ahead"; });
  ASSERT_NE(all_ahead, both.columns.end());
  const size_t k = static_cast<size_t>(all_ahead - both.columns.begin());
  for (size_t r = 0; r < mine.budgets.size(); ++r) {
    const auto at = std::find(both.budgets.begin(), both.budgets.end(), mine.budgets[r]);
    if (at == both.budgets.end()) continue;  // a row of the conv/dyn smallest budgets only
    const SweepCell& a = mine.cells[r][1];
    const SweepCell& b = both.cells[static_cast<size_t>(at - both.budgets.begin())][k];
    EXPECT_EQ(a.prefetch, Prefetch::kAhead);
    EXPECT_EQ(a.fits, b.fits) << mine.budgets[r];
    if (a.fits) EXPECT_EQ(a.step_seconds, b.step_seconds) << mine.budgets[r];
    EXPECT_EQ(a.prefetch_depth, b.prefetch_depth) << mine.budgets[r];
  }
}

TEST(BudgetSweep, AStepCountOutOfRangeNamesTheFlag) {
  const Graph g = load_model("fmnist_cnn");
  const PlanInputs in = plan_inputs(g, 8, {.device = "titan-x-maxwell"});
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  for (int steps : {-1, 0, 1, SweepOptions::kMaxSteps + 1}) {
    try {
      sweep_budgets(planner, sweep_policies(), {.steps = steps});
      ADD_FAILURE() << steps << " steps were taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--sweep-steps: expected 2 to 200 budgets, got " + std::to_string(steps)),
                std::string::npos)
          << e.what();
    }
  }
}

// add_sliced_column: `auto` on a graph with slice runs as one more column; below the whole graph's
// floor its rows are new and only it fits there; every row keeps one cell per column.
TEST(SlicedSweepColumn, ExtendsTheRowsDownToTheSlicedFloorAndOnlyItFitsThere) {
  const int64_t batch = 256;
  const Graph g = load_model("vgg_cifar");
  const PlanInputs in = plan_inputs(g, batch, {.device = "titan-x-maxwell"});
  const Planner whole(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const SlicedGraph cut = slice_runs(g, batch, {parse_slice_run("conv1_1:pool1:8")});
  const PlanInputs ci = plan_inputs(cut.graph, batch, {.device = "titan-x-maxwell"});
  const Planner sliced(cut.graph, ci.value_bytes, ci.facts, ci.costs, SyncMode::kEvent);
  BudgetSweep s = sweep_budgets(whole, sweep_policies(), {.steps = 4});
  const size_t old_floor = s.floor, old_rows = s.budgets.size(), columns = s.columns.size();
  const size_t device = (old_floor + sliced.minimum_budget({Policy::kAll, sliced.costs().leanest()})) / 2 + 12345;
  add_sliced_column(s, sliced, "auto+slices", 3, device);
  ASSERT_EQ(s.columns.size(), columns + 1);
  const SweepColumn& col = s.columns.back();
  EXPECT_LT(col.smallest_budget, old_floor);
  EXPECT_EQ(s.floor, col.smallest_budget);
  EXPECT_EQ(s.budgets.back(), s.floor);
  EXPECT_EQ(s.budgets.size(), old_rows + 2 + 1);  // 3 evenly spaced, the old floor not repeated; the device's
  EXPECT_NE(std::find(s.budgets.begin(), s.budgets.end(), device), s.budgets.end());
  EXPECT_TRUE(std::adjacent_find(s.budgets.begin(), s.budgets.end(), std::less_equal<>()) == s.budgets.end())
      << "strictly from the largest down";
  ASSERT_EQ(s.cells.size(), s.budgets.size());
  for (size_t r = 0; r < s.budgets.size(); ++r) {
    ASSERT_EQ(s.cells[r].size(), s.columns.size()) << "row " << r;
    EXPECT_EQ(s.cells[r].back().fits, s.budgets[r] >= col.smallest_budget) << s.budgets[r];
    if (s.budgets[r] < old_floor)
      for (size_t c = 0; c < columns; ++c)
        EXPECT_FALSE(s.cells[r][c].fits) << s.columns[c].name << " at " << s.budgets[r];
  }
  double below = 1e30;  // monotone_upward: the sliced column never gets slower as the budget grows
  for (size_t r = s.budgets.size(); r-- > 0;)
    if (s.cells[r].back().fits) {
      EXPECT_LE(s.cells[r].back().step_seconds, below) << s.budgets[r];
      below = s.cells[r].back().step_seconds;
    }
  ASSERT_TRUE(col.costs.has_value());
  EXPECT_EQ(col.costs->fastest().size(), cut.graph.nodes().size());  // describe() reads the sliced graph's
  // A sliced graph that does not go lower adds no rows, only the column.
  BudgetSweep t = sweep_budgets(whole, sweep_policies(), {.steps = 4});
  add_sliced_column(t, whole, "again", 3);
  EXPECT_EQ(t.budgets.size(), old_rows);
  for (const std::vector<SweepCell>& row : t.cells) EXPECT_EQ(row.size(), columns + 1);
}

}  // namespace test_budget_sweep
}  // namespace vdnn
