//===- ExecutorPlan.h - What the executor knows of a graph ------*- C++ -*-===//
//
// The figures of a graph the policy executor and the searches read on
// every evaluation, in flat arrays computed once per graph, and what an
// evaluation reports. Internal to the core.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_REMAT_EXECUTORPLAN_H
#define REMAT_LIB_REMAT_EXECUTORPLAN_H

#include "remat/Remat/Solvers.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace remat::detail {

/// Whether the graph marks a backward pass at all. Graphs that do not
/// (Moccasin's computation graphs) treat a value's first use as its "early"
/// use and every later one as a use that may follow a recomputation.
bool hasBackward(const Graph &graph);

/// Number of users of `id` served before the value may be dropped: its
/// forward users in a training graph. Otherwise the users before the
/// longest wait (in the order) between two of them, after the first: where
/// dropping the value and computing it again saves most.
int32_t earlyUses(const Graph &graph, NodeId id, bool training);

/// The values greedy may move, sorted: checkpoint candidates (to Recompute
/// or Transient), values that may be computed late (without a backward
/// pass: to Release or Late), and both together.
struct MovableValues {
  std::vector<NodeId> checkpoints, lates, all;
};
MovableValues movableValues(const Graph &graph);

/// What the executor needs to know about a graph, computed once and shared
/// by the many evaluations a solver makes.
struct ExecutorPlan {
  explicit ExecutorPlan(const Graph &graph) : graph(graph) {
    bool training = hasBackward(graph);
    size_t n = graph.size();
    remaining.resize(n);
    remainingEarly.resize(n);
    flags.resize(n);
    allocated.resize(n);
    workspace.resize(n);
    cost.resize(n);
    overwrites.resize(n);
    depStart.push_back(0);
    for (NodeId id = 0; id < (NodeId)n; ++id) {
      const Node &node = graph.node(id);
      remaining[id] = static_cast<int32_t>(graph.users(id).size());
      remainingEarly[id] = earlyUses(graph, id, training);
      flags[id] = (node.argument ? kArgument : 0) |
                  (node.output ? kOutput : 0) |
                  (node.recomputable ? kRecomputable : 0);
      allocated[id] = node.overwrites >= 0 ? 0 : node.bytes;
      workspace[id] = node.workspace;
      cost[id] = node.cost;
      overwrites[id] = node.overwrites;
      if (node.overwrites >= 0 || (!node.argument && !node.recomputable))
        needsChecks = true;
      (node.argument ? arguments : steps).push_back(id);
      for (NodeId d : graph.deps(id)) {
        deps.push_back(d);
        // In a training graph the forward users are early; otherwise those
        // up to the one earlyUses() counts last.
        earlyDep.push_back(training
                               ? !node.backward
                               : id <= graph.users(d)[remainingEarly[d] - 1]);
      }
      depStart.push_back(static_cast<uint32_t>(deps.size()));
    }
    holdsForRecompute = !training;
    costFrom.assign(steps.size() + 1, 0);
    for (size_t i = steps.size(); i-- > 0;)
      costFrom[i] = costFrom[i + 1] + cost[steps[i]];
    stepOf.assign(n, 0);
    for (size_t i = 0; i < steps.size(); ++i)
      stepOf[steps[i]] = static_cast<uint32_t>(i);
    lastUseStep.assign(n, 0);
    for (NodeId id = 0; id < (NodeId)n; ++id)
      for (NodeId u : graph.users(id))
        lastUseStep[id] = std::max(lastUseStep[id], stepOf[u]);
    // Fixed keys (splitmix64 of the id): runs are reproducible.
    residentKey.resize(n);
    droppedKey.resize(n);
    for (size_t id = 0; id < n; ++id) {
      residentKey[id] = mix(3 * id + 1);
      droppedKey[id] = mix(3 * id + 2);
    }
    if (holdsForRecompute) {
      readsKey.resize(n);
      for (size_t id = 0; id < n; ++id)
        readsKey[id] = mix(3 * id + 3);
      holdKey.resize(deps.size());
      for (size_t k = 0; k < deps.size(); ++k)
        holdKey[k] = mix(3 * (n + k) + 1);
    }
    if (holdsForRecompute) {
      // The input edges of each value, grouped by the input.
      readerStart.assign(n + 1, 0);
      for (NodeId d : deps)
        ++readerStart[d + 1];
      for (size_t k = 1; k <= n; ++k)
        readerStart[k] += readerStart[k - 1];
      readerEdges.resize(deps.size());
      std::vector<uint32_t> fill(readerStart.begin(), readerStart.end() - 1);
      for (uint32_t k = 0; k < deps.size(); ++k)
        readerEdges[fill[deps[k]]++] = k;
    }
  }
  enum : uint8_t { kArgument = 1, kOutput = 2, kRecomputable = 4 };

  static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  /// Whether kept values are held for the recomputations of what they feed
  /// (graphs without a backward pass; see Policy::Keep).
  bool holdsForRecompute = false;

  const Graph &graph;
  /// The values a solver may move, found on first use: a greedy run reads
  /// them once per run, and a pinning search makes hundreds of runs on one
  /// plan (finding them each time costs 4.7% of auto's instructions on
  /// ResNet50); plans that only schedule never need them.
  struct Movable {
    MovableValues values;
    /// Whether each value is in values.checkpoints, and in values.lates.
    std::vector<char> checkpoint, computesLate;
  };
  const Movable &movable() const {
    if (!movableCache) {
      Movable &m = movableCache.emplace();
      m.values = movableValues(graph);
      m.checkpoint.assign(graph.size(), 0);
      for (NodeId c : m.values.checkpoints)
        m.checkpoint[c] = 1;
      m.computesLate.assign(graph.size(), 0);
      for (NodeId c : m.values.lates)
        m.computesLate[c] = 1;
    }
    return *movableCache;
  }
  /// Whether a schedule from the executor can be invalid at all: only by
  /// recomputing a value that cannot be, or reading one an in-place op
  /// overwrote. On graphs without either, the executor skips the checks.
  bool needsChecks = false;
  /// The arguments, and the nodes the executor computes in order.
  std::vector<NodeId> arguments, steps;
  std::vector<int32_t> remaining, remainingEarly;
  // The graph in flat arrays: the executor reads them once per event.
  std::vector<uint8_t> flags;
  std::vector<int64_t> allocated; // bytes a computation allocates
  std::vector<int64_t> workspace; // bytes it holds while it runs
  std::vector<double> cost;
  std::vector<NodeId> overwrites;
  /// deps[depStart[id] .. depStart[id + 1]) are id's inputs in deps()
  /// order; earlyDep says for each whether the use is early.
  std::vector<uint32_t> depStart;
  std::vector<NodeId> deps;
  std::vector<char> earlyDep;
  /// What steps[i ..] cost computed once each: every run pays at least
  /// that from step i on.
  std::vector<double> costFrom;
  /// Where each node is computed in `steps` (arguments: 0).
  std::vector<uint32_t> stepOf;
  /// The step of each value's last user (0 without one).
  std::vector<uint32_t> lastUseStep;
  /// Random keys whose xor over the resident values, and over the dropped
  /// values still to be read, fingerprints the executor's state (see
  /// PolicyExecutor::evaluateChanged).
  std::vector<uint64_t> residentKey, droppedKey;
  /// Where the reads left depend on the policies (holdsForRecompute), the
  /// sum of each value's reads left times its key, and of each edge's
  /// holds left times its key, fingerprints them.
  std::vector<uint64_t> readsKey, holdKey;
  /// readerEdges[readerStart[d] .. readerStart[d + 1]) are the indices in
  /// `deps` of the edges that read d (graphs that hold for recomputation).
  std::vector<uint32_t> readerStart, readerEdges;

private:
  mutable std::optional<Movable> movableCache;
};

/// What the simulator reports for a schedule at a budget, as far as a
/// solver's search needs it.
struct Evaluated {
  bool valid;
  int64_t peak;
  double cost, excess;
  /// Computations in the schedule: the work the evaluation took.
  int64_t computes;
  /// Stopped at a Cutoff: the schedule is known to be no better than the
  /// caller's, and the figures are partial.
  bool cut;
};

/// When an evaluation may stop early. Excess, cost and peak only grow along
/// a schedule (sizes and costs are not negative), so once one reaches what
/// the caller would reject, the rest cannot change the verdict.
struct Cutoff {
  double excess = std::numeric_limits<double>::infinity();
  double cost = std::numeric_limits<double>::infinity();
  int64_t peak = kNoBudget;
  /// Also stop where the cost so far plus each step still to come computed
  /// once reaches `cost` (whole evaluations only: a resumed one may not end
  /// where the whole one would, and the searches count the computations
  /// an evaluation ran as their work, so they keep the plain cutoff, by
  /// which their paths are measured and tuned).
  bool costToGo = false;
};

} // namespace remat::detail

#endif // REMAT_LIB_REMAT_EXECUTORPLAN_H
