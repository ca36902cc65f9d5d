//===- SolverTest.cpp - Properties every solver must have -----------------===//
//
// On many random training graphs and budgets: every schedule passes the
// simulator, a feasible answer meets its budget, an infeasible one names a
// budget the same solver then meets, and recomputation never lowers cost
// below the no-remat baseline.
//
//===----------------------------------------------------------------------===//

#include "RandomGraphs.h"

#include "remat/Remat/Solvers.h"

#include "gtest/gtest.h"

using namespace remat;

namespace {
struct Case {
  unsigned seed;
  int nodes;
};
class SolverProperties
    : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};
} // namespace

TEST_P(SolverProperties, SchedulesAreValidAndHonest) {
  auto [name, c] = GetParam();
  Graph g = test::randomTrainingGraph(c.seed, c.nodes);
  ASSERT_EQ(g.verify(), "");
  SolveResult none = solve("none", g, kNoBudget);
  ASSERT_TRUE(none.feasible);
  EXPECT_DOUBLE_EQ(none.cost, g.baselineCost());
  for (double fraction : {1.0, 0.9, 0.75, 0.6, 0.5, 0.3, 0.0}) {
    int64_t budget = static_cast<int64_t>(none.peakBytes * fraction);
    SolveResult r = solve(name, g, budget);
    SimResult sim = simulate(g, r.schedule);
    ASSERT_TRUE(sim.valid) << name << " at " << budget << ": " << sim.error;
    EXPECT_EQ(sim.peakBytes, r.peakBytes);
    EXPECT_DOUBLE_EQ(sim.cost, r.cost);
    EXPECT_GE(r.cost, g.baselineCost() - 1e-9);
    if (r.feasible) {
      EXPECT_LE(r.peakBytes, budget) << name;
    } else {
      EXPECT_GT(r.peakBytes, budget) << name;
      // The smallest budget an infeasible answer names is one it meets.
      SolveResult again = solve(name, g, r.peakBytes);
      EXPECT_TRUE(again.feasible) << name << " named " << r.peakBytes;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    RandomGraphs, SolverProperties,
    ::testing::Combine(::testing::Values("none", "chen-sqrt", "greedy"),
                       ::testing::Values(Case{1, 4}, Case{2, 8}, Case{3, 12},
                                         Case{4, 16}, Case{5, 24}, Case{6, 30},
                                         Case{7, 40}, Case{8, 9}, Case{9, 17},
                                         Case{10, 33})),
    [](const auto &info) {
      std::string n = std::get<0>(info.param);
      for (char &ch : n)
        if (ch == '-')
          ch = '_';
      return n + "_seed" + std::to_string(std::get<1>(info.param).seed);
    });

TEST(Greedy, AtTheNoRematPeakItRecomputesNothing) {
  for (unsigned seed = 0; seed < 20; ++seed) {
    Graph g = test::randomTrainingGraph(seed, 20);
    SolveResult none = solve("none", g, kNoBudget);
    SolveResult r = solve("greedy", g, none.peakBytes);
    ASSERT_TRUE(r.feasible);
    EXPECT_DOUBLE_EQ(r.cost, none.cost);
  }
}

TEST(Greedy, LowersThePeakOfALongChain) {
  // A 32-layer chain with equal activations: keeping everything holds all
  // of them at the start of the backward pass; recomputation must do better.
  Graph g = test::randomTrainingGraph(42, 32);
  SolveResult none = solve("none", g, kNoBudget);
  SolveResult r = solve("greedy", g, 0);
  EXPECT_FALSE(r.feasible);
  EXPECT_LT(r.peakBytes, none.peakBytes * 3 / 4);
}

TEST(Solvers, NamesAreKnown) {
  for (const std::string &n : solverNames())
    EXPECT_TRUE(isSolver(n));
  EXPECT_FALSE(isSolver("checkmate"));
}

TEST(Policies, KeepEverythingIsTheNoRematSchedule) {
  Graph g = test::randomTrainingGraph(3, 10);
  Schedule s =
      scheduleFromPolicies(g, std::vector<Policy>(g.size(), Policy::Keep));
  SimResult r = simulate(g, s);
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.recomputations, 0);
}

TEST(Policies, TransientCandidatesAreRecomputedForEveryUse) {
  Graph g = test::randomTrainingGraph(11, 12);
  std::vector<Policy> p(g.size(), Policy::Keep);
  std::vector<NodeId> candidates = checkpointCandidates(g);
  ASSERT_FALSE(candidates.empty());
  for (NodeId c : candidates)
    p[c] = Policy::Transient;
  SimResult transient = simulate(g, scheduleFromPolicies(g, p));
  for (NodeId c : candidates)
    p[c] = Policy::Recompute;
  SimResult recompute = simulate(g, scheduleFromPolicies(g, p));
  ASSERT_TRUE(transient.valid) << transient.error;
  ASSERT_TRUE(recompute.valid) << recompute.error;
  EXPECT_GE(transient.recomputations, recompute.recomputations);
  EXPECT_GT(recompute.recomputations, 0);
}
