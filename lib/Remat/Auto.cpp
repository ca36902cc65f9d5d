//===- Auto.cpp - The default solver --------------------------------------===//
//
// auto: greedy's answers, the chain program, Chen's transient segments and
// the local searches, combined per graph.
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

/// Auto at `budget`; `carried`, when given, is a schedule that fits a
/// smaller budget (so this one too): a candidate and, where it wins, the
/// start of the local searches. It is replaced by this budget's answer.
SolveResult remat::detail::solveAutoCarrying(const Graph &graph, int64_t budget,
                                             const SolverOptions &options,
                                             Carried *carried,
                                             bool defaultAnnealing) {
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

SolveResult remat::detail::solveAuto(const Graph &graph, int64_t budget,
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
