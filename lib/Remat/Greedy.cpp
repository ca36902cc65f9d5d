//===- Greedy.cpp - XLA-style greedy and its floor ------------------------===//
//
// Greedy: from keeping everything (or from the floor, every candidate
// Transient), take the policy change that cuts the most bytes over the budget
// per unit of extra compute until the budget is met, then undo what is no
// longer needed.
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

/// XLA-style greedy: starting from keeping everything, repeatedly make the
/// move (one candidate from Keep to Recompute or Transient, or from Recompute
/// to Transient; without a backward pass, any value to Release or Late) with
/// the largest reduction of bytes held above the budget per unit of extra
/// compute, until the budget is met; then undo moves that are no longer
/// needed, the most expensive first.
SolveResult
remat::detail::greedyRun(const Graph &graph, int64_t budget,
                         std::vector<std::vector<Policy>> *trajectory,
                         GreedyScoring scoring, const GreedyFrom &from) {
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
SolveResult remat::detail::fromLadder(const Graph &graph, int64_t budget,
                                      GreedyScoring scoring,
                                      std::vector<Policy> *policy) {
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

int64_t remat::detail::scaledBudget(int64_t budget, double fraction) {
  return static_cast<int64_t>(static_cast<double>(budget) * fraction);
}

/// A greedy run at `target`, judged against `budget` (a run at a smaller
/// target, or one that failed, may still fit it).
SolveResult remat::detail::greedyAnswer(const Graph &graph, int64_t target,
                                        int64_t budget, GreedyScoring scoring,
                                        std::vector<Policy> *policy,
                                        bool uncached) {
  GreedyFrom from;
  from.policy = policy;
  from.uncached = uncached;
  SolveResult r = greedyRun(graph, target, nullptr, scoring, from);
  r.feasible = r.peakBytes >= 0 && r.peakBytes <= budget;
  return r;
}

/// On a training graph, the least memory a policy choice alone reaches:
/// every checkpoint candidate Transient, rebuilt for each backward use. A
/// search that drops values one by one from keeping everything can stall
/// above it, where only several drops together lower the peak (ResNet50:
/// every greedy run and ladder state peaked at 4.316 GB or more, this at
/// 4.110 GB). Empty on other graphs, where Transient does not mean the
/// least memory.
std::vector<Policy> remat::detail::floorPolicies(const Graph &graph) {
  if (!hasBackward(graph))
    return {};
  std::vector<Policy> policy(graph.size(), Policy::Keep);
  for (NodeId c : checkpointCandidates(graph))
    policy[c] = Policy::Transient;
  return policy;
}

/// On a graph over kManyRunsNodes with a floor, greedy and auto skip the
/// ladder for it.
bool remat::detail::floorForLadder(const Graph &graph) {
  return graph.size() > kManyRunsNodes && hasBackward(graph);
}

/// Greedy's run at `budget`; where it gets stuck, runs at slightly smaller
/// budgets and, on graphs small enough, with exact scoring, which gets
/// through where the bound's choices got stuck (ResNet50 near its smallest
/// budgets). Only if none of them fits does greedy need the floor or its
/// ladder.
GreedyRuns remat::detail::greedyRuns(const Graph &graph, int64_t budget) {
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
SolveResult remat::detail::floorAnswer(const Graph &graph, int64_t budget,
                                       std::vector<Policy> *policy) {
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

SolveResult remat::detail::solveGreedy(const Graph &graph, int64_t budget,
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
