//===- Executor.cpp - From per-value policies to a schedule --------------===//
//
// What the executor (Executor.h) needs outside its classes: the candidates
// a policy applies to, scheduleFromPolicies, and the executor's test hook.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Internal.h"

#include <iterator>
#include <random>

using namespace remat;
using namespace remat::detail;

bool detail::hasBackward(const Graph &graph) {
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id)
    if (graph.node(id).backward)
      return true;
  return false;
}

int32_t detail::earlyUses(const Graph &graph, NodeId id, bool training) {
  const std::vector<NodeId> &users = graph.users(id);
  if (!training) {
    int32_t early = users.empty() ? 0 : 1;
    for (int32_t i = 2; i < (int32_t)users.size(); ++i)
      if (users[i] - users[i - 1] > users[early] - users[early - 1])
        early = i;
    return early;
  }
  int32_t n = 0;
  for (NodeId u : users)
    n += !graph.node(u).backward;
  return n;
}

/// The values a solver may drop: for `late`, those Policy::Late applies to
/// (graphs without a backward pass: every value with a use), else the
/// checkpoint candidates.
static std::vector<NodeId> candidatesOf(const Graph &graph, bool late) {
  std::vector<NodeId> out;
  bool training = hasBackward(graph);
  if (late && training)
    return out;
  // A dropped value comes back by recomputing it and whatever of its inputs
  // is gone by then. Inputs with a late use (or that are arguments or
  // outputs) are still there; the rest must be rebuildable in turn, which
  // a value marked not recomputable (or overwriting an argument) is not.
  std::vector<char> rebuildable(graph.size(), 0);
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id) {
    const Node &n = graph.node(id);
    if (n.argument) {
      rebuildable[id] = 1;
      continue;
    }
    if (!n.recomputable || n.overwrites >= 0)
      continue;
    rebuildable[id] = 1;
    for (NodeId d : graph.deps(id)) {
      const Node &dep = graph.node(d);
      bool stays =
          dep.argument || dep.output ||
          earlyUses(graph, d, training) < (int32_t)graph.users(d).size();
      if (!rebuildable[d] && !stays)
        rebuildable[id] = 0;
    }
  }
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id) {
    const Node &n = graph.node(id);
    if (n.argument || n.output || n.backward || !rebuildable[id] ||
        n.bytes == 0)
      continue;
    int32_t early = earlyUses(graph, id, training);
    if (late ? early > 0
             : early < (int32_t)graph.users(id).size() &&
                   (training || early > 0))
      out.push_back(id);
  }
  return out;
}

std::vector<NodeId> remat::checkpointCandidates(const Graph &graph) {
  return candidatesOf(graph, /*late=*/false);
}

MovableValues detail::movableValues(const Graph &graph) {
  MovableValues m{
      checkpointCandidates(graph), candidatesOf(graph, /*late=*/true), {}};
  std::set_union(m.checkpoints.begin(), m.checkpoints.end(), m.lates.begin(),
                 m.lates.end(), std::back_inserter(m.all));
  return m;
}

ResumeCheck remat::detail::checkResumedEvaluations(const Graph &graph,
                                                   unsigned seed, int trials) {
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  MovableValues movable = movableValues(graph);
  const std::vector<NodeId> &checkpoints = movable.checkpoints,
                            &lates = movable.lates, &candidates = movable.all;
  if (candidates.empty())
    return {};
  std::mt19937 rng(seed);
  auto randomPolicy = [&](NodeId c) {
    std::vector<Policy> allowed = {Policy::Keep};
    if (std::binary_search(checkpoints.begin(), checkpoints.end(), c)) {
      allowed.insert(allowed.end(), {Policy::Recompute, Policy::Transient});
      // Nested is a training graph's policy (see Policy::Nested).
      if (!plan.holdsForRecompute)
        allowed.push_back(Policy::Nested);
    }
    if (std::binary_search(lates.begin(), lates.end(), c))
      allowed.insert(allowed.end(), {Policy::Release, Policy::Late});
    return allowed[rng() % allowed.size()];
  };
  int64_t peak =
      executor.evaluate(std::vector<Policy>(graph.size()), kNoBudget).peak;
  std::vector<Policy> base(graph.size(), Policy::Keep);
  int64_t budget = 0;
  ResumeCheck check;
  auto differ = [](const Evaluated &x, const Evaluated &y) {
    return x.valid != y.valid || x.peak != y.peak || x.cost != y.cost ||
           x.excess != y.excess || x.computes != y.computes || x.cut != y.cut;
  };
  for (int t = 0; t < trials; ++t) {
    if (t % 16 == 0) {
      for (NodeId c : candidates)
        base[c] = rng() % 2 ? randomPolicy(c) : Policy::Keep;
      budget = static_cast<int64_t>(peak * (0.3 + 0.7 * (rng() % 100) / 100.0));
      // Half the time with the cache of Transient values, whose contents
      // the resumed evaluation must restore too; half the time keeping the
      // events, which rememberChanged() splices.
      executor.setCacheLimit(rng() % 2 ? budget : kNoBudget);
      executor.keepEvents(rng() % 2);
      executor.remember(base, budget);
    }
    std::vector<Policy> p = base;
    NodeId a = candidates[rng() % candidates.size()],
           b = candidates[rng() % candidates.size()];
    p[a] = randomPolicy(a);
    p[b] = randomPolicy(b);
    Cutoff cutoff;
    Evaluated whole = executor.evaluate(p, budget);
    switch (rng() % 4) {
    case 1:
      cutoff.excess = whole.excess * (rng() % 100) / 100.0;
      break;
    case 2:
      cutoff.cost = whole.cost * (rng() % 100) / 100.0;
      break;
    case 3:
      cutoff.peak = whole.peak - static_cast<int64_t>(rng() % 64);
      break;
    }
    Evaluated full = executor.evaluate(p, budget, cutoff);
    Evaluated resumed = executor.evaluateChanged(p, budget, cutoff, {a, b});
    check.mismatches += differ(full, resumed);
    // A third of the changes are taken: the memory, spliced, must serve
    // the evaluations that follow as a whole run's would.
    if (rng() % 3 == 0 && whole.valid) {
      Evaluated taken = executor.rememberChanged(p, budget, {a, b});
      check.mismatches += differ(whole, taken);
      ++check.taken;
      if (executor.keepingEvents()) {
        Schedule kept = executor.rememberedEvents();
        check.mismatches += kept != executor.run(p);
      }
      base = p;
    }
  }
  check.converged = static_cast<int>(executor.convergedCount());
  return check;
}

Schedule remat::scheduleFromPolicies(const Graph &graph,
                                     const std::vector<Policy> &policy) {
  ExecutorPlan plan(graph);
  return PolicyExecutor(plan).run(policy);
}

Schedule remat::scheduleFromPolicies(const Graph &graph,
                                     const std::vector<Policy> &policy,
                                     int64_t budget) {
  ExecutorPlan plan(graph);
  PolicyExecutor executor(plan);
  executor.setCacheLimit(budget);
  return executor.answer(policy);
}
