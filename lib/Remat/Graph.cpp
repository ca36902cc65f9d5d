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
  for (NodeId id = 0; id < (NodeId)nodes.size(); ++id) {
    const Node &n = nodes[id];
    std::string where = "node " + std::to_string(id) + " ('" + n.name + "')";
    if (n.bytes < 0)
      return where + " has negative size";
    if (n.workspace < 0)
      return where + " has a negative workspace";
    if (n.cost < 0)
      return where + " has negative cost";
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

namespace {
/// The least cost of items (bytes, cost) whose bytes add up to at least
/// `need`, or a lower bound on it: depth-first branch and bound, items by
/// cost per byte, each branch pruned by the fractional (LP) bound. After
/// `branches` branches it stops and answers the root's fractional bound,
/// which is never above the optimum.
class CoverKnapsack {
public:
  double solve(std::vector<std::pair<int64_t, double>> &items, int64_t need,
               int64_t branches) {
    std::sort(items.begin(), items.end(), [](const auto &a, const auto &b) {
      return a.second * static_cast<double>(b.first) <
             b.second * static_cast<double>(a.first);
    });
    this->items = &items;
    // Prefix sums make each fractional bound a binary search.
    bytesBefore.assign(1, 0);
    costBefore.assign(1, 0);
    for (auto [bytes, c] : items) {
      bytesBefore.push_back(bytesBefore.back() + bytes);
      costBefore.push_back(costBefore.back() + c);
    }
    left = branches;
    best = std::numeric_limits<double>::infinity();
    double root = fractional(0, need);
    search(0, need, 0);
    return left < 0 ? root : best;
  }

private:
  /// The least cost of items k.. covering `need` with the last one taken
  /// in part (their LP), infinity when even all of them fall short.
  double fractional(size_t k, int64_t need) const {
    int64_t target = bytesBefore[k] + need;
    if (bytesBefore.back() < target)
      return std::numeric_limits<double>::infinity();
    // The first j with bytesBefore[j] >= target; item j - 1 is cut.
    size_t j = static_cast<size_t>(
        std::lower_bound(bytesBefore.begin() + k, bytesBefore.end(), target) -
        bytesBefore.begin());
    auto [bytes, c] = (*items)[j - 1];
    double whole = costBefore[j - 1] - costBefore[k];
    int64_t rest = target - bytesBefore[j - 1];
    return whole + c * static_cast<double>(rest) / static_cast<double>(bytes);
  }
  void search(size_t k, int64_t need, double cost) {
    if (need <= 0) {
      best = std::min(best, cost);
      return;
    }
    if (k == items->size() || --left < 0 || cost + fractional(k, need) >= best)
      return;
    auto [bytes, c] = (*items)[k];
    search(k + 1, need - bytes, cost + c);
    search(k + 1, need, cost);
  }

  const std::vector<std::pair<int64_t, double>> *items = nullptr;
  std::vector<int64_t> bytesBefore;
  std::vector<double> costBefore;
  int64_t left = 0;
  double best = 0;
};
} // namespace

double Graph::costLowerBound(int64_t budget) const {
  auto allocated = [&](NodeId id) {
    return nodes[id].overwrites >= 0 ? 0 : nodes[id].bytes;
  };
  size_t n = size();
  std::vector<NodeId> lastRead(n, -1);
  for (NodeId id = 0; id < (NodeId)n; ++id)
    for (NodeId u : users(id))
      lastRead[id] = std::max(lastRead[id], u);
  // One walk over the nodes in order, calling
  // `atNode(t, forced, optional, items)` at each first computation with the
  // bytes that must be held then, the bytes of the values computed before
  // t and read after it that may be dropped and computed again, and those
  // values as (bytes, cost). `wantItems(t)` says where the list is needed
  // (building it is most of the work on large graphs).
  auto walk = [&](auto wantItems, auto atNode) {
    std::vector<char> read(n, 0);
    std::vector<NodeId> open; // computed, read later, not an output
    std::vector<std::pair<int64_t, double>> items;
    int64_t outputs = 0; // outputs computed so far: never freed
    for (NodeId t = 0; t < (NodeId)n; ++t) {
      if (nodes[t].argument)
        continue;
      int64_t forced =
          argumentBytes() + outputs + allocated(t) + nodes[t].workspace;
      for (NodeId d : deps(t)) {
        read[d] = 1;
        if (!nodes[d].argument && !nodes[d].output)
          forced += allocated(d);
      }
      bool want = wantItems(t);
      items.clear();
      int64_t optional = 0;
      size_t kept = 0;
      for (NodeId i : open) {
        if (lastRead[i] <= t)
          continue; // read for the last time by now: may be gone
        open[kept++] = i;
        if (read[i] || allocated(i) == 0)
          continue;
        if (!nodes[i].recomputable) {
          forced += allocated(i); // cannot come back: it stays
          continue;
        }
        optional += allocated(i);
        if (want)
          items.push_back({allocated(i), nodes[i].cost});
      }
      open.resize(kept);
      for (NodeId d : deps(t))
        read[d] = 0;
      if (!atNode(t, forced, optional, items))
        return false;
      if (nodes[t].output)
        outputs += allocated(t);
      else if (lastRead[t] > t)
        open.push_back(t);
    }
    return true;
  };
  // First the bytes each node's moment is over the budget by; infinity
  // where what must be held alone is over it.
  std::vector<int64_t> over(n, 0);
  if (!walk([](NodeId) { return false; },
            [&](NodeId t, int64_t forced, int64_t optional, const auto &) {
              over[t] = forced + optional - budget;
              return forced <= budget;
            }))
    return std::numeric_limits<double>::infinity();
  // Then the knapsack at the moments most over the budget: every one on
  // the field's graphs, the 1,024 largest on bigger ones (a bound over
  // some moments is still a bound, and this keeps 10,000 nodes under a
  // second).
  std::vector<NodeId> order;
  for (NodeId t = 0; t < (NodeId)n; ++t)
    if (over[t] > 0)
      order.push_back(t);
  constexpr size_t kMoments = 1024;
  if (order.size() > kMoments) {
    std::nth_element(order.begin(), order.begin() + kMoments, order.end(),
                     [&](NodeId a, NodeId b) { return over[a] > over[b]; });
    order.resize(kMoments);
  }
  std::vector<char> chosen(n, 0);
  for (NodeId t : order)
    chosen[t] = 1;
  // Exhaustive on the field's graphs; the cap only keeps a pathological
  // item list from taking long (the answer is then the LP's).
  constexpr int64_t kBranches = 20000;
  CoverKnapsack knapsack;
  double worst = 0;
  walk([&](NodeId t) { return chosen[t] != 0; },
       [&](NodeId t, int64_t, int64_t, auto &items) {
         if (chosen[t])
           worst = std::max(worst, knapsack.solve(items, over[t], kBranches));
         return true;
       });
  return baselineCost() + worst;
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
