//===- Executor.h - From per-value policies to a schedule -------*- C++ -*-===//
//
// The policy executor every heuristic solver shares: it runs the graph in
// order under one policy per value, recomputing what a use needs right
// before it, and either emits the schedule or applies the simulator's
// accounting as it goes (what a search's many evaluations need), and
// remembers a run so that changes to it are evaluated and taken by
// running only the steps they change. Internal to the core; the methods
// are defined in the classes so that the solvers' hot loops inline them.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_REMAT_EXECUTOR_H
#define REMAT_LIB_REMAT_EXECUTOR_H

#include "ExecutorPlan.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

namespace remat::detail {

/// Runs the graph in order under per-value policies (see
/// scheduleFromPolicies). One executor serves many runs and reuses its
/// buffers; evaluate() applies the simulator's accounting to each step as
/// it is produced instead of storing the schedule, which is what makes a
/// search of thousands of evaluations cheap.
class PolicyExecutor {
public:
  explicit PolicyExecutor(const ExecutorPlan &plan)
      : plan(plan), argumentBytes(plan.graph.argumentBytes()) {}

  /// The plan it runs: the graph's figures in flat arrays, for callers that
  /// walk its schedules too.
  const ExecutorPlan &executorPlan() const { return plan; }

  /// Lets Transient values that a step recomputed stay resident after it
  /// while they fit under `limit` (the budget), evicted (freed) before any
  /// computation that would otherwise pass it; kNoBudget: no such cache,
  /// every Transient value leaves with the step that recomputed it.
  void setCacheLimit(int64_t limit) {
    // Not in graphs whose kept values wait for the recomputations of what
    // they feed (without a backward pass): a cached value that is not
    // recomputed would hold them, and releasing them at its last read made
    // Moccasin's n500 dearer at 2 of 6 budgets it changed, and infeasible
    // at its smallest.
    cacheLimit = plan.holdsForRecompute ? kNoBudget : limit;
  }

  /// The schedule of `p` (valid until the executor's next run).
  const Schedule &run(const std::vector<Policy> &p) {
    execute(p, nullptr);
    return schedule;
  }

  /// run(p) as a solver's answer: with a cache, a value evicted after its
  /// last read leaves at that read, where the lowering frees it (the
  /// evaluations count it until the eviction: their peak may only be
  /// higher).
  Schedule answer(const std::vector<Policy> &p) {
    execute(p, nullptr);
    if (cacheLimit != kNoBudget)
      return freeAtLastUse(plan.graph, schedule);
    return schedule;
  }

  /// Whether remember() keeps the events of the schedule it runs
  /// (rememberedEvents(); rememberChanged() then updates them).
  void keepEvents(bool keep) { keeping = keep; }
  bool keepingEvents() const { return keeping; }

  /// How many evaluateChanged() calls so far finished with the remembered
  /// run's steps.
  int64_t convergedCount() const { return converged; }

  /// The schedule of the policies last remembered, where remember() ran
  /// with keepEvents() on: what run() returns for them, where their run was
  /// valid.
  const Schedule &rememberedEvents() const { return memory.schedule; }

  /// What simulate(graph, run(p), budget) reports, unless the evaluation
  /// reaches `cutoff` (excess or cost at least its own, or a peak above
  /// its own) first: then it stops there with `cut` set.
  Evaluated evaluate(const std::vector<Policy> &p, int64_t budget,
                     const Cutoff &cutoff = {}) {
    Evaluated e{true, argumentBytes, 0.0, 0.0, 0, false};
    Tally tally{budget, argumentBytes, &e, cutoff};
    execute(p, &tally);
    return e;
  }

  /// evaluate(p, budget), which also keeps the executor's state at a few
  /// dozen steps along the way, so that evaluateChanged() can resume from
  /// one of them instead of starting over.
  Evaluated remember(const std::vector<Policy> &p, int64_t budget) {
    snapshotCount = 0;
    snapshotEvery = std::max<size_t>(1, plan.steps.size() / kSnapshots);
    rememberedBudget = budget;
    segment.clear();
    Evaluated e{true, argumentBytes, 0.0, 0.0, 0, false};
    Tally tally{budget, argumentBytes, &e, {}};
    recording = true;
    execute(p, &tally);
    recording = false;
    std::swap(memory, segment);
    memory.withEvents = keeping;
    if (keeping)
      memory.schedule.swap(schedule);
    // Evaluations may finish with this run's steps only where it ran them
    // all.
    convergible = e.valid;
    return e;
  }

  /// remember(p, budget) for a `p` that differs from the policies last
  /// remembered (at this budget) only at the values in `changed`: what
  /// evaluateChanged() runs of it, run again recording the states, in
  /// place of the steps it replaces (a search taking a move pays a
  /// fraction of a run instead of a whole one).
  Evaluated rememberChanged(const std::vector<Policy> &p, int64_t budget,
                            std::initializer_list<NodeId> changed) {
    assert(budget == rememberedBudget && "remember() at another budget");
    if (!convergible)
      return remember(p, budget);
    auto [first, settled] = changedSteps(changed);
    size_t k = snapshotBefore(first);
    if (k == 0)
      return remember(p, budget);
    const Snapshot &snap = snapshots[k - 1];
    uint32_t from = snap.step;
    restore(p, snap);
    redoHolds(p, snap, changed);
    Evaluated e = snap.figures;
    Tally tally{budget, snap.live, &e, {}};
    segment.clear();
    schedule.clear();
    recording = true;
    bool keep = keeping;
    keeping = memory.withEvents;
    splicedAt = static_cast<uint32_t>(plan.steps.size());
    convergeFrom = settled;
    changedValues.assign(changed.begin(), changed.end());
    runSteps(p, &tally, from);
    convergeFrom = kNever;
    recording = false;
    keeping = keep;
    if (!e.valid) // the snapshots after `from` are this run's
      return remember(p, budget);
    splice(from, splicedAt);
    if (plan.holdsForRecompute)
      patchHoldsBefore(from);
    // The figures of the states kept from the steps that follow, and of
    // the whole run, accumulate from the new ones.
    size_t event = memory.stepEvent.size() > splicedAt
                       ? memory.stepEvent[splicedAt]
                       : memory.eventCost.size();
    for (size_t j = 0; j < snapshotCount; ++j) {
      if (snapshots[j].step < splicedAt)
        continue;
      size_t to = memory.stepEvent[snapshots[j].step];
      accumulate(e, budget, event, to);
      event = to;
      snapshots[j].figures = e;
    }
    accumulate(e, budget, event, memory.eventCost.size());
    return e;
  }

  /// What evaluate(p, budget, cutoff) reports, for a `p` that differs from
  /// the policies last remembered (at this budget) only at the values in
  /// `changed`. Until the step that computes the first of them, the two
  /// policies run alike (a value's policy acts from its own computation
  /// on, and the reads it is held for only once its readers run), so the
  /// evaluation resumes from the last state kept before it; after their
  /// last reads, where its state is the remembered run's at the same step
  /// (by fingerprint), it adds up the remembered run's computations from
  /// there instead of running them.
  Evaluated evaluateChanged(const std::vector<Policy> &p, int64_t budget,
                            const Cutoff &cutoff,
                            std::initializer_list<NodeId> changed) {
    assert(budget == rememberedBudget && "remember() at another budget");
    assert(!cutoff.costToGo && "whole evaluations only");
    auto [first, settled] = changedSteps(changed);
    convergeFrom = convergible ? settled : kNever;
    changedValues.assign(changed.begin(), changed.end());
    bool keep = keeping;
    keeping = false;
    Evaluated e = resume(p, budget, cutoff, first, changed);
    keeping = keep;
    convergeFrom = kNever;
    return e;
  }

private:
  struct Tally {
    int64_t budget, live;
    Evaluated *out;
    Cutoff cutoff;
  };

  static constexpr uint32_t kNever = std::numeric_limits<uint32_t>::max();

  /// The step that computes the first of `changed`, and the step after the
  /// last that reads one: from there their policies act no more, so once
  /// the state is the remembered run's at the same step, so is the rest of
  /// the run (see runSteps).
  std::pair<uint32_t, uint32_t>
  changedSteps(std::initializer_list<NodeId> changed) const {
    uint32_t first = kNever, settled = 0;
    for (NodeId c : changed) {
      first = std::min(first, plan.stepOf[c]);
      settled =
          std::max(settled, std::max(plan.stepOf[c], plan.lastUseStep[c]) + 1);
    }
    return {first, settled};
  }

  /// One past the last snapshot taken at or before step `first` (0: none).
  size_t snapshotBefore(uint32_t first) const {
    size_t k = std::min<size_t>(first / snapshotEvery, snapshotCount);
    while (k > 0 && snapshots[k - 1].step > first)
      --k;
    return k;
  }

  /// evaluateChanged's run: from the last state remembered before step
  /// `first`, where the first of `changed` is computed.
  Evaluated resume(const std::vector<Policy> &p, int64_t budget,
                   const Cutoff &cutoff, uint32_t first,
                   std::initializer_list<NodeId> changed) {
    size_t k = snapshotBefore(first);
    if (k == 0)
      return evaluate(p, budget, cutoff);
    const Snapshot &snap = snapshots[k - 1];
    Evaluated e = snap.figures;
    // The whole evaluation would have stopped within the shared steps.
    if (e.excess >= cutoff.excess || e.cost >= cutoff.cost ||
        e.peak > cutoff.peak)
      return evaluate(p, budget, cutoff);
    restore(p, snap);
    redoHolds(p, snap, changed);
    schedule.clear();
    Tally tally{budget, snap.live, &e, cutoff};
    runSteps(p, &tally, snap.step);
    return e;
  }

  /// The states remember() keeps: about this many along the steps.
  static constexpr size_t kSnapshots = 32;

  /// What remember() records besides its snapshots, for evaluations to
  /// finish with: at each step's start the state's fingerprint, the
  /// cache's, the computations accounted and the events kept so far; for
  /// each computation its cost and the bytes held while it runs; the
  /// events (with keepEvents()).
  struct Record {
    std::vector<uint64_t> stepHash, stepCounts, stepCacheHash;
    std::vector<uint32_t> stepEvent, stepSchedule;
    std::vector<double> eventCost;
    std::vector<int64_t> eventDuring;
    /// The events (where remember() kept them: withEvents).
    Schedule schedule;
    bool withEvents = false;
    void clear() {
      stepHash.clear();
      stepCounts.clear();
      stepCacheHash.clear();
      stepEvent.clear();
      stepSchedule.clear();
      eventCost.clear();
      eventDuring.clear();
      schedule.clear();
    }
  };

  /// Puts `segment`, recorded from step `from` to step `to` (exclusive) of
  /// policies that reach the remembered run's state at `to`, in place of
  /// the memory's record of those steps.
  void splice(uint32_t from, uint32_t to) {
    size_t n = plan.steps.size();
    auto at = [&](const std::vector<uint32_t> &starts, uint32_t step,
                  size_t end) -> size_t {
      return step < n ? starts[step] : end;
    };
    size_t e0 = memory.stepEvent[from],
           e1 = at(memory.stepEvent, to, memory.eventCost.size());
    auto replace = [](auto &whole, size_t a, size_t b, const auto &part) {
      whole.erase(whole.begin() + a, whole.begin() + b);
      whole.insert(whole.begin() + a, part.begin(), part.end());
    };
    replace(memory.eventCost, e0, e1, segment.eventCost);
    replace(memory.eventDuring, e0, e1, segment.eventDuring);
    int64_t eventShift = static_cast<int64_t>(segment.eventCost.size()) -
                         static_cast<int64_t>(e1 - e0);
    int64_t scheduleShift = 0;
    size_t s0 = 0;
    bool withEvents = memory.withEvents;
    if (withEvents) {
      s0 = memory.stepSchedule[from];
      size_t s1 = at(memory.stepSchedule, to, memory.schedule.size());
      replace(memory.schedule, s0, s1, schedule);
      scheduleShift =
          static_cast<int64_t>(schedule.size()) - static_cast<int64_t>(s1 - s0);
    }
    for (uint32_t i = from; i < to; ++i) {
      memory.stepHash[i] = segment.stepHash[i - from];
      memory.stepCounts[i] = segment.stepCounts[i - from];
      memory.stepCacheHash[i] = segment.stepCacheHash[i - from];
      memory.stepEvent[i] =
          static_cast<uint32_t>(e0 + segment.stepEvent[i - from]);
      if (withEvents)
        memory.stepSchedule[i] =
            static_cast<uint32_t>(s0 + segment.stepSchedule[i - from]);
    }
    for (size_t i = to; i < n; ++i) {
      memory.stepEvent[i] =
          static_cast<uint32_t>(memory.stepEvent[i] + eventShift);
      if (withEvents)
        memory.stepSchedule[i] =
            static_cast<uint32_t>(memory.stepSchedule[i] + scheduleShift);
    }
  }

  /// The accounting of the remembered computations [from, to) added to
  /// `e` (no cutoff).
  void accumulate(Evaluated &e, int64_t budget, size_t from, size_t to) {
    Tally t{budget, 0, &e, {}};
    replay(from, to, t);
  }

  struct Snapshot {
    /// The state before steps[step] runs.
    uint32_t step;
    int64_t live;
    uint64_t hash, counts;
    Evaluated figures;
    /// Whether the policy-independent parts below are saved.
    bool fixedSaved = false;
    std::vector<char> resident, dropped, computed, clobbered;
    std::vector<int32_t> remaining, remainingEarly, holdsLeft;
    std::vector<NodeId> cache;
  };

  /// Sets the executor's state to a snapshot's, to run policies `p` on.
  void restore(const std::vector<Policy> &p, const Snapshot &snap) {
    policy = &p;
    resident = snap.resident;
    dropped = snap.dropped;
    remaining = snap.remaining;
    remainingEarly = snap.remainingEarly;
    cache = snap.cache;
    live = snap.live;
    hash = snap.hash;
    counts = snap.counts;
    if (plan.needsChecks) {
      computed = snap.computed;
      clobbered = snap.clobbered;
    }
  }

  /// After restore(): the reads an input is held for depend on its policy
  /// and its reader's, so they are redone on the edges of the changed
  /// values (none of them read yet, their readers all run later).
  void redoHolds(const std::vector<Policy> &p, const Snapshot &snap,
                 std::initializer_list<NodeId> changed) {
    if (!plan.holdsForRecompute)
      return;
    holdsLeft = snap.holdsLeft;
    edges.clear();
    for (NodeId c : changed) {
      for (uint32_t j = plan.depStart[c]; j < plan.depStart[c + 1]; ++j)
        edges.push_back(j);
      for (uint32_t j = plan.readerStart[c]; j < plan.readerStart[c + 1]; ++j)
        edges.push_back(plan.readerEdges[j]);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    holdChanges.clear();
    uint64_t before = counts;
    for (uint32_t j : edges) {
      int32_t delta = heldReads(p, j) - holdsLeft[j];
      if (delta == 0)
        continue;
      holdChanges.push_back({j, delta});
      remaining[plan.deps[j]] += delta;
      holdsLeft[j] += delta;
      counts += static_cast<uint64_t>(static_cast<int64_t>(delta)) *
                (plan.readsKey[plan.deps[j]] + plan.holdKey[j]);
    }
    countsChange = counts - before;
  }

  /// After rememberChanged()'s splice at step `from`: the holds that
  /// redoHolds() changed act from the start of the run, so the states and
  /// fingerprints kept before `from` change by as much (none of those
  /// edges is read before it).
  void patchHoldsBefore(uint32_t from) {
    if (holdChanges.empty())
      return;
    for (size_t j = 0; j < snapshotCount && snapshots[j].step < from; ++j) {
      Snapshot &snap = snapshots[j];
      for (auto [edge, delta] : holdChanges) {
        snap.remaining[plan.deps[edge]] += delta;
        snap.holdsLeft[edge] += delta;
      }
      snap.counts += countsChange;
    }
    for (uint32_t i = 0; i < from; ++i)
      memory.stepCounts[i] += countsChange;
  }

  /// The reads of the input on edge `k` (reader v, input d) that d is held
  /// for under `p`: one per recomputation of v, if v is dropped and d kept
  /// (see Policy::Keep).
  int32_t heldReads(const std::vector<Policy> &p, uint32_t k) const {
    NodeId d = plan.deps[k];
    NodeId v = static_cast<NodeId>(
        std::upper_bound(plan.depStart.begin(), plan.depStart.end(), k) -
        plan.depStart.begin() - 1);
    if (p[v] <= Policy::Release || p[d] != Policy::Keep ||
        (plan.flags[d] & (ExecutorPlan::kArgument | ExecutorPlan::kOutput)))
      return 0;
    return p[v] == Policy::Transient
               ? plan.remaining[v] - plan.remainingEarly[v]
               : 1;
  }

  void saveSnapshot(uint32_t step, const Tally &t) {
    size_t slot = step / snapshotEvery - 1;
    if (snapshots.size() <= slot)
      snapshots.resize(slot + 1);
    snapshotCount = std::max(snapshotCount, slot + 1);
    Snapshot &s = snapshots[slot];
    s.step = step;
    s.live = t.live;
    s.hash = hash;
    s.counts = counts;
    s.figures = *t.out;
    s.resident = resident;
    s.dropped = dropped;
    s.cache = cache;
    // In a training graph the reads left and what has been computed or
    // overwritten before a step do not depend on the policies (runs only
    // recompute values already computed, and count reads by the steps):
    // a slot, always at the same step, keeps them from its first run.
    if (s.fixedSaved && !plan.holdsForRecompute)
      return;
    s.fixedSaved = true;
    s.remaining = remaining;
    s.remainingEarly = remainingEarly;
    if (plan.needsChecks) {
      s.computed = computed;
      s.clobbered = clobbered;
    }
    if (plan.holdsForRecompute)
      s.holdsLeft = holdsLeft;
  }

  void execute(const std::vector<Policy> &p, Tally *tally) {
    size_t n = plan.flags.size();
    policy = &p;
    resident.assign(n, 0);
    dropped.assign(n, 0);
    touchedAt.resize(n, {0, 0});
    remaining.assign(plan.remaining.begin(), plan.remaining.end());
    remainingEarly.assign(plan.remainingEarly.begin(),
                          plan.remainingEarly.end());
    schedule.clear();
    schedule.reserve(tally && !keeping ? 64 : n * 3);
    cache.clear();
    live = argumentBytes;
    hash = 0;
    pinned.assign(n, 0);
    offered.resize(n, 0);
    passing.resize(n, 0);
    computedInStep.resize(n, 0);
    if (plan.holdsForRecompute) {
      // A kept value feeding a dropped one is read once more for each
      // recomputation of it (see Policy::Keep).
      holdsLeft.assign(plan.deps.size(), 0);
      for (NodeId v : plan.steps) {
        if (p[v] <= Policy::Release)
          continue;
        int32_t reads = p[v] == Policy::Transient
                            ? plan.remaining[v] - plan.remainingEarly[v]
                            : 1;
        for (uint32_t k = plan.depStart[v]; k < plan.depStart[v + 1]; ++k) {
          NodeId d = plan.deps[k];
          if (p[d] != Policy::Keep ||
              (plan.flags[d] &
               (ExecutorPlan::kArgument | ExecutorPlan::kOutput)))
            continue;
          remaining[d] += reads;
          holdsLeft[k] = reads;
        }
      }
    }
    counts = 0;
    if (plan.holdsForRecompute) {
      for (size_t v = 0; v < n; ++v)
        counts += static_cast<uint64_t>(remaining[v]) * plan.readsKey[v];
      for (size_t k = 0; k < holdsLeft.size(); ++k)
        counts += static_cast<uint64_t>(holdsLeft[k]) * plan.holdKey[k];
    }
    if (tally && plan.needsChecks) {
      computed.assign(n, 0);
      clobbered.assign(n, 0);
    }
    for (NodeId id : plan.arguments) {
      resident[id] = 1;
      hash ^= plan.residentKey[id];
    }
    runSteps(p, tally, 0);
  }

  /// Runs plan.steps[from ..] from the state the executor is in; with the
  /// cost to go (a whole evaluation), checked every kCostToGoSteps steps: a
  /// check at every step cost 0.5% of auto's instructions where no
  /// evaluation asks for it.
  void runSteps(const std::vector<Policy> &p, Tally *tally, size_t from) {
    size_t n = plan.steps.size();
    if (!tally || !tally->cutoff.costToGo)
      return runSteps(p, tally, from, n);
    for (size_t at = from; at < n; at += kCostToGoSteps) {
      if (overCost(*tally, at))
        return;
      runSteps(p, tally, at, std::min(n, at + kCostToGoSteps));
      if (tally->out->cut || !tally->out->valid)
        return;
    }
  }
  static constexpr size_t kCostToGoSteps = 8;

  /// Runs plan.steps[from .. to).
  void runSteps(const std::vector<Policy> &p, Tally *tally, size_t from,
                size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (i >= convergeFrom && hash == memory.stepHash[i] &&
          counts == memory.stepCounts[i] &&
          cacheHash() == memory.stepCacheHash[i] && changedDone()) {
        // The same state as the remembered run's here (a 64-bit
        // fingerprint of what is resident and dropped, and the cache's
        // order): the rest of the run is that run's, only its accounting
        // starts from other figures.
        if (recording) {
          splicedAt = static_cast<uint32_t>(i);
          return;
        }
        ++converged;
        replay(memory.stepEvent[i], memory.eventCost.size(), *tally);
        return;
      }
      if (recording && tally) {
        if (i % snapshotEvery == 0 && i > 0)
          saveSnapshot(static_cast<uint32_t>(i), *tally);
        segment.stepHash.push_back(hash);
        segment.stepCounts.push_back(counts);
        segment.stepCacheHash.push_back(cacheHash());
        segment.stepEvent.push_back(
            static_cast<uint32_t>(segment.eventCost.size()));
        if (keeping)
          segment.stepSchedule.push_back(
              static_cast<uint32_t>(schedule.size()));
      }
      NodeId id = plan.steps[i];
      transient.clear();
      size_t stepStart = schedule.size();
      int64_t liveBefore = live;
      offers.clear();
      // The cache only grows between steps: if it is empty now, nothing is
      // evicted in this step and nothing needs pinning.
      pinning = !cache.empty();
      uint32_t depsBegin = plan.depStart[id], depsEnd = plan.depStart[id + 1];
      for (uint32_t k = depsBegin; k < depsEnd; ++k) {
        ensure(plan.deps[k]);
        pin(plan.deps[k]);
      }
      makeRoomFor(id);
      compute(id);
      if (pinning)
        for (uint32_t k = depsBegin; k < depsEnd; ++k)
          --pinned[plan.deps[k]];
      for (uint32_t k = depsBegin; k < depsEnd; ++k) {
        read(plan.deps[k]);
        if (plan.earlyDep[k])
          --remainingEarly[plan.deps[k]];
      }
      for (uint32_t k = depsBegin; k < depsEnd; ++k)
        maybeFree(plan.deps[k]);
      bool walked = false;
      for (NodeId t : transient) {
        if (p[t] != Policy::Transient && !passes(p, t, walked)) {
          maybeFree(t);
          continue;
        }
        if (cacheLimit != kNoBudget && remaining[t] > 0 && resident[t])
          offers.push_back(t);
        free(t);
      }
      maybeFree(id);
      if (p[id] == Policy::Late && resident[id] && !dropped[id]) {
        drop(id);
        free(id);
      }
      if (!transient.empty())
        placeFrees(stepStart);
      if (!offers.empty())
        retainInCache(stepStart, liveBefore);
      if (tally) {
        if (!account(stepStart, *tally))
          return;
        if (!keeping)
          schedule.clear();
      }
    }
  }

  /// The simulator's accounting for the events from `start` on; false once
  /// the schedule is one the simulator rejects. The executor never frees a
  /// value that is not resident, never frees an output and computes every
  /// node, so only two of the simulator's checks can fail here.
  bool account(size_t start, Tally &t) {
    Evaluated &e = *t.out;
    for (size_t i = start; i < schedule.size(); ++i) {
      NodeId id = schedule[i].node;
      int64_t bytes = plan.allocated[id];
      if (schedule[i].kind == Event::Kind::Free) {
        t.live -= bytes;
        continue;
      }
      if (plan.needsChecks) {
        bool invalid =
            computed[id] && !(plan.flags[id] & ExecutorPlan::kRecomputable);
        for (uint32_t k = plan.depStart[id]; k < plan.depStart[id + 1]; ++k)
          invalid |= clobbered[plan.deps[k]] != 0;
        if (invalid) {
          e.valid = false;
          return false;
        }
        computed[id] = 1;
        if (plan.overwrites[id] >= 0)
          clobbered[plan.overwrites[id]] = 1;
      }
      t.live += bytes;
      int64_t during = t.live + plan.workspace[id];
      if (recording) {
        segment.eventCost.push_back(plan.cost[id]);
        segment.eventDuring.push_back(during);
      }
      if (!tallyCompute(e, t, plan.cost[id], during))
        return false;
    }
    return true;
  }

  /// One computation's accounting, given its cost and the bytes held while
  /// it runs; false (and `cut` set) once the figures reach the cutoff.
  /// account() and replay() share it, so that an evaluation finishing with
  /// the remembered run's record makes the same additions in the same
  /// order as one that runs the steps.
  static bool tallyCompute(Evaluated &e, const Tally &t, double cost,
                           int64_t during) {
    e.cost += cost;
    ++e.computes;
    e.peak = std::max(e.peak, during);
    if (during > t.budget)
      e.excess += static_cast<double>(during - t.budget);
    if (e.excess >= t.cutoff.excess || e.cost >= t.cutoff.cost ||
        e.peak > t.cutoff.peak) {
      e.cut = true;
      return false;
    }
    return true;
  }

  /// Whether the run can no longer end under the cost cutoff, each step
  /// from `step` on computing its node at least once (then `cut` is set):
  /// a family's losing members stop where their recomputations so far pass
  /// what the best one's take in all, not at the end of the run. The
  /// margin keeps the rounding of the sums from stopping a run that would
  /// end under the cutoff.
  bool overCost(const Tally &t, size_t step) const {
    if ((t.out->cost + plan.costFrom[step]) * (1 - 1e-9) < t.cutoff.cost)
      return false;
    t.out->cut = true;
    return true;
  }

  /// Appends an event field by field: pushing a braced Event builds it on
  /// the stack with a byte store and a word store and copies it with one
  /// 8-byte load, which the store buffer cannot forward; that stall was
  /// most of the executor's time.
  void emit(Event::Kind kind, NodeId id) {
    Event &e = schedule.emplace_back();
    e.kind = kind;
    e.node = id;
  }

  void compute(NodeId id) {
    emit(Event::Kind::Compute, id);
    resident[id] = 1;
    hash ^= plan.residentKey[id];
    live += plan.allocated[id];
  }

  /// Evicts cached values (the longest cached first) until computing
  /// `id` fits under the cache limit, or none is left that no pending
  /// computation needs. The live count here ignores the frees that
  /// placeFrees() later moves earlier within the step, so it errs toward
  /// evicting; the simulator measures the schedule either way.
  void makeRoomFor(NodeId id) {
    if (cacheLimit == kNoBudget || cache.empty())
      return;
    int64_t need = live + plan.allocated[id] + plan.workspace[id] - cacheLimit;
    if (need <= 0)
      return;
    size_t keep = 0, k = 0;
    for (; k < cache.size() && need > 0; ++k) {
      NodeId c = cache[k];
      if (!resident[c])
        continue; // freed at its last use since
      if (pinned[c] == 0) {
        need -= plan.allocated[c];
        free(c);
        continue;
      }
      cache[keep++] = c;
    }
    // The rest stays as it is (entries freed since go on a later pass).
    cache.erase(cache.begin() + keep, cache.begin() + k);
  }

  void pin(NodeId id) {
    if (pinning)
      ++pinned[id];
  }

  /// Makes `id` resident, recomputing it and what it needs. Recomputed
  /// values stay until the consumer that asked for them has run, so two
  /// operands that share an input do not recompute it twice.
  void ensure(NodeId id) {
    if (resident[id] || (plan.flags[id] & ExecutorPlan::kArgument))
      return; // an overwritten argument is caught by the simulator
    for (uint32_t k = plan.depStart[id]; k < plan.depStart[id + 1]; ++k) {
      ensure(plan.deps[k]);
      pin(plan.deps[k]);
    }
    makeRoomFor(id);
    compute(id);
    if (pinning)
      for (uint32_t k = plan.depStart[id]; k < plan.depStart[id + 1]; ++k)
        --pinned[plan.deps[k]];
    transient.push_back(id);
    if (!plan.holdsForRecompute)
      return;
    for (uint32_t k = plan.depStart[id]; k < plan.depStart[id + 1]; ++k)
      if (holdsLeft[k] > 0) {
        // This was one of the reads the input was held for; it leaves with
        // the step's other transients once none is left.
        --holdsLeft[k];
        counts -= plan.holdKey[k];
        read(plan.deps[k]);
        transient.push_back(plan.deps[k]);
      }
  }

  /// Whether `t`, which the current step computed, is a Nested value that
  /// leaves with the step's transients: in a training graph, one that a
  /// Recompute value the step computed too needs (through values the step
  /// computed). The first call in a step (`walked` false) finds them all.
  bool passes(const std::vector<Policy> &p, NodeId t, bool &walked) {
    if (p[t] != Policy::Nested || plan.holdsForRecompute)
      return false;
    if (!walked) {
      walked = true;
      if (++stepStamp == 0) // 0 marks a visited value
        ++stepStamp;
      for (NodeId u : transient)
        computedInStep[u] = stepStamp;
      for (NodeId r : transient)
        if (p[r] == Policy::Recompute)
          markUpstream(p, r);
    }
    bool leaves = passing[t] != 0;
    passing[t] = 0;
    return leaves;
  }

  /// Marks the Nested values among what the step computed for `id`.
  void markUpstream(const std::vector<Policy> &p, NodeId id) {
    for (uint32_t k = plan.depStart[id]; k < plan.depStart[id + 1]; ++k) {
      NodeId d = plan.deps[k];
      if (computedInStep[d] != stepStamp)
        continue;
      computedInStep[d] = 0; // visited
      if (p[d] == Policy::Nested)
        passing[d] = 1;
      markUpstream(p, d);
    }
  }

  /// What freeAtLastUse does, within one step: a step's frees all follow
  /// its computes and are of values a compute of the step touched, so only
  /// steps that recomputed something have frees to move, and only within
  /// the step. Each free moves right after the last compute that touched
  /// its value, keeping the order of frees that land together.
  void placeFrees(size_t start) {
    // The step's body runs to its last compute (evictions may come between
    // its computes); the frees after it are the ones to place.
    size_t end = schedule.size(), bodyEnd = end;
    while (bodyEnd > start && schedule[bodyEnd - 1].kind == Event::Kind::Free)
      --bodyEnd;
    size_t nBody = bodyEnd - start;
    ++stamp;
    for (size_t c = 0; c < nBody; ++c) {
      if (schedule[start + c].kind != Event::Kind::Compute)
        continue;
      NodeId u = schedule[start + c].node;
      touchedAt[u] = {stamp, static_cast<uint32_t>(c)};
      for (uint32_t k = plan.depStart[u]; k < plan.depStart[u + 1]; ++k)
        touchedAt[plan.deps[k]] = {stamp, static_cast<uint32_t>(c)};
    }
    // Counting sort of the frees by the compute they follow (stable).
    count.assign(nBody, 0);
    slots.resize(end - bodyEnd);
    for (size_t f = bodyEnd; f < end; ++f) {
      auto [when, at] = touchedAt[schedule[f].node];
      uint32_t slot = when == stamp ? at : static_cast<uint32_t>(nBody - 1);
      slots[f - bodyEnd] = slot;
      ++count[slot];
    }
    window.assign(schedule.begin() + start, schedule.end());
    size_t out = start;
    for (size_t c = 0; c < nBody; ++c) {
      schedule[out] = window[c];
      uint32_t frees = count[c];
      count[c] = static_cast<uint32_t>(out + 1); // where its frees go
      out += 1 + frees;
    }
    for (size_t f = nBody; f < window.size(); ++f)
      schedule[count[slots[f - nBody]]++] = window[f];
  }

  /// Takes back the frees of the step's recomputed Transient values
  /// (`offers`) whose bytes fit under the cache limit from their free to
  /// the end of the step, the latest freed first, and caches them.
  void retainInCache(size_t start, int64_t liveBefore) {
    size_t end = schedule.size();
    // Bytes resident after each event of the step, and at each compute
    // (with its workspace) what it holds while it runs.
    held.resize(end - start);
    int64_t at = liveBefore;
    for (size_t k = start; k < end; ++k) {
      NodeId u = schedule[k].node;
      if (schedule[k].kind == Event::Kind::Free) {
        at -= plan.allocated[u];
        held[k - start] = at;
      } else {
        at += plan.allocated[u];
        held[k - start] = at + plan.workspace[u];
      }
    }
    for (NodeId t : offers)
      offered[t] = 1;
    // Walking back from the end: the most held from each event on, with the
    // values taken back so far (all freed later than it) counted.
    bool kept = false;
    int64_t most = 0;
    for (size_t k = end; k-- > start;) {
      most = std::max(most, held[k - start]);
      NodeId t = schedule[k].node;
      if (schedule[k].kind != Event::Kind::Free || !offered[t])
        continue;
      // Only a value's last free in the step may be taken back: an earlier
      // one (an eviction before the step computed it again) would leave it
      // resident where it is computed.
      offered[t] = 0;
      if (most + plan.allocated[t] > cacheLimit)
        continue;
      most += plan.allocated[t];
      schedule[k].node = -1; // taken back
      resident[t] = 1;
      hash ^= plan.residentKey[t];
      live += plan.allocated[t];
      cache.push_back(t);
      kept = true;
    }
    for (NodeId t : offers)
      offered[t] = 0;
    if (kept)
      schedule.erase(std::remove_if(schedule.begin() + start, schedule.end(),
                                    [](const Event &e) { return e.node < 0; }),
                     schedule.end());
  }

  void maybeFree(NodeId id) {
    if (!resident[id] ||
        (plan.flags[id] & (ExecutorPlan::kArgument | ExecutorPlan::kOutput)))
      return;
    if (remaining[id] == 0) {
      free(id);
      return;
    }
    // A dropped candidate leaves once its early uses are served; it is
    // dropped once, and what comes back later follows its policy.
    if ((*policy)[id] > Policy::Release && !dropped[id] &&
        remainingEarly[id] == 0) {
      drop(id);
      free(id);
    }
  }

  /// Marks `id` dropped: the fingerprint counts it while reads are left.
  void drop(NodeId id) {
    dropped[id] = 1;
    if (remaining[id] > 0)
      hash ^= plan.droppedKey[id];
  }

  /// One read of `d` done.
  void read(NodeId d) {
    if (--remaining[d] == 0 && dropped[d])
      hash ^= plan.droppedKey[d];
    if (plan.holdsForRecompute)
      counts -= plan.readsKey[d];
  }

  /// Whether no read of the changed values is left: a value with reads
  /// left may still be dropped after them, by its policy. (Without any,
  /// one that a recomputation needs is computed and freed in the same step
  /// whatever its policy.)
  bool changedDone() const {
    for (NodeId c : changedValues)
      if (remaining[c] != 0)
        return false;
    return true;
  }

  /// The cache's fingerprint: its resident entries, in order (the others
  /// are skipped as if gone).
  uint64_t cacheHash() const {
    uint64_t h = 0;
    for (NodeId c : cache)
      if (resident[c])
        h = ExecutorPlan::mix(h + static_cast<uint64_t>(c) + 1);
    return h;
  }

  /// The accounting of the remembered run's computations [from, to),
  /// added to the figures so far: what account() would do with the same
  /// events.
  void replay(size_t from, size_t to, const Tally &t) {
    for (size_t k = from; k < to; ++k)
      if (!tallyCompute(*t.out, t, memory.eventCost[k], memory.eventDuring[k]))
        return;
  }

  void free(NodeId id) {
    if (!resident[id])
      return;
    emit(Event::Kind::Free, id);
    resident[id] = 0;
    hash ^= plan.residentKey[id];
    live -= plan.allocated[id];
  }

  const ExecutorPlan &plan;
  const int64_t argumentBytes;
  const std::vector<Policy> *policy = nullptr;
  std::vector<char> resident, dropped, computed, clobbered;
  /// Per input edge: recomputations of the reader that the input is still
  /// held for.
  std::vector<int32_t> holdsLeft;
  std::vector<int32_t> remaining, remainingEarly;
  std::vector<NodeId> transient, offers;
  std::vector<char> offered;
  /// passes()' scratch: Nested values that leave after this step (all
  /// clear between steps), and the stamp of the step that computed each
  /// value.
  std::vector<char> passing;
  std::vector<uint32_t> computedInStep;
  uint32_t stepStamp = 0;
  std::vector<int64_t> held;
  /// The cache (see setCacheLimit): Transient values kept after the step
  /// that recomputed them, oldest first; entries freed since are skipped.
  std::vector<NodeId> cache;
  int64_t cacheLimit = kNoBudget;
  /// Bytes resident, tracked for the cache.
  int64_t live = 0;
  /// Per value, the computations waiting for it (it is one of their
  /// inputs, already made resident): the cache does not evict it.
  std::vector<int32_t> pinned;
  bool pinning = false;
  Schedule schedule, window;
  /// placeFrees' scratch: where in the current step each value was last
  /// touched (valid when its stamp is the step's).
  std::vector<std::pair<uint32_t, uint32_t>> touchedAt;
  uint32_t stamp = 0;
  std::vector<uint32_t> slots, count;
  /// remember()'s states (the first snapshotCount are current).
  std::vector<Snapshot> snapshots;
  size_t snapshotCount = 0, snapshotEvery = 1;
  int64_t rememberedBudget = 0;
  bool recording = false, keeping = false;
  /// The fingerprint of the state (see ExecutorPlan::residentKey), and of
  /// the reads and holds left (ExecutorPlan::readsKey).
  uint64_t hash = 0, counts = 0;
  /// The values evaluateChanged() or rememberChanged() was given.
  std::vector<NodeId> changedValues;
  /// What the last redoHolds() changed: each edge's holds, and `counts`.
  std::vector<std::pair<uint32_t, int32_t>> holdChanges;
  uint64_t countsChange = 0;
  /// The remembered run's record, and the one being recorded (from the
  /// step a run starts at).
  Record memory, segment;
  /// Whether evaluations may finish with the remembered run, and from
  /// which step the current one may (kNever: not).
  bool convergible = false;
  uint32_t convergeFrom = kNever;
  /// Where rememberChanged()'s run reached the remembered state.
  uint32_t splicedAt = 0;
  int64_t converged = 0;
  std::vector<uint32_t> edges;
};

} // namespace remat::detail

#endif // REMAT_LIB_REMAT_EXECUTOR_H
