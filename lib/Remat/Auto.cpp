//===- Auto.cpp - The default solver --------------------------------------===//
//
// auto: a declared list of stages over one context. Each stage adds
// answers or improves the best one; which stages apply, and the work they
// take, follow the graph (AutoTuning). The cheapest answer within the
// budget wins, so auto is never worse than greedy and never over the
// budget when anything fits.
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
#include <string_view>

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

AutoTuning AutoTuning::forGraph(const Graph &graph) {
  AutoTuning t;
  t.training = hasBackward(graph);
  t.small = graph.size() <= kSmallGraphNodes;
  t.exactGreedy = graph.size() <= kExactGreedyNodes;
  if (graph.size() <= kManyRunsNodes)
    t.retryFractions.assign(std::begin(kGreedyRetryFractions),
                            std::end(kGreedyRetryFractions));
  if (t.small) {
    t.deeperRetryFractions = {0.94, 0.92, 0.90, 0.88};
    t.morePinningStarts = 3;
  }
  t.annealByDefault = !t.training;
  return t;
}

namespace {

/// One solve's state, which the stages read and extend.
struct AutoContext {
  AutoContext(const Graph &graph, int64_t budget, const SolverOptions &options,
              Carried *carried)
      : graph(graph), budget(budget), options(options), carried(carried),
        tuning(AutoTuning::forGraph(graph)) {
    best.peakBytes = -1; // loses every comparison (isBetter)
    segments.peakBytes = -1;
  }

  const Graph &graph;
  int64_t budget;
  const SolverOptions &options;
  /// In a sweep, a schedule that fits a smaller budget (so this one too);
  /// replaced by this budget's answer.
  Carried *carried;
  AutoTuning tuning;

  /// Greedy's own runs at the budget (what the greedy solver answers).
  GreedyRuns runs;
  /// Every answer of the greedy stages, judged against the budget, and the
  /// policies behind each (empty where they are not known).
  std::vector<SolveResult> answers;
  std::vector<std::vector<Policy>> policies;
  /// Greedy with exact scoring met the budget; the floor fits it.
  bool exactMet = false, floorFits = false;
  /// Chen's segments with Transient insides, where greedy's runs fail.
  SolveResult segments;
  std::vector<Policy> segmentsPolicy;

  SolveResult best;
  std::vector<Policy> bestPolicy;
  /// On small graphs, every answer that fits after its swaps: the pinning
  /// search also starts from the cheapest few.
  std::vector<Carried> starts;
  bool collecting = false;

  bool runGreedy(int64_t target, GreedyScoring scoring) {
    answers.push_back(
        greedyAnswer(graph, target, budget, scoring, &policies.emplace_back()));
    return answers.back().feasible;
  }
  void runLadder(GreedyScoring scoring) {
    answers.push_back(
        fromLadder(graph, budget, scoring, &policies.emplace_back()));
  }
  bool anyFits() const {
    return std::any_of(answers.begin(), answers.end(),
                       [](const SolveResult &r) { return r.feasible; });
  }
  /// Where greedy's runs fit a training graph that gets swaps after the
  /// pinning search, most of the long search waits until then.
  bool swapsAfterPinning() const {
    return tuning.training && tuning.exactGreedy;
  }
  bool deferSwaps() const { return swapsAfterPinning() && runs.fits; }

  void consider(SolveResult r, std::vector<Policy> policy) {
    if (collecting && r.feasible && !policy.empty())
      starts.push_back({r, policy});
    if (isBetter(r, best)) {
      best = std::move(r);
      bestPolicy = std::move(policy);
    }
  }

  bool reproduces(const std::vector<Policy> &policy,
                  const SolveResult &answer) const {
    if (policy.empty())
      return false;
    SimResult check =
        simulate(graph, scheduleFromPolicies(graph, policy, budget));
    return check.valid && check.peakBytes <= budget &&
           check.cost <= answer.cost;
  }

  /// Where the local searches start from an answer: in a training graph,
  /// the policies as its schedule shows them (a value greedy marked but
  /// never dropped reads as kept: greedy's own labels make a neighbourhood
  /// of moves that change nothing); otherwise, Release and Late not being
  /// visible in a schedule that way, the policies greedy gave it. Empty
  /// where neither reproduces the answer.
  std::vector<Policy> startOf(const SolveResult &answer,
                              const std::vector<Policy> &known) const {
    if (tuning.training) {
      std::vector<Policy> seen = policiesOf(graph, answer.schedule);
      if (reproduces(seen, answer))
        return seen;
    }
    return reproduces(known, answer) ? known : std::vector<Policy>();
  }

  void swapsFrom(const SolveResult &answer, const std::vector<Policy> &known,
                 int evaluations) {
    if (!answer.feasible)
      return;
    std::vector<Policy> seen = startOf(answer, known);
    if (seen.empty())
      return;
    SolveResult r = improveBySwaps(graph, budget, seen, evaluations);
    consider(std::move(r), std::move(seen));
  }

  void pinFrom(const SolveResult &answer, const std::vector<Policy> &known) {
    std::vector<Policy> start = startOf(answer, known);
    if (start.empty())
      return;
    SolveResult r = localSearch(graph, budget, start, answer);
    consider(std::move(r), std::move(start));
  }
};

/// A step of auto: `applies` reads the context, `run` extends it.
struct AutoStage {
  std::string_view name;
  bool (*applies)(const AutoContext &);
  void (*run)(AutoContext &);
};

bool always(const AutoContext &) { return true; }

std::vector<double> retryFractions(const AutoContext &c) {
  std::vector<double> fractions;
  if (!c.runs.retried)
    fractions = c.tuning.retryFractions;
  fractions.insert(fractions.end(), c.tuning.deeperRetryFractions.begin(),
                   c.tuning.deeperRetryFractions.end());
  return fractions;
}

const AutoStage kStages[] = {
    // Greedy's runs as the greedy solver makes them, so that auto has its
    // answer among its own.
    {"greedy", always,
     [](AutoContext &c) {
       c.runs = greedyRuns(c.graph, c.budget);
       c.answers = std::move(c.runs.answers);
       c.policies = std::move(c.runs.policies);
       c.exactMet = c.runs.exactMet;
       if (!c.answers.empty()) {
         c.best = c.answers.front();
         c.bestPolicy = c.policies.front();
       }
     }},
    // Greedy with exact scoring, also where the run at the budget fitted;
    // but not there on larger training graphs: with the unpinning search,
    // leaving it out changed 2 of the 96 sweep budgets of ResNet50, resnet
    // and gpt (one cheaper, one dearer by 0.016% of the compute) and took
    // a tenth off ResNet50's slowest solves.
    {"exact-greedy",
     [](const AutoContext &c) {
       return !c.runs.exactRan && c.tuning.exactGreedy &&
              (c.tuning.small || !c.tuning.training || !c.runs.fits);
     },
     [](AutoContext &c) {
       c.exactMet = c.runGreedy(c.budget, GreedyScoring::Exact);
     }},
    // Greedy at slightly smaller budgets (also where its run at this one
    // succeeded; swaps then improve it).
    {"smaller-budgets",
     [](const AutoContext &c) { return !retryFractions(c).empty(); },
     [](AutoContext &c) {
       for (double fraction : retryFractions(c))
         c.runGreedy(scaledBudget(c.budget, fraction), GreedyScoring::Bound);
     }},
    // Greedy's path with the cache of recomputed values differs from its
    // path without; on small training graphs the run without is one more
    // start (MobileNet: 4 of 32 budgets cheaper, none dearer).
    {"uncached-greedy",
     [](const AutoContext &c) { return c.tuning.small && c.tuning.training; },
     [](AutoContext &c) {
       c.answers.push_back(greedyAnswer(c.graph, c.budget, c.budget,
                                        GreedyScoring::Bound,
                                        &c.policies.emplace_back(),
                                        /*uncached=*/true));
     }},
    // Where greedy's runs fail, it tries the floor before its ladder, and
    // so does auto.
    {"floor", [](const AutoContext &c) { return !c.runs.fits; },
     [](AutoContext &c) {
       c.answers.push_back(
           floorAnswer(c.graph, c.budget, &c.policies.emplace_back()));
       c.floorFits = c.answers.back().feasible;
     }},
    // Far below what Chen's segments reach with their insides recomputed
    // once, the floor and greedy's undos from it rebuild long stretches of
    // the forward pass for every backward step; Chen's segments with
    // Transient insides rebuild a segment from its checkpoint and keep
    // what the executor's cache holds of it (a 10,001-node training graph
    // at 0.02 of its peak: 6.60x -> 1.42x, where the bound is 1.29x).
    // Considered after the swaps from greedy's answers, without its own:
    // at ResNet50's smallest budget those took as many instructions as the
    // start itself.
    {"transient-segments",
     [](const AutoContext &c) { return !c.runs.fits && c.tuning.training; },
     [](AutoContext &c) {
       c.segments =
           detail::transientSegments(c.graph, c.budget, &c.segmentsPolicy);
     }},
    // Where greedy answers from its ladder, so does auto, even when another
    // answer fits, to stay at least as good; without a backward pass,
    // greedy's answers near the smallest budgets vary widely with the
    // budget it aims at, and the ladder's runs, budget-independent, often
    // hold a cheaper one wherever greedy's run got stuck (Moccasin's n1000
    // at 0.665 of its peak: 4.57x without them, 3.97x with them). Where
    // greedy's first run fits a graph without a backward pass, only where a
    // retry fitted (on Moccasin's n100 and n250 the rest changed no answer
    // from 0.7 of their peaks up, and took half to two thirds of their
    // solves).
    {"ladder",
     [](const AutoContext &c) {
       return c.runs.fits
                  ? (c.tuning.training ? c.tuning.small : c.runs.retried)
                  : (!c.floorFits && !floorForLadder(c.graph)) ||
                        c.tuning.small;
     },
     [](AutoContext &c) { c.runLadder(GreedyScoring::Bound); }},
    // Greedy from the values the cost bound drops where it is dearest, held
    // for recomputation: where that cover holds at the other moments too,
    // the searches from it reach the bound, which greedy from keeping
    // everything often misses by a value or two. Not where the cover
    // leaves the peak far over the budget: there one moment's cover says
    // little about the others (ResNet50 below 0.34 of its peak).
    {"cover-start", [](const AutoContext &c) { return c.tuning.training; },
     [](AutoContext &c) {
       std::vector<NodeId> cover =
           detail::cheapestCoverAtPeak(c.graph, c.budget);
       std::vector<char> recomputable(c.graph.size(), 0);
       for (NodeId id : movableValues(c.graph).checkpoints)
         recomputable[id] = 1;
       std::vector<Policy> start(c.graph.size(), Policy::Keep);
       bool any = false;
       for (NodeId id : cover)
         if (recomputable[id]) {
           start[id] = Policy::Recompute;
           any = true;
         }
       if (!any ||
           simulate(c.graph, scheduleFromPolicies(c.graph, start, c.budget))
                       .peakBytes /
                   c.tuning.coverStartPeak >
               c.budget)
         return;
       GreedyFrom from;
       from.start = &start;
       from.policy = &c.policies.emplace_back();
       c.answers.push_back(
           greedyRun(c.graph, c.budget, nullptr, GreedyScoring::Bound, from));
     }},
    // The ladder with exact scoring, for budgets nothing else reaches (and
    // on small graphs for its cheaper states): it costs a dozen runs.
    {"exact-ladder",
     [](const AutoContext &c) {
       return c.tuning.exactGreedy && !c.exactMet &&
              (c.tuning.small || !c.anyFits());
     },
     [](AutoContext &c) { c.runLadder(GreedyScoring::Exact); }},
    // A short local search from each answer; every answer and the
    // segments are candidates.
    {"swaps", always,
     [](AutoContext &c) {
       c.collecting = c.tuning.small;
       for (size_t i = 0; i < c.answers.size(); ++i) {
         c.swapsFrom(c.answers[i], c.policies[i], c.tuning.swapEvaluations);
         c.consider(std::move(c.answers[i]), std::move(c.policies[i]));
       }
       c.consider(std::move(c.segments), std::move(c.segmentsPolicy));
     }},
    // On a chain, the dynamic program's cheapest schedule (Chain.cpp),
    // where one is cheaper than the answers so far.
    {"chain", always,
     [](AutoContext &c) {
       if (std::optional<SolveResult> chain = solveChain(
               c.graph, c.budget,
               c.best.feasible ? c.best.cost
                               : std::numeric_limits<double>::infinity()))
         c.consider(std::move(*chain), {});
     }},
    // Chen's schedules and the per-layer one split the forward pass into
    // segments recomputed in the backward pass: without one, their
    // recomputations chain back through the graph (bench/gen-layered-graph.py
    // at 2,000 nodes and 0.9x of the peak: chen-greedy 272x the compute at
    // 2.05x the budget) and they never fitted a budget of Moccasin's graphs.
    {"chen", [](const AutoContext &c) { return c.tuning.training; },
     [](AutoContext &c) {
       c.consider(solveChenGreedy(c.graph, c.budget, c.options), {});
       c.consider(solveEveryLayer(c.graph, c.budget, c.options), {});
       c.consider(solveChenSqrt(c.graph, c.budget, c.options), {});
     }},
    // The swaps above stop after a few evaluations per answer; the winner
    // gets a longer search, which mostly keeps finding cheaper neighbours
    // at the smaller budgets.
    {"long-swaps", always,
     [](AutoContext &c) {
       c.swapsFrom(SolveResult(c.best), std::vector<Policy>(c.bestPolicy),
                   c.deferSwaps() ? c.tuning.swapsBeforePinning
                                  : c.tuning.finalSwapEvaluations);
     }},
    // The pinning search from the best answer. It ends in a local optimum
    // that depends on where it starts; on small graphs, where a search
    // takes a few milliseconds, it also starts from the next cheapest
    // distinct answers.
    {"pinning", [](const AutoContext &c) { return c.best.feasible; },
     [](AutoContext &c) {
       c.collecting = false;
       double first = c.best.cost;
       c.pinFrom(SolveResult(c.best), std::vector<Policy>(c.bestPolicy));
       std::stable_sort(c.starts.begin(), c.starts.end(),
                        [](const Carried &a, const Carried &b) {
                          return a.answer.cost < b.answer.cost;
                        });
       std::vector<double> tried = {first};
       for (const Carried &s : c.starts) {
         if (tried.size() > c.tuning.morePinningStarts)
           break;
         if (std::any_of(tried.begin(), tried.end(), [&](double t) {
               return std::abs(t - s.answer.cost) <= 1e-9 * t;
             }))
           continue;
         tried.push_back(s.answer.cost);
         c.pinFrom(s.answer, s.policy);
       }
     }},
    // Where greedy's runs fit, the segments are not among the starts above
    // (the searches from greedy's answers mostly win there); but on long
    // residual graphs, a little below one level's reach, greedy fits only
    // by recomputing more than two levels of checkpoints do, and its
    // searches do not find them. Only a segment schedule cheaper than the
    // answer is built, and the pinning search starts again from it (random
    // 100- and 300-block residual graphs from 0.04 to 0.3 of their peaks:
    // 4 of 32 budgets 3% to 6% cheaper, none dearer). Two levels only: a
    // third changed no answer on 54 budgets of such graphs.
    {"refined-segments",
     [](const AutoContext &c) {
       return c.tuning.training && c.runs.fits && c.best.feasible;
     },
     [](AutoContext &c) {
       std::vector<Policy> policy;
       SolveResult r = detail::transientSegments(c.graph, c.budget, &policy,
                                                 /*refine=*/true, c.best.cost,
                                                 /*nested=*/false);
       if (r.feasible && r.cost < c.best.cost) {
         c.consider(std::move(r), std::move(policy));
         c.pinFrom(SolveResult(c.best), std::vector<Policy>(c.bestPolicy));
       }
     }},
    // The pinning search's moves are greedy runs from a pinned value; its
    // local optimum is not always one of the swaps' (a step toward Keep for
    // one value and away from it for a neighbour). Not over
    // kExactGreedyNodes: on a 10,001-node training graph they took up to
    // 1.2 s for 0.03% of the compute.
    {"post-pinning-swaps",
     [](const AutoContext &c) { return c.swapsAfterPinning(); },
     [](AutoContext &c) {
       c.swapsFrom(SolveResult(c.best), std::vector<Policy>(c.bestPolicy),
                   c.tuning.postPinningSwapEvaluations +
                       (c.deferSwaps() ? c.tuning.finalSwapEvaluations : 0));
     }},
    // Before the answer carried in a sweep is considered, so that the
    // sweep's answer is never dearer than this budget's alone.
    {"annealing",
     [](const AutoContext &c) {
       return c.tuning.annealByDefault && c.best.feasible &&
              c.best.cost > (1 + kDefaultAnnealExtra) * c.graph.baselineCost();
     },
     [](AutoContext &c) {
       std::vector<Policy> start = c.startOf(c.best, c.bestPolicy);
       if (start.empty())
         return;
       SolveResult r =
           improveByAnnealing(c.graph, c.budget, start, c.best,
                              std::chrono::steady_clock::time_point::max(),
                              kDefaultAnnealCycles * kAnnealCycleEvaluations,
                              /*floor=*/0, kDefaultAnnealMinGain);
       c.consider(std::move(r), std::move(start));
     }},
    // In a sweep, the answer carried from the budget below where it is
    // cheaper, and the pinning search from it: the sweep's answer is then
    // never dearer than the one below.
    {"carried",
     [](const AutoContext &c) {
       return c.carried && c.carried->answer.feasible &&
              c.carried->answer.peakBytes <= c.budget &&
              c.carried->answer.cost < c.best.cost;
     },
     [](AutoContext &c) {
       c.consider(c.carried->answer, c.carried->policy);
       c.pinFrom(c.carried->answer, c.carried->policy);
     }},
    // Time granted beyond the default search: on training graphs restarts
    // from moved boundaries for up to half of it, then annealing from the
    // answer, unless the cost bound proves it optimal.
    {"granted-time",
     [](const AutoContext &c) {
       return c.options.searchSeconds > 0 && c.best.feasible;
     },
     [](AutoContext &c) {
       std::vector<Policy> start = c.startOf(c.best, c.bestPolicy);
       double floor =
           start.empty() ? c.best.cost : c.graph.costLowerBound(c.budget);
       if (c.best.cost <= floor)
         return;
       // Capped at a year: the clock counts nanoseconds in 64 bits.
       double seconds = std::min(c.options.searchSeconds, 365.0 * 24 * 3600);
       auto now = std::chrono::steady_clock::now();
       auto after = [&](double s) {
         return now + std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::duration<double>(s));
       };
       auto deadline = after(seconds);
       if (c.tuning.training) {
         SolveResult r = improveByRestarts(c.graph, c.budget, start, c.best,
                                           after(seconds / 2),
                                           std::numeric_limits<int64_t>::max());
         c.consider(std::move(r), start);
       }
       SolveResult r =
           improveByAnnealing(c.graph, c.budget, start, c.best, deadline,
                              std::numeric_limits<int64_t>::max(), floor);
       c.consider(std::move(r), std::move(start));
     }},
};

/// Below the peak no schedule can beat (the arguments plus the op that
/// needs most), runs aimed at the budget are lost; the answer is the least
/// peak of auto's budget-independent ladders (and of the simple solvers),
/// the same for every such budget. (It is a budget auto meets, but not
/// always the least: a run aimed at a budget a little above it can find a
/// lower peak than the ladders hold.)
SolveResult lowestPeak(const Graph &graph, int64_t budget,
                       const SolverOptions &options) {
  SolveResult best;
  best.peakBytes = -1;
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

SolveResult runAuto(const Graph &graph, int64_t budget,
                    const SolverOptions &options, Carried *carried,
                    const std::vector<std::string_view> &skipped) {
  if (budget < graph.peakLowerBound())
    return lowestPeak(graph, budget, options);
  AutoContext c(graph, budget, options, carried);
  for (const AutoStage &stage : kStages)
    if (std::find(skipped.begin(), skipped.end(), stage.name) ==
            skipped.end() &&
        stage.applies(c))
      stage.run(c);
  if (carried)
    *carried = {c.best, c.bestPolicy};
  return std::move(c.best);
}

} // namespace

SolveResult remat::detail::solveAutoCarrying(const Graph &graph, int64_t budget,
                                             const SolverOptions &options,
                                             Carried *carried) {
  return runAuto(graph, budget, options, carried, {});
}

SolveResult remat::detail::solveAuto(const Graph &graph, int64_t budget,
                                     const SolverOptions &options) {
  return runAuto(graph, budget, options, nullptr, {});
}

std::vector<std::string_view> remat::detail::autoStageNames() {
  std::vector<std::string_view> names;
  for (const AutoStage &stage : kStages)
    names.push_back(stage.name);
  return names;
}

SolveResult
remat::detail::solveAutoWithout(const Graph &graph, int64_t budget,
                                const SolverOptions &options,
                                const std::vector<std::string_view> &skipped) {
  for ([[maybe_unused]] std::string_view name : skipped)
    assert(std::any_of(std::begin(kStages), std::end(kStages),
                       [&](const AutoStage &s) { return s.name == name; }) &&
           "no auto stage of that name");
  return runAuto(graph, budget, options, nullptr, skipped);
}
