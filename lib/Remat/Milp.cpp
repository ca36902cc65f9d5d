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
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "coin/Cbc_C_Interface.h"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace remat;

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
  /// Solves; returns false when CBC found no solution.
  bool solve(double seconds, SolveResult &result);

private:
  int addCol(double lb, double ub, double obj, bool integer) {
    Cbc_addCol(model, "", lb, ub, obj, integer, 0, nullptr, nullptr);
    return columns++;
  }
  void addRow(const std::vector<std::pair<int, double>> &terms, char sense,
              double rhs) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (auto [c, v] : terms) {
      cols.push_back(c);
      coefs.push_back(v);
    }
    Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(),
               coefs.data(), sense, rhs);
  }
  double mem(size_t p) const {
    const Node &n = graph.node(pos[p]);
    return n.overwrites >= 0 ? 0.0 : static_cast<double>(n.bytes) / unit;
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
  int columns = 0;
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
      previous = u;
    }
  }
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

bool MilpModel::solve(double seconds, SolveResult &result) {
  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumSeconds(model, seconds);
  Cbc_setParameter(model, "threads", "1");
  Cbc_solve(model);
  const double *x = Cbc_getColSolution(model);
  if (!x || Cbc_numberSavedSolutions(model) == 0 ||
      Cbc_isProvenInfeasible(model))
    return false;
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
  schedule = freeAtLastUse(graph, schedule);
  SimResult sim = simulate(graph, schedule);
  if (!sim.valid)
    return false;
  result.schedule = std::move(schedule);
  result.peakBytes = sim.peakBytes;
  result.cost = sim.cost;
  result.optimal = Cbc_isProvenOptimal(model) != 0;
  result.lowerBound = Cbc_getBestPossibleObjValue(model);
  return true;
}

SolveResult remat::detail::solveMilp(const Graph &graph, int64_t budget,
                                     const SolverOptions &options) {
  // The greedy answer is the warm start and the fallback.
  SolveResult start = solve("greedy", graph, budget, options);
  if (budget < graph.argumentBytes()) {
    start.optimal = true; // nothing fits under the arguments alone
    return start;
  }
  MilpModel model(graph, budget);
  model.build();
  if (start.feasible)
    model.setStart(start.schedule);
  SolveResult r;
  if (!model.solve(options.timeLimitSeconds, r)) {
    start.optimal.reset();
    return start;
  }
  r.feasible = r.peakBytes <= budget;
  if (!r.feasible || (start.feasible && start.cost < r.cost)) {
    // Rounding in the solver can leave a schedule a hair over the budget;
    // the greedy answer then stands, with CBC's bound still reported.
    start.lowerBound = r.lowerBound;
    start.optimal = start.feasible && r.lowerBound &&
                    start.cost <= *r.lowerBound + 1e-6 * start.cost;
    return start;
  }
  return r;
}
