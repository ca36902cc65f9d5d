//===- Milp.cpp - Checkmate's exact formulation on CBC --------------------===//
//
// Jain et al., "Checkmate" (MLSys 2020), section 4: n stages, stage t
// computes node t and may recompute earlier ones. Binaries R[t,i] (compute i
// in stage t), S[t,i] (i is resident when stage t starts) and FREE[t,i,k]
// (free i right after k in stage t); continuous U[t,k] (memory after k in
// stage t). CBC from Debian solves it under a time limit, started from the
// greedy solution. The answer is turned into a schedule and measured by the
// same simulator as every other solver, so the formulation cannot report a
// figure the schedule does not have.
//
// Before CBC, CLP's dual simplex solves the LP relaxation alone: seconds on
// a few hundred nodes, where CBC's root (cut rounds and heuristics on top of
// the same LP) does not finish in minutes. Its optimum is a lower bound on
// every schedule's cost, which proves the warm start optimal where they
// meet and bounds every other solver's distance from the optimum where
// they do not.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "coin/Cbc_C_Interface.h"
#include "coin/ClpSimplex.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <memory>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace remat;

static constexpr double kInfinity = std::numeric_limits<double>::infinity();

namespace {
class MilpModel {
public:
  MilpModel(const Graph &graph, int64_t budget) : graph(graph) {
    for (NodeId id = 0; id < (NodeId)graph.size(); ++id)
      if (!graph.node(id).argument) {
        pos.push_back(id);
      }
    index.assign(graph.size(), -1);
    for (size_t p = 0; p < pos.size(); ++p)
      index[pos[p]] = static_cast<int>(p);
    fixed = graph.argumentBytes();
    unit = 1;
    for (NodeId id : pos)
      unit = std::max<double>(unit, static_cast<double>(graph.node(id).bytes));
    capacity = (static_cast<double>(budget) - fixed) / unit;
    model = Cbc_newModel();
  }
  ~MilpModel() { Cbc_deleteModel(model); }

  size_t stages() const { return pos.size(); }

  void build();
  void setStart(const Schedule &schedule);
  /// The optimum of the LP relaxation, a lower bound on the cost of every
  /// schedule within the budget; none when CLP does not finish in time.
  std::optional<double> relaxationBound(double seconds);
  bool relaxationInfeasible() const {
    return relaxation.isProvenPrimalInfeasible();
  }
  /// What the child proved: a bound from the LP relaxation, or that no
  /// schedule fits (the relaxation or CBC found the model infeasible).
  enum class Relaxation : int32_t { Unknown, Bounded, Infeasible };
  /// The schedule a solution `x` describes, stage by stage.
  Schedule scheduleFrom(const double *x) const;
  Cbc_Model *cbc() { return model; }

private:
  // Columns and rows are collected and handed to CBC in one call (load()):
  // adding rows one by one resizes CBC's matrix each time, which makes
  // building the model quadratic (minutes at 350 nodes, before any solving).
  int addCol(double lb, double ub, double obj, bool integer) {
    colLower.push_back(lb);
    colUpper.push_back(ub);
    objective.push_back(obj);
    isInteger.push_back(integer);
    return columns++;
  }
  void addRow(const std::vector<std::pair<int, double>> &terms, char sense,
              double rhs) {
    int row = static_cast<int>(rowLower.size());
    for (auto [c, v] : terms)
      entries.push_back({c, row, v});
    rowLower.push_back(sense == 'L' ? -kInfinity : rhs);
    rowUpper.push_back(sense == 'G' ? kInfinity : rhs);
  }
  void load();
  double mem(size_t p) const {
    const Node &n = graph.node(pos[p]);
    return n.overwrites >= 0 ? 0.0 : static_cast<double>(n.bytes) / unit;
  }
  double workspace(size_t p) const {
    return static_cast<double>(graph.node(pos[p]).workspace) / unit;
  }
  /// Users (as positions) of the node at position p, increasing.
  std::vector<size_t> users(size_t p) const {
    std::vector<size_t> out;
    for (NodeId u : graph.users(pos[p]))
      out.push_back(static_cast<size_t>(index[u]));
    return out;
  }

  const Graph &graph;
  std::vector<NodeId> pos;
  std::vector<int> index;
  int64_t fixed = 0;
  double unit = 1, capacity = 0;
  Cbc_Model *model = nullptr;
  ClpSimplex relaxation;
  std::vector<CoinBigIndex> cscStart;
  std::vector<int> cscRows;
  std::vector<double> cscValues;
  int columns = 0;
  std::vector<double> colLower, colUpper, objective, rowLower, rowUpper;
  std::vector<char> isInteger;
  struct Entry {
    int col, row;
    double value;
  };
  std::vector<Entry> entries;
  /// R[t][i] for i <= t; S[t][i] for i < t (column ids).
  std::vector<std::vector<int>> r, s;
  /// FREE[t] entries: (i, k, column).
  struct Free {
    size_t i, k;
    int col;
  };
  std::vector<std::vector<Free>> frees;
};
} // namespace

void MilpModel::build() {
  size_t n = stages();
  r.assign(n, {});
  s.assign(n, {});
  frees.assign(n, {});
  // Nodes that read an argument some node overwrites may not run after it.
  std::vector<size_t> lastStage(n, n - 1);
  for (size_t p = 0; p < n; ++p) {
    NodeId target = graph.node(pos[p]).overwrites;
    if (target < 0)
      continue;
    for (NodeId u : graph.users(target))
      if (u != pos[p] && index[u] >= 0)
        lastStage[index[u]] = std::min(lastStage[index[u]], p);
  }
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i <= t; ++i) {
      double cost = graph.node(pos[i]).cost;
      bool allowed =
          t <= lastStage[i] && (graph.node(pos[i]).recomputable || i == t);
      r[t].push_back(addCol(i == t ? 1 : 0, allowed ? 1 : 0, cost, true));
    }
    for (size_t i = 0; i < t; ++i)
      s[t].push_back(addCol(0, 1, 0, true));
  }
  for (size_t t = 0; t < n; ++t) {
    // Dependencies are computed in this stage or resident at its start.
    for (size_t j = 0; j <= t; ++j)
      for (NodeId d : graph.deps(pos[j])) {
        int i = index[d];
        if (i < 0)
          continue; // arguments are always resident
        std::vector<std::pair<int, double>> row = {{r[t][j], 1}, {r[t][i], -1}};
        if (static_cast<size_t>(i) < t)
          row.push_back({s[t][i], -1});
        addRow(row, 'L', 0);
      }
    for (size_t i = 0; i < t; ++i) {
      // Resident at the start means kept from the last stage.
      std::vector<std::pair<int, double>> keep = {{s[t][i], 1},
                                                  {r[t - 1][i], -1}};
      if (i < t - 1)
        keep.push_back({s[t - 1][i], -1});
      addRow(keep, 'L', 0);
      // Never recompute what is resident.
      addRow({{r[t][i], 1}, {s[t][i], 1}}, 'L', 1);
    }
    // FREE[t,i,k] = R[t,k] and i not kept for t+1 and no later user of i
    // in this stage; outputs are never freed.
    for (size_t i = 0; i <= t; ++i) {
      if (graph.node(pos[i]).output)
        continue;
      std::vector<size_t> us = users(i);
      std::vector<size_t> ks = {i};
      for (size_t u : us)
        if (u <= t)
          ks.push_back(u);
      for (size_t k : ks) {
        std::vector<std::pair<int, double>> hazards = {{r[t][k], -1}};
        double constant = 1; // the (1 - R[t,k]) term
        double count = 1;
        if (t + 1 < n) {
          hazards.push_back({s[t + 1][i], 1});
          ++count;
        }
        for (size_t j : us)
          if (j > k && j <= t) {
            hazards.push_back({r[t][j], 1});
            ++count;
          }
        int f = addCol(0, 1, 0, true);
        frees[t].push_back({i, k, f});
        // FREE + hazards >= 1, with hazards = constant + sum(terms).
        std::vector<std::pair<int, double>> lower = hazards;
        lower.push_back({f, 1});
        addRow(lower, 'G', 1 - constant);
        // count * (1 - FREE) >= hazards.
        std::vector<std::pair<int, double>> upper = hazards;
        upper.push_back({f, count});
        addRow(upper, 'L', count - constant);
      }
    }
    // Memory after each node of the stage stays under the budget.
    int previous = -1;
    for (size_t k = 0; k <= t; ++k) {
      int u = addCol(0, std::max(capacity, 0.0), 0, false);
      std::vector<std::pair<int, double>> row = {{u, 1}, {r[t][k], -mem(k)}};
      if (k == 0) {
        for (size_t i = 0; i < t; ++i)
          row.push_back({s[t][i], -mem(i)});
      } else {
        row.push_back({previous, -1});
        for (const Free &f : frees[t])
          if (f.k == k - 1)
            row.push_back({f.col, mem(f.i)});
      }
      addRow(row, 'E', 0);
      // The node's workspace is held while it computes, on top of U.
      if (double ws = workspace(k); ws > 0)
        addRow({{u, 1}, {r[t][k], ws}}, 'L', std::max(capacity, 0.0));
      previous = u;
    }
  }
  load();
}

void MilpModel::load() {
  // Compressed sparse columns, kept for the LP (loaded in the child).
  std::vector<CoinBigIndex> &start = cscStart;
  start.assign(columns + 1, 0);
  for (const Entry &e : entries)
    ++start[e.col + 1];
  for (int c = 0; c < columns; ++c)
    start[c + 1] += start[c];
  std::vector<int> &rows = cscRows;
  std::vector<double> &values = cscValues;
  rows.resize(entries.size());
  values.resize(entries.size());
  std::vector<CoinBigIndex> next(start.begin(), start.end() - 1);
  for (const Entry &e : entries) {
    rows[next[e.col]] = e.row;
    values[next[e.col]++] = e.value;
  }
  Cbc_loadProblem(model, columns, static_cast<int>(rowLower.size()),
                  start.data(), rows.data(), values.data(), colLower.data(),
                  colUpper.data(), objective.data(), rowLower.data(),
                  rowUpper.data());
  for (int c = 0; c < columns; ++c)
    if (isInteger[c])
      Cbc_setInteger(model, c);
  entries = {};
}

void MilpModel::setStart(const Schedule &schedule) {
  // Stage t runs from after the first computation of node t-1 through the
  // first computation of node t; what is resident when it starts is S.
  size_t n = stages();
  std::vector<double> values(columns, 0.0);
  std::vector<char> resident(graph.size(), 0), seen(graph.size(), 0);
  size_t stage = 0;
  for (size_t e = 0; e < schedule.size() && stage < n; ++e) {
    const Event &ev = schedule[e];
    int p = index[ev.node];
    if (ev.kind == Event::Kind::Free) {
      resident[ev.node] = 0;
      continue;
    }
    if (p < 0)
      continue;
    values[r[stage][p]] = 1;
    resident[ev.node] = 1;
    if (!seen[ev.node] && static_cast<size_t>(p) == stage) {
      seen[ev.node] = 1;
      ++stage;
      if (stage < n)
        for (size_t i = 0; i < stage; ++i)
          values[s[stage][i]] = resident[pos[i]];
    }
  }
  std::vector<int> cols;
  std::vector<double> vals;
  for (size_t t = 0; t < n; ++t) {
    for (int c : r[t]) {
      cols.push_back(c);
      vals.push_back(values[c]);
    }
    for (int c : s[t]) {
      cols.push_back(c);
      vals.push_back(values[c]);
    }
  }
  Cbc_setMIPStartI(model, static_cast<int>(cols.size()), cols.data(),
                   vals.data());
}

std::optional<double> MilpModel::relaxationBound(double seconds) {
  relaxation.loadProblem(columns, static_cast<int>(rowLower.size()),
                         cscStart.data(), cscRows.data(), cscValues.data(),
                         colLower.data(), colUpper.data(), objective.data(),
                         rowLower.data(), rowUpper.data());
  relaxation.setLogLevel(0);
  relaxation.setMaximumSeconds(seconds);
  // Dual simplex: on MobileNet's 160,000 rows it takes 4 s where the
  // primal takes minutes.
  ClpSolve how;
  how.setSolveType(ClpSolve::useDual);
  relaxation.initialSolve(how);
  if (!relaxation.isProvenOptimal())
    return std::nullopt;
  // Give back the simplex's tolerance; costs that are all integers make
  // every schedule's cost an integer, so the bound rounds up.
  double value = relaxation.objectiveValue();
  value -= 1e-7 * std::max(1.0, std::fabs(value));
  bool integral = true;
  for (NodeId id : pos)
    integral &= graph.node(id).cost == std::floor(graph.node(id).cost);
  return integral ? std::ceil(value) : value;
}

namespace {
/// What a CBC run reports back through the pipe, before the solution.
struct Outcome {
  int32_t hasSolution, optimal, infeasible;
  double bound;
  uint64_t events;
};
/// What the child reports first: the LP relaxation's verdict.
struct LpOutcome {
  MilpModel::Relaxation state;
  double bound;
};

/// Reads exactly `bytes` from `fd` before `deadline`; false on timeout, EOF
/// or error.
bool readUntil(int fd, char *out, size_t bytes,
               std::chrono::steady_clock::time_point deadline) {
  while (bytes > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return false;
    pollfd p = {fd, POLLIN, 0};
    int ready =
        ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready < 0)
      return false;
    if (ready == 0)
      continue;
    ssize_t got = ::read(fd, out, bytes);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    out += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}
} // namespace

Schedule MilpModel::scheduleFrom(const double *x) const {
  auto on = [&](int c) { return x[c] > 0.5; };
  size_t n = stages();
  Schedule schedule;
  std::vector<char> resident(graph.size(), 0);
  auto release = [&](NodeId id) {
    if (resident[id]) {
      schedule.push_back({Event::Kind::Free, id});
      resident[id] = 0;
    }
  };
  for (size_t t = 0; t < n; ++t) {
    for (size_t k = 0; k <= t; ++k) {
      if (!on(r[t][k]))
        continue;
      if (!resident[pos[k]]) {
        schedule.push_back({Event::Kind::Compute, pos[k]});
        resident[pos[k]] = 1;
      }
      for (const Free &f : frees[t])
        if (f.k == k && on(f.col))
          release(pos[f.i]);
    }
    // What the next stage does not keep leaves at the stage boundary.
    for (size_t i = 0; i <= t; ++i) {
      bool kept = t + 1 < n && on(s[t + 1][i]);
      if (!kept && !graph.node(pos[i]).output)
        release(pos[i]);
    }
  }
  return schedule;
}

namespace {
/// What the child found before the deadline.
struct ChildAnswer {
  MilpModel::Relaxation relaxation = MilpModel::Relaxation::Unknown;
  double relaxedBound = 0;
  /// CBC returned a solution: `schedule`, with `optimal` and `bound`.
  bool solved = false;
  bool optimal = false;
  double bound = 0;
  Schedule schedule;
};
} // namespace

/// Everything the exact solver does runs in a child process killed at the
/// deadline, so the limit is a wall-clock promise: building the model
/// (seconds on a thousand nodes), CLP's presolve (outside its own limit)
/// and CBC's root LP (outside CBC's) can each take longer than any
/// sensible limit. The child reports the LP relaxation first, so its bound
/// survives a CBC run cut short, then CBC's answer as a schedule.
static ChildAnswer solveInChild(const Graph &graph, int64_t budget,
                                const SolveResult &start, double seconds) {
  ChildAnswer answer;
  int fds[2];
  if (::pipe(fds) != 0)
    return answer;
  auto began = std::chrono::steady_clock::now();
  auto deadline =
      began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(seconds));
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return answer;
  }
  if (child == 0) {
    ::close(fds[0]);
    auto put = [&](const void *data, size_t bytes) {
      const char *p = static_cast<const char *>(data);
      while (bytes > 0) {
        ssize_t n = ::write(fds[1], p, bytes);
        if (n <= 0)
          ::_exit(1);
        p += n;
        bytes -= static_cast<size_t>(n);
      }
    };
    auto left = [&] {
      return seconds - std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - began)
                           .count();
    };
    MilpModel model(graph, budget);
    model.build();
    if (start.feasible)
      model.setStart(start.schedule);
    std::optional<double> lp = model.relaxationBound(std::max(left(), 0.01));
    LpOutcome first{model.relaxationInfeasible()
                        ? MilpModel::Relaxation::Infeasible
                    : lp ? MilpModel::Relaxation::Bounded
                         : MilpModel::Relaxation::Unknown,
                    lp.value_or(0)};
    put(&first, sizeof(first));
    if (first.state == MilpModel::Relaxation::Infeasible ||
        (lp && start.feasible && meetsLowerBound(start.cost, *lp)))
      ::_exit(0);
    Cbc_Model *cbc = model.cbc();
    Cbc_setLogLevel(cbc, 0);
    Cbc_setMaximumSeconds(cbc, std::max(left(), 0.01));
    Cbc_setParameter(cbc, "threads", "1");
    Cbc_solve(cbc);
    const double *sol = Cbc_getColSolution(cbc);
    Outcome o{sol && Cbc_numberSavedSolutions(cbc) > 0 &&
                  !Cbc_isProvenInfeasible(cbc),
              Cbc_isProvenOptimal(cbc) != 0, Cbc_isProvenInfeasible(cbc) != 0,
              Cbc_getBestPossibleObjValue(cbc), 0};
    std::vector<int32_t> events;
    if (o.hasSolution)
      for (const Event &e : model.scheduleFrom(sol)) {
        events.push_back(static_cast<int32_t>(e.kind));
        events.push_back(e.node);
      }
    o.events = events.size() / 2;
    put(&o, sizeof(o));
    put(events.data(), sizeof(int32_t) * events.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  LpOutcome first{};
  Outcome o{};
  if (readUntil(fds[0], reinterpret_cast<char *>(&first), sizeof(first),
                deadline)) {
    answer.relaxation = first.state;
    answer.relaxedBound = first.bound;
    if (readUntil(fds[0], reinterpret_cast<char *>(&o), sizeof(o), deadline)) {
      // CBC's branch and bound can prove what the relaxation could not.
      if (o.infeasible)
        answer.relaxation = MilpModel::Relaxation::Infeasible;
      std::vector<int32_t> events(2 * o.events);
      if (o.hasSolution &&
          readUntil(fds[0], reinterpret_cast<char *>(events.data()),
                    sizeof(int32_t) * events.size(), deadline)) {
        answer.solved = true;
        answer.optimal = o.optimal != 0;
        answer.bound = o.bound;
        for (size_t i = 0; i < events.size(); i += 2)
          answer.schedule.push_back(
              {static_cast<Event::Kind>(events[i]), events[i + 1]});
      }
    }
  }
  ::close(fds[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return answer;
}

SolveResult remat::detail::solveMilp(const Graph &graph, int64_t budget,
                                     const SolverOptions &options) {
  // The greedy answer is the warm start and the fallback.
  SolveResult start = solve("greedy", graph, budget, options);
  if (budget < graph.argumentBytes()) {
    start.optimal = true; // nothing fits under the arguments alone
    return start;
  }
  auto proves = [](const SolveResult &r, double bound) {
    return r.feasible && meetsLowerBound(r.cost, bound);
  };
  // The graph's own bound (milliseconds) settles some budgets before the
  // model is built: no schedule fits, or the warm start meets it.
  double bound = graph.costLowerBound(budget);
  if (!std::isfinite(bound) || proves(start, bound)) {
    start.optimal = true;
    if (std::isfinite(bound))
      start.lowerBound = bound;
    return start;
  }
  ChildAnswer a = solveInChild(graph, budget, start, options.timeLimitSeconds);
  if (a.relaxation == MilpModel::Relaxation::Bounded)
    bound = std::max(bound, a.relaxedBound);
  // (A warm start that fits would contradict such a proof; it stands.)
  if (a.relaxation == MilpModel::Relaxation::Infeasible && !start.feasible) {
    // The model has no solution: no schedule meets the budget.
    start.optimal = true;
    return start;
  }
  SolveResult r;
  if (a.solved) {
    r.schedule = freeAtLastUse(graph, a.schedule);
    SimResult sim = simulate(graph, r.schedule);
    a.solved = sim.valid;
    r.peakBytes = sim.peakBytes;
    r.cost = sim.cost;
    r.feasible = r.peakBytes <= budget;
    bound = std::max(bound, a.bound);
  }
  // Rounding in CBC can leave a schedule a hair over the budget; then, or
  // where CBC found nothing in time (or was not needed), or nothing
  // cheaper, the warm start stands, with the best bound.
  if (!a.solved || !r.feasible || (start.feasible && start.cost < r.cost)) {
    start.lowerBound = bound;
    start.optimal = proves(start, bound);
    if (!*start.optimal && !a.solved &&
        a.relaxation == MilpModel::Relaxation::Unknown)
      start.optimal.reset(); // the exact solver said nothing in time
    return start;
  }
  r.lowerBound = bound;
  r.optimal = a.optimal || proves(r, bound);
  return r;
}
