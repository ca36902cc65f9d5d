//===- Graph.cpp - Rematerialization graph and simulator ------------------===//
//
// The simulator is the single source of every memory and cost figure the
// project reports, so it checks schedules strictly rather than guessing what
// a malformed one meant.
//
//===----------------------------------------------------------------------===//

#include "remat/Remat/Graph.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

using namespace remat;

NodeId Graph::addNode(Node node) {
  nodes.push_back(std::move(node));
  depLists.emplace_back();
  userLists.emplace_back();
  return static_cast<NodeId>(nodes.size() - 1);
}

void Graph::addEdge(NodeId producer, NodeId user) {
  assert(producer >= 0 && producer < user && user < (NodeId)nodes.size() &&
         "edges must follow the topological order");
  auto insertSorted = [](std::vector<NodeId> &list, NodeId id) {
    auto it = std::lower_bound(list.begin(), list.end(), id);
    if (it == list.end() || *it != id)
      list.insert(it, id);
  };
  insertSorted(depLists[user], producer);
  insertSorted(userLists[producer], user);
}

std::string Graph::verify() const {
  // Every live-byte count the simulator and the solvers form is at most the
  // sum of all sizes plus one workspace: that sum must fit 64 bits.
  int64_t total = 0, workspace = 0, bound = 0;
  for (NodeId id = 0; id < (NodeId)nodes.size(); ++id) {
    const Node &n = nodes[id];
    std::string where = "node " + std::to_string(id) + " ('" + n.name + "')";
    if (n.bytes < 0)
      return where + " has negative size";
    if (n.workspace < 0)
      return where + " has a negative workspace";
    if (!(n.cost >= 0) || !std::isfinite(n.cost))
      return where + " has a negative or non-finite cost";
    workspace = std::max(workspace, n.workspace);
    if (__builtin_add_overflow(total, n.bytes, &total) ||
        __builtin_add_overflow(total, workspace, &bound))
      return where + ": the graph's sizes add up past what 64 bits hold";
    if (n.argument && !depLists[id].empty())
      return where + " is an argument with inputs";
    for (NodeId d : depLists[id])
      if (d >= id)
        return where + " reads a later node";
    if (n.overwrites >= 0) {
      if (n.overwrites >= id || !nodes[n.overwrites].argument)
        return where + " overwrites a node that is not an earlier argument";
      if (!std::binary_search(depLists[id].begin(), depLists[id].end(),
                              n.overwrites))
        return where + " overwrites a node it does not read";
    }
  }
  return "";
}

int64_t Graph::argumentBytes() const {
  int64_t bytes = 0;
  for (const Node &n : nodes)
    if (n.argument)
      bytes += n.bytes;
  return bytes;
}

int64_t Graph::peakLowerBound() const {
  // A node that overwrites an argument allocates nothing of its own.
  auto allocated = [&](NodeId id) {
    return nodes[id].overwrites >= 0 ? 0 : nodes[id].bytes;
  };
  int64_t most = 0;
  for (NodeId id = 0; id < (NodeId)size(); ++id) {
    if (nodes[id].argument)
      continue;
    int64_t need = allocated(id) + nodes[id].workspace;
    for (NodeId d : deps(id))
      if (!nodes[d].argument)
        need += allocated(d);
    most = std::max(most, need);
  }
  return argumentBytes() + most;
}

double Graph::baselineCost() const {
  double cost = 0;
  for (const Node &n : nodes)
    if (!n.argument)
      cost += n.cost;
  return cost;
}

/// Bytes a compute event allocates: an in-place update allocates nothing.
static int64_t allocatedBytes(const Node &n) {
  return n.overwrites >= 0 ? 0 : n.bytes;
}

SimResult remat::simulate(const Graph &graph, const Schedule &schedule,
                          int64_t budget) {
  SimResult r;
  size_t n = graph.size();
  std::vector<char> resident(n, 0), computed(n, 0), clobbered(n, 0);
  int64_t live = 0;
  for (NodeId id = 0; id < (NodeId)n; ++id)
    if (graph.node(id).argument) {
      resident[id] = 1;
      live += graph.node(id).bytes;
    }
  r.peakBytes = live;
  auto fail = [&](size_t index, const std::string &why) {
    r.valid = false;
    r.error = "event " + std::to_string(index) + ": " + why;
    return r;
  };
  for (size_t i = 0; i < schedule.size(); ++i) {
    const Event &e = schedule[i];
    if (e.node < 0 || e.node >= (NodeId)n)
      return fail(i, "unknown node " + std::to_string(e.node));
    const Node &node = graph.node(e.node);
    auto name = [&] {
      return "'" + node.name + "' (" + std::to_string(e.node) + ")";
    };
    if (node.argument)
      return fail(i, "argument " + name() + " is neither computed nor freed");
    if (e.kind == Event::Kind::Free) {
      if (!resident[e.node])
        return fail(i, "frees " + name() + ", which is not resident");
      if (node.output)
        return fail(i, "frees output " + name());
      resident[e.node] = 0;
      live -= allocatedBytes(node);
      continue;
    }
    if (resident[e.node])
      return fail(i, "computes " + name() + ", which is already resident");
    if (computed[e.node] && !node.recomputable)
      return fail(i, "recomputes " + name() + ", which is not recomputable");
    for (NodeId d : graph.deps(e.node)) {
      if (clobbered[d])
        return fail(i, name() + " reads '" + graph.node(d).name +
                           "' after it was overwritten in place");
      if (!resident[d])
        return fail(i, name() + " reads '" + graph.node(d).name +
                           "', which is not resident");
    }
    if (computed[e.node])
      ++r.recomputations;
    computed[e.node] = 1;
    resident[e.node] = 1;
    if (node.overwrites >= 0)
      clobbered[node.overwrites] = 1;
    live += allocatedBytes(node);
    r.cost += node.cost;
    // The node's workspace is held during its computation only.
    int64_t during = live + node.workspace;
    if (during > r.peakBytes) {
      r.peakBytes = during;
      r.peakEvent = i;
    }
    if (during > budget)
      r.excess += static_cast<double>(during - budget);
  }
  for (NodeId id = 0; id < (NodeId)n; ++id) {
    if (graph.node(id).output && !resident[id])
      return fail(schedule.size(), "output '" + graph.node(id).name +
                                       "' is not resident at the end");
    if (!graph.node(id).argument && !computed[id])
      return fail(schedule.size(),
                  "node '" + graph.node(id).name + "' is never computed");
  }
  r.valid = true;
  return r;
}

std::vector<int64_t> remat::residentBytes(const Graph &graph,
                                          const Schedule &schedule) {
  std::vector<int64_t> out;
  int64_t live = graph.argumentBytes();
  for (const Event &e : schedule) {
    const Node &n = graph.node(e.node);
    bool compute = e.kind == Event::Kind::Compute;
    live += compute ? allocatedBytes(n) : -allocatedBytes(n);
    out.push_back(live + (compute ? n.workspace : 0));
  }
  return out;
}

Schedule remat::freeAtLastUse(const Graph &graph, const Schedule &schedule) {
  // Each free moves to after the last compute event that touched its value
  // (index + 1 of that event; 0 = before everything). Frees are bucketed by
  // that position with a counting sort, keeping their order within a bucket.
  size_t n = schedule.size();
  std::vector<int64_t> lastTouch(graph.size(), -1);
  std::vector<uint32_t> slot(n, 0), start(n + 2, 0);
  for (size_t i = 0; i < n; ++i) {
    const Event &e = schedule[i];
    if (e.kind == Event::Kind::Free) {
      slot[i] = static_cast<uint32_t>(lastTouch[e.node] + 1);
      ++start[slot[i] + 1];
      continue;
    }
    lastTouch[e.node] = static_cast<int64_t>(i);
    for (NodeId d : graph.deps(e.node))
      lastTouch[d] = static_cast<int64_t>(i);
  }
  for (size_t k = 1; k < start.size(); ++k)
    start[k] += start[k - 1];
  std::vector<NodeId> frees(start.back());
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < n; ++i)
    if (schedule[i].kind == Event::Kind::Free)
      frees[fill[slot[i]]++] = schedule[i].node;
  Schedule out;
  out.reserve(n);
  auto emitFrees = [&](size_t position) {
    for (uint32_t k = start[position]; k < start[position + 1]; ++k)
      out.push_back({Event::Kind::Free, frees[k]});
  };
  emitFrees(0);
  for (size_t i = 0; i < n; ++i) {
    if (schedule[i].kind == Event::Kind::Free)
      continue;
    out.push_back(schedule[i]);
    emitFrees(i + 1);
  }
  return out;
}
