//===- Solvers.h - Rematerialization solvers --------------------*- C++ -*-===//
//
// Every solver is a pure function (graph, budget, options) -> schedule, and
// every result is measured by the one simulator in Graph.h.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_REMAT_SOLVERS_H
#define REMAT_REMAT_SOLVERS_H

#include "remat/Remat/Graph.h"

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

constexpr int64_t kNoBudget = std::numeric_limits<int64_t>::max();

struct SolverOptions {
  /// milp: the wall-clock limit of the exact search.
  double timeLimitSeconds = 10;
  /// auto: seconds of search granted beyond its default one (which takes
  /// milliseconds and is deterministic); on training graphs up to half of
  /// it on restarts from moved layer boundaries, then annealing from its
  /// answer, which then depends on the machine's speed. 0: none.
  double searchSeconds = 0;
};

struct SolveResult {
  /// The schedule meets the budget. When false, `schedule` is the solver's
  /// lowest-peak schedule and `peakBytes` the smallest budget it can reach.
  bool feasible = false;
  Schedule schedule;
  int64_t peakBytes = 0;
  double cost = 0;
  /// For exact solvers: whether the schedule is proven optimal (unset for
  /// heuristics unless a bound proves it), and the best proven lower bound
  /// on the cost.
  std::optional<bool> optimal;
  std::optional<double> lowerBound;
};

/// Measures answer `r` at `budget`, whose schedule costs `cost`, against
/// the graph's cost lower bound (`effort`): it proves an answer optimal
/// where they meet, and a budget no schedule can meet where it is infinite.
/// Raises r.lowerBound to it and sets r.optimal accordingly; returns the
/// relative gap the bound leaves unproven (0 where optimal; none without
/// a feasible answer, a bound or a cost).
std::optional<double> measureAgainstBound(const Graph &graph, int64_t budget,
                                          CostBoundEffort effort, double cost,
                                          SolveResult &r);

/// Whether a lower bound proves `cost` optimal: they meet, to a millionth
/// of the cost (what the LP relaxation's tolerance leaves).
inline bool meetsLowerBound(double cost, double bound) {
  return cost <= bound + 1e-6 * cost;
}

/// Names accepted by solve(), in a stable order.
const std::vector<std::string> &solverNames();
bool isSolver(std::string_view name);

/// Runs the named solver. The name must satisfy isSolver().
SolveResult solve(std::string_view name, const Graph &graph, int64_t budget,
                  const SolverOptions &options = {});

/// Runs the named solver at each of `budgets` (in any order; the results in
/// the same order). `auto` solves them from the smallest up and starts each
/// from the answer to the one below, which fits it too: its cost never
/// rises with the budget, by construction. (Single calls to solve() carry
/// nothing, and a larger budget can cost more than a smaller one.) Other
/// solvers answer each budget as solve() does. `milliseconds`, when given,
/// receives the wall time of each budget's solve.
std::vector<SolveResult>
solveSweep(std::string_view name, const Graph &graph,
           const std::vector<int64_t> &budgets,
           const SolverOptions &options = {},
           std::vector<double> *milliseconds = nullptr);

/// Values a solver may drop after their early uses and recompute for the
/// later ones: in a training graph, forward values read by the backward
/// pass; in a graph without a backward pass, values with more than one use.
/// A value's early uses are its forward uses in a training graph; in a
/// graph without a backward pass, its uses before the longest wait (in the
/// order) between two of them, the first use always among them.
std::vector<NodeId> checkpointCandidates(const Graph &graph);

/// What happens to a forward value between the forward pass and its backward
/// uses (in a graph without a backward pass: between its early uses and
/// the later ones).
enum class Policy : uint8_t {
  /// Kept from the forward pass to its last use. In a graph without a
  /// backward pass, that counts the reads of recomputations: the value
  /// stays until every value it feeds that was dropped has been computed
  /// again from it, so a recomputation does not have to rebuild its inputs.
  Keep,
  /// Graphs without a backward pass: kept to its last use by the graph's
  /// own nodes only; a recomputation that needs it later computes it again
  /// (and what it needs in turn), which saves its bytes in between.
  Release,
  /// Freed after its last forward use; recomputed before its first backward
  /// use and then kept to its last use (Chen's segment recomputation).
  Recompute,
  /// Training graphs: a checkpoint one level inside Recompute ones
  /// (revolve's third level). Like Recompute, except in a step that also
  /// rebuilds a Recompute value that needs it (through values the step
  /// rebuilt): there it is freed after the step like a Transient value. A
  /// segment's first backward use thus rebuilds its Recompute checkpoints
  /// and holds them, and each stretch between two of them holds its own
  /// Nested ones only once its backward steps rebuild them. In a graph
  /// without a backward pass it is Recompute.
  Nested,
  /// Freed after its last forward use and recomputed where a backward use
  /// needs it (the least memory, the most compute). Scheduled for a budget
  /// (scheduleFromPolicies with one), a recomputed Transient value stays
  /// cached after the step that needed it while it fits, and is evicted
  /// first when memory is needed, so that the next use may find it.
  Transient,
  /// Freed as soon as it is computed, recomputed before its first use and
  /// then kept to its last use: computing it late, at the price of the
  /// first computation (graphs without a backward pass, whose values may
  /// wait long for their first use).
  Late,
};

/// Builds the schedule that runs the graph in order and applies `policy`
/// (indexed by node id; only checkpoint candidates are read) to each value;
/// recomputations (and what they need) go right before the use that needs
/// them, and every value is freed right after its last use.
Schedule scheduleFromPolicies(const Graph &graph,
                              const std::vector<Policy> &policy);
/// The same for a solver working at `budget`: in a graph with a backward
/// pass, recomputed Transient values stay cached while they fit under it
/// (see Policy::Transient); frees at the last use.
Schedule scheduleFromPolicies(const Graph &graph,
                              const std::vector<Policy> &policy,
                              int64_t budget);

} // namespace remat

#endif // REMAT_REMAT_SOLVERS_H
