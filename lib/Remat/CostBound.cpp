//===- CostBound.cpp - Lower bounds on the cost of any schedule ----------===//
//
// Graph::costLowerBound: what no schedule that computes the nodes for the
// first time in order can recompute less than, at a budget. Every solver's
// answer is measured against it, so it must never pass the optimum; the
// unit tests check it against a brute force over all schedules of tiny
// graphs. docs/Design.md ("The cost bound") explains the pieces.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "remat/Remat/Graph.h"

#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

using namespace remat;

namespace {
/// A value that may be dropped at a moment: its bytes, the cost of
/// computing it again, and its node.
struct CoverItem {
  int64_t bytes;
  double cost;
  NodeId id;
};

/// Items sorted by cost per byte, with prefix sums: the fractional (LP)
/// bound of covering some bytes with items k.. is then a binary search.
class RatioOrder {
public:
  void reset(std::vector<CoverItem> &list) {
    std::sort(list.begin(), list.end(), [](const auto &a, const auto &b) {
      return a.cost * static_cast<double>(b.bytes) <
             b.cost * static_cast<double>(a.bytes);
    });
    items = &list;
    bytesBefore.assign(1, 0);
    costBefore.assign(1, 0);
    for (const CoverItem &i : list) {
      bytesBefore.push_back(bytesBefore.back() + i.bytes);
      costBefore.push_back(costBefore.back() + i.cost);
    }
  }
  size_t size() const { return items->size(); }
  const CoverItem &operator[](size_t k) const { return (*items)[k]; }

  /// The least cost of items k.. covering `need` with the last one taken
  /// in part, infinity when even all of them fall short.
  double fractional(size_t k, int64_t need) const {
    if (need <= 0)
      return 0;
    int64_t target = bytesBefore[k] + need;
    if (bytesBefore.back() < target)
      return std::numeric_limits<double>::infinity();
    // The first j with bytesBefore[j] >= target; item j - 1 is cut.
    size_t j = static_cast<size_t>(
        std::lower_bound(bytesBefore.begin() + k, bytesBefore.end(), target) -
        bytesBefore.begin());
    const CoverItem &cut = (*items)[j - 1];
    double whole = costBefore[j - 1] - costBefore[k];
    int64_t rest = target - bytesBefore[j - 1];
    return whole + cut.cost * static_cast<double>(rest) /
                       static_cast<double>(cut.bytes);
  }

private:
  const std::vector<CoverItem> *items = nullptr;
  std::vector<int64_t> bytesBefore;
  std::vector<double> costBefore;
};

/// The least cost of items whose bytes add up to at least `need`, or a
/// lower bound on it: depth-first branch and bound, items by cost per
/// byte, each branch pruned by the fractional bound. After `branches`
/// branches it stops and answers the root's fractional bound, which is
/// never above the optimum.
class CoverKnapsack {
public:
  double solve(std::vector<CoverItem> &items, int64_t need, int64_t branches) {
    order.reset(items);
    left = branches;
    best = std::numeric_limits<double>::infinity();
    taken.clear();
    bestTaken.clear();
    double root = order.fractional(0, need);
    search(0, need, 0);
    return left < 0 ? root : best;
  }

  /// The items of the cheapest cover the last solve found.
  std::vector<NodeId> cover() const {
    std::vector<NodeId> ids;
    for (size_t k : bestTaken)
      ids.push_back(order[k].id);
    return ids;
  }

private:
  void search(size_t k, int64_t need, double cost) {
    if (need <= 0) {
      if (cost < best) {
        best = cost;
        bestTaken = taken;
      }
      return;
    }
    if (k == order.size() || --left < 0 ||
        cost + order.fractional(k, need) >= best)
      return;
    taken.push_back(k);
    search(k + 1, need - order[k].bytes, cost + order[k].cost);
    taken.pop_back();
    search(k + 1, need, cost);
  }

  std::vector<size_t> taken, bestTaken;
  RatioOrder order;
  int64_t left = 0;
  double best = 0;
};

/// A bound that also counts what a dropped value needs to come back:
/// computing it again after the moment reads its inputs then, so each input
/// that is not resident anyway and not itself an item must be held at the
/// moment (its bytes count against the budget) or be computed again too
/// (its cost, and its own inputs in turn). On a step where a cheap op (a
/// ReLU) feeds the backward pass from an expensive one (a matmul) that
/// nothing else reads later, CoverKnapsack charges the cheap op; this
/// charges the pair.
///
/// The choice is a closure problem with one knapsack constraint: drop
/// item v (cost c_v, frees b_v), hold a dragged-in input p (b_p) or drop
/// it (c_p), where dropping implies the inputs are held or dropped. Its
/// Lagrangian relaxation, the constraint priced at lambda per byte, is a
/// minimum-weight closure, which is a minimum cut; the best lambda gives
/// the relaxation's LP value, a lower bound, found by cutting planes on
/// the concave dual (a few cuts per moment).
class ClosureRelaxation {
public:
  ClosureRelaxation(const Graph &graph, const std::vector<NodeId> &lastRead)
      : graph(graph), lastRead(lastRead), slot(graph.size(), -1),
        depOfMoment(graph.size(), 0) {}

  /// Values read after the moment that may be dropped at no cost, because
  /// the window ends before they are read again (see WindowBound): a
  /// recomputation in the window that reads one needs it held or brought
  /// back too, like a value read for the last time. Null outside windows.
  void setWindowFree(const std::vector<char> *marks) { windowFree = marks; }

  /// The cost of one choice at moment `t` that covers `need` with
  /// `items` (in cost-per-byte order) and brings back what they need:
  /// no bound at the moment is above it. Minus infinity where no item
  /// needs anything brought back, so that the relaxation equals the
  /// knapsack's LP there and has nothing to add.
  double upperBound(NodeId t, const std::vector<CoverItem> &items,
                    int64_t need) {
    collect(t, items);
    double result = dragged.empty() ? -std::numeric_limits<double>::infinity()
                                    : upper(need);
    release(t, items);
    return result;
  }

  /// A lower bound on the extra cost at moment `t`, where `items` must
  /// cover `need` bytes: at least `floor`, which it returns as soon as it
  /// knows it cannot beat it. Infinity where nothing covers the need.
  /// The larger of two bounds: the closure problem's LP value (by minimum
  /// cuts), and an integer one where each item is a whole choice.
  double solve(NodeId t, const std::vector<CoverItem> &items, int64_t need,
               double floor, int64_t branches) {
    collect(t, items);
    double result = floor;
    if (!dragged.empty()) {
      // Whole choices only where the LP lifts the bound: they cost more.
      result = maximize(need, floor);
      if (std::isfinite(result) && result > floor)
        result = std::max(result, coverByOptions(need, branches));
    }
    release(t, items);
    return result;
  }

private:
  static int64_t allocated(const Node &n) {
    return n.overwrites >= 0 ? 0 : n.bytes;
  }

  void release(NodeId t, const std::vector<CoverItem> &items) {
    for (NodeId id : dragged)
      slot[id] = -1;
    for (const CoverItem &i : items)
      slot[i.id] = -1;
    for (NodeId d : graph.deps(t))
      depOfMoment[d] = 0;
  }

  /// The items and the inputs dropping them drags in, transitively:
  /// values that take bytes and are neither resident anyway (arguments,
  /// outputs, the moment's inputs, values read later that cannot be
  /// dropped) nor items.
  void collect(NodeId t, const std::vector<CoverItem> &items) {
    for (NodeId d : graph.deps(t))
      depOfMoment[d] = 1;
    vars.clear();
    dragged.clear();
    for (const CoverItem &i : items) {
      slot[i.id] = static_cast<int32_t>(vars.size());
      vars.push_back({i.id, i.bytes, i.cost, /*item=*/true,
                      /*droppable=*/true});
    }
    for (size_t k = 0; k < vars.size(); ++k) {
      if (!graph.node(vars[k].id).recomputable)
        continue; // never dropped: what it reads does not matter
      for (NodeId d : graph.deps(vars[k].id)) {
        const Node &n = graph.node(d);
        if (slot[d] >= 0 || n.argument || n.output || depOfMoment[d] ||
            allocated(n) == 0 ||
            (lastRead[d] > t && !(windowFree && (*windowFree)[d])))
          continue;
        slot[d] = static_cast<int32_t>(vars.size());
        vars.push_back(
            {d, allocated(n), n.cost, /*item=*/false, n.recomputable});
        dragged.push_back(d);
      }
    }
  }

  /// The cost of one choice that covers `need`: items in their order
  /// (cost per byte), each with all it drags in dropped too (held where
  /// that cannot be). No bound at the moment is above it, so where it is
  /// not above the floor the relaxation has nothing to add (most moments).
  double upper(int64_t need) {
    std::vector<char> taken(vars.size(), 0);
    double cost = 0;
    std::vector<size_t> stack;
    for (size_t k = 0; k < vars.size() && vars[k].item && need > 0; ++k) {
      cost += vars[k].cost;
      need -= vars[k].bytes;
      stack.push_back(k);
      while (!stack.empty()) {
        size_t x = stack.back();
        stack.pop_back();
        for (NodeId d : graph.deps(vars[x].id)) {
          int32_t j = slot[d];
          if (j < 0 || vars[j].item || taken[j])
            continue;
          taken[j] = 1;
          if (graph.node(d).recomputable) {
            cost += vars[j].cost;
            stack.push_back(static_cast<size_t>(j));
          } else {
            need += vars[j].bytes;
          }
        }
      }
    }
    return need > 0 ? std::numeric_limits<double>::infinity() : cost;
  }

  double maximize(int64_t need, double floor);
  double coverByOptions(int64_t need, int64_t branches);

  struct Var {
    NodeId id;
    int64_t bytes;
    double cost;
    bool item;
    bool droppable;
  };
  class Network;
  static constexpr int kCuts = 30;

  const Graph &graph;
  const std::vector<NodeId> &lastRead;
  std::vector<int32_t> slot; // node -> index in vars, or -1
  std::vector<char> depOfMoment;
  std::vector<Var> vars;
  std::vector<NodeId> dragged;
  const std::vector<char> *windowFree = nullptr;
};

/// The relaxation's network at one moment. Nodes: source, sink, then per
/// variable "dropped" (items, and dragged inputs that can be recomputed)
/// and, for dragged inputs, "needed". Choosing a node costs its weight; an
/// infinite arc x -> y says choosing x chooses y. The cheapest closed set
/// is the source side of a minimum cut where a node of negative weight w
/// hangs from the source by -w and one of positive weight from the sink by
/// w. Only those weights depend on lambda: the network is built once per
/// moment, and each lambda sets their capacities.
///
/// The network is a compressed sparse row graph with its capacities in
/// arrays by edge index, and the cut is Boykov and Kolmogorov's: an
/// adjacency list allocates every edge's properties on its own, and
/// push-relabel keeps its layers in linked lists; between them they were
/// two thirds of the bound's instructions on ResNet50.
class ClosureRelaxation::Network {
public:
  Network(const Graph &graph, const std::vector<Var> &vars,
          const std::vector<int32_t> &slot)
      : vars(vars), nv(vars.size()) {
    for (size_t k = 0; k < nv; ++k) {
      weighed.push_back(arc(0, dropped(k)));
      weighed.push_back(arc(dropped(k), 1));
      if (vars[k].item)
        continue;
      weighed.push_back(arc(0, needed(k)));
      weighed.push_back(arc(needed(k), 1));
    }
    // A value that cannot be recomputed is never dropped: its "dropped"
    // node weighs nothing and implies nothing, so it is never chosen.
    for (size_t k = 0; k < nv; ++k) {
      if (!vars[k].droppable)
        continue;
      if (!vars[k].item)
        implications.push_back(arc(dropped(k), needed(k)));
      for (NodeId d : graph.deps(vars[k].id))
        if (int32_t j = slot[d]; j >= 0 && !vars[j].item)
          implications.push_back(
              arc(dropped(k), needed(static_cast<size_t>(j))));
    }
    build();
  }

  /// The dual at `lambda`: the relaxation's value and its slope (bytes
  /// held over the budget by the minimizing choice).
  std::pair<double, double> dual(double lambda, int64_t need) {
    double negative = 0, big = 0;
    size_t w = 0;
    auto weigh = [&](double weight) {
      capacity[weighed[w++]] = weight < 0 ? -weight : 0; // from the source
      capacity[weighed[w++]] = weight > 0 ? weight : 0;  // to the sink
      negative += std::min(weight, 0.0);
      big += std::abs(weight);
    };
    for (size_t k = 0; k < nv; ++k) {
      const Var &v = vars[k];
      double bytes = static_cast<double>(v.bytes);
      weigh(v.droppable ? v.cost - lambda * bytes : 0);
      if (!v.item)
        weigh(lambda * bytes);
    }
    for (size_t e : implications)
      capacity[e] = 2 * big + 1; // more than any cut without it
    auto index = boost::get(boost::edge_index, net);
    auto vertex = boost::get(boost::vertex_index, net);
    double cut = boost::boykov_kolmogorov_max_flow(
        net, boost::make_iterator_property_map(capacity.begin(), index),
        boost::make_iterator_property_map(residual.begin(), index),
        boost::make_iterator_property_map(reverse.begin(), index),
        boost::make_iterator_property_map(predecessor.begin(), vertex),
        boost::make_iterator_property_map(color.begin(), vertex),
        boost::make_iterator_property_map(distance.begin(), vertex), vertex, 0,
        1);
    // The source side: what the source still reaches in the residual
    // network (the same set whichever maximum flow the cut found).
    std::fill(chosen.begin(), chosen.end(), 0);
    std::vector<size_t> queue = {0};
    chosen[0] = 1;
    while (!queue.empty()) {
      size_t x = queue.back();
      queue.pop_back();
      auto [begin, end] = boost::out_edges(x, net);
      for (auto it = begin; it != end; ++it) {
        size_t y = boost::target(*it, net);
        size_t i = it->idx;
        if (!chosen[y] && residual[i] > 1e-9 * (1 + capacity[i])) {
          chosen[y] = 1;
          queue.push_back(y);
        }
      }
    }
    double held = static_cast<double>(need);
    for (size_t k = 0; k < nv; ++k) {
      double bytes = static_cast<double>(vars[k].bytes);
      if (vars[k].item)
        held -= chosen[dropped(k)] ? bytes : 0;
      else if (chosen[needed(k)] && !chosen[dropped(k)])
        held += bytes;
    }
    return {lambda * static_cast<double>(need) + negative + cut, held};
  }

private:
  using Net = boost::compressed_sparse_row_graph<boost::directedS>;
  using Edge = boost::graph_traits<Net>::edge_descriptor;

  size_t dropped(size_t k) const { return 2 + k; }
  size_t needed(size_t k) const { return 2 + nv + k; }

  /// An arc and its reverse (capacity 0), at 2i and 2i + 1 of `ends`;
  /// returns the arc's edge index once build() has run (`position` maps
  /// it).
  size_t arc(size_t from, size_t to) {
    ends.push_back({from, to});
    ends.push_back({to, from});
    return ends.size() - 2;
  }

  /// The graph from `ends`, sorted by source (stably, so that the edge
  /// indices are known), and the arcs' indices in `weighed` and
  /// `implications` turned into edge indices.
  void build() {
    size_t nodes = 2 + 2 * nv, m = ends.size();
    std::vector<size_t> start(nodes + 1, 0);
    for (const auto &[from, to] : ends)
      ++start[from + 1];
    for (size_t x = 0; x < nodes; ++x)
      start[x + 1] += start[x];
    std::vector<size_t> position(m);
    std::vector<std::pair<size_t, size_t>> sorted(m);
    for (size_t i = 0; i < m; ++i) {
      position[i] = start[ends[i].first]++;
      sorted[position[i]] = ends[i];
    }
    net = Net(boost::edges_are_sorted, sorted.begin(), sorted.end(), nodes);
    capacity.assign(m, 0);
    residual.assign(m, 0);
    reverse.resize(m);
    for (size_t i = 0; i < m; ++i)
      reverse[position[i]] =
          Edge(ends[i ^ 1].first, static_cast<size_t>(position[i ^ 1]));
    for (size_t &e : weighed)
      e = position[e];
    for (size_t &e : implications)
      e = position[e];
    predecessor.resize(nodes);
    color.resize(nodes);
    distance.resize(nodes);
    chosen.resize(nodes);
  }

  const std::vector<Var> &vars;
  size_t nv;
  std::vector<std::pair<size_t, size_t>> ends;
  Net net;
  std::vector<double> capacity, residual;
  std::vector<Edge> reverse, predecessor;
  std::vector<boost::default_color_type> color;
  std::vector<size_t> distance;
  std::vector<size_t> weighed, implications;
  std::vector<char> chosen;
};

double ClosureRelaxation::maximize(int64_t need, double floor) {
  // The dual is 0 with slope `need` at lambda 0. Past the largest cost per
  // byte, dropping a value alone pays; past all the costs together (per
  // byte), the cheapest closure is the one that holds the fewest bytes,
  // so a slope still positive there means nothing covers the need.
  double ratio = 0, total = 0;
  for (const Var &v : vars) {
    if (v.bytes > 0)
      ratio = std::max(ratio, v.cost / static_cast<double>(v.bytes));
    total += v.cost;
  }
  Network network(graph, vars, slot);
  auto dual = [&](double lambda) { return network.dual(lambda, need); };
  double loL = 0, loV = 0, loS = static_cast<double>(need);
  double hiL = 2 * ratio + 1;
  auto [hiV, hiS] = dual(hiL);
  if (hiS > 0) {
    hiL = std::max(hiL, 2 * (total + 1));
    std::tie(hiV, hiS) = dual(hiL);
    if (hiS > 0)
      return std::numeric_limits<double>::infinity();
  }
  double best = std::max(floor, hiV);
  for (int cut = 0; cut < kCuts && loS > 0 && hiS < 0; ++cut) {
    // Where the two supporting lines meet: the dual's largest possible
    // value between them.
    double lambda = (hiV - loV + loS * loL - hiS * hiL) / (loS - hiS);
    double top = loV + loS * (lambda - loL);
    if (top <= best * (1 + 1e-9))
      break; // cannot beat what is known
    auto [value, slope] = dual(lambda);
    best = std::max(best, value);
    if (value >= top * (1 - 1e-9))
      break; // the lines' meeting point is on the dual: its maximum
    if (slope > 0) {
      loL = lambda;
      loV = value;
      loS = slope;
    } else {
      hiL = lambda;
      hiV = value;
      hiS = slope;
    }
  }
  return best;
}

namespace {
/// Ways to free bytes, as (bytes, cost) points no other point beats (more
/// bytes for less cost), by increasing bytes. Bytes are fractional where a
/// shared input's price is split among the values that read it.
using Front = std::vector<std::pair<double, double>>;

constexpr size_t kFrontPoints = 16;

Front pareto(Front points) {
  std::sort(points.begin(), points.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  Front front;
  for (const auto &p : points)
    if (front.empty() || p.second < front.back().second)
      front.push_back(p);
  std::reverse(front.begin(), front.end());
  // Too many points: neighbours merge into the point that beats both (the
  // larger bytes at the smaller cost), which keeps every choice's price a
  // lower bound.
  while (front.size() > kFrontPoints) {
    Front merged;
    for (size_t k = 0; k < front.size(); k += 2)
      merged.push_back(k + 1 < front.size()
                           ? std::make_pair(front[k + 1].first, front[k].second)
                           : front[k]);
    front = pareto(std::move(merged));
  }
  return front;
}

/// Every sum of one point of each.
Front sum(const Front &a, const Front &b) {
  Front out;
  for (const auto &x : a)
    for (const auto &y : b)
      out.push_back({x.first + y.first, x.second + y.second});
  return pareto(std::move(out));
}
} // namespace

/// Each item with its whole choices: dropping it frees its bytes and costs
/// its computation, plus, for each input it drags in, holding that input
/// (its bytes back) or dropping it too (its cost, and its inputs' choices
/// in turn). An input several dropped values read is priced once in
/// truth; here each reader carries an equal share of it, which can only
/// make choices cheaper, so the least cover over whole choices (a
/// multiple-choice knapsack, by branch and bound) is a bound; on a graph
/// whose dragged inputs each have one reader, it is the exact integer
/// optimum of the closure problem. Past `branches`, the LP over the
/// choices' convex hulls answers.
double ClosureRelaxation::coverByOptions(int64_t need, int64_t branches) {
  size_t nv = vars.size();
  std::vector<int> readers(nv, 0);
  for (size_t k = 0; k < nv; ++k)
    if (vars[k].droppable)
      for (NodeId d : graph.deps(vars[k].id))
        if (int32_t j = slot[d]; j >= 0 && !vars[j].item)
          ++readers[j];
  // Dragged inputs in node order, so that an input's front is ready
  // before its readers'.
  std::vector<size_t> order;
  for (size_t k = 0; k < nv; ++k)
    if (!vars[k].item)
      order.push_back(k);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return vars[a].id < vars[b].id; });
  std::vector<Front> fronts(nv);
  auto dropping = [&](size_t k) {
    Front f = {{vars[k].item ? static_cast<double>(vars[k].bytes) : 0.0,
                vars[k].cost}};
    for (NodeId d : graph.deps(vars[k].id)) {
      int32_t j = slot[d];
      if (j < 0 || vars[j].item)
        continue;
      Front share = fronts[j];
      for (auto &p : share) {
        p.first /= readers[j];
        p.second /= readers[j];
      }
      f = sum(f, share);
    }
    return f;
  };
  for (size_t k : order) {
    Front f = {{-static_cast<double>(vars[k].bytes), 0.0}};
    if (vars[k].droppable) {
      Front drop = dropping(k);
      f.insert(f.end(), drop.begin(), drop.end());
    }
    fronts[k] = pareto(std::move(f));
  }
  // The items' useful choices (freeing bytes), and the hull increments
  // the fractional bound takes in order of cost per byte.
  struct Increment {
    double bytes, cost;
    size_t item;
  };
  std::vector<Front> choices;
  for (size_t k = 0; k < nv && vars[k].item; ++k) {
    Front useful;
    for (const auto &p : dropping(k))
      if (p.first > 0)
        useful.push_back(p);
    if (!useful.empty())
      choices.push_back(std::move(useful));
  }
  // Identical items next to each other, the cheapest per byte first: the
  // search takes identical items in order only (any cover can be
  // rearranged so), or a layer of equal activations (the MLP's) would make
  // it try every subset.
  auto bestRatio = [](const Front &f) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto &p : f)
      best = std::min(best, p.second / p.first);
    return best;
  };
  std::sort(choices.begin(), choices.end(),
            [&](const Front &a, const Front &b) {
              double ra = bestRatio(a), rb = bestRatio(b);
              return ra != rb ? ra < rb : a < b;
            });
  std::vector<size_t> nextDistinct(choices.size() + 1, choices.size());
  for (size_t k = choices.size(); k-- > 0;)
    nextDistinct[k] = k + 1 < choices.size() && choices[k + 1] == choices[k]
                          ? nextDistinct[k + 1]
                          : k + 1;
  std::vector<Increment> increments;
  for (size_t item = 0; item < choices.size(); ++item) {
    const Front &useful = choices[item];
    double bytes = 0, cost = 0;
    size_t at = 0;
    while (at < useful.size()) {
      // The next hull point: the least cost per byte from here.
      size_t next = at;
      for (size_t q = at; q < useful.size(); ++q)
        if ((useful[q].second - cost) * (useful[next].first - bytes) <
            (useful[next].second - cost) * (useful[q].first - bytes))
          next = q;
      increments.push_back(
          {useful[next].first - bytes, useful[next].second - cost, item});
      bytes = useful[next].first;
      cost = useful[next].second;
      at = next + 1;
    }
  }
  std::stable_sort(increments.begin(), increments.end(),
                   [](const Increment &a, const Increment &b) {
                     return a.cost * b.bytes < b.cost * a.bytes;
                   });
  double target = static_cast<double>(need) * (1 - 1e-12);
  std::vector<char> decided(choices.size(), 0);
  auto fractional = [&](double left) {
    double cost = 0;
    for (const Increment &inc : increments) {
      if (left <= 0)
        return cost;
      if (decided[inc.item])
        continue;
      // The increment that covers what is left is taken in part, and
      // ends the walk: `left - left / bytes * bytes` may round to a
      // positive crumb that no later increment would clear.
      if (inc.bytes >= left)
        return cost + inc.cost * left / inc.bytes;
      cost += inc.cost;
      left -= inc.bytes;
    }
    return left <= 0 ? cost : std::numeric_limits<double>::infinity();
  };
  double root = fractional(target);
  double best = std::numeric_limits<double>::infinity();
  int64_t left = branches;
  auto search = [&](auto &self, size_t k, double needLeft, double cost) {
    if (needLeft <= 0) {
      best = std::min(best, cost);
      return;
    }
    if (k == choices.size() || --left < 0 ||
        cost + fractional(needLeft) >= best)
      return;
    decided[k] = 1;
    for (auto it = choices[k].rbegin(); it != choices[k].rend(); ++it)
      self(self, k + 1, needLeft - it->first, cost + it->second);
    // Leaving this item out leaves out the identical ones after it.
    size_t next = nextDistinct[k];
    for (size_t q = k + 1; q < next; ++q)
      decided[q] = 1;
    self(self, next, needLeft, cost);
    for (size_t q = k; q < next; ++q)
      decided[q] = 0;
  };
  search(search, 0, target, 0.0);
  return left < 0 ? root : best;
}
} // namespace

namespace {
/// One walk over a graph's nodes in order: at each first computation t,
/// `atNode(t, forced, optional, items)` gets the bytes that must be held
/// then, the bytes of the values computed before t and read after it that
/// may be dropped and computed again, and those values as items (only
/// where `wantItems(t)`: building the list is most of the work on large
/// graphs). The walk stops where `atNode` returns false.
class MomentWalk {
public:
  explicit MomentWalk(const Graph &graph)
      : graph(graph), lastRead(graph.size(), -1) {
    for (NodeId id = 0; id < (NodeId)graph.size(); ++id)
      for (NodeId u : graph.users(id))
        lastRead[id] = std::max(lastRead[id], u);
  }

  /// The last node that reads each value (-1: none).
  const std::vector<NodeId> &lastReads() const { return lastRead; }

  template <typename Want, typename At>
  bool run(Want wantItems, At atNode) const {
    size_t n = graph.size();
    std::vector<char> read(n, 0);
    std::vector<NodeId> open; // computed, read later, not an output
    std::vector<CoverItem> items;
    int64_t outputs = 0; // outputs computed so far: never freed
    int64_t arguments = graph.argumentBytes();
    for (NodeId t = 0; t < (NodeId)n; ++t) {
      const Node &node = graph.node(t);
      if (node.argument)
        continue;
      int64_t forced = arguments + outputs + allocated(t) + node.workspace;
      for (NodeId d : graph.deps(t)) {
        read[d] = 1;
        if (!graph.node(d).argument && !graph.node(d).output)
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
        if (!graph.node(i).recomputable) {
          forced += allocated(i); // cannot come back: it stays
          continue;
        }
        optional += allocated(i);
        if (want)
          items.push_back({allocated(i), graph.node(i).cost, i});
      }
      open.resize(kept);
      for (NodeId d : graph.deps(t))
        read[d] = 0;
      if (!atNode(t, forced, optional, items))
        return false;
      if (node.output)
        outputs += allocated(t);
      else if (lastRead[t] > t)
        open.push_back(t);
    }
    return true;
  }

  /// The bytes each node's moment is over `budget` by, in `over`; false
  /// where what must be held alone is over it somewhere.
  bool overBudget(int64_t budget, std::vector<int64_t> &over) const {
    over.assign(graph.size(), 0);
    return run([](NodeId) { return false; },
               [&](NodeId t, int64_t forced, int64_t optional, const auto &) {
                 over[t] = forced + optional - budget;
                 return forced <= budget;
               });
  }

private:
  int64_t allocated(NodeId id) const {
    const Node &n = graph.node(id);
    return n.overwrites >= 0 ? 0 : n.bytes;
  }

  const Graph &graph;
  std::vector<NodeId> lastRead;
};
} // namespace

namespace {
/// A moment where a chain of windows may start: the bytes over the budget,
/// the values that may be dropped, and the first computation after the
/// moment that reads each of them.
struct WindowMoment {
  NodeId t;
  int64_t over;
  std::vector<CoverItem> items;
  std::vector<NodeId> nextRead;
};

/// The bound over windows. A value dropped at moment t and read again by
/// the first computation of node r, at or before the next moment t' of a
/// chain, is computed again between the two moments, and so are its inputs
/// that are not resident at t, in turn; values read only after t' may go at
/// no cost in that window. Each window's recomputations happen between its
/// moments, so a chain's windows count different computations and their
/// bounds add up: a value dropped across a whole backward pass is charged
/// in every window where something dropped needs it again (the stem of a
/// ResNet, brought back once per block), where one moment charges it once.
class WindowBound {
public:
  WindowBound(const Graph &graph, CoverKnapsack &knapsack,
              ClosureRelaxation &closure, int64_t branches,
              int64_t optionBranches)
      : knapsack(knapsack), closure(closure), branches(branches),
        optionBranches(optionBranches), readLater(graph.size(), 0) {}

  /// The best chain's bound: the largest over chains of moments of the sum
  /// of their windows' bounds, the last window open to the end.
  double chain(const std::vector<WindowMoment> &moments) {
    size_t m = moments.size();
    // best[i]: the best chain that starts at moment i. It never grows as i
    // does (a window in front of a chain only adds), and a window never
    // bounds more than its moment does to the end, so past the first j
    // where even that cannot beat best[i], no j can.
    std::vector<double> best(m, 0);
    double result = 0;
    for (size_t i = m; i-- > 0;) {
      double toEnd = bound(moments[i], std::numeric_limits<NodeId>::max(), 0);
      best[i] = toEnd;
      for (size_t j = i + 1; j < m && toEnd + best[j] > best[i]; ++j)
        best[i] = std::max(best[i],
                           bound(moments[i], moments[j].t, best[i] - best[j]) +
                               best[j]);
      result = std::max(result, best[i]);
    }
    return result;
  }

private:
  /// A bound on what the window from `m` to the moment of node `end`
  /// recomputes; where that cannot pass `beat`, anything from it up to
  /// `beat`.
  double bound(const WindowMoment &m, NodeId end, double beat) {
    costly.clear();
    int64_t freeBytes = 0;
    for (size_t k = 0; k < m.items.size(); ++k) {
      if (m.nextRead[k] <= end) {
        costly.push_back(m.items[k]);
      } else {
        freeBytes += m.items[k].bytes;
        readLater[m.items[k].id] = 1;
      }
    }
    int64_t need = m.over - freeBytes;
    double result = 0;
    if (need > 0) {
      result = knapsack.solve(costly, need, branches);
      closure.setWindowFree(&readLater);
      double floor = std::max(result, beat);
      // The minimum cuts only where one choice costs more than the floor.
      if (closure.upperBound(m.t, costly, need) > floor)
        result = std::max(
            result, closure.solve(m.t, costly, need, floor, optionBranches));
      closure.setWindowFree(nullptr);
    }
    for (const CoverItem &i : m.items)
      readLater[i.id] = 0;
    return result;
  }

  CoverKnapsack &knapsack;
  ClosureRelaxation &closure;
  int64_t branches, optionBranches;
  std::vector<char> readLater; // read only after the window: free to go
  std::vector<CoverItem> costly;
};
} // namespace

double Graph::costLowerBound(int64_t budget, CostBoundEffort effort) const {
  size_t n = size();
  MomentWalk walk(*this);
  const std::vector<NodeId> &lastRead = walk.lastReads();
  // First the bytes each node's moment is over the budget by; infinity
  // where what must be held alone is over it.
  std::vector<int64_t> over;
  if (!walk.overBudget(budget, over))
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
  // Then the relaxation that also counts what dropped values need to come
  // back, at the moments where it could lift the bound most: those where
  // one choice that brings everything back costs more than the knapsack's
  // bound, the most expensive first (each takes a few minimum cuts).
  constexpr size_t kClosureMoments = 64;
  // Whole choices are searched at each of them within this many branches
  // (a layer of equal activations takes a few dozen).
  constexpr int64_t kOptionBranches = 2000;
  ClosureRelaxation closure(*this, lastRead);
  double worst = 0;
  std::vector<double> upper(n, 0);
  walk.run([&](NodeId t) { return chosen[t] != 0; },
           [&](NodeId t, int64_t, int64_t, auto &items) {
             if (chosen[t]) {
               worst =
                   std::max(worst, knapsack.solve(items, over[t], kBranches));
               upper[t] = closure.upperBound(t, items, over[t]);
             }
             return true;
           });
  if (!std::isfinite(worst))
    return std::numeric_limits<double>::infinity();
  std::vector<NodeId> lifting;
  for (NodeId t : order)
    if (upper[t] > worst)
      lifting.push_back(t);
  auto costlier = [&](NodeId a, NodeId b) {
    return upper[a] != upper[b] ? upper[a] > upper[b] : a < b;
  };
  if (lifting.size() > kClosureMoments) {
    std::nth_element(lifting.begin(), lifting.begin() + kClosureMoments,
                     lifting.end(), costlier);
    lifting.resize(kClosureMoments);
  }
  std::fill(chosen.begin(), chosen.end(), 0);
  for (NodeId t : lifting)
    chosen[t] = 1;
  if (!lifting.empty())
    walk.run([&](NodeId t) { return chosen[t] != 0; },
             [&](NodeId t, int64_t, int64_t, auto &items) {
               if (chosen[t])
                 worst =
                     closure.solve(t, items, over[t], worst, kOptionBranches);
               return std::isfinite(worst);
             });
  if (effort == CostBoundEffort::Windows && std::isfinite(worst)) {
    // Windows between moments (docs/Design.md, "The cost bound"): from
    // every moment over the budget (evenly spaced ones on graphs with
    // more), a chain of windows, each a bound on the recomputations
    // between its moment and the next, found by dynamic programming.
    constexpr size_t kWindowMoments = 512;
    std::vector<NodeId> starts;
    for (NodeId t = 0; t < (NodeId)n; ++t)
      if (over[t] > 0)
        starts.push_back(t);
    if (starts.size() > kWindowMoments) {
      std::vector<NodeId> spaced;
      for (size_t i = 0; i < kWindowMoments; ++i)
        spaced.push_back(starts[i * starts.size() / kWindowMoments]);
      starts = std::move(spaced);
    }
    std::fill(chosen.begin(), chosen.end(), 0);
    for (NodeId t : starts)
      chosen[t] = 1;
    std::vector<WindowMoment> moments;
    walk.run([&](NodeId t) { return chosen[t] != 0; },
             [&](NodeId t, int64_t, int64_t, const auto &items) {
               if (!chosen[t])
                 return true;
               WindowMoment &m = moments.emplace_back();
               m.t = t;
               m.over = over[t];
               m.items = items;
               for (const CoverItem &i : items) {
                 const std::vector<NodeId> &readers = users(i.id);
                 m.nextRead.push_back(
                     *std::upper_bound(readers.begin(), readers.end(), t));
               }
               return true;
             });
    WindowBound window(*this, knapsack, closure, kBranches, kOptionBranches);
    worst = std::max(worst, window.chain(moments));
  }
  return baselineCost() + worst;
}

std::vector<NodeId> remat::detail::cheapestCoverAtPeak(const Graph &graph,
                                                       int64_t budget) {
  // Only the moments most over the budget, one knapsack each: a solve
  // cannot afford the whole bound (up to 55 ms on ResNet50).
  constexpr size_t kCoverMoments = 8;
  constexpr int64_t kCoverBranches = 20000;
  MomentWalk walk(graph);
  std::vector<int64_t> over;
  if (!walk.overBudget(budget, over))
    return {};
  std::vector<NodeId> order;
  for (NodeId t = 0; t < (NodeId)graph.size(); ++t)
    if (over[t] > 0)
      order.push_back(t);
  auto fartherOver = [&](NodeId a, NodeId b) {
    return over[a] != over[b] ? over[a] > over[b] : a < b;
  };
  if (order.size() > kCoverMoments) {
    std::nth_element(order.begin(), order.begin() + kCoverMoments, order.end(),
                     fartherOver);
    order.resize(kCoverMoments);
  }
  std::vector<char> chosen(graph.size(), 0);
  for (NodeId t : order)
    chosen[t] = 1;
  CoverKnapsack knapsack;
  double dearest = -1;
  std::vector<NodeId> cover;
  walk.run([&](NodeId t) { return chosen[t] != 0; },
           [&](NodeId t, int64_t, int64_t, auto &items) {
             if (!chosen[t])
               return true;
             double cost = knapsack.solve(items, over[t], kCoverBranches);
             if (std::isfinite(cost) && cost > dearest) {
               dearest = cost;
               cover = knapsack.cover();
             }
             return true;
           });
  return cover;
}
