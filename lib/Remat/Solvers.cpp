//===- Solvers.cpp - Rematerialization solvers ----------------------------===//
//
// The solvers here choose a policy for each value (keep it, or drop it and
// recompute it); one executor (Executor.h) turns the choice into a schedule
// with the recomputations placed right before the uses that need them, so
// every solver shares the same, simulator-checked notion of what a choice
// costs.
//
//===----------------------------------------------------------------------===//

#include "remat/Remat/Solvers.h"

#include "Executor.h"
#include "Internal.h"
#include "SolverParts.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <random>

using namespace remat;
using namespace remat::detail;

bool remat::detail::isBetter(const SolveResult &a, const SolveResult &b) {
  if (a.feasible != b.feasible)
    return a.feasible;
  if (a.peakBytes < 0 || b.peakBytes < 0) // an invalid schedule loses
    return b.peakBytes < 0 && a.peakBytes >= 0;
  return a.feasible ? a.cost < b.cost : a.peakBytes < b.peakBytes;
}

SolveResult remat::detail::finish(const Graph &graph, Schedule schedule,
                                  int64_t budget) {
  SimResult sim = simulate(graph, schedule);
  SolveResult r;
  r.schedule = std::move(schedule);
  r.peakBytes = sim.peakBytes;
  r.cost = sim.cost;
  r.feasible = sim.valid && sim.peakBytes <= budget;
  if (!sim.valid)
    r.peakBytes = -1; // see isBetter
  return r;
}

/// Keeps everything: the schedule a framework without remat runs.
static SolveResult solveNone(const Graph &graph, int64_t budget,
                             const SolverOptions &) {
  return finish(graph,
                scheduleFromPolicies(
                    graph, std::vector<Policy>(graph.size(), Policy::Keep)),
                budget);
}

/// Chen et al. 2016, sqrt(n) checkpoints: of the k candidates, keep every
/// round(sqrt(k))-th and recompute the segments between them. It ignores the
/// budget; the result is feasible or not.
SolveResult remat::detail::solveChenSqrt(const Graph &graph, int64_t budget,
                                         const SolverOptions &) {
  std::vector<NodeId> candidates = checkpointCandidates(graph);
  std::vector<Policy> policy(graph.size(), Policy::Keep);
  size_t stride = std::max<size_t>(
      1, static_cast<size_t>(std::lround(std::sqrt(candidates.size()))));
  for (size_t i = 0; i < candidates.size(); ++i)
    if ((i + 1) % stride != 0)
      policy[candidates[i]] = Policy::Recompute;
  return finish(graph, scheduleFromPolicies(graph, policy, budget), budget);
}

/// Candidates that are cut vertices of the forward pass: no forward edge
/// jumps over them, so keeping one splits the forward pass in two (the
/// boundaries between layers or blocks). All candidates when none is.
std::vector<NodeId> remat::detail::articulationCandidates(const Graph &graph) {
  std::vector<NodeId> candidates = checkpointCandidates(graph);
  std::vector<char> isCandidate(graph.size(), 0);
  for (NodeId c : candidates)
    isCandidate[c] = 1;
  // reach[v]: the farthest node that a forward edge from a node < v reaches.
  std::vector<NodeId> out;
  NodeId reach = -1;
  for (NodeId v = 0; v < (NodeId)graph.size(); ++v) {
    // Arguments (weights, inputs, labels) are resident throughout: their
    // edges, such as the label's to the loss, split nothing.
    if (graph.node(v).backward || graph.node(v).argument)
      continue;
    if (isCandidate[v] && reach <= v)
      out.push_back(v);
    for (NodeId u : graph.users(v))
      if (!graph.node(u).backward)
        reach = std::max(reach, u);
  }
  return out.empty() ? candidates : out;
}

/// The classic per-layer checkpoint (torch.utils.checkpoint around every
/// layer or block): keep the values at layer boundaries, recompute the
/// inside of each layer during its backward pass. Ignores the budget.
SolveResult remat::detail::solveEveryLayer(const Graph &graph, int64_t budget,
                                           const SolverOptions &) {
  std::vector<Policy> policy(graph.size(), Policy::Keep);
  for (NodeId c : checkpointCandidates(graph))
    policy[c] = Policy::Recompute;
  for (NodeId c : articulationCandidates(graph))
    policy[c] = Policy::Keep;
  return finish(graph, scheduleFromPolicies(graph, policy, budget), budget);
}

namespace {
/// The walk behind Chen's segments: the checkpoint candidates in order,
/// their bytes, which of them are layer boundaries, and their bytes in all.
struct SegmentWalk {
  std::vector<NodeId> candidates;
  std::vector<int64_t> bytes;
  std::vector<char> isBoundary;
  size_t nodes;
  int64_t total = 0;

  explicit SegmentWalk(const Graph &graph)
      : candidates(checkpointCandidates(graph)), nodes(graph.size()) {
    std::vector<char> boundary(graph.size(), 0);
    for (NodeId b : articulationCandidates(graph))
      boundary[b] = 1;
    for (NodeId c : candidates) {
      bytes.push_back(graph.node(c).bytes);
      isBoundary.push_back(boundary[c]);
      total += bytes.back();
    }
  }

  /// Keeps a boundary wherever the bytes since the last kept one exceed
  /// `outer`; inside a segment, a boundary becomes an inner checkpoint
  /// (Recompute: rebuilt with its segment for the backward pass and then
  /// held to its last use) wherever the bytes since the last checkpoint of
  /// either kind exceed `inner`, and a Nested one (held only while its own
  /// stretch between two inner ones is in the backward pass) wherever the
  /// bytes since the last checkpoint of any kind exceed `nested`;
  /// everything else gets `inside`.
  std::vector<Policy>
  policy(int64_t outer, int64_t inner, Policy inside,
         int64_t nested = std::numeric_limits<int64_t>::max()) const {
    std::vector<Policy> p(nodes, Policy::Keep);
    int64_t sinceOuter = 0, sinceInner = 0, sinceNested = 0;
    for (size_t k = 0; k < candidates.size(); ++k) {
      sinceOuter += bytes[k];
      sinceInner += bytes[k];
      sinceNested += bytes[k];
      if (isBoundary[k] && sinceOuter > outer) {
        sinceOuter = sinceInner = sinceNested = 0;
      } else if (isBoundary[k] && sinceInner > inner) {
        sinceInner = sinceNested = 0;
        p[candidates[k]] = Policy::Recompute;
      } else if (isBoundary[k] && sinceNested > nested) {
        sinceNested = 0;
        p[candidates[k]] = Policy::Nested;
      } else {
        p[candidates[k]] = inside;
      }
    }
    return p;
  }
};
} // namespace

std::vector<std::vector<Policy>> remat::detail::chenSegments(const Graph &graph,
                                                             Policy inside) {
  SegmentWalk walk(graph);
  std::vector<int64_t> thresholds;
  int64_t total = 0;
  for (int64_t b : walk.bytes) {
    total += b;
    thresholds.push_back(total);
  }
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()),
                   thresholds.end());
  // Every prefix size would make the sweep quadratic in the graph; evenly
  // spaced quantiles of them keep it linear with the same endpoints.
  const size_t maxThresholds = 64;
  if (thresholds.size() > maxThresholds) {
    std::vector<int64_t> sampled;
    for (size_t k = 0; k < maxThresholds; ++k)
      sampled.push_back(
          thresholds[k * (thresholds.size() - 1) / (maxThresholds - 1)]);
    thresholds = std::move(sampled);
  }
  std::vector<std::vector<Policy>> policies;
  for (int64_t b : thresholds)
    policies.push_back(
        walk.policy(b, std::numeric_limits<int64_t>::max(), inside));
  return policies;
}

/// The member of `family` that isBetter ranks first (the first of equals),
/// as `executor` (with its cache at `budget`) judges them; with `fitOnly`,
/// only members within the budget count. Each evaluation stops where it can
/// no longer win: over the budget once one fits, at the cheapest cost so
/// far, at the lowest peak so far before. Null where no member counts.
static const std::vector<Policy> *
bestOf(PolicyExecutor &executor, int64_t budget,
       const std::vector<std::vector<Policy>> &family, bool fitOnly,
       double below = std::numeric_limits<double>::infinity()) {
  const std::vector<Policy> *best = nullptr;
  Cutoff cutoff;
  if (fitOnly)
    cutoff.peak = budget;
  cutoff.cost = below;
  cutoff.costToGo = true;
  // A member's least cost: every dropped value that the backward pass
  // reads is computed again at least once. Members whose least cost is
  // already the cheapest so far are not run: on long training graphs most
  // of a family's members keep a few boundaries and drop the rest, and
  // each run would take the whole forward pass before the cost to go
  // stops it.
  const ExecutorPlan &plan = executor.executorPlan();
  std::vector<std::pair<NodeId, double>> readBack;
  for (NodeId c : plan.movable().values.checkpoints) {
    const std::vector<NodeId> &users = plan.graph.users(c);
    if (std::any_of(users.begin(), users.end(),
                    [&](NodeId u) { return plan.graph.node(u).backward; }))
      readBack.push_back({c, plan.cost[c]});
  }
  auto leastCost = [&](const std::vector<Policy> &p) {
    double least = plan.graph.baselineCost();
    for (auto [c, cost] : readBack)
      if (p[c] != Policy::Keep)
        least += cost;
    return least;
  };
  for (const std::vector<Policy> &p : family) {
    if (std::isfinite(cutoff.cost) && leastCost(p) * (1 - 1e-9) >= cutoff.cost)
      continue;
    // What the cutoff lets finish beats the best so far.
    Evaluated e = executor.evaluate(p, budget, cutoff);
    if (e.cut || !e.valid)
      continue;
    if (e.peak <= budget) {
      cutoff.peak = budget;
      cutoff.cost = e.cost;
    } else {
      // Nothing has fitted yet (else the cutoff stops at the budget).
      cutoff.peak = e.peak - 1; // only a lower peak wins now
    }
    best = &p;
  }
  return best;
}

/// Chen's segments with their insides recomputed once; the cheapest
/// schedule within the budget (else the lowest peak).
SolveResult remat::detail::solveChenGreedy(const Graph &graph, int64_t budget,
                                           const SolverOptions &) {
  std::vector<std::vector<Policy>> all = chenSegments(graph, Policy::Recompute);
  if (all.empty())
    return solveNone(graph, budget, {});
  // Judged without building their schedules: without a backward pass a
  // segment's recomputations chain back through the graph, and scheduling
  // and simulating all 64 took 2.3 s on a 2,000-node layered graph
  // (bench/gen-layered-graph.py) and over a minute on 10,000.
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  executor.setCacheLimit(budget);
  const std::vector<Policy> *best =
      bestOf(executor, budget, all, /*fitOnly=*/false);
  if (!best) // every schedule invalid: judged as the first one
    return finish(graph, scheduleFromPolicies(graph, all.front(), budget),
                  budget);
  return finish(graph, executor.answer(*best), budget);
}

SolveResult remat::detail::transientSegments(const Graph &graph, int64_t budget,
                                             std::vector<Policy> *policy,
                                             bool refine, double below,
                                             bool nested) {
  // Two levels (revolve's idea, at its second level): below what one level
  // reaches, a segment's own checkpoints, rebuilt once for its backward
  // pass, spare rebuilding it from its start for every backward step
  // (10,001 nodes at 0.01 of the peak: 1.95x -> 1.60x; at 0.005, 4.28x ->
  // 2.09x).
  SegmentWalk walk(graph);
  SolveResult none;
  none.peakBytes = -1; // no schedule: loses every comparison (isBetter)
  struct Spacing {
    double outer = 0, split = 0; // split 0: one level (chenSegments)
    double nestedSplit = 0;      // 0: two levels
  };
  std::vector<std::vector<Policy>> all;
  std::vector<Spacing> spacings;
  const int64_t outerSteps = 64, innerSplits = 64;
  const double outerStep = static_cast<double>(walk.total) / (4 * outerSteps);
  auto add = [&](double outer, double split, double nestedSplit) {
    double inner = outer / split;
    all.push_back(walk.policy(static_cast<int64_t>(outer),
                              static_cast<int64_t>(inner), Policy::Transient,
                              nestedSplit > 0
                                  ? static_cast<int64_t>(inner / nestedSplit)
                                  : std::numeric_limits<int64_t>::max()));
    spacings.push_back({outer, split, nestedSplit});
  };
  // Small graphs have few boundaries, and most of a grid repeats itself:
  // each distinct schedule once, in the order of their policies.
  auto dedupe = [&] {
    std::vector<size_t> order(all.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return all[a] < all[b]; });
    std::vector<std::vector<Policy>> members;
    std::vector<Spacing> at;
    for (size_t i : order)
      if (members.empty() || members.back() != all[i]) {
        members.push_back(std::move(all[i]));
        at.push_back(spacings[i]);
      }
    all = std::move(members);
    spacings = std::move(at);
  };
  // Only an answer within the budget is wanted (the evaluations take a
  // third of the instructions of scheduling and simulating each, at
  // ResNet50's smallest budget).
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  executor.setCacheLimit(budget);
  // The grid's steps are coarse where it matters most (a segment of a
  // 256th of the bytes is one step from twice that): around the winner, a
  // finer grid of quarter steps in the segment and in the inner spacing's
  // logarithm, which only a strictly cheaper schedule leaves (the winner
  // comes first). On the bench's 1,001- to 5,001-block training graphs
  // from 0.05 to 0.005 of their peaks it was cheaper at 7 of 35 budgets
  // (2,501 blocks at 0.005: 5.19x -> 4.18x) and dearer at none.
  auto refined = [&](std::vector<Policy> winner, Spacing center) {
    if (!refine || center.split == 0)
      return winner;
    all.clear();
    spacings.clear();
    for (int a = -4; a <= 4; ++a)
      for (int b = -3; b <= 3; ++b)
        if ((a || b) && center.outer + a * outerStep / 4 > 0)
          add(center.outer + a * outerStep / 4,
              center.split * std::exp2(b / 4.0), center.nestedSplit);
    dedupe();
    all.erase(std::remove(all.begin(), all.end(), winner), all.end());
    all.insert(all.begin(), winner);
    if (const std::vector<Policy> *finer =
            bestOf(executor, budget, all, /*fitOnly=*/true))
      return *finer;
    return winner;
  };
  // One and two levels: segments from a 256th of the candidates' bytes to
  // a quarter, in even steps; inner checkpoints every half to every 64th
  // of a segment.
  all = chenSegments(graph, Policy::Transient);
  spacings.assign(all.size(), {});
  for (int64_t k = 1; k <= outerSteps; ++k)
    for (int64_t split = 2; split <= innerSplits; split *= 2)
      add(outerStep * static_cast<double>(k), static_cast<double>(split), 0);
  dedupe();
  std::vector<Policy> winner;
  Spacing center;
  if (const std::vector<Policy> *best =
          bestOf(executor, budget, all, /*fitOnly=*/true, below)) {
    center = spacings[static_cast<size_t>(best - all.data())];
    winner = refined(*best, center);
  }
  // A third level (revolve's next): each stretch between two inner
  // checkpoints split in two or four by Nested ones, which only that
  // stretch's backward steps rebuild and hold; inner checkpoints every
  // half to every eighth of a segment (the winners of a wider grid, inner
  // splits to 64 and nested ones to 16, were all in this one). Taken only
  // where cheaper than two levels: a three-level grid winner refined can
  // end dearer than the two-level one refined (random 300-block residual
  // graphs at 0.02 and 0.03 of their peaks, by up to 0.2%). Not where one
  // level beat two: skipping it there lost none of the 29 budgets (of
  // 103) of random 50- to 300-block residual graphs from 0.012 to 0.06 of
  // their peaks where three levels were cheaper, nor any of auto's 7
  // cheaper answers on the bench's long training graphs; at ResNet50's
  // smallest budget, where one level wins, the grid took 3.4% of the
  // solve's instructions (callgrind).
  if (nested && (winner.empty() || center.split > 0)) {
    double cap =
        winner.empty() ? below : executor.evaluate(winner, budget).cost;
    all.clear();
    spacings.clear();
    for (int64_t k = 1; k <= outerSteps; ++k)
      for (int64_t split = 2; split <= 8; split *= 2)
        for (int64_t nestedSplit = 2; nestedSplit <= 4; nestedSplit *= 2)
          add(outerStep * static_cast<double>(k), static_cast<double>(split),
              static_cast<double>(nestedSplit));
    dedupe();
    if (const std::vector<Policy> *best =
            bestOf(executor, budget, all, /*fitOnly=*/true, cap))
      winner = refined(*best, spacings[static_cast<size_t>(best - all.data())]);
  }
  if (winner.empty())
    return none;
  if (policy)
    *policy = winner;
  return finish(graph, executor.answer(winner), budget);
}

namespace {
using SolverFn =
    std::function<SolveResult(const Graph &, int64_t, const SolverOptions &)>;
struct Entry {
  std::string name;
  SolverFn fn;
};
} // namespace

static const std::vector<Entry> &registry() {
  static const std::vector<Entry> entries = {
      {"none", solveNone},          {"every-layer", solveEveryLayer},
      {"chen-sqrt", solveChenSqrt}, {"chen-greedy", solveChenGreedy},
      {"greedy", solveGreedy},      {"milp", detail::solveMilp},
      {"auto", solveAuto},
  };
  return entries;
}

const std::vector<std::string> &remat::solverNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Entry &e : registry())
      out.push_back(e.name);
    return out;
  }();
  return names;
}

bool remat::isSolver(std::string_view name) {
  for (const Entry &e : registry())
    if (e.name == name)
      return true;
  return false;
}

std::vector<SolveResult> remat::solveSweep(std::string_view name,
                                           const Graph &graph,
                                           const std::vector<int64_t> &budgets,
                                           const SolverOptions &options,
                                           std::vector<double> *milliseconds) {
  std::vector<SolveResult> results(budgets.size());
  std::vector<size_t> order(budgets.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return budgets[a] < budgets[b]; });
  if (milliseconds)
    milliseconds->assign(budgets.size(), 0);
  Carried carried;
  for (size_t i : order) {
    auto start = std::chrono::steady_clock::now();
    if (name != "auto") {
      results[i] = solve(name, graph, budgets[i], options);
    } else {
      results[i] = solveAutoCarrying(graph, budgets[i], options, &carried);
      // A refusal carries nothing: its schedule fits no budget asked so
      // far.
      if (!results[i].feasible)
        carried = {};
    }
    if (milliseconds)
      (*milliseconds)[i] = std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - start)
                               .count();
  }
  return results;
}

SolveResult remat::solve(std::string_view name, const Graph &graph,
                         int64_t budget, const SolverOptions &options) {
  for (const Entry &e : registry()) {
    if (e.name != name)
      continue;
    SolveResult r = e.fn(graph, budget, options);
    // A schedule the simulator rejects has no meaningful peak: never report
    // one as the smallest budget reached; keeping everything always runs.
    if (!r.feasible && !simulate(graph, r.schedule).valid)
      return solveNone(graph, budget, options);
    return r;
  }
  return {};
}

std::optional<double> remat::measureAgainstBound(const Graph &graph,
                                                 int64_t budget,
                                                 CostBoundEffort effort,
                                                 double cost, SolveResult &r) {
  double bound = graph.costLowerBound(budget, effort);
  if (std::isfinite(bound) && (!r.lowerBound || *r.lowerBound < bound))
    r.lowerBound = bound;
  if (r.feasible && r.lowerBound && meetsLowerBound(cost, *r.lowerBound))
    r.optimal = true;
  if (!r.feasible && !std::isfinite(bound))
    r.optimal = true; // no in-order schedule fits at all
  if (!r.feasible || !r.lowerBound || !(cost > 0))
    return std::nullopt;
  if (r.optimal && *r.optimal)
    return 0.0;
  return std::max(0.0, (cost - *r.lowerBound) / cost);
}
