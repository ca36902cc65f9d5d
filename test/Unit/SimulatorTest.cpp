//===- SimulatorTest.cpp - Tests of the one simulator ---------------------===//
//
// Every figure the project reports comes from simulate(), so its checks and
// its arithmetic are pinned down here on hand-made graphs.
//
//===----------------------------------------------------------------------===//

#include "remat/Remat/Graph.h"

#include "gtest/gtest.h"

#include <limits>

using namespace remat;

namespace {
Node arg(const char *name, int64_t bytes) {
  Node n;
  n.name = name;
  n.bytes = bytes;
  n.argument = true;
  n.recomputable = false;
  return n;
}
Node op(const char *name, double cost, int64_t bytes, bool output = false) {
  Node n;
  n.name = name;
  n.cost = cost;
  n.bytes = bytes;
  n.output = output;
  return n;
}
Event compute(NodeId id) { return {Event::Kind::Compute, id}; }
Event release(NodeId id) { return {Event::Kind::Free, id}; }

/// x -> a -> b -> c (output), a also read by c.
struct Chain : ::testing::Test {
  Chain() {
    x = g.addNode(arg("x", 100));
    a = g.addNode(op("a", 2, 10));
    b = g.addNode(op("b", 3, 20));
    c = g.addNode(op("c", 4, 5, /*output=*/true));
    g.addEdge(x, a);
    g.addEdge(a, b);
    g.addEdge(b, c);
    g.addEdge(a, c);
  }
  Graph g;
  NodeId x, a, b, c;
};
} // namespace

TEST_F(Chain, GraphIsWellFormed) { EXPECT_EQ(g.verify(), ""); }

TEST_F(Chain, PeakCountsInputsWhileTheOutputIsAllocated) {
  SimResult r =
      simulate(g, {compute(a), compute(b), compute(c), release(a), release(b)});
  ASSERT_TRUE(r.valid) << r.error;
  // At c: x 100 + a 10 + b 20 + c 5.
  EXPECT_EQ(r.peakBytes, 135);
  EXPECT_EQ(r.peakEvent, 2u);
  EXPECT_DOUBLE_EQ(r.cost, 9);
  EXPECT_EQ(r.recomputations, 0);
}

TEST_F(Chain, RecomputationCostsAgainAndLowersThePeak) {
  SimResult r = simulate(g, {compute(a), compute(b), release(a), compute(a),
                             compute(c), release(a), release(b)});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_DOUBLE_EQ(r.cost, 11);
  EXPECT_EQ(r.recomputations, 1);
  EXPECT_EQ(r.peakBytes, 135);
}

TEST_F(Chain, ExcessSumsBytesAboveTheBudget) {
  SimResult r =
      simulate(g, {compute(a), compute(b), compute(c), release(a), release(b)},
               /*budget=*/120);
  ASSERT_TRUE(r.valid);
  // After a: 110, after b: 130 (+10), after c: 135 (+15).
  EXPECT_DOUBLE_EQ(r.excess, 25);
}

TEST_F(Chain, RejectsAUseOfAFreedValue) {
  SimResult r = simulate(g, {compute(a), compute(b), release(a), compute(c)});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.error.find("not resident"), std::string::npos) << r.error;
}

TEST_F(Chain, RejectsComputingAResidentValue) {
  SimResult r = simulate(g, {compute(a), compute(a)});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.error.find("already resident"), std::string::npos);
}

TEST_F(Chain, RejectsFreeingWhatIsNotResident) {
  EXPECT_FALSE(simulate(g, {release(a)}).valid);
}

TEST_F(Chain, RejectsFreeingAnOutputOrAnArgument) {
  EXPECT_FALSE(
      simulate(g, {compute(a), compute(b), compute(c), release(c)}).valid);
  EXPECT_FALSE(simulate(g, {release(x)}).valid);
}

TEST_F(Chain, RejectsAMissingOutput) {
  SimResult r = simulate(g, {compute(a), compute(b)});
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.error.find("output"), std::string::npos);
}

TEST_F(Chain, RejectsRecomputingAPinnedNode) {
  g.node(a).recomputable = false;
  EXPECT_FALSE(
      simulate(g, {compute(a), compute(b), release(a), compute(a), compute(c)})
          .valid);
}

TEST(Simulator, InPlaceUpdateAllocatesNothingAndEndsTheArgument) {
  Graph g;
  NodeId w = g.addNode(arg("w", 64));
  NodeId grad = g.addNode(op("grad", 1, 64));
  Node update = op("update", 1, 64, /*output=*/true);
  update.overwrites = w;
  NodeId u = g.addNode(update);
  NodeId late = g.addNode(op("late", 1, 8, /*output=*/true));
  g.addEdge(w, grad);
  g.addEdge(w, u);
  g.addEdge(grad, u);
  g.addEdge(w, late);
  ASSERT_EQ(g.verify(), "");
  SimResult ok =
      simulate(g, {compute(grad), compute(late), compute(u), release(grad)});
  ASSERT_TRUE(ok.valid) << ok.error;
  EXPECT_EQ(ok.peakBytes, 64 + 64 + 8);
  SimResult bad = simulate(g, {compute(grad), compute(u), compute(late)});
  EXPECT_FALSE(bad.valid);
  EXPECT_NE(bad.error.find("overwritten"), std::string::npos) << bad.error;
}

TEST(Graph, VerifyRejectsNegativeSizesAndBadOverwrites) {
  Graph g;
  g.addNode(op("a", 1, -1));
  EXPECT_NE(g.verify().find("negative size"), std::string::npos);
  Graph h;
  NodeId a = h.addNode(op("a", 1, 4));
  Node b = op("b", 1, 4);
  b.overwrites = a;
  NodeId bid = h.addNode(b);
  h.addEdge(a, bid);
  EXPECT_NE(h.verify().find("overwrites"), std::string::npos);
}

TEST(Graph, VerifyRejectsSizesThatOverflowAndNonFiniteCosts) {
  // Each size fits 64 bits; their sum (what the simulator adds) does not.
  Graph g;
  int64_t half = std::numeric_limits<int64_t>::max() / 2 + 1;
  g.addNode(op("a", 1, half));
  EXPECT_EQ(g.verify(), "");
  g.addNode(op("b", 1, half));
  EXPECT_NE(g.verify().find("add up past what 64 bits hold"), std::string::npos)
      << g.verify();
  // A workspace on top of sizes that fit.
  Graph w;
  Node big = op("c", 1, half);
  big.workspace = half;
  w.addNode(big);
  EXPECT_NE(w.verify().find("add up past"), std::string::npos) << w.verify();
  Graph c;
  c.addNode(op("d", std::numeric_limits<double>::infinity(), 4));
  EXPECT_NE(c.verify().find("non-finite cost"), std::string::npos);
}

TEST(Schedules, FreeAtLastUseMovesFreesEarlierAndNeverRaisesThePeak) {
  // A chain where c does not read a, so a's last use is b.
  Graph h;
  NodeId hx = h.addNode(arg("x", 100));
  NodeId ha = h.addNode(op("a", 2, 10));
  NodeId hb = h.addNode(op("b", 3, 20));
  NodeId hc = h.addNode(op("c", 4, 5, true));
  h.addEdge(hx, ha);
  h.addEdge(ha, hb);
  h.addEdge(hb, hc);
  Schedule late = {compute(ha), compute(hb), compute(hc), release(ha),
                   release(hb)};
  Schedule moved = freeAtLastUse(h, late);
  Schedule expected = {compute(ha), compute(hb), release(ha), compute(hc),
                       release(hb)};
  EXPECT_EQ(moved, expected);
  SimResult before = simulate(h, late), after = simulate(h, moved);
  ASSERT_TRUE(after.valid) << after.error;
  // b is allocated while a is live either way; c no longer meets a.
  EXPECT_EQ(before.peakBytes, 135);
  EXPECT_EQ(after.peakBytes, 130);
  EXPECT_EQ(residentBytes(h, moved).back(), 105);
}

TEST(Simulator, CountsAWorkspaceOnlyWhileItsNodeComputes) {
  Graph g;
  NodeId x = g.addNode(arg("x", 100));
  NodeId a = g.addNode(op("a", 1, 10));
  Node withScratch = op("b", 1, 20, true);
  withScratch.workspace = 50;
  NodeId b = g.addNode(withScratch);
  g.addEdge(x, a);
  g.addEdge(a, b);
  Schedule s = {compute(a), compute(b), release(a)};
  SimResult r = simulate(g, s, /*budget=*/150);
  ASSERT_TRUE(r.valid) << r.error;
  // x, a and b resident, plus b's scratch while b computes.
  EXPECT_EQ(r.peakBytes, 180);
  EXPECT_EQ(r.peakEvent, 1u);
  EXPECT_DOUBLE_EQ(r.excess, 30);
  EXPECT_EQ(residentBytes(g, s), (std::vector<int64_t>{110, 180, 120}));
  g.node(b).workspace = -1;
  EXPECT_NE(g.verify().find("negative workspace"), std::string::npos);
}
