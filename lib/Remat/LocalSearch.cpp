//===- LocalSearch.cpp - Searches from a feasible answer ------------------===//
//
// Local searches that improve an answer within its budget: swaps, pinning
// and unpinning, window promotions, boundary shifts, restarts and
// simulated annealing.
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

SolveResult remat::detail::improveBySwaps(const Graph &graph, int64_t budget,
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
SolveResult remat::detail::improveByPinning(const Graph &graph, int64_t budget,
                                            std::vector<Policy> &policy,
                                            SolveResult answer, int64_t maxWork,
                                            double unpinShare) {
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
SolveResult remat::detail::improveByAnnealing(
    const Graph &graph, int64_t budget, std::vector<Policy> &policy,
    SolveResult answer, std::chrono::steady_clock::time_point deadline,
    int64_t maxEvaluations, double floor, double minCycleGain) {
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
SolveResult remat::detail::localSearch(const Graph &graph, int64_t budget,
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
SolveResult remat::detail::improveByRestarts(
    const Graph &graph, int64_t budget, std::vector<Policy> &policy,
    SolveResult answer, std::chrono::steady_clock::time_point deadline,
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
