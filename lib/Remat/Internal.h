//===- Internal.h - Solvers shared between files of the core ----*- C++ -*-===//
//
// Entry points of solvers defined outside Solvers.cpp, for its registry,
// and the core's test hooks.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_REMAT_INTERNAL_H
#define REMAT_LIB_REMAT_INTERNAL_H

#include "remat/Remat/Solvers.h"

#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace remat::detail {

SolveResult solveMilp(const Graph &graph, int64_t budget,
                      const SolverOptions &options);

/// `schedule` as an answer at `budget`, measured by the simulator (an
/// invalid one reports a peak of -1, which loses every comparison).
SolveResult finish(const Graph &graph, Schedule schedule, int64_t budget);

/// On a graph shaped as a chain (Chain.cpp), the cheapest schedule of the
/// dynamic program's family (revolve's and more) within `budget`; nullopt
/// where the graph is not such a chain or no member fits and costs less
/// than `costCeiling`.
std::optional<SolveResult>
solveChain(const Graph &graph, int64_t budget,
           double costCeiling = std::numeric_limits<double>::infinity());

/// Test hook: evaluates `trials` random changes of two values from random
/// policies of `graph` both from the start and resumed from the executor's
/// remembered states, taking some of them (PolicyExecutor::rememberChanged),
/// and reports how many disagree with a whole run in any figure or event,
/// how many resumed evaluations finished with the remembered run's steps,
/// and how many changes were taken.
struct ResumeCheck {
  int mismatches = 0, converged = 0, taken = 0;
};
ResumeCheck checkResumedEvaluations(const Graph &graph, unsigned seed,
                                    int trials);

/// Test hook: one greedy run at `budget`, and the pinning search from its
/// answer (unpinning first on training graphs), run until a whole cycle
/// finds nothing cheaper.
std::pair<SolveResult, SolveResult> greedyThenPinning(const Graph &graph,
                                                      int64_t budget);

/// Test hook: greedy's run at `budget` and the pinning search from its
/// answer without unpinning, run to the end; and the unpinning search from
/// there, run to the end.
std::pair<SolveResult, SolveResult> pinningThenUnpinning(const Graph &graph,
                                                         int64_t budget);

/// Test hook: pinningThenUnpinning's answer, and the promotion of groups
/// from there, run to the end.
std::pair<SolveResult, SolveResult> unpinningThenPromoting(const Graph &graph,
                                                           int64_t budget);

/// Test hook: the pinning search's answer as greedyThenPinning finds it,
/// and the window promotions from there, every window once.
std::pair<SolveResult, SolveResult> pinningThenWindows(const Graph &graph,
                                                       int64_t budget);

/// Test hook: pinningThenWindows's second answer, and the boundary shifts
/// from there, run to the end.
std::pair<SolveResult, SolveResult> windowsThenShifts(const Graph &graph,
                                                      int64_t budget);

/// Test hook: greedy's run at `budget` and auto's local searches from its
/// answer; and the restarts from moved boundaries (the first use of time
/// granted on training graphs) from there, at most `restarts` of them.
std::pair<SolveResult, SolveResult>
searchThenRestarts(const Graph &graph, int64_t budget, int64_t restarts);

/// Test hook: greedy's run at `budget` and the pinning search from its
/// answer (no unpinning) with `maxWork` simulated computations, its pins
/// giving up early in training graphs or not.
struct PinningRun {
  SolveResult answer;
  int pins;
};
PinningRun pinningWithWork(const Graph &graph, int64_t budget, int64_t maxWork,
                           bool giveUp);

/// Test hook: the pinning search's answer as greedyThenPinning finds it,
/// and the annealing search from there after `evaluations` evaluations.
std::pair<SolveResult, SolveResult>
pinningThenAnnealing(const Graph &graph, int64_t budget, int64_t evaluations);

/// auto's stages, in the order it runs them (Auto.cpp).
std::vector<std::string_view> autoStageNames();

/// auto's answer with the named stages left out; every name must be one of
/// autoStageNames(). Where a stage is left out, the ones after it run on
/// what the others found.
SolveResult solveAutoWithout(const Graph &graph, int64_t budget,
                             const SolverOptions &options,
                             const std::vector<std::string_view> &skipped);

/// Chen et al. 2016, the memory-budget variant: walking the layer
/// boundaries in order, checkpoint one whenever the bytes since the last
/// checkpoint exceed a threshold b, and give the values between checkpoints
/// the policy `inside`. The policies for b at (up to 64 quantiles of) the
/// prefix sizes: chen-greedy's family (with Recompute inside).
std::vector<std::vector<Policy>> chenSegments(const Graph &graph,
                                              Policy inside);

/// Chen's memory-budget segments (chen-greedy) with the values inside each
/// segment Transient: rebuilt from the segment's checkpoint for a backward
/// use, or found in the executor's cache; and the same with a second level
/// of checkpoints inside each segment (Recompute: rebuilt once with the
/// segment, then held), and with `nested` a third (Nested: rebuilt and
/// held for their own stretch between two of the second), on a grid of
/// the spacings and, with `refine`, a finer one around the grid's winner.
/// The cheapest within the budget and under `below` (else none): auto's
/// start where greedy's runs fail on a training graph; `policy` receives
/// its policies.
SolveResult
transientSegments(const Graph &graph, int64_t budget,
                  std::vector<Policy> *policy = nullptr, bool refine = true,
                  double below = std::numeric_limits<double>::infinity(),
                  bool nested = true);

/// A start for auto's searches from the cost bound: the values whose drop
/// covers, at least cost, the moment that needs the dearest such cover
/// (of the few most over the budget); empty where nothing fits.
std::vector<NodeId> cheapestCoverAtPeak(const Graph &graph, int64_t budget);

} // namespace remat::detail

#endif // REMAT_LIB_REMAT_INTERNAL_H
