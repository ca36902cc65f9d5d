//===- Graph.h - The rematerialization problem, free of IR ------*- C++ -*-===//
//
// A training step as the solvers see it: nodes with a compute cost and output
// bytes in a fixed topological order, schedules of compute and free events,
// and the one simulator that checks a schedule and measures it. Nothing here
// knows MLIR, so solvers can be tested and benchmarked alone and the same
// code reads graphs from other tools.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_REMAT_GRAPH_H
#define REMAT_REMAT_GRAPH_H

#include <cstdint>
#include <string>
#include <vector>

namespace remat {

using NodeId = int32_t;

struct Node {
  std::string name;
  /// Price of one execution (FLOPs for IR graphs).
  double cost = 0;
  /// Bytes of the node's output.
  int64_t bytes = 0;
  /// Part of the backward pass or the update (not needed for the loss).
  bool backward = false;
  /// Resident before the step starts and never freed (parameters, inputs).
  bool argument = false;
  /// Must be resident when the step ends (it is returned).
  bool output = false;
  /// May be computed more than once.
  bool recomputable = true;
  /// When >= 0, the node writes its result into this argument's buffer: it
  /// allocates nothing and the argument may not be used after it.
  NodeId overwrites = -1;
  /// Scratch bytes held only while the node computes (on top of its
  /// output), such as partial sums of a reduction done in parallel.
  int64_t workspace = 0;
  /// Where the node comes from in the user's model when the IR says (a
  /// name location, such as the PyTorch module path the exporter writes);
  /// for tools and reports only.
  std::string source;
};

/// How hard Graph::costLowerBound works: the moments alone, or also chains
/// of windows between them.
enum class CostBoundEffort { Moments, Windows };

/// A DAG whose node ids are a topological order: every edge goes from a
/// lower id to a higher one.
class Graph {
public:
  NodeId addNode(Node node);
  /// Records that `user` reads `producer`. Requires producer < user.
  void addEdge(NodeId producer, NodeId user);

  size_t size() const { return nodes.size(); }
  const Node &node(NodeId id) const { return nodes[id]; }
  Node &node(NodeId id) { return nodes[id]; }
  /// Distinct producers read by `id`, in increasing order.
  const std::vector<NodeId> &deps(NodeId id) const { return depLists[id]; }
  /// Distinct users of `id`, in increasing order.
  const std::vector<NodeId> &users(NodeId id) const { return userLists[id]; }

  /// Returns an empty string when the graph is well formed, else why not.
  std::string verify() const;
  /// Bytes resident for the whole step (the arguments).
  int64_t argumentBytes() const;
  /// Cost of computing every non-argument node once.
  double baselineCost() const;
  /// No schedule peaks below this: the arguments, plus, for the node that
  /// needs most, its output, its workspace and every other value it reads,
  /// resident together while it computes.
  int64_t peakLowerBound() const;
  /// No schedule that computes the nodes for the first time in order (as
  /// Checkmate's stages and every solver here do) and peaks at most
  /// `budget` costs less than this; infinity when none fits. At each node's
  /// first computation, the values computed before it and read after it
  /// that are not held then are computed again later, each at least its
  /// own cost: the baseline plus, at the node where it is largest, the
  /// least cost of values whose bytes bring that moment under the budget.
  /// `Windows` also chains moments: what is recomputed between two
  /// moments is bounded at the first, and the windows' bounds add up
  /// (seconds on Checkmate's ResNet50, against milliseconds).
  double
  costLowerBound(int64_t budget,
                 CostBoundEffort effort = CostBoundEffort::Moments) const;

private:
  std::vector<Node> nodes;
  std::vector<std::vector<NodeId>> depLists, userLists;
};

struct Event {
  enum class Kind : uint8_t { Compute, Free };
  Kind kind;
  NodeId node;
  bool operator==(const Event &o) const {
    return kind == o.kind && node == o.node;
  }
};
using Schedule = std::vector<Event>;

struct SimResult {
  bool valid = false;
  /// Why the schedule is invalid.
  std::string error;
  /// Highest resident bytes, arguments included; reached when the output of
  /// the compute event `peakEvent` is allocated (its inputs still live).
  int64_t peakBytes = 0;
  size_t peakEvent = 0;
  /// Sum of the costs of all compute events.
  double cost = 0;
  /// Compute events of nodes computed before.
  int64_t recomputations = 0;
  /// Sum over compute events of the resident bytes above `budget`.
  double excess = 0;
};

/// The one simulator: checks that every use finds its operand resident, that
/// every node is computed at least once, that outputs survive to the end and
/// that nothing reads an overwritten argument, and
/// measures peak bytes and cost. `budget` only feeds `excess`.
SimResult simulate(const Graph &graph, const Schedule &schedule,
                   int64_t budget = 0);

/// Moves every free event to right after the last compute event that reads
/// that copy of the value (or computes it, when nothing reads it), which is
/// where the lowering frees it. Never raises the peak.
Schedule freeAtLastUse(const Graph &graph, const Schedule &schedule);

/// Bytes in use at each event: resident values after it, plus the
/// workspace of the node a computation runs.
std::vector<int64_t> residentBytes(const Graph &graph,
                                   const Schedule &schedule);

} // namespace remat

#endif // REMAT_REMAT_GRAPH_H
