//===- Chain.cpp - Dynamic programming over chain-shaped graphs ----------===//
//
// detail::solveChain: on a training graph that is a chain (Checkmate's VGG16
// and MobileNet), the cheapest schedule of a family that holds revolve's
// (Griewank; Rotor for heterogeneous chains) at the granularity of single
// values, plus schedules that drop a checkpoint and rebuild from the start,
// drop a value the next backward step reads to compute it again, or run a
// backward step before recomputing what the next one reads,
// found by dynamic programming over Pareto fronts of peak against cost.
// docs/Design.md ("Chains") explains the recurrence.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>

using namespace remat;

namespace {
/// A chain: forward values p_0 -> ... -> p_{n-1} (p_0 reads nothing, each
/// other reads only the one before; the last is the loss), then backward
/// steps q_0 -> ... -> q_{n-2}, where q_t reads q_{t-1} and some of
/// p_{n-2-t} and p_{n-1-t}. Node ids are a topological order, so the p are
/// nodes 0..n-1 and the q nodes n..2n-2. Below, step i is q_{n-2-i}: it
/// reads p_i, p_{i+1} and the gradient g_{i+1} (step i+1's output; none
/// for i = n-2) and writes g_i.
struct Chain {
  int n = 0;
  /// Whether step i reads p_i, and p_{i+1}.
  std::vector<char> readsOwn, readsNext;
  NodeId step(int i) const { return static_cast<NodeId>(2 * n - 2 - i); }
};

/// The graph as a chain, if it is one with nothing that rules out the
/// program's schedules: no arguments, no overwritten buffers, no output
/// but the last gradient, forward values that may be recomputed.
std::optional<Chain> chainOf(const Graph &graph) {
  size_t size = graph.size();
  if (size < 3 || size % 2 == 0)
    return std::nullopt;
  Chain chain;
  chain.n = static_cast<int>((size + 1) / 2);
  int n = chain.n;
  for (NodeId id = 0; id < static_cast<NodeId>(size); ++id) {
    const Node &node = graph.node(id);
    if (node.argument || node.overwrites >= 0 ||
        (node.output && id != static_cast<NodeId>(size) - 1))
      return std::nullopt;
  }
  for (int i = 0; i < n; ++i) {
    const std::vector<NodeId> &deps = graph.deps(i);
    if (i == 0 ? !deps.empty() : deps != std::vector<NodeId>{i - 1})
      return std::nullopt;
    if (i < n - 1 && !graph.node(i).recomputable)
      return std::nullopt;
  }
  chain.readsOwn.assign(n, 0);
  chain.readsNext.assign(n, 0);
  for (int i = n - 2; i >= 0; --i) {
    NodeId q = chain.step(i);
    for (NodeId d : graph.deps(q)) {
      if (i < n - 2 && d == chain.step(i + 1))
        continue;
      if (d != i && d != i + 1)
        return std::nullopt;
      (d == i ? chain.readsOwn : chain.readsNext)[i] = 1;
    }
  }
  return chain;
}

/// One schedule's figures: its peak (everything it holds included) and its
/// recomputation cost.
struct Point {
  int64_t peak;
  double cost;
};
/// The Pareto front of a subproblem: peaks rising, costs falling.
using Front = std::vector<Point>;

/// The least cost on `front` within `memory` bytes; infinity if none.
double costWithin(const Front &front, int64_t memory) {
  auto it =
      std::upper_bound(front.begin(), front.end(), memory,
                       [](int64_t m, const Point &p) { return m < p.peak; });
  return it == front.begin() ? std::numeric_limits<double>::infinity()
                             : std::prev(it)->cost;
}

/// The recurrence (docs/Design.md, "Chains"). p_r is *wanted* while step
/// r-1 is to come and reads it; p_{-1} is nothing.
/// - S(l, r), -1 <= l < r <= n-1: from p_l, g_r and p_r if wanted, run
///   steps r-1 down to l, ending with g_l and p_l if wanted. Step l itself
///   where r = l+1 (p_l goes before it if neither it nor step l-1 reads
///   it, or goes and comes back from the start after it); step r-1 at once
///   if nothing needs p_{r-1}, then S(l, r-1); or compute p_{l+1}..p_j
///   from p_l, holding only the last two, then S(j, r) and S(l, j) with
///   p_l held (*keep*), or S(j, r) and T(l, j) with p_l dropped (*drop*).
///   With *drop*, p_l goes once p_{l+1} is computed. Where step r-1 does
///   not read p_{r-1} but step r-2 does, step r-1 may also run first, then
///   SA(l, r-1).
/// - T(l, r), 0 <= l <= r: the same without p_l, which comes back from the
///   start if at all: step r-1 at once as above (then T or TA), or compute
///   p_0..p_k for some l <= k < r, then S(k, r) and T(l, k).
/// - SA(l, r) and TA(l, r): S and T with p_r wanted but absent: compute
///   p_{l+1}..p_j (from the start in TA) for some j <= r, then, for j < r,
///   SA(j, r) and S(l, j) or T(l, j) as above, for j = r S0(l, r) or
///   T0(l, r).
/// - S and T may also drop a wanted p_r at once, then SA or TA: holding it
///   through a sweep can cost more than computing it again. S0 and T0 are
///   S and T without that choice (no subproblem drops and rebuilds the
///   same value in turn).
/// - U(l): in the first forward pass with p_l held, compute the rest and
///   run every step down to l: compute p_{l+1}..p_j, then U(j) and S(l, j)
///   with p_l held, or U(j) and T(l, j) without; U(n-1) holds the loss if
///   wanted and has nothing left to do.
/// Each is a Pareto front of peak against recomputation cost, over every
/// choice; a member's peak counts what its start holds.
class ChainProgram {
public:
  /// Members within `cap` bytes that recompute less than `ceiling`.
  ChainProgram(const Graph &graph, const Chain &chain, int64_t cap,
               double ceiling)
      : graph(graph), chain(chain), n(chain.n), cap(cap), ceiling(ceiling) {}

  /// The least recomputation cost of the family within the cap.
  double solve() {
    for (std::vector<Front> &all : fronts)
      all.assign(static_cast<size_t>(n + 1) * (n + 1), Front());
    for (int l = 0; l < n; ++l) {
      build(Problem::T0, l, l);
      build(Problem::T, l, l);
    }
    for (int len = 1; len <= n; ++len)
      for (int l = -1; l + len <= n - 1; ++l) {
        int r = l + len;
        // T0(l, r) may start with S(l, r), and TA(l, r) with SA(l, r).
        bool wanted = readsNextOf(r - 1);
        build(Problem::S0, l, r);
        if (wanted)
          build(Problem::SA, l, r);
        build(Problem::S, l, r);
        if (l < 0)
          continue;
        build(Problem::T0, l, r);
        if (wanted)
          build(Problem::TA, l, r);
        build(Problem::T, l, r);
      }
    for (int l = n - 1; l >= -1; --l)
      build(Problem::U, l, n - 1);
    return costWithin(front(Problem::U, -1, n - 1), cap);
  }

  /// The schedule of the cheapest member within the cap (solve() first).
  Schedule schedule() {
    events.clear();
    resident.assign(n, 0);
    emit(Problem::U, -1, n - 1, cap);
    return std::move(events);
  }

private:
  /// S0 and T0: S and T without dropping a wanted p_r at once (S and T
  /// add that: then SA and TA).
  enum class Problem { S, T, S0, T0, SA, TA, U };
  static constexpr size_t kProblems = 7;
  /// One choice of a subproblem: run `before` (below), peaking at `floor`
  /// and recomputing `cost`, then `first` (with `shift` more bytes held)
  /// and `second`; a missing part does nothing.
  enum class Before {
    Step,
    StepDropOwn,
    Sweep,
    SweepDrop,
    FromStart,
    DropWanted,
    None
  };
  /// A subproblem run after `before`, with `shift` more bytes held.
  struct Part {
    Problem problem;
    int l, r;
    int64_t shift;
  };
  struct Option {
    Before before;
    int j;
    int64_t floor;
    double cost;
    std::optional<Part> first, second;
  };

  int64_t p(int i) const { return i < 0 || i >= n ? 0 : graph.node(i).bytes; }
  int64_t pw(int i) const {
    return i < 0 || i >= n ? 0 : graph.node(i).workspace;
  }
  double pc(int i) const { return graph.node(i).cost; }
  /// g_i's bytes (g_{n-1} is nothing) and step i's workspace.
  int64_t g(int i) const {
    return i < 0 || i >= n - 1 ? 0 : graph.node(chain.step(i)).bytes;
  }
  int64_t gw(int i) const { return graph.node(chain.step(i)).workspace; }
  bool readsNextOf(int i) const { return i >= 0 && chain.readsNext[i]; }
  /// p_r's bytes where step r-1 reads it.
  int64_t wanted(int r) const { return readsNextOf(r - 1) ? p(r) : 0; }
  /// Whether step l needs p_l held: it or step l-1 reads it.
  bool keepsOwn(int l) const { return chain.readsOwn[l] || readsNextOf(l - 1); }
  /// Whether step r-1 can run without p_{r-1}: neither it nor step r-2
  /// reads it.
  bool stepsWithoutOwn(int r) const {
    return !chain.readsOwn[r - 1] && !readsNextOf(r - 2);
  }

  /// A subproblem's front; U(l) is addressed as (l, n-1).
  Front &front(Problem problem, int l, int r) {
    return fronts[static_cast<size_t>(problem)]
                 [static_cast<size_t>(l + 1) * (n + 1) + r];
  }
  Front &front(const Part &part) { return front(part.problem, part.l, part.r); }

  /// What computing p_k on the way from p_l adds to what is held: p_k, its
  /// workspace, and p_{k-1} unless that is p_l (counted by the caller).
  int64_t sweepStep(int l, int k) const {
    return p(k) + pw(k) + (k - 1 > l ? p(k - 1) : 0);
  }

  /// The peak a sweep from p_l adds to what is held besides p_l, with p_l
  /// held to the end (`keep`, p_l not counted) or released once p_{l+1}
  /// is computed (`drop`, p_l counted).
  struct SweepPeaks {
    int64_t keep = 0, drop = 0;
  };
  void extend(SweepPeaks &sweep, int l, int k) const {
    int64_t step = sweepStep(l, k);
    sweep.keep = std::max(sweep.keep, step);
    sweep.drop = std::max(sweep.drop, k == l + 1 ? p(l) + step : step);
  }

  /// Calls `visit` with each choice of a subproblem whose first part peaks
  /// within `limit` and recomputes less than the ceiling.
  template <typename Visit>
  void forEachOption(Problem problem, int l, int r, int64_t limit,
                     Visit visit) {
    auto option = [](Before before, int j, int64_t floor, double cost) {
      return Option{before, j, floor, cost, std::nullopt, std::nullopt};
    };
    auto withFirst = [](Option o, Problem problem, int a, int b,
                        int64_t shift) {
      o.first = Part{problem, a, b, shift};
      return o;
    };
    auto withSecond = [](Option o, Problem problem, int a, int b) {
      o.second = Part{problem, a, b, 0};
      return o;
    };
    if (problem == Problem::S || problem == Problem::T) {
      // As S0 (T0), or drop a wanted p_r at once and compute it again
      // later (SA, TA): holding it may cost more than bringing it back.
      Problem kept = problem == Problem::S ? Problem::S0 : Problem::T0;
      visit(withFirst(option(Before::None, 0, 0, 0), kept, l, r, 0));
      if (r > l && readsNextOf(r - 1)) {
        int64_t state = (problem == Problem::S ? p(l) : 0) + p(r) + g(r);
        visit(withSecond(option(Before::DropWanted, r, state, 0),
                         problem == Problem::S ? Problem::SA : Problem::TA, l,
                         r));
      }
      return;
    }
    if (problem == Problem::U) {
      if (l == n - 1) {
        visit(option(Before::None, 0, wanted(l), 0));
        return;
      }
      SweepPeaks sweep;
      for (int j = l + 1; j <= n - 1; ++j) {
        extend(sweep, l, j);
        if (std::min(p(l) + sweep.keep, sweep.drop) > limit)
          break;
        // The first pass computes each value once: no recomputation cost.
        Option o = option(Before::Sweep, j, p(l) + sweep.keep, 0);
        visit(withSecond(withFirst(o, Problem::U, j, n - 1, p(l)), Problem::S,
                         l, j));
        if (l >= 0) {
          o.before = Before::SweepDrop;
          o.floor = sweep.drop;
          visit(withSecond(withFirst(o, Problem::U, j, n - 1, 0), Problem::T, l,
                           j));
        }
      }
      return;
    }
    if (problem == Problem::T0 && l == r) {
      // From g_l alone to g_l and p_l if wanted.
      if (!readsNextOf(l - 1)) {
        visit(option(Before::None, 0, g(l), 0));
        return;
      }
      int64_t sweep = 0;
      double cost = 0;
      for (int k = 0; k <= l; ++k) {
        sweep = std::max(sweep, sweepStep(-1, k));
        cost += pc(k);
      }
      if (g(l) + sweep <= limit && cost < ceiling)
        visit(option(Before::FromStart, l, g(l) + sweep, cost));
      return;
    }
    if (problem == Problem::SA || problem == Problem::TA) {
      // p_r first: from p_l (SA) or the start (TA) to some p_j, j <= r,
      // held where j < r; then the rest with p_r there.
      bool held = problem == Problem::SA;
      int from = held ? l : -1;
      int64_t state = (held ? p(l) : 0) + g(r);
      SweepPeaks sweep;
      double cost = 0;
      for (int j = from + 1; j <= r; ++j) {
        extend(sweep, from, j);
        cost += pc(j);
        bool drops = held && l >= 0;
        int64_t dropFloor = g(r) + sweep.drop;
        if (std::min(state + sweep.keep,
                     drops ? dropFloor : std::numeric_limits<int64_t>::max()) >
                limit ||
            cost >= ceiling)
          break;
        if (j < l)
          continue;
        Option o = option(held ? Before::Sweep : Before::FromStart, j,
                          state + sweep.keep, cost);
        Option dropping = o;
        dropping.before = Before::SweepDrop;
        dropping.floor = dropFloor;
        if (j == r) {
          visit(withFirst(o, held ? Problem::S0 : Problem::T0, l, r, 0));
          if (drops)
            visit(withFirst(dropping, Problem::T0, l, r, 0));
          continue;
        }
        if (!held) {
          o = withFirst(o, Problem::SA, j, r, 0);
          visit(j == l ? o : withSecond(o, Problem::T, l, j));
          continue;
        }
        visit(withSecond(withFirst(o, Problem::SA, j, r, p(l)), Problem::S, l,
                         j));
        if (drops)
          visit(withSecond(withFirst(dropping, Problem::SA, j, r, 0),
                           Problem::T, l, j));
      }
      return;
    }
    if (problem == Problem::S0 && r == l + 1) {
      if (l < 0) {
        visit(option(Before::None, 0, g(r), 0));
        return;
      }
      int64_t around = wanted(r) + g(r) + g(l) + gw(l);
      visit(option(Before::Step, l, (keepsOwn(l) ? p(l) : 0) + around, 0));
      if (!chain.readsOwn[l] && readsNextOf(l - 1))
        visit(withSecond(option(Before::StepDropOwn, l, around, 0), Problem::T,
                         l, l));
      return;
    }
    bool held = problem == Problem::S0;
    int64_t state = (held ? p(l) : 0) + wanted(r) + g(r);
    int64_t stepPeak = state + g(r - 1) + gw(r - 1);
    if (r >= l + (held ? 2 : 1) && stepsWithoutOwn(r))
      visit(withSecond(option(Before::Step, r - 1, stepPeak, 0), problem, l,
                       r - 1));
    // Step r-1 without p_{r-1}, which step r-2 reads: it comes back after
    // the step, when g_r and p_r are gone.
    if (r >= l + 2 && !chain.readsOwn[r - 1] && readsNextOf(r - 2))
      visit(withSecond(option(Before::Step, r - 1, stepPeak, 0),
                       held ? Problem::SA : Problem::TA, l, r - 1));
    double cost = 0;
    if (held) {
      SweepPeaks sweep;
      for (int j = l + 1; j < r; ++j) {
        extend(sweep, l, j);
        cost += pc(j);
        int64_t dropFloor = state - p(l) + sweep.drop;
        if (std::min(state + sweep.keep,
                     l >= 0 ? dropFloor : std::numeric_limits<int64_t>::max()) >
                limit ||
            cost >= ceiling)
          break;
        Option o = option(Before::Sweep, j, state + sweep.keep, cost);
        visit(
            withSecond(withFirst(o, Problem::S, j, r, p(l)), Problem::S, l, j));
        if (l >= 0) {
          o.before = Before::SweepDrop;
          o.floor = dropFloor;
          visit(
              withSecond(withFirst(o, Problem::S, j, r, 0), Problem::T, l, j));
        }
      }
      return;
    }
    int64_t sweep = 0;
    for (int k = 0; k < r; ++k) {
      sweep = std::max(sweep, sweepStep(-1, k));
      cost += pc(k);
      if (state + sweep > limit || cost >= ceiling)
        break;
      if (k < l)
        continue;
      Option o = withFirst(option(Before::FromStart, k, state + sweep, cost),
                           Problem::S, k, r, 0);
      visit(k == l ? o : withSecond(o, Problem::T, l, k));
    }
  }

  /// The cheapest cost of `o` within `memory`.
  double costOf(const Option &o, int64_t memory) {
    if (o.floor > memory)
      return std::numeric_limits<double>::infinity();
    double cost = o.cost;
    for (const std::optional<Part> &part : {o.first, o.second})
      if (part)
        cost += costWithin(front(*part), memory - part->shift);
    return cost;
  }

  void build(Problem problem, int l, int r) {
    Front &into = front(problem, l, r);
    forEachOption(problem, l, r, cap,
                  [&](const Option &o) { addOption(o, into); });
  }

  /// Adds `o`'s members to `into`, keeping its lower envelope.
  void addOption(const Option &o, Front &into) {
    static const Front nothing = {{0, 0}};
    const Front &first = o.first ? front(*o.first) : nothing;
    const Front &second = o.second ? front(*o.second) : nothing;
    if (first.empty() || second.empty())
      return;
    int64_t held = o.first ? o.first->shift : 0;
    // Every member costs at least its cheapest and peaks at least at its
    // lowest: where `into` already has that cost at that peak, nothing
    // here is on the front.
    int64_t lowest =
        std::max({o.floor, first.front().peak + held, second.front().peak});
    double least = o.cost + first.back().cost + second.back().cost;
    if (lowest > cap || least >= ceiling || least >= costWithin(into, lowest))
      return;
    combined.clear();
    // Only the points cheaper than `into` at their peak matter; `at` walks
    // `into` along with them (their peaks rise).
    size_t a = 0, b = 0, at = 0;
    while (a < first.size() || b < second.size()) {
      int64_t next = std::numeric_limits<int64_t>::max();
      if (a < first.size())
        next = first[a].peak + held;
      if (b < second.size())
        next = std::min(next, second[b].peak);
      while (a < first.size() && first[a].peak + held <= next)
        ++a;
      while (b < second.size() && second[b].peak <= next)
        ++b;
      if (a == 0 || b == 0)
        continue;
      Point point{std::max(next, o.floor),
                  o.cost + first[a - 1].cost + second[b - 1].cost};
      if (point.peak > cap)
        break;
      if (point.cost >= ceiling)
        continue;
      while (at < into.size() && into[at].peak <= point.peak)
        ++at;
      // `into` only gets cheaper at higher peaks, and no later point costs
      // less than `least`: once `into` is there, the rest is dominated.
      if (at > 0 && into[at - 1].cost <= least)
        break;
      if (at > 0 && into[at - 1].cost <= point.cost)
        continue;
      if (!combined.empty() && combined.back().peak == point.peak)
        combined.back() = point; // cheaper at the same peak
      else
        combined.push_back(point);
    }
    if (combined.empty())
      return;
    // The lower envelope of `into` and `combined`.
    merged.clear();
    size_t x = 0, y = 0;
    double best = std::numeric_limits<double>::infinity();
    while (x < into.size() || y < combined.size()) {
      const Point &pt =
          y == combined.size() ||
                  (x < into.size() && (into[x].peak < combined[y].peak ||
                                       (into[x].peak == combined[y].peak &&
                                        into[x].cost <= combined[y].cost)))
              ? into[x++]
              : combined[y++];
      if (pt.cost < best) {
        if (!merged.empty() && merged.back().peak == pt.peak)
          merged.back() = pt;
        else
          merged.push_back(pt);
        best = pt.cost;
      }
    }
    into.swap(merged);
  }

  void compute(NodeId id) {
    events.push_back({Event::Kind::Compute, id});
    if (id < n)
      resident[id] = 1;
  }
  void release(NodeId id) {
    events.push_back({Event::Kind::Free, id});
    if (id < n)
      resident[id] = 0;
  }

  /// Step i, from g_{i+1} and the p it reads, then what only it needed.
  void emitStep(int i) {
    compute(chain.step(i));
    if (i + 1 < n - 1)
      release(chain.step(i + 1));
    if (chain.readsNext[i])
      release(i + 1);
  }

  /// Computes p_{l+1}..p_j from p_l, each value released once the next is
  /// computed. From the start (l = -1) it starts instead from the last
  /// value below p_j that an enclosing choice holds, if any: the program
  /// priced the sweep from p_0, which costs and holds at least as much.
  /// With `dropFrom`, p_l goes once p_{l+1} is computed.
  void emitSweep(int l, int j, bool dropFrom = false) {
    if (l < 0)
      for (int k = j - 1; k >= 0 && l < 0; --k)
        if (resident[k])
          l = k;
    for (int k = l + 1; k <= j; ++k) {
      compute(k);
      if (k - 1 > l || (dropFrom && k - 1 == l))
        release(k - 1);
    }
  }

  /// The events of the cheapest member of a subproblem within `memory`.
  void emit(Problem problem, int l, int r, int64_t memory) {
    std::optional<Option> best;
    double bestCost = std::numeric_limits<double>::infinity();
    forEachOption(problem, l, r, memory, [&](const Option &o) {
      double cost = costOf(o, memory);
      if (cost < bestCost) {
        bestCost = cost;
        best = o;
      }
    });
    // The front promised a member within this memory; were it wrong, the
    // schedule stops here and the simulator rejects it.
    assert(best && "no member within the memory the front promised");
    if (!best)
      return;
    const Option &o = *best;
    switch (o.before) {
    case Before::None:
      // U(n-1) releases the loss if no step reads it; the rest hold.
      if (problem == Problem::U && !chain.readsNext[n - 2])
        release(n - 1);
      break;
    case Before::Step:
      if (problem == Problem::S0 && r == l + 1) {
        if (!keepsOwn(l))
          release(l);
        emitStep(l);
        if (keepsOwn(l) && !readsNextOf(l - 1))
          release(l);
      } else {
        emitStep(o.j);
      }
      break;
    case Before::StepDropOwn:
      release(l);
      emitStep(l);
      break;

    case Before::Sweep:
      emitSweep(l, o.j);
      break;
    case Before::DropWanted:
      release(r);
      break;
    case Before::SweepDrop:
      emitSweep(l, o.j, /*dropFrom=*/true);
      break;
    case Before::FromStart:
      emitSweep(-1, o.j);
      break;
    }
    for (const std::optional<Part> &part : {o.first, o.second})
      if (part)
        emit(part->problem, part->l, part->r, memory - part->shift);
  }

  const Graph &graph;
  const Chain &chain;
  int n;
  int64_t cap;
  /// A subproblem's member that recomputes this much is of no use: the
  /// whole schedule would recompute as much.
  double ceiling;
  std::array<std::vector<Front>, kProblems> fronts;
  Front combined, merged;
  Schedule events;
  /// Which forward values the events so far leave resident.
  std::vector<char> resident;
};
} // namespace

std::optional<SolveResult> remat::detail::solveChain(const Graph &graph,
                                                     int64_t budget,
                                                     double costCeiling) {
  std::optional<Chain> chain = chainOf(graph);
  if (!chain)
    return std::nullopt;
  ChainProgram program(graph, *chain, budget,
                       costCeiling - graph.baselineCost());
  if (program.solve() == std::numeric_limits<double>::infinity())
    return std::nullopt;
  return detail::finish(graph, program.schedule(), budget);
}
