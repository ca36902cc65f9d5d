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

/// The order every solver picks by: feasible beats infeasible; among
/// feasible answers the cheaper wins, among infeasible the lower peak.
static bool isBetter(const SolveResult &a, const SolveResult &b) {
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
static SolveResult solveChenSqrt(const Graph &graph, int64_t budget,
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
static std::vector<NodeId> articulationCandidates(const Graph &graph) {
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
static SolveResult solveEveryLayer(const Graph &graph, int64_t budget,
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
static SolveResult solveChenGreedy(const Graph &graph, int64_t budget,
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
/// Where a schedule is over the budget, and which values are resident there:
/// an optimistic bound on what dropping a value can save, cheap enough to
/// ask of every candidate at every greedy step. Dropping a value lowers
/// memory by at most its size at the over-budget computes it is resident
/// across, and by at most their excess.
class PressureMap {
public:
  /// Maps `schedule` at `budget`, reusing the buffers of the last map: a
  /// greedy run maps its schedule again after every move it takes, and a
  /// pinning search makes hundreds of runs (a tenth of ResNet50's solve
  /// went to allocating and filling fresh maps). Node sizes come from the
  /// executor's `plan`, in flat arrays.
  void assign(const ExecutorPlan &plan, const Schedule &schedule,
              int64_t budget) {
    size_t n = schedule.size(), nodes = plan.graph.size();
    // What residentBytes() reports, the excess over the budget at each
    // compute, and how many of each value's residence spans end in a free.
    live.resize(n);
    overSum.resize(n + 1);
    overCount.resize(n + 1);
    overSum[0] = 0;
    overCount[0] = 0;
    first.assign(nodes + 1, 0);
    int64_t now = plan.graph.argumentBytes();
    for (size_t i = 0; i < n; ++i) {
      const Event &e = schedule[i];
      bool compute = e.kind == Event::Kind::Compute;
      now += compute ? plan.allocated[e.node] : -plan.allocated[e.node];
      live[i] = now + (compute ? plan.workspace[e.node] : 0);
      bool over = compute && live[i] > budget;
      overSum[i + 1] =
          overSum[i] + (over ? static_cast<double>(live[i] - budget) : 0.0);
      overCount[i + 1] = overCount[i] + over;
      if (!compute)
        ++first[e.node + 1];
    }
    // Residence spans [compute, free) of each value, grouped by value in
    // the order of their frees. Values never freed (outputs) are never
    // candidates and have none.
    for (size_t k = 1; k < first.size(); ++k)
      first[k] += first[k - 1];
    spans.resize(first.back());
    fill.assign(first.begin(), first.end() - 1);
    open.assign(nodes, 0);
    for (size_t i = 0; i < n; ++i) {
      const Event &e = schedule[i];
      if (e.kind == Event::Kind::Compute)
        open[e.node] = static_cast<uint32_t>(i);
      else
        spans[fill[e.node]++] = {open[e.node], static_cast<uint32_t>(i)};
    }
  }

  /// Upper bound on the excess that removing `id` (of `bytes`) saves.
  double gainBound(NodeId id, int64_t bytes) const {
    double bound = 0;
    for (uint32_t k = first[id]; k < first[id + 1]; ++k) {
      auto [lo, hi] = spans[k];
      double sum = overSum[hi] - overSum[lo];
      double capped =
          static_cast<double>(bytes) * (overCount[hi] - overCount[lo]);
      bound += std::min(sum, capped);
    }
    return bound;
  }

  /// Whether the memory in use at the events where `id` is not resident
  /// between its `from`-th residence span and its last stays within
  /// `room`: holding it there instead (one computation fewer per gap) must
  /// fit on top of it. Stops at the first event over (most undos that
  /// cannot fit are found within a few events).
  bool fitsBetweenSpans(NodeId id, uint32_t from, int64_t room) const {
    if (room < 0)
      return false;
    for (uint32_t k = first[id] + from; k + 1 < first[id + 1]; ++k)
      for (uint32_t i = spans[k].second; i < spans[k + 1].first; ++i)
        if (live[i] > room)
          return false;
    return true;
  }

private:
  std::vector<int64_t> live;
  std::vector<double> overSum;
  std::vector<int32_t> overCount;
  std::vector<uint32_t> first;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  std::vector<uint32_t> open, fill; // scratch
};
} // namespace

/// The most simulated computations one greedy run spends per graph node
/// before it stops where it is: far more than runs that meet their budget
/// on the field's graphs need, far less than a run at a budget it cannot
/// meet would take on graphs that recompute values over and over.
constexpr int64_t kGreedyWorkPerNode = 10000;

namespace {
/// How greedy keys every move when it (re)fills its heap: with the pressure
/// bound (one pass over the schedule per step, what scales to 10,000 nodes)
/// or with an exact simulation of each move (quadratic, but it reaches
/// tighter budgets on some graphs). Neither dominates the other.
enum class GreedyScoring { Bound, Exact };

/// Where a greedy run starts and what it reports beyond its answer.
struct GreedyFrom {
  /// The policies it starts from; all kept when null.
  const std::vector<Policy> *start = nullptr;
  /// Values whose policies it keeps (the one a pinning search keeps or
  /// drops, the two a shift moves, the four of two shifts), -1 padded.
  std::array<NodeId, 4> fixed = {-1, -1, -1, -1};
  bool isFixed(NodeId c) const {
    return std::find(fixed.begin(), fixed.end(), c) != fixed.end();
  }
  void hold(std::initializer_list<NodeId> values) {
    assert(values.size() <= fixed.size());
    fixed.fill(-1);
    std::copy(values.begin(), values.end(), fixed.begin());
  }
  /// Out: the policies of its answer, and the computations it simulated.
  std::vector<Policy> *policy = nullptr;
  int64_t *work = nullptr;
  /// Schedules without the cache of recomputed values.
  bool uncached = false;
  /// Passes of undos, each trying every moved value once, until one
  /// restores nothing: from the floor, a value kept spares the rebuilds of
  /// what it feeds, which can make room for another that did not fit.
  int undoPasses = 1;
  /// A cost at which the run gives up (a pinning search's answer so far):
  /// a move that reaches it ends the run, undos and all.
  double ceiling = std::numeric_limits<double>::infinity();
  /// Only an answer cheaper than this is wanted: a run that ends at or
  /// above it answers infeasible without a schedule (not scheduling and
  /// simulating what is thrown away was a tenth of a pinning search).
  double mustBeat = std::numeric_limits<double>::infinity();
  /// The executor to run on (one of the graph's), reused from run to run;
  /// one of its own when null.
  PolicyExecutor *executor = nullptr;
  /// The pressure map's buffers, reused from run to run (the graph's); its
  /// own when null.
  PressureMap *pressure = nullptr;
};
} // namespace

/// XLA-style greedy: starting from keeping everything, repeatedly make the
/// move (one candidate from Keep to Recompute or Transient, or from Recompute
/// to Transient; without a backward pass, any value to Release or Late) with
/// the largest reduction of bytes held above the budget per unit of extra
/// compute, until the budget is met; then undo moves that are no longer
/// needed, the most expensive first.
static SolveResult greedyRun(const Graph &graph, int64_t budget,
                             std::vector<std::vector<Policy>> *trajectory,
                             GreedyScoring scoring = GreedyScoring::Bound,
                             const GreedyFrom &from = {}) {
  std::vector<Policy> policy =
      from.start ? *from.start
                 : std::vector<Policy>(graph.size(), Policy::Keep);
  std::optional<ExecutorPlan> ownPlan;
  std::optional<PolicyExecutor> ownExecutor;
  if (!from.executor) {
    ownPlan.emplace(graph);
    ownExecutor.emplace(*ownPlan);
  }
  PolicyExecutor &executor = from.executor ? *from.executor : *ownExecutor;
  // Moves: a checkpoint candidate to Recompute or Transient; without a
  // backward pass, any value to Release or Late.
  const ExecutorPlan::Movable &movable = executor.executorPlan().movable();
  const std::vector<NodeId> &candidates = movable.values.all;
  // Release and Late: values of graphs without a backward pass.
  auto allowed = [&](NodeId c, Policy p) -> bool {
    if (from.isFixed(c))
      return false;
    return p == Policy::Late || p == Policy::Release ? movable.computesLate[c]
                                                     : movable.checkpoint[c];
  };
  // The ladder's run at 0 has no cache.
  executor.setCacheLimit(budget > 0 && !from.uncached ? budget : kNoBudget);
  // Deterministic bound on the search (no clock): on graphs whose smallest
  // budgets need values recomputed over and over, every evaluation grows
  // with the schedule, and a run at a budget it cannot meet would go on for
  // minutes.
  int64_t work = 0, n = static_cast<int64_t>(graph.size());
  // Every move is evaluated against the current policies, which the
  // executor remembers: the evaluation resumes where the move's value is
  // computed and, in a training graph, mostly ends soon after its last
  // read in the backward pass, where the state is the remembered run's
  // again; taking a move updates the memory the same way (ResNet50: 3 to
  // 4 evaluations per move taken, each about half a run). The memory keeps
  // the schedule's events: the pressure maps below need them. (The work
  // counted is what whole runs would take, so the search does not depend
  // on how much of it the evaluations skip.)
  executor.keepEvents(true);
  Evaluated current = executor.remember(policy, budget);
  work += current.computes;
  // Whether executor.rememberedEvents() is the schedule of `policy`.
  bool eventsCurrent = current.valid;
  auto evaluateMove = [&](NodeId c, Policy p, const Cutoff &cutoff) {
    Policy old = policy[c];
    policy[c] = p;
    Evaluated e = executor.evaluateChanged(policy, budget, cutoff, {c});
    policy[c] = old;
    work += e.computes;
    return e;
  };
  auto take = [&](NodeId c, Policy p, const Evaluated &e) {
    policy[c] = p;
    current = e;
    eventsCurrent = executor.rememberChanged(policy, budget, {c}).valid;
  };
  auto scheduleNow = [&]() -> const Schedule & {
    return eventsCurrent ? executor.rememberedEvents() : executor.run(policy);
  };
  if (trajectory)
    trajectory->push_back(policy);
  // Lazy evaluation: moves wait in a max-heap under an optimistic score
  // (the last exact one, or the pressure bound if lower); the top is scored
  // exactly against the current state and taken if it still beats every
  // other key. Scores mostly only fall as memory pressure eases, so this
  // takes a few exact evaluations per step instead of one per candidate,
  // and the bound retires moves whose value is no longer under pressure
  // without simulating them.
  struct Move {
    double score;
    NodeId node;
    Policy policy;
    bool operator<(const Move &o) const { return score < o.score; }
  };
  auto tryMove = [&](NodeId c, Policy p,
                     Evaluated &e) -> std::optional<double> {
    // A move that does not lower the excess is rejected.
    Cutoff cutoff;
    cutoff.excess = current.excess;
    e = evaluateMove(c, p, cutoff);
    double gain = current.excess - e.excess;
    if (e.cut || !e.valid || gain <= 0)
      return std::nullopt;
    return gain / std::max(e.cost - current.cost, 1e-9);
  };
  // Every move recomputes its value at least once more.
  auto boundScore = [&](NodeId c, const PressureMap &pressure) {
    const Node &n = graph.node(c);
    return pressure.gainBound(c, n.bytes) / std::max(n.cost, 1e-9);
  };
  // A re-scored move is taken if it is within this factor of the best
  // other key: exact lazy greedy re-scores most moves once per step on
  // large graphs, because every step lowers the excess every other move
  // saves.
  constexpr double kLazySlack = 0.8;
  std::priority_queue<Move> heap;
  // The pressure map of the current policies, where `mapped`.
  PressureMap ownPressure;
  PressureMap &pressure = from.pressure ? *from.pressure : ownPressure;
  bool mapped = false;
  auto mapNow = [&] {
    if (!mapped)
      pressure.assign(executor.executorPlan(), scheduleNow(), budget);
    mapped = true;
  };
  bool fresh = false; // the heap holds every move keyed at this state
  bool gaveUp = false;
  while (current.peak > budget && work <= kGreedyWorkPerNode * n) {
    mapNow();
    if (heap.empty()) {
      if (fresh)
        break; // no move lowers the excess
      for (NodeId c : candidates)
        for (Policy p : {Policy::Release, Policy::Recompute, Policy::Transient,
                         Policy::Late})
          if (p > policy[c] && allowed(c, p))
            if (double key = boundScore(c, pressure); key > 0) {
              Evaluated e;
              if (scoring == GreedyScoring::Bound)
                heap.push({key, c, p});
              else if (std::optional<double> exact = tryMove(c, p, e))
                heap.push({*exact, c, p});
            }
      fresh = true;
      continue;
    }
    Move top = heap.top();
    heap.pop();
    if (top.policy <= policy[top.node])
      continue;
    double bound = boundScore(top.node, pressure);
    if (bound <= 0)
      continue; // not resident where memory is over the budget
    if (bound < top.score && !heap.empty() && bound < heap.top().score) {
      heap.push({bound, top.node, top.policy});
      continue;
    }
    Evaluated e;
    std::optional<double> score = tryMove(top.node, top.policy, e);
    if (!score)
      continue;
    if (!heap.empty() && *score < kLazySlack * heap.top().score) {
      heap.push({*score, top.node, top.policy});
      continue;
    }
    // Moves only add cost, and the undos rarely take back much of it.
    if (e.cost >= from.ceiling) {
      policy[top.node] = top.policy;
      current = e;
      gaveUp = true;
      break;
    }
    take(top.node, top.policy, e);
    mapped = false;
    fresh = false;
    if (trajectory)
      trajectory->push_back(policy);
  }
  for (int pass = 0;
       pass < from.undoPasses && current.peak <= budget && !gaveUp; ++pass) {
    double before = current.cost;
    std::vector<NodeId> moved;
    for (NodeId c : candidates)
      if (policy[c] != Policy::Keep && !from.isFixed(c))
        moved.push_back(c);
    std::sort(moved.begin(), moved.end(), [&](NodeId a, NodeId b) {
      return graph.node(a).cost > graph.node(b).cost;
    });
    // Holding a value through a gap cannot fit where memory plus its size
    // already exceeds the budget: such undos are skipped unsimulated.
    for (NodeId c : moved) {
      Policy old = policy[c];
      for (Policy p : {Policy::Keep, Policy::Release, Policy::Recompute}) {
        if (p >= old)
          break;
        if (p != Policy::Keep && !allowed(c, p))
          continue;
        mapNow();
        // Kept, the value is resident across all its gaps; recomputed,
        // across those after its early uses. (Released, it depends on what
        // else is dropped: always tried.)
        uint32_t from = p == Policy::Recompute ? 1 : 0;
        if (p != Policy::Release &&
            !pressure.fitsBetweenSpans(c, from, budget - graph.node(c).bytes))
          continue;
        Cutoff cutoff;
        cutoff.cost = current.cost;
        cutoff.peak = budget;
        Evaluated e = evaluateMove(c, p, cutoff);
        if (!e.cut && e.valid && e.peak <= budget && e.cost < current.cost) {
          take(c, p, e);
          old = p;
          mapped = false;
          break;
        }
      }
    }
    if (current.cost >= before)
      break;
  }
  if (from.work)
    *from.work += work;
  if (from.policy)
    *from.policy = policy;
  // The answer's cost is the evaluation's (the same computations in the
  // same order).
  if (current.valid && current.cost >= from.mustBeat) {
    SolveResult unwanted;
    unwanted.cost = current.cost;
    return unwanted;
  }
  return finish(graph, executor.answer(policy), budget);
}

namespace {
/// The states greedy can answer "how low can you go" with, independent of
/// any one budget: its path with budget 0 and the end states of a bisection
/// over budgets between the arguments' bytes and the no-remat peak. The
/// path's states (a hundred or more) keep only their policies and figures;
/// the one chosen is scheduled.
struct GreedyLadder {
  /// The path's states first (schedules left empty), then the runs'.
  std::vector<SolveResult> states;
  /// The policies of every state; the path's are states[0 .. pathSize).
  std::vector<std::vector<Policy>> policies;
  size_t pathSize = 0;
};
} // namespace

static GreedyLadder greedyLadder(const Graph &graph, GreedyScoring scoring) {
  GreedyLadder ladder;
  greedyRun(graph, 0, &ladder.policies, scoring);
  ladder.pathSize = ladder.policies.size();
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  for (const std::vector<Policy> &policy : ladder.policies) {
    Evaluated e = executor.evaluate(policy, kNoBudget);
    SolveResult r;
    r.peakBytes = e.valid ? e.peak : -1; // see isBetter
    r.cost = e.cost;
    r.feasible = e.valid;
    ladder.states.push_back(std::move(r));
  }
  int64_t lo = graph.argumentBytes(), hi = ladder.states.front().peakBytes;
  // Failed runs just below greedy's limit mostly get stuck in the state
  // that set it: after two that end exactly there, the bisection stops.
  int stale = 0;
  while (hi - lo > std::max<int64_t>(1, hi / 1000) && stale < 2) {
    int64_t mid = lo + (hi - lo) / 2;
    GreedyFrom from;
    from.policy = &ladder.policies.emplace_back();
    SolveResult r = greedyRun(graph, mid, nullptr, scoring, from);
    if (r.feasible) {
      hi = r.peakBytes;
      stale = 0;
    } else {
      lo = mid;
      // A failed run still ends in a state that fits its own peak.
      if (r.peakBytes >= 0 && r.peakBytes < hi) {
        hi = r.peakBytes;
        stale = 0;
      } else if (r.peakBytes == hi) {
        ++stale;
      }
    }
    ladder.states.push_back(std::move(r));
  }
  return ladder;
}

/// Greedy's answer where its run at `budget` fails: the cheapest state of
/// its ladder that meets the budget, else the ladder's lowest peak. Because
/// the ladder does not depend on the budget, asking again with the reported
/// figure always succeeds.
static SolveResult fromLadder(const Graph &graph, int64_t budget,
                              GreedyScoring scoring,
                              std::vector<Policy> *policy = nullptr) {
  GreedyLadder ladder = greedyLadder(graph, scoring);
  size_t best = 0;
  for (size_t i = 0; i < ladder.states.size(); ++i) {
    SolveResult &s = ladder.states[i];
    s.feasible = s.peakBytes >= 0 && s.peakBytes <= budget;
    if (i > 0 && isBetter(s, ladder.states[best]))
      best = i;
  }
  if (policy)
    *policy = ladder.policies[best];
  if (best < ladder.pathSize)
    return finish(graph, scheduleFromPolicies(graph, ladder.policies[best]),
                  budget);
  return std::move(ladder.states[best]);
}

/// Graphs up to this size also get greedy with exact scoring; its cost
/// grows with the square of the graph.
constexpr size_t kExactGreedyNodes = 1000;

/// Graphs over this size get a fixed number of greedy runs: one takes
/// seconds there (4 s on 10,001 nodes near their smallest budgets, three
/// times what it takes at half the peak), so greedy does not retry at
/// smaller budgets, nor auto at the fractions below it, and on training
/// graphs the floor stands in for the ladder (a dozen runs: a refusal took
/// 45 s on 10,001 nodes). On the bench's 10,001-node graph the retries
/// changed no answer from 0.03 to 0.5 of its peak and took auto to 13 s.
constexpr size_t kManyRunsNodes = 1000;

/// Evaluations of the local search from auto's best answer (one costs a
/// simulation of the schedule: about 25 microseconds on ResNet50).
constexpr int kFinalSwapEvaluations = 1000;

/// Evaluations of the swaps after the pinning search, on training graphs
/// up to kExactGreedyNodes.
/// On the sweep's budgets (seventeenth session) 300 lowered gpt at 0.275
/// and 0.298 of its peak (1.4985x -> 1.4869x, 1.2764x -> 1.2648x) and
/// ResNet50 at 0.108, 0.137 and 0.194, for 2.4% to 3.1% more instructions
/// at ResNet50's slowest budgets; 1,000 lowered ResNet50 at 0.166 too
/// (1.0968x -> 1.0965x) and 0.108 further (1.2673x), for 5% to 7%.
constexpr int kPostPinningSwapEvaluations = 300;

/// Where greedy's runs fit a training graph of at most kExactGreedyNodes,
/// the winner's long search before the pinning search stops after this
/// many evaluations, and the swaps after it get kFinalSwapEvaluations
/// more: a start polished by a thousand swaps leads the pinning search to
/// a dearer local optimum at some budgets (ResNet50 at 0.166 of its peak:
/// 1.0968x, where 300 before and 1,300 after reach 1.0913x).
constexpr int kSwapsBeforePinning = 300;

/// The work (simulated computations, per graph node) of auto's pinning
/// search from its best answer: on ResNet50 at its smallest budgets about
/// 20 pins, 26 ms; on graphs up to kSmallGraphNodes, where pins are cheap,
/// enough to end where a whole cycle of pins finds nothing cheaper. Graphs
/// over kExactGreedyNodes get what one of that size gets: a pin costs a
/// greedy run, which grows with the graph (at 10,001 nodes the per-node
/// work took 4 s).
constexpr int64_t kPinningWorkPerNode = 3000;
constexpr int64_t kSmallGraphPinningWork = 30000;

/// The share of the pinning search's work its unpinning may spend (see
/// improveByPinning); the pins get the rest. Half: on ResNet50's 32 sweep
/// budgets, 0.7 was dearer at two (0.113 and 0.171 of its peak), cheaper
/// at none.
constexpr double kUnpinShare = 0.5;

/// The share of the pinning search's work its group promotions may spend
/// first (PinningSearch::promote): of kPinningWorkPerNode per node, also on
/// small graphs, whose own bound is ten times that.
constexpr double kPromoteShare = 0.15;

/// After the pinning search, windows of this many consecutive movable
/// values move one step toward Keep at once (PinningSearch::promoteWindows),
/// with up to kWindowShare of kPinningWorkPerNode per node more. Measured
/// on the sweep's budgets (single calls, side by side, 2026-12-05, sixth
/// session): windows of 16 with a tenth of the work lowered ResNet50 at 4
/// budgets (0.171 of its peak: 1.0870x -> 1.0856x), MobileNet, resnet, n500
/// and n1000 at 1, 1, 5 and 9, and raised none (a result is only taken if
/// cheaper); 0.05 of the work lowered 3 of ResNet50's and none of
/// MobileNet's, 0.15 no more than 0.1; windows of 16 and 8 with 0.3, 7 of
/// ResNet50's, its median solve about 20% slower. Before the unpinning search
/// instead, with the same total work, ResNet50 at 0.113 fell to 1.2011x but gpt
/// and unet rose at one budget each.
constexpr size_t kWindowValues = 16;
constexpr double kWindowShare = 0.1;

/// The work of the boundary shifts after the window promotions
/// (PinningSearch::shift), as a share of kPinningWorkPerNode per node (of a
/// graph of at most kExactGreedyNodes). Over the sweep's budgets, the
/// passes reach it at one of ResNet50's and end before a third of it on
/// gpt, unet, resnet and the MLP.
constexpr double kShiftShare = 0.3;

/// In training graphs a pin's greedy run gives up once its drops cost this
/// share of the answer's extra compute more than the answer: its undos
/// rarely take back that much (on ResNet50 at 0.113 of its peak, at most
/// 4% of the extra compute, mostly nothing), and a failing pin's drops
/// were most of the search's work: at 0.113, 0.142 and 0.199 of ResNet50's
/// peak 48, 53 and 91 pins fit where 21, 29 and 75 did (before the group
/// promotions, which now take some of the work: 48, 52 and 51). 0 made the
/// graphs
/// whose searches end before their work bound (MobileNet, resnet, gpt)
/// dearer at 7 sweep budgets (resnet at 0.471: 1.0370x -> 1.0452x) and
/// ResNet50 at one; 0.02 made random training graphs
/// dearer more often than cheaper; 0.1 lost ResNet50's gains. Without a
/// backward pass the undos (Release, Late) matter more: Moccasin's graphs were
/// dearer at a third of the budgets changed.
constexpr double kPinGiveUpMargin = 0.05;

/// On graphs up to kSmallGraphNodes, the pinning search also starts from
/// this many more of auto's answers, the cheapest distinct ones.
constexpr size_t kMorePinningStarts = 3;

/// Graphs up to this size, where a greedy run costs a millisecond or two,
/// get more of them: greedy consults its ladder wherever its run gets
/// stuck, even when a retry fits (the ladder's states are sometimes
/// cheaper), and auto consults greedy's ladder at every budget, greedy's
/// ladder with exact scoring wherever that run fails, and runs at more
/// budgets below the one asked for.
constexpr size_t kSmallGraphNodes = 256;

/// Auto's greedy run from the cost bound's cover runs only where that
/// start peaks at most this many times the budget (on the sweep's budgets
/// it led somewhere cheaper only where the start peaked under 1.95 times).
constexpr int64_t kCoverStartPeak = 2;

/// Where greedy's run gets stuck, it runs again at these fractions of the
/// budget before it turns to its ladder: its path depends on the budget,
/// and a slightly smaller one often gets through (or ends in a state that
/// fits the budget asked for) for the price of one run, where the ladder
/// takes a dozen.
constexpr double kGreedyRetryFractions[] = {0.98, 0.96};

static int64_t scaledBudget(int64_t budget, double fraction) {
  return static_cast<int64_t>(static_cast<double>(budget) * fraction);
}

/// A greedy run at `target`, judged against `budget` (a run at a smaller
/// target, or one that failed, may still fit it).
static SolveResult greedyAnswer(const Graph &graph, int64_t target,
                                int64_t budget, GreedyScoring scoring,
                                std::vector<Policy> *policy = nullptr,
                                bool uncached = false) {
  GreedyFrom from;
  from.policy = policy;
  from.uncached = uncached;
  SolveResult r = greedyRun(graph, target, nullptr, scoring, from);
  r.feasible = r.peakBytes >= 0 && r.peakBytes <= budget;
  return r;
}

/// Undo passes from the floor: ResNet50 at 4.110 GB 1.2820x with one,
/// 1.2703x with three (3.3% more instructions for the solve), the same
/// with six.
constexpr int kFloorUndoPasses = 8;

/// On a training graph, the least memory a policy choice alone reaches:
/// every checkpoint candidate Transient, rebuilt for each backward use. A
/// search that drops values one by one from keeping everything can stall
/// above it, where only several drops together lower the peak (ResNet50:
/// every greedy run and ladder state peaked at 4.316 GB or more, this at
/// 4.110 GB). Empty on other graphs, where Transient does not mean the
/// least memory.
static std::vector<Policy> floorPolicies(const Graph &graph) {
  if (!hasBackward(graph))
    return {};
  std::vector<Policy> policy(graph.size(), Policy::Keep);
  for (NodeId c : checkpointCandidates(graph))
    policy[c] = Policy::Transient;
  return policy;
}

/// On a graph over kManyRunsNodes with a floor, greedy and auto skip the
/// ladder for it.
static bool floorForLadder(const Graph &graph) {
  return graph.size() > kManyRunsNodes && hasBackward(graph);
}

namespace {
/// Greedy's runs at one budget, each answer judged against that budget.
struct GreedyRuns {
  std::vector<SolveResult> answers;
  /// The policies of each answer.
  std::vector<std::vector<Policy>> policies;
  /// Some answer fits the budget.
  bool fits = false;
  /// The run at the budget got stuck, so the retries were made.
  bool retried = false;
  /// Among the retries, greedy with exact scoring at the budget (graphs up
  /// to kExactGreedyNodes), and whether it met it.
  bool exactRan = false, exactMet = false;
};
} // namespace

/// Greedy's run at `budget`; where it gets stuck, runs at slightly smaller
/// budgets and, on graphs small enough, with exact scoring, which gets
/// through where the bound's choices got stuck (ResNet50 near its smallest
/// budgets). Only if none of them fits does greedy need the floor or its
/// ladder.
static GreedyRuns greedyRuns(const Graph &graph, int64_t budget) {
  GreedyRuns runs;
  auto run = [&](int64_t target, GreedyScoring scoring) {
    runs.answers.push_back(greedyAnswer(graph, target, budget, scoring,
                                        &runs.policies.emplace_back()));
    runs.fits |= runs.answers.back().feasible;
    return runs.answers.back().feasible;
  };
  if (run(budget, GreedyScoring::Bound))
    return runs;
  runs.retried = true;
  if (graph.size() > kManyRunsNodes)
    return runs;
  for (double fraction : kGreedyRetryFractions)
    run(scaledBudget(budget, fraction), GreedyScoring::Bound);
  if (graph.size() <= kExactGreedyNodes) {
    runs.exactRan = true;
    runs.exactMet = run(budget, GreedyScoring::Exact);
  }
  return runs;
}

/// Greedy from the floor (floorPolicies), for training graphs where
/// greedy's runs and ladder do not fit: the undos restore what the budget
/// allows, the most expensive values first. With the cache of recomputed
/// values first (cheaper), then without it, which never peaks above the
/// floor itself (the cache can: a pending computation's cached inputs
/// stay). Without a floor, an answer that loses every comparison.
static SolveResult floorAnswer(const Graph &graph, int64_t budget,
                               std::vector<Policy> *policy = nullptr) {
  std::vector<Policy> floor = floorPolicies(graph);
  SolveResult r;
  r.peakBytes = -1; // no schedule: loses every comparison (isBetter)
  if (floor.empty())
    return r;
  for (bool uncached : {false, true}) {
    GreedyFrom from;
    from.start = &floor;
    from.uncached = uncached;
    from.policy = policy;
    from.undoPasses = kFloorUndoPasses;
    r = greedyRun(graph, budget, nullptr, GreedyScoring::Bound, from);
    if (r.feasible)
      break;
  }
  return r;
}

static SolveResult solveGreedy(const Graph &graph, int64_t budget,
                               const SolverOptions &) {
  GreedyRuns runs = greedyRuns(graph, budget);
  if (!runs.fits) {
    // The floor first: one run where the ladder takes a dozen (at
    // ResNet50's smallest budget, 100 of auto's 186 ms). Graphs up to
    // kSmallGraphNodes, where runs are cheap, consult both.
    SolveResult floor = floorAnswer(graph, budget);
    if ((floor.feasible && graph.size() > kSmallGraphNodes) ||
        floorForLadder(graph))
      return floor;
    SolveResult ladder = fromLadder(graph, budget, GreedyScoring::Bound);
    return isBetter(floor, ladder) ? floor : ladder;
  }
  if (runs.retried && graph.size() <= kSmallGraphNodes)
    runs.answers.push_back(fromLadder(graph, budget, GreedyScoring::Bound));
  SolveResult *best = &runs.answers.front();
  for (SolveResult &r : runs.answers)
    if (isBetter(r, *best))
      best = &r;
  return std::move(*best);
}

/// Local search after greedy: move one value a step toward Keep and a nearby
/// one (in candidate order) a step away from it, among the policies greedy
/// may give each, keeping any swap that stays within the budget and lowers
/// the cost. `policy` is updated to the answer's. Deterministic: the work is
/// bounded by a count of evaluations, not by the clock.
static SolveResult improveBySwaps(const Graph &graph, int64_t budget,
                                  std::vector<Policy> &policy,
                                  int maxEvaluations) {
  ExecutorPlan plan(graph);
  const MovableValues &movable = plan.movable().values;
  const std::vector<NodeId> &checkpoints = movable.checkpoints,
                            &lates = movable.lates, &candidates = movable.all;
  auto bit = [](Policy p) { return 1u << static_cast<unsigned>(p); };
  std::vector<unsigned> allowed(graph.size(), bit(Policy::Keep));
  for (NodeId c : checkpoints)
    allowed[c] |= bit(Policy::Recompute) | bit(Policy::Transient);
  for (NodeId c : lates)
    allowed[c] |= bit(Policy::Release) | bit(Policy::Late);
  // The next policy `c` may have from `p`, one step toward Keep (dir -1) or
  // away from it (+1).
  auto step = [&](NodeId c, Policy p, int dir) -> std::optional<Policy> {
    for (int q = static_cast<int>(p) + dir;
         q >= 0 && q <= static_cast<int>(Policy::Late); q += dir)
      if (allowed[c] & bit(static_cast<Policy>(q)))
        return static_cast<Policy>(q);
    return std::nullopt;
  };
  PolicyExecutor executor(plan);
  executor.setCacheLimit(budget);
  // Swaps are evaluated against the current policies, remembered (see
  // greedyRun).
  Evaluated current = executor.remember(policy, kNoBudget);
  const int window = 6;
  int evaluations = 0;
  bool improved = true;
  while (improved && evaluations < maxEvaluations) {
    improved = false;
    for (size_t a = 0; a < candidates.size() && evaluations < maxEvaluations;
         ++a) {
      NodeId up = candidates[a];
      Policy upOld = policy[up];
      std::optional<Policy> upNew = step(up, upOld, -1);
      if (!upNew)
        continue;
      size_t lo = a >= window ? a - window : 0;
      size_t hi = std::min(candidates.size(), a + window + 1);
      for (size_t b = lo; b < hi && evaluations < maxEvaluations; ++b) {
        NodeId down = candidates[b];
        std::optional<Policy> downNew;
        if (down == up || !(downNew = step(down, policy[down], +1)))
          continue;
        Policy downOld = policy[down];
        policy[up] = *upNew;
        policy[down] = *downNew;
        Cutoff cutoff;
        cutoff.cost = current.cost;
        cutoff.peak = budget;
        Evaluated e =
            executor.evaluateChanged(policy, kNoBudget, cutoff, {up, down});
        ++evaluations;
        if (!e.cut && e.valid && e.peak <= budget && e.cost < current.cost) {
          current = e;
          executor.rememberChanged(policy, kNoBudget, {up, down});
          improved = true;
          break;
        }
        policy[up] = upOld;
        policy[down] = downOld;
      }
    }
  }
  return finish(graph, scheduleFromPolicies(graph, policy, budget), budget);
}

namespace {
/// The pinning and unpinning searches' shared state: the answer so far, its
/// policies, and the computations simulated.
struct PinningSearch {
  const Graph &graph;
  int64_t budget;
  std::vector<Policy> &policy;
  SolveResult answer;
  int64_t work = 0;
  /// Pins in training graphs give up early (kPinGiveUpMargin).
  bool giveUp = true;
  /// Pins tried.
  int pins = 0;
  /// The executor and the pressure map's buffers every greedy run of the
  /// search reuses.
  std::unique_ptr<ExecutorPlan> plan;
  std::unique_ptr<PolicyExecutor> executor;
  PressureMap pressure;

  /// Greedy from `start`, where the values in `fixed` keep their policies;
  /// true (and the new answer taken) if it is cheaper. With `giveUp` (pins,
  /// promotions and shifts in training graphs), greedy stops where its
  /// drops alone cost kPinGiveUpMargin of the answer's extra compute more
  /// than the answer.
  bool improveFrom(const std::vector<Policy> &start,
                   std::initializer_list<NodeId> fixed, bool giveUp) {
    std::vector<Policy> result;
    GreedyFrom from;
    if (giveUp)
      from.ceiling =
          answer.cost + kPinGiveUpMargin * (answer.cost - graph.baselineCost());
    from.start = &start;
    from.hold(fixed);
    from.policy = &result;
    from.work = &work;
    from.mustBeat = answer.cost;
    if (!executor) {
      plan = std::make_unique<ExecutorPlan>(graph);
      executor = std::make_unique<PolicyExecutor>(*plan);
    }
    from.executor = executor.get();
    from.pressure = &pressure;
    SolveResult r =
        greedyRun(graph, budget, nullptr, GreedyScoring::Bound, from);
    if (!r.feasible || r.cost >= answer.cost)
      return false;
    answer = std::move(r);
    policy = std::move(result);
    return true;
  }

  /// Keep one value the answer drops, let greedy restore the budget from
  /// there (it may drop any other value, and then undoes the drops no
  /// longer needed), and take the result if it is cheaper. Values are pinned
  /// in turn, the most expensive first, cycling through the current
  /// answer's drops until a whole cycle finds nothing cheaper or the work
  /// reaches `maxWork`. Swaps change two values by one step each; a cheaper
  /// answer is often three or more changes away (one value kept, two others
  /// dropped), which greedy's repair finds in one move.
  void pin(int64_t maxWork) {
    // The answer's drops, the most expensive first.
    auto droppedOf = [&] {
      std::vector<NodeId> dropped;
      for (NodeId id = 0; id < static_cast<NodeId>(graph.size()); ++id)
        if (policy[id] != Policy::Keep)
          dropped.push_back(id);
      std::stable_sort(dropped.begin(), dropped.end(), [&](NodeId a, NodeId b) {
        return graph.node(a).cost > graph.node(b).cost;
      });
      return dropped;
    };
    std::vector<NodeId> dropped = droppedOf();
    bool early = giveUp && hasBackward(graph);
    size_t sinceImproved = 0, next = 0;
    while (work < maxWork && sinceImproved < dropped.size()) {
      NodeId v = dropped[next++ % dropped.size()];
      ++sinceImproved;
      std::vector<Policy> start = policy;
      start[v] = Policy::Keep;
      ++pins;
      if (improveFrom(start, {v}, early)) {
        dropped = droppedOf();
        sinceImproved = 0;
      }
    }
  }

  /// Groups of values one step toward Keep at once (training graphs): each
  /// connected group (through inputs and users) of values the answer
  /// recomputes for every use goes to Recompute, then each group it
  /// recomputes once goes to Keep, and greedy restores the budget from
  /// there; a cheaper result is taken and the groups found again. Pins and
  /// swaps move one value: where a chain is recomputed for each of its
  /// uses, keeping one link still leaves the rest to come back as often
  /// (gpt at its smallest budget recomputed a block's nodes five times).
  /// Until a pass over the groups finds nothing cheaper or the work
  /// reaches `maxWork`.
  void promote(int64_t maxWork) {
    for (auto [from, to] : {std::pair(Policy::Transient, Policy::Recompute),
                            std::pair(Policy::Recompute, Policy::Keep)}) {
      bool improved = true;
      while (improved && work < maxWork) {
        improved = false;
        std::vector<char> seen(graph.size(), 0);
        for (NodeId v = 0; v < static_cast<NodeId>(graph.size()) && !improved &&
                           work < maxWork;
             ++v)
          if (policy[v] == from && !seen[v])
            // Like a pin, its start is cheaper than the answer: give up
            // where greedy's drops pass it (unet at 0.426 of its peak:
            // 1.3521x -> 1.3340x, what annealing finds; no sweep budget
            // dearer).
            improved = improveFrom(promoted(v, to, seen), {}, /*giveUp=*/true);
      }
    }
  }

  /// The answer's policies with `v`'s group (the values connected to it
  /// through inputs and users that have its policy) set to `to`, each
  /// marked in `seen`.
  std::vector<Policy> promoted(NodeId v, Policy to, std::vector<char> &seen) {
    Policy from = policy[v];
    std::vector<Policy> start = policy;
    std::vector<NodeId> stack = {v};
    seen[v] = 1;
    auto visit = [&](NodeId y) {
      if (policy[y] == from && !seen[y]) {
        seen[y] = 1;
        stack.push_back(y);
      }
    };
    while (!stack.empty()) {
      NodeId x = stack.back();
      stack.pop_back();
      start[x] = to;
      for (NodeId y : graph.deps(x))
        visit(y);
      for (NodeId y : graph.users(x))
        visit(y);
    }
    return start;
  }

  /// Windows of kWindowValues consecutive movable values (the checkpoint
  /// candidates in training graphs, every movable value elsewhere), half
  /// overlapping, each moved one step toward Keep at once (Transient to
  /// Recompute, Late to Release, any other drop to Keep); greedy restores
  /// the budget from there (giving up like a pin in training graphs), and
  /// a cheaper result is taken. Groups of one policy connected through
  /// edges are what promote moves; a window crosses policies and
  /// branches: a stretch of the network recomputed less, paid for
  /// elsewhere (ResNet50 at 0.171 of its peak: 1.0870x -> 1.0856x). The
  /// windows where the answer drops the most compute go first, until the
  /// work reaches `maxWork`.
  void promoteWindows(int64_t maxWork) {
    bool training = hasBackward(graph);
    MovableValues movable = movableValues(graph);
    const std::vector<NodeId> &order =
        training ? movable.checkpoints : movable.all;
    if (order.empty())
      return;
    // Each window's start and the compute of the values it drops; a window
    // that drops nothing has nothing to promote.
    std::vector<std::pair<double, size_t>> windows;
    for (size_t start = 0; start < order.size(); start += kWindowValues / 2) {
      double cost = 0;
      for (size_t k = start; k < std::min(start + kWindowValues, order.size());
           ++k)
        if (policy[order[k]] != Policy::Keep)
          cost += graph.node(order[k]).cost;
      if (cost > 0)
        windows.push_back({cost, start});
    }
    std::stable_sort(
        windows.begin(), windows.end(),
        [](const auto &a, const auto &b) { return a.first > b.first; });
    for (size_t w = 0; w < windows.size() && work < maxWork; ++w) {
      size_t start = windows[w].second;
      std::vector<Policy> moved = policy;
      for (size_t k = start; k < std::min(start + kWindowValues, order.size());
           ++k) {
        Policy &p = moved[order[k]];
        if (p != Policy::Keep)
          p = p == Policy::Transient ? Policy::Recompute
              : p == Policy::Late    ? Policy::Release
                                     : Policy::Keep;
      }
      // An earlier window's answer may keep this one's values already.
      if (moved != policy)
        improveFrom(moved, {}, /*giveUp=*/training);
    }
  }

  /// Move a kept layer boundary to the next one before or after it
  /// (training graphs): where the answer keeps one of the values that alone
  /// cross a cut of the forward pass (articulationCandidates) and drops a
  /// neighbouring one, keep that one and drop this (Recompute, else
  /// Transient), both held, and let greedy restore the budget from there.
  /// Which boundaries to keep is the choice revolve and Rotor make; a pin
  /// adds one and an unpin removes one, and neither pays where the two
  /// must change together (gpt at 0.285 of its peak kept the residual
  /// stream after its third block's attention, where keeping it after the
  /// second block's MLP costs 1.2% less compute). Passes over the kept
  /// boundaries, until one finds nothing cheaper or the work reaches
  /// `maxWork`.
  void shift(int64_t maxWork) {
    std::vector<NodeId> order = articulationCandidates(graph);
    // Where every candidate is a boundary (chains such as VGG16 and
    // MobileNet), shifts cost time and found nothing over the sweep: the
    // swaps move neighbouring values already, and the chain program picks
    // a chain's boundaries itself.
    if (order.size() >= movableValues(graph).checkpoints.size())
      return;
    bool improved = true;
    while (improved && work < maxWork) {
      improved = false;
      for (size_t k = 0; k < order.size() && work < maxWork; ++k) {
        NodeId u = order[k];
        if (policy[u] != Policy::Keep)
          continue;
        for (size_t j : {k - 1, k + 1}) {
          // k - 1 wraps around to a huge index where k is 0.
          if (j >= order.size() || policy[order[j]] == Policy::Keep)
            continue;
          NodeId v = order[j];
          bool moved = false;
          for (Policy p : {Policy::Recompute, Policy::Transient}) {
            std::vector<Policy> start = policy;
            start[u] = p;
            start[v] = Policy::Keep;
            if ((moved = improveFrom(start, {u, v}, /*giveUp=*/true)))
              break;
          }
          if (moved) {
            improved = true;
            break;
          }
        }
      }
    }
  }

  /// The other way round (training graphs): drop one value the answer
  /// keeps (Transient, else Recompute) and let greedy undo the drops that
  /// now fit. Pinning trades one kept value for several dropped ones and
  /// does not reach these: at ResNet50's smallest budget the cheapest
  /// schedules found recompute the stem's large, cheap activations from the
  /// input and the blocks after it less often. The checkpoint candidates
  /// in turn, the most bytes per unit of compute first (the drops most
  /// likely to make room), until a whole cycle finds nothing cheaper or the
  /// work reaches `maxWork`.
  void unpin(int64_t maxWork) {
    std::vector<NodeId> order = movableValues(graph).checkpoints;
    std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
      const Node &x = graph.node(a), &y = graph.node(b);
      return static_cast<double>(x.bytes) * std::max(y.cost, 1e-9) >
             static_cast<double>(y.bytes) * std::max(x.cost, 1e-9);
    });
    size_t sinceImproved = 0, next = 0;
    while (work < maxWork && sinceImproved < order.size()) {
      NodeId v = order[next++ % order.size()];
      ++sinceImproved;
      if (policy[v] != Policy::Keep)
        continue;
      for (Policy p : {Policy::Transient, Policy::Recompute}) {
        std::vector<Policy> start = policy;
        start[v] = p;
        // Its start costs more than the answer: the undos must win it back.
        if (improveFrom(start, {v}, /*giveUp=*/false)) {
          sinceImproved = 0;
          break;
        }
      }
    }
  }
};
} // namespace

/// Local search with larger neighbourhoods than swaps (PinningSearch): in a
/// training graph promoting groups first (with up to kPromoteShare of the
/// work a graph of its size gets by default), then unpinning, until
/// `unpinShare` of `maxWork` simulated computations, then pinning with what
/// is left. Never dearer than `answer`; `policy` is updated to the
/// result's.
static SolveResult improveByPinning(const Graph &graph, int64_t budget,
                                    std::vector<Policy> &policy,
                                    SolveResult answer, int64_t maxWork,
                                    double unpinShare = kUnpinShare) {
  PinningSearch search{graph, budget, policy, std::move(answer)};
  if (unpinShare > 0 && hasBackward(graph)) {
    // Not on graphs over kExactGreedyNodes, whose work bound is a smaller
    // one's: there the pins need it (the synthetic chains of 1,001 to
    // 10,001 nodes were dearer with the promotions, by up to 0.5% of the
    // extra compute).
    if (graph.size() <= kExactGreedyNodes)
      search.promote(std::min(
          maxWork, static_cast<int64_t>(kPromoteShare * kPinningWorkPerNode *
                                        static_cast<double>(graph.size()))));
    search.unpin(
        static_cast<int64_t>(unpinShare * static_cast<double>(maxWork)));
  }
  search.pin(maxWork);
  return std::move(search.answer);
}

/// One of the pinning search's moves (`move`: PinningSearch::promoteWindows
/// or PinningSearch::shift) from `answer`, whose policies are `policy`, with
/// `maxWork` simulated computations. Never dearer than `answer`; `policy`
/// is updated to the result's.
static SolveResult improveBy(void (PinningSearch::*move)(int64_t),
                             const Graph &graph, int64_t budget,
                             std::vector<Policy> &policy, SolveResult answer,
                             int64_t maxWork) {
  if (!answer.feasible)
    return answer;
  PinningSearch search{graph, budget, policy, std::move(answer)};
  (search.*move)(maxWork);
  return std::move(search.answer);
}

/// The annealing search runs in cycles of a fixed number of evaluations,
/// each from the cheapest answer so far, its temperature falling linearly
/// from a start to 0; the starts go 2%, 1%, 0.5% and 0.25% of the starting
/// answer's extra compute and then again, so that the search tries several
/// scales. A cycle does not depend on the time granted, so more time only
/// adds cycles: on one machine a longer search never ends dearer (the
/// first schedule, cycles whose length followed the time granted, made
/// Moccasin's n500 at 0.701 of its peak 1.22x in 1 s and 1.45x in 5 s).
/// 20,000 evaluations take about 0.4 s on ResNet50, 0.3 s on n500,
/// 1 s on n1000. The scales
/// were tried in runs of a second, three each, at six hard budgets
/// (ResNet50, gpt, unet, Moccasin's n500 and n1000), against 0.5% or 1%
/// at every cycle's start and halvings from 4%: no setting wins
/// everywhere, and the spread between runs of one setting is as large as
/// the differences.
constexpr double kAnnealTemperature = 0.02;
constexpr int64_t kAnnealScales = 4;
constexpr int64_t kAnnealCycleEvaluations = 20000;

/// Without a backward pass, auto's default search ends with annealing
/// where its answer's extra compute passes kDefaultAnnealExtra of the
/// compute without remat: up to kDefaultAnnealCycles cycles, the next only
/// where the last lowered the extra compute by kDefaultAnnealMinGain of it
/// or more. There greedy's path drops early values whose recomputation
/// drags long chains back in, and no pin or window undoes that alone; the
/// annealing keeps the early values and drops later ones (Moccasin's n500
/// at 0.721 of its peak: 1.502x -> 1.168x in the first cycle, its solve
/// 0.97 s -> 1.42 s). Measured 2026-12-05 (eighth session), single calls:
/// the gains are at Moccasin's n500 and n1000 near their smallest budgets,
/// where later cycles, colder, keep finding cheaper answers (n1000 at
/// 0.665: one cycle 3.261x, three 2.382x, five 2.268x; its solve 6.3, 9.8
/// and 13.3 s); their larger budgets (overheads under 1.1x) and n100 and
/// n250 gained nothing from a cycle, nor from five seconds. On training
/// graphs the pinning search and the cache come within 5% of what five
/// seconds of annealing find (bench/results/search.md), and a cycle would
/// take ResNet50's solve past 100 ms.
constexpr double kDefaultAnnealExtra = 0.1;
constexpr int64_t kDefaultAnnealCycles = 3;
constexpr double kDefaultAnnealMinGain = 0.01;

/// Simulated annealing over the policies: a few cycles at the end of auto's
/// default search on graphs without a backward pass (kDefaultAnnealExtra),
/// and as long as a caller grants beyond it (SolverOptions::searchSeconds):
/// change one or two random values (the second often an input or a user of the
/// first) to random policies they may have, take the
/// result if it fits the budget and costs at most a random margin more
/// (Metropolis: exp(-increase / T), T falling linearly to 0 in each cycle
/// of kAnnealCycleEvaluations, each starting half as hot as the one before
/// over kAnnealScales scales), and keep the cheapest seen. Pinning and swaps
/// stop in a local optimum; this walks out of it through answers a little
/// dearer. It stops at `deadline`, after `maxEvaluations`, at an answer that
/// costs `floor` (a lower bound), or after a cycle that lowered the cheapest
/// answer's extra compute by less than `minCycleGain` of it (0: never),
/// whichever comes first; its random choices are seeded, so a run bounded by
/// evaluations is reproducible.
static SolveResult improveByAnnealing(
    const Graph &graph, int64_t budget, std::vector<Policy> &policy,
    SolveResult answer, std::chrono::steady_clock::time_point deadline,
    int64_t maxEvaluations, double floor = 0, double minCycleGain = 0) {
  MovableValues movable = movableValues(graph);
  const std::vector<NodeId> &values = movable.all;
  if (values.empty())
    return answer;
  // Each value's policies: Keep, and those greedy may give it.
  std::vector<std::vector<Policy>> choices(graph.size());
  for (NodeId c : values)
    choices[c].push_back(Policy::Keep);
  for (NodeId c : movable.checkpoints)
    choices[c].insert(choices[c].end(), {Policy::Recompute, Policy::Transient});
  for (NodeId c : movable.lates)
    choices[c].insert(choices[c].end(), {Policy::Release, Policy::Late});
  // The movable inputs and users of each movable value.
  std::vector<std::vector<NodeId>> neighbours(graph.size());
  for (NodeId c : values) {
    for (NodeId d : graph.deps(c))
      if (!choices[d].empty())
        neighbours[c].push_back(d);
    for (NodeId u : graph.users(c))
      if (!choices[u].empty())
        neighbours[c].push_back(u);
  }
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  executor.setCacheLimit(budget);
  // The evaluations resume from the remembered run and mostly end where it
  // is met again, and an accepted change is spliced into the memory (see
  // greedyRun).
  Evaluated current = executor.remember(policy, kNoBudget);
  if (!current.valid || current.peak > budget)
    return answer;
  std::vector<Policy> best = policy;
  double bestCost = current.cost;
  double start =
      kAnnealTemperature * std::max(current.cost - graph.baselineCost(),
                                    1e-9 * graph.baselineCost());
  std::mt19937_64 rng(0x5eed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t cycle = 0;
  double cycleStart = bestCost;
  std::vector<std::pair<NodeId, Policy>> undo;
  for (int64_t evaluations = 0; evaluations < maxEvaluations; ++evaluations) {
    if (evaluations % 256 == 0 && std::chrono::steady_clock::now() >= deadline)
      break;
    int64_t at = evaluations / kAnnealCycleEvaluations;
    if (at != cycle) {
      if (cycleStart - bestCost <
          minCycleGain * (cycleStart - graph.baselineCost()))
        break;
      cycleStart = bestCost;
      cycle = at;
      policy = best;
      current = executor.remember(policy, kNoBudget);
    }
    double into = static_cast<double>(evaluations % kAnnealCycleEvaluations) /
                  static_cast<double>(kAnnealCycleEvaluations);
    double temperature =
        start * std::ldexp(1.0, -static_cast<int>(cycle % kAnnealScales)) *
        (1.0 - into);
    undo.clear();
    for (int k = 1 + static_cast<int>(rng() & 1); k > 0; --k) {
      NodeId c = values[rng() % values.size()];
      // Half the second changes go to an input or a user of the first:
      // recomputing a value drags in its dropped inputs, so values change
      // in chains more often than in unrelated pairs.
      if (!undo.empty() && (rng() & 1)) {
        const std::vector<NodeId> &near = neighbours[undo.front().first];
        if (!near.empty())
          c = near[rng() % near.size()];
      }
      const std::vector<Policy> &options = choices[c];
      // Any policy but the current one.
      size_t at = rng() % (options.size() - 1);
      Policy p = options[at] == policy[c] ? options.back() : options[at];
      undo.push_back({c, policy[c]});
      policy[c] = p;
    }
    // Drawn before the evaluation, the margin lets it stop as soon as the
    // cost passes what would be accepted.
    Cutoff cutoff;
    cutoff.cost = current.cost - temperature * std::log(1.0 - unit(rng));
    cutoff.peak = budget;
    NodeId a = undo.front().first, b = undo.back().first;
    Evaluated e = executor.evaluateChanged(policy, kNoBudget, cutoff, {a, b});
    if (!e.cut && e.valid && e.peak <= budget && e.cost < cutoff.cost) {
      current = e;
      executor.rememberChanged(policy, kNoBudget, {a, b});
      if (e.cost < bestCost) {
        bestCost = e.cost;
        best = policy;
        if (bestCost <= floor)
          break;
      }
      continue;
    }
    for (auto it = undo.rbegin(); it != undo.rend(); ++it)
      policy[it->first] = it->second;
  }
  if (bestCost >= answer.cost)
    return answer;
  policy = std::move(best);
  return finish(graph, scheduleFromPolicies(graph, policy, budget), budget);
}

/// Greedy's run at `budget`, its policies in `policy`: where the test hooks'
/// searches start.
static SolveResult greedyWithPolicies(const Graph &graph, int64_t budget,
                                      std::vector<Policy> &policy) {
  GreedyFrom from;
  from.policy = &policy;
  return greedyRun(graph, budget, nullptr, GreedyScoring::Bound, from);
}

/// Greedy's run at `budget` and the pinning search from its answer (with
/// `unpinShare` of unbounded work to unpin first), run until a whole cycle
/// finds nothing cheaper; `policy` ends as the latter's policies. The test
/// hooks' common start.
static std::pair<SolveResult, SolveResult>
greedyThenPinningFrom(const Graph &graph, int64_t budget,
                      std::vector<Policy> &policy,
                      double unpinShare = kUnpinShare) {
  SolveResult greedy = greedyWithPolicies(graph, budget, policy);
  if (!greedy.feasible)
    return {greedy, greedy};
  SolveResult pinned =
      improveByPinning(graph, budget, policy, greedy,
                       std::numeric_limits<int64_t>::max(), unpinShare);
  return {greedy, pinned};
}

std::pair<SolveResult, SolveResult>
remat::detail::greedyThenPinning(const Graph &graph, int64_t budget) {
  std::vector<Policy> policy;
  return greedyThenPinningFrom(graph, budget, policy);
}

/// The pinning search without unpinning run to its end (its answer in
/// `pinned`), then, where that fits, the unpinning search from there run
/// to its end: the later hooks' common start.
static PinningSearch pinnedThenUnpinned(const Graph &graph, int64_t budget,
                                        std::vector<Policy> &policy,
                                        SolveResult &pinned) {
  pinned =
      greedyThenPinningFrom(graph, budget, policy, /*unpinShare=*/0.0).second;
  PinningSearch search{graph, budget, policy, pinned};
  if (pinned.feasible)
    search.unpin(std::numeric_limits<int64_t>::max());
  return search;
}

std::pair<SolveResult, SolveResult>
remat::detail::pinningThenUnpinning(const Graph &graph, int64_t budget) {
  std::vector<Policy> policy;
  SolveResult pinned;
  PinningSearch search = pinnedThenUnpinned(graph, budget, policy, pinned);
  return {std::move(pinned), std::move(search.answer)};
}

std::pair<SolveResult, SolveResult>
remat::detail::unpinningThenPromoting(const Graph &graph, int64_t budget) {
  std::vector<Policy> policy;
  SolveResult pinned;
  PinningSearch search = pinnedThenUnpinned(graph, budget, policy, pinned);
  SolveResult unpinned = search.answer;
  if (unpinned.feasible)
    search.promote(std::numeric_limits<int64_t>::max());
  return {std::move(unpinned), std::move(search.answer)};
}

std::pair<SolveResult, SolveResult>
remat::detail::pinningThenWindows(const Graph &graph, int64_t budget) {
  std::vector<Policy> policy;
  SolveResult pinned = greedyThenPinningFrom(graph, budget, policy).second;
  SolveResult windowed =
      improveBy(&PinningSearch::promoteWindows, graph, budget, policy, pinned,
                std::numeric_limits<int64_t>::max());
  return {std::move(pinned), std::move(windowed)};
}

std::pair<SolveResult, SolveResult>
remat::detail::windowsThenShifts(const Graph &graph, int64_t budget) {
  std::vector<Policy> policy;
  SolveResult pinned = greedyThenPinningFrom(graph, budget, policy).second;
  SolveResult windowed =
      improveBy(&PinningSearch::promoteWindows, graph, budget, policy, pinned,
                std::numeric_limits<int64_t>::max());
  SolveResult shifted =
      improveBy(&PinningSearch::shift, graph, budget, policy, windowed,
                std::numeric_limits<int64_t>::max());
  return {std::move(windowed), std::move(shifted)};
}

remat::detail::PinningRun remat::detail::pinningWithWork(const Graph &graph,
                                                         int64_t budget,
                                                         int64_t maxWork,
                                                         bool giveUp) {
  std::vector<Policy> policy;
  SolveResult greedy = greedyWithPolicies(graph, budget, policy);
  if (!greedy.feasible)
    return {greedy, 0};
  PinningSearch search{graph, budget, policy, greedy};
  search.giveUp = giveUp;
  search.pin(maxWork);
  return {std::move(search.answer), search.pins};
}

std::pair<SolveResult, SolveResult>
remat::detail::pinningThenAnnealing(const Graph &graph, int64_t budget,
                                    int64_t evaluations) {
  std::vector<Policy> policy;
  SolveResult pinned = greedyThenPinningFrom(graph, budget, policy).second;
  if (!pinned.feasible)
    return {pinned, pinned};
  SolveResult annealed = improveByAnnealing(
      graph, budget, policy, pinned,
      std::chrono::steady_clock::time_point::max(), evaluations);
  return {pinned, annealed};
}

/// Auto's local searches from `answer`, whose policies are `policy`, with
/// their default work: promotions, unpins and pins (improveByPinning), then
/// windows and shifts. Never dearer than `answer`; `policy` is updated to
/// the result's.
static SolveResult localSearch(const Graph &graph, int64_t budget,
                               std::vector<Policy> &policy,
                               SolveResult answer) {
  size_t bounded = std::min(graph.size(), kExactGreedyNodes);
  int64_t maxWork =
      graph.size() <= kSmallGraphNodes
          ? kSmallGraphPinningWork * static_cast<int64_t>(graph.size())
          : kPinningWorkPerNode * static_cast<int64_t>(bounded);
  SolveResult r = improveByPinning(graph, budget, policy, answer, maxWork);
  if (graph.size() <= kExactGreedyNodes)
    r = improveBy(&PinningSearch::promoteWindows, graph, budget, policy,
                  std::move(r),
                  static_cast<int64_t>(kWindowShare * kPinningWorkPerNode *
                                       static_cast<double>(graph.size())));
  if (hasBackward(graph))
    r = improveBy(&PinningSearch::shift, graph, budget, policy, std::move(r),
                  static_cast<int64_t>(kShiftShare * kPinningWorkPerNode *
                                       static_cast<double>(bounded)));
  return r;
}

/// Time granted on a training graph, first (iterated local search): move
/// one or two kept layer boundaries to a neighbouring one (as
/// PinningSearch::shift does), let greedy restore the budget with the moved
/// values held, run the whole local search from there, and take the result
/// if it is cheaper than the answer; single moves first, then pairs, each
/// pass over them from the answer so far, until a pass finds nothing
/// cheaper, `maxRestarts` local searches have run or the clock reaches
/// `deadline`. A shift's greedy repair alone leaves the values around the
/// new boundary as the old one needed them; the whole search adapts them
/// (gpt at 0.285 of its peak, with a second granted: 1.3328x, where
/// annealing alone reached 1.3602x). Never dearer than `answer`; `policy`
/// is updated to the result's.
static SolveResult
improveByRestarts(const Graph &graph, int64_t budget,
                  std::vector<Policy> &policy, SolveResult answer,
                  std::chrono::steady_clock::time_point deadline,
                  int64_t maxRestarts) {
  std::vector<NodeId> order = articulationCandidates(graph);
  if (!answer.feasible ||
      order.size() >= movableValues(graph).checkpoints.size())
    return answer;
  int64_t restarts = 0;
  // A move: the kept boundary order[i] recomputed, order[i + d] kept.
  using Move = std::pair<NodeId, NodeId>;
  auto moveOf = [&](size_t i, int d) -> std::optional<Move> {
    size_t j = i + static_cast<size_t>(d); // wraps around below 0
    if (j >= order.size() || policy[order[j]] == Policy::Keep)
      return std::nullopt;
    return Move{order[i], order[j]};
  };
  bool improved = true;
  while (improved) {
    improved = false;
    std::vector<size_t> kept;
    for (size_t i = 0; i < order.size(); ++i)
      if (policy[order[i]] == Policy::Keep)
        kept.push_back(i);
    std::vector<std::vector<Move>> perturbations;
    for (size_t i : kept)
      for (int d : {-1, 1})
        if (std::optional<Move> m = moveOf(i, d))
          perturbations.push_back({*m});
    for (size_t a = 0; a < kept.size(); ++a)
      for (size_t b = a + 1; b < kept.size(); ++b)
        for (int da : {-1, 1})
          for (int db : {-1, 1}) {
            std::optional<Move> x = moveOf(kept[a], da),
                                y = moveOf(kept[b], db);
            if (x && y && x->second != y->second)
              perturbations.push_back({*x, *y});
          }
    for (const std::vector<Move> &moves : perturbations) {
      if (restarts >= maxRestarts ||
          std::chrono::steady_clock::now() >= deadline)
        return answer;
      ++restarts;
      std::vector<Policy> start = policy;
      GreedyFrom from;
      size_t held = 0;
      for (auto [u, v] : moves) {
        start[u] = Policy::Recompute;
        start[v] = Policy::Keep;
        from.fixed[held++] = u;
        from.fixed[held++] = v;
      }
      std::vector<Policy> moved;
      from.start = &start;
      from.policy = &moved;
      SolveResult r =
          greedyRun(graph, budget, nullptr, GreedyScoring::Bound, from);
      if (!r.feasible)
        continue;
      r = localSearch(graph, budget, moved, std::move(r));
      if (r.feasible && r.cost < answer.cost) {
        answer = std::move(r);
        policy = std::move(moved);
        improved = true;
        break;
      }
    }
  }
  return answer;
}

std::pair<SolveResult, SolveResult>
remat::detail::searchThenRestarts(const Graph &graph, int64_t budget,
                                  int64_t restarts) {
  std::vector<Policy> policy;
  SolveResult greedy = greedyWithPolicies(graph, budget, policy);
  if (!greedy.feasible)
    return {greedy, greedy};
  SolveResult searched = localSearch(graph, budget, policy, greedy);
  SolveResult restarted =
      improveByRestarts(graph, budget, policy, searched,
                        std::chrono::steady_clock::time_point::max(), restarts);
  return {std::move(searched), std::move(restarted)};
}

/// Recovers the policies behind a greedy schedule from how often each
/// candidate is computed: once means Keep, twice Recompute, more Transient
/// (a Transient value computed twice reads as Recompute, which keeps it to
/// its last use where the cache might not: the caller checks that the
/// policies reproduce the answer). Used to continue from greedy's answer.
static std::vector<Policy> policiesOf(const Graph &graph,
                                      const Schedule &schedule) {
  std::vector<int> computes(graph.size(), 0);
  for (const Event &e : schedule)
    computes[e.node] += e.kind == Event::Kind::Compute;
  std::vector<Policy> policy(graph.size(), Policy::Keep);
  for (NodeId c : checkpointCandidates(graph))
    policy[c] = computes[c] <= 1   ? Policy::Keep
                : computes[c] == 2 ? Policy::Recompute
                                   : Policy::Transient;
  return policy;
}

/// The default: greedy's runs as the greedy solver makes them (so auto has
/// its answer among its own), greedy with exact scoring and at slightly
/// smaller budgets, swaps from each answer, then the classic schedules; the
/// cheapest within the budget wins, so it is never worse than greedy and
/// never over the budget when anything fits.
namespace {
/// An answer and the policies behind it: what a sweep carries from one
/// budget to the next, and where a pinning search starts.
struct Carried {
  SolveResult answer;
  std::vector<Policy> policy;
};
} // namespace

/// Auto at `budget`; `carried`, when given, is a schedule that fits a
/// smaller budget (so this one too): a candidate and, where it wins, the
/// start of the local searches. It is replaced by this budget's answer.
static SolveResult solveAutoCarrying(const Graph &graph, int64_t budget,
                                     const SolverOptions &options,
                                     Carried *carried,
                                     bool defaultAnnealing = true) {
  // Below the peak no schedule can beat (the arguments plus the op that
  // needs most), runs aimed at the budget are lost; the answer is the least
  // peak of auto's budget-independent ladders (and of the simple solvers),
  // the same for every such budget. (It is a budget auto meets, but not
  // always the least: a run aimed at a budget a little above it can find
  // a lower peak than the ladders hold.)
  if (budget < graph.peakLowerBound()) {
    SolveResult best;
    best.peakBytes = -1; // loses every comparison (isBetter)
    auto consider = [&](SolveResult r) {
      if (isBetter(r, best))
        best = std::move(r);
    };
    if (!floorForLadder(graph))
      consider(fromLadder(graph, budget, GreedyScoring::Bound));
    if (graph.size() <= kExactGreedyNodes)
      consider(fromLadder(graph, budget, GreedyScoring::Exact));
    if (std::vector<Policy> floor = floorPolicies(graph); !floor.empty())
      consider(finish(graph, scheduleFromPolicies(graph, floor), budget));
    if (hasBackward(graph)) {
      consider(solveChenGreedy(graph, budget, options));
      consider(solveEveryLayer(graph, budget, options));
      consider(solveChenSqrt(graph, budget, options));
    }
    return best;
  }
  bool tiny = graph.size() <= kSmallGraphNodes;
  GreedyRuns runs = greedyRuns(graph, budget);
  // Every answer found, judged against `budget`, and the policies behind
  // it (empty where they are not known).
  std::vector<SolveResult> answers = std::move(runs.answers);
  std::vector<std::vector<Policy>> policies = std::move(runs.policies);
  auto runGreedy = [&](int64_t target, GreedyScoring scoring) {
    answers.push_back(
        greedyAnswer(graph, target, budget, scoring, &policies.emplace_back()));
    return answers.back().feasible;
  };
  auto runLadder = [&](GreedyScoring scoring) {
    answers.push_back(
        fromLadder(graph, budget, scoring, &policies.emplace_back()));
  };
  bool exactMet = runs.exactMet;
  // Greedy with exact scoring, also where the run at the budget fitted; but
  // not there on larger training graphs: with the unpinning search, leaving
  // it out changed 2 of the 96 sweep budgets of ResNet50, resnet and gpt
  // (one cheaper, one dearer by 0.016% of the compute) and took a tenth
  // off ResNet50's slowest solves.
  bool training = hasBackward(graph);
  if (!runs.exactRan && graph.size() <= kExactGreedyNodes &&
      (tiny || !training || !runs.fits))
    exactMet = runGreedy(budget, GreedyScoring::Exact);
  // Greedy's path depends on the budget, so a slightly smaller one can
  // lead to a cheaper answer that also fits this one (also where greedy's
  // run at this one succeeded; swaps then improve it); this removes most
  // of the cases where a larger budget cost more. Small graphs look
  // further down.
  std::vector<double> fractions;
  if (!runs.retried && graph.size() <= kManyRunsNodes)
    fractions.assign(std::begin(kGreedyRetryFractions),
                     std::end(kGreedyRetryFractions));
  if (tiny)
    fractions.insert(fractions.end(), {0.94, 0.92, 0.90, 0.88});
  for (double fraction : fractions)
    runGreedy(scaledBudget(budget, fraction), GreedyScoring::Bound);
  // Greedy's path with the cache of recomputed values differs from its
  // path without; on small training graphs the run without is one more
  // start (MobileNet: 4 of 32 budgets cheaper, none dearer).
  if (tiny && training)
    answers.push_back(greedyAnswer(graph, budget, budget, GreedyScoring::Bound,
                                   &policies.emplace_back(),
                                   /*uncached=*/true));
  // Where greedy answers from its ladder, so does auto, even when another
  // answer fits, to stay at least as good. The ladder with exact scoring
  // is for budgets nothing else reaches (and on small graphs for its
  // cheaper states): it costs a dozen runs. Without a backward pass,
  // greedy's answers near the smallest budgets vary widely with the budget
  // it aims at, and the ladder's runs, budget-independent, often hold a
  // cheaper one wherever greedy's run got stuck (Moccasin's n1000 at 0.665
  // of its peak: 4.57x without them, 3.97x with them).
  // Where greedy's runs fail, it tries the floor before its ladder, and so
  // does auto.
  bool floorFits = false;
  SolveResult segments;
  segments.peakBytes = -1; // loses every comparison (isBetter)
  std::vector<Policy> segmentsPolicy;
  if (!runs.fits) {
    answers.push_back(floorAnswer(graph, budget, &policies.emplace_back()));
    floorFits = answers.back().feasible;
    // Far below what Chen's segments reach with their insides recomputed
    // once, the floor and greedy's undos from it rebuild long stretches of
    // the forward pass for every backward step; Chen's segments with
    // Transient insides rebuild a segment from its checkpoint and keep
    // what the executor's cache holds of it (a 10,001-node training graph
    // at 0.02 of its peak: 6.60x -> 1.42x, where the bound is 1.29x).
    // Considered after the swaps from greedy's answers, without its own:
    // at ResNet50's smallest budget those took as many instructions as the
    // start itself, which adds 3.1% to that solve's (callgrind).
    if (training)
      segments = detail::transientSegments(graph, budget, &segmentsPolicy);
  }
  // Where greedy's first run fits a graph without a backward pass, the
  // ladder only where a retry fitted (greedy's own answer then comes from
  // it on small graphs): on Moccasin's n100 and n250 it changed no answer
  // at 256 budgets from 0.7 of their peaks up, and took half to two thirds
  // of their solves (n250's median 101 -> 29 ms).
  if (runs.fits ? (training ? tiny : runs.retried)
                : (!floorFits && !floorForLadder(graph)) || tiny)
    runLadder(GreedyScoring::Bound);
  // On training graphs, greedy also starts from the values the cost
  // bound drops where it is dearest, held for recomputation: where that
  // cover holds at the other moments too, the searches from it reach the
  // bound, which greedy from keeping everything often misses by a value
  // or two. Not where the cover leaves the peak far over the budget
  // (kCoverStartPeak): there one moment's cover says little about the
  // others (ResNet50 below 0.34 of its peak, where its solves are
  // slowest).
  if (training) {
    std::vector<NodeId> cover = detail::cheapestCoverAtPeak(graph, budget);
    std::vector<char> recomputable(graph.size(), 0);
    for (NodeId c : movableValues(graph).checkpoints)
      recomputable[c] = 1;
    std::vector<Policy> start(graph.size(), Policy::Keep);
    bool any = false;
    for (NodeId id : cover)
      if (recomputable[id]) {
        start[id] = Policy::Recompute;
        any = true;
      }
    if (any &&
        simulate(graph, scheduleFromPolicies(graph, start, budget)).peakBytes /
                2 <=
            budget) {
      GreedyFrom from;
      from.start = &start;
      from.policy = &policies.emplace_back();
      answers.push_back(
          greedyRun(graph, budget, nullptr, GreedyScoring::Bound, from));
    }
  }
  bool anyFits = std::any_of(answers.begin(), answers.end(),
                             [](const SolveResult &r) { return r.feasible; });
  if (graph.size() <= kExactGreedyNodes && !exactMet && (tiny || !anyFits))
    runLadder(GreedyScoring::Exact);
  SolveResult best = answers.front();
  std::vector<Policy> bestPolicy = policies.front();
  // On small graphs, every answer that fits after its swaps: the pinning
  // search also starts from the cheapest few.
  std::vector<Carried> starts;
  bool collecting = tiny;
  auto consider = [&](SolveResult r, std::vector<Policy> policy) {
    if (collecting && r.feasible && !policy.empty())
      starts.push_back({r, policy});
    if (isBetter(r, best)) {
      best = std::move(r);
      bestPolicy = std::move(policy);
    }
  };
  // Where the local searches start from an answer: in a training graph,
  // the policies as its schedule shows them (a value greedy marked but
  // never dropped reads as kept: greedy's own labels make a neighbourhood
  // of moves that change nothing); otherwise, Release and Late not being
  // visible in a schedule that way, the policies greedy gave it. Empty
  // where neither reproduces the answer.
  auto reproduces = [&](const std::vector<Policy> &policy,
                        const SolveResult &answer) {
    if (policy.empty())
      return false;
    SimResult check =
        simulate(graph, scheduleFromPolicies(graph, policy, budget));
    return check.valid && check.peakBytes <= budget &&
           check.cost <= answer.cost;
  };
  auto startOf = [&](const SolveResult &answer,
                     const std::vector<Policy> &known) {
    if (training) {
      std::vector<Policy> seen = policiesOf(graph, answer.schedule);
      if (reproduces(seen, answer))
        return seen;
    }
    return reproduces(known, answer) ? known : std::vector<Policy>();
  };
  auto swapsFrom = [&](const SolveResult &answer,
                       const std::vector<Policy> &known, int evaluations) {
    if (!answer.feasible)
      return;
    std::vector<Policy> seen = startOf(answer, known);
    if (seen.empty())
      return;
    SolveResult r = improveBySwaps(graph, budget, seen, evaluations);
    consider(std::move(r), std::move(seen));
  };
  for (size_t i = 0; i < answers.size(); ++i) {
    swapsFrom(answers[i], policies[i], 150);
    consider(std::move(answers[i]), std::move(policies[i]));
  }
  consider(std::move(segments), std::move(segmentsPolicy));
  // On a chain, the dynamic program's cheapest schedule (Chain.cpp), where
  // one is cheaper than the answers so far.
  if (std::optional<SolveResult> chain = solveChain(
          graph, budget,
          best.feasible ? best.cost : std::numeric_limits<double>::infinity()))
    consider(std::move(*chain), {});
  // Chen's schedules and the per-layer one split the forward pass into
  // segments recomputed in the backward pass: without one, their
  // recomputations chain back through the graph (bench/gen-layered-graph.py
  // at 2,000 nodes and 0.9x of the peak: chen-greedy 272x the compute at
  // 2.05x the budget, in 2.8 s) and on 10,000 nodes auto took 93 s; they
  // never fitted a budget of Moccasin's graphs.
  if (training) {
    consider(solveChenGreedy(graph, budget, options), {});
    consider(solveEveryLayer(graph, budget, options), {});
    consider(solveChenSqrt(graph, budget, options), {});
  }
  // The swaps above stop after a few evaluations per answer; the winner
  // gets a longer search, which mostly keeps finding cheaper neighbours at
  // the smaller budgets, and then the pinning search. Where greedy's runs
  // fit a training graph that gets swaps after the pinning search too,
  // most of the long search waits until then (kSwapsBeforePinning).
  bool swapsAfterPinning = training && graph.size() <= kExactGreedyNodes;
  bool deferSwaps = swapsAfterPinning && runs.fits;
  SolveResult winner = best;
  std::vector<Policy> winnerPolicy = bestPolicy;
  swapsFrom(winner, winnerPolicy,
            deferSwaps ? kSwapsBeforePinning : kFinalSwapEvaluations);
  // The pinning search from the best answer, and in a sweep also from the
  // answer carried from the budget below where that is cheaper still: the
  // sweep's answer is then never dearer than this budget's alone, nor than
  // the one below.
  auto pinFrom = [&](const SolveResult &answer,
                     const std::vector<Policy> &known) {
    std::vector<Policy> start = startOf(answer, known);
    if (start.empty())
      return;
    SolveResult r = localSearch(graph, budget, start, answer);
    consider(std::move(r), std::move(start));
  };
  collecting = false;
  if (best.feasible) {
    double first = best.cost;
    pinFrom(SolveResult(best), std::vector<Policy>(bestPolicy));
    // Pinning ends in a local optimum that depends on where it starts; on
    // small graphs, where a search takes a few milliseconds, it also
    // starts from the next cheapest distinct answers.
    std::stable_sort(starts.begin(), starts.end(),
                     [](const Carried &a, const Carried &b) {
                       return a.answer.cost < b.answer.cost;
                     });
    std::vector<double> tried = {first};
    for (const Carried &c : starts) {
      if (tried.size() > kMorePinningStarts)
        break;
      if (std::any_of(tried.begin(), tried.end(), [&](double t) {
            return std::abs(t - c.answer.cost) <= 1e-9 * t;
          }))
        continue;
      tried.push_back(c.answer.cost);
      pinFrom(c.answer, c.policy);
    }
  }
  // Where greedy's runs fit, the segments are not among the starts above
  // (the searches from greedy's answers mostly win there, and a start more
  // changes which one they take, for better or worse); but on long
  // residual graphs, a little below one level's reach, greedy fits only
  // by recomputing more than two levels of checkpoints do, and its
  // searches do not find them. Only a segment schedule cheaper than the
  // answer is built (most members are not even run: the least they cost,
  // each dropped value that the backward pass reads computed again, is
  // more), and the searches start again from it: on random 100- and
  // 300-block residual graphs from 0.04 to 0.3 of their peaks, 4 of 32
  // budgets 3% to 6% cheaper (1.5218x -> 1.4354x), none dearer; no answer
  // of the sweep changed, ResNet50's solves 0.5% more instructions at most.
  if (training && runs.fits && best.feasible) {
    std::vector<Policy> policy;
    // Two levels only: with the third here too, no answer changed on the
    // bench's long training graphs nor on random 80- to 300-block
    // residual graphs from 0.012 to 0.06 of their peaks (54 budgets), and
    // its grid ran at every budget.
    SolveResult r =
        detail::transientSegments(graph, budget, &policy,
                                  /*refine=*/true, best.cost, /*nested=*/false);
    if (r.feasible && r.cost < best.cost) {
      consider(std::move(r), std::move(policy));
      pinFrom(SolveResult(best), std::vector<Policy>(bestPolicy));
    }
  }
  // The pinning search's moves are greedy runs from a pinned value; its
  // local optimum is not always one of the swaps' (a step toward Keep for
  // one value and away from it for a neighbour): a few more of those. Not
  // over kExactGreedyNodes: on the 10,001-node training graph they took up
  // to 1.2 s for 0.03% of the compute.
  if (swapsAfterPinning)
    swapsFrom(SolveResult(best), std::vector<Policy>(bestPolicy),
              kPostPinningSwapEvaluations +
                  (deferSwaps ? kFinalSwapEvaluations : 0));
  // Before the answer carried in a sweep is considered, so that the
  // sweep's answer is never dearer than this budget's alone.
  if (defaultAnnealing && !training && best.feasible &&
      best.cost > (1 + kDefaultAnnealExtra) * graph.baselineCost()) {
    std::vector<Policy> start = startOf(best, bestPolicy);
    if (!start.empty()) {
      SolveResult r =
          improveByAnnealing(graph, budget, start, best,
                             std::chrono::steady_clock::time_point::max(),
                             kDefaultAnnealCycles * kAnnealCycleEvaluations,
                             /*floor=*/0, kDefaultAnnealMinGain);
      consider(std::move(r), std::move(start));
    }
  }
  if (carried && carried->answer.feasible &&
      carried->answer.peakBytes <= budget && carried->answer.cost < best.cost) {
    consider(carried->answer, carried->policy);
    pinFrom(carried->answer, carried->policy);
  }
  // Time granted beyond the default search: on training graphs restarts
  // from moved boundaries for up to half of it, then annealing from the
  // answer, unless the cost bound proves it optimal.
  if (options.searchSeconds > 0 && best.feasible) {
    std::vector<Policy> start = startOf(best, bestPolicy);
    double floor = start.empty() ? best.cost : graph.costLowerBound(budget);
    if (best.cost > floor) {
      // Capped at a year: the clock counts nanoseconds in 64 bits.
      double seconds = std::min(options.searchSeconds, 365.0 * 24 * 3600);
      auto now = std::chrono::steady_clock::now();
      auto after = [&](double s) {
        return now + std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::duration<double>(s));
      };
      auto deadline = after(seconds);
      if (training) {
        SolveResult r =
            improveByRestarts(graph, budget, start, best, after(seconds / 2),
                              std::numeric_limits<int64_t>::max());
        consider(std::move(r), start);
      }
      SolveResult r =
          improveByAnnealing(graph, budget, start, best, deadline,
                             std::numeric_limits<int64_t>::max(), floor);
      consider(std::move(r), std::move(start));
    }
  }
  if (carried)
    *carried = {best, bestPolicy};
  return best;
}

static SolveResult solveAuto(const Graph &graph, int64_t budget,
                             const SolverOptions &options) {
  return solveAutoCarrying(graph, budget, options, nullptr);
}

std::pair<SolveResult, SolveResult>
remat::detail::autoWithoutAndWithAnnealing(const Graph &graph, int64_t budget) {
  SolverOptions options;
  return {solveAutoCarrying(graph, budget, options, nullptr,
                            /*defaultAnnealing=*/false),
          solveAutoCarrying(graph, budget, options, nullptr)};
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
