//===- SolverParts.h - What the solver files share --------------*- C++ -*-===//
//
// The pieces greedy, the local searches and auto build on: greedy's run and
// its pressure bound, the searches' entry points, and auto's tuning (every
// constant a solver's work or choice depends on, with the measurement that
// set it).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_REMAT_SOLVERPARTS_H
#define REMAT_LIB_REMAT_SOLVERPARTS_H

#include "Executor.h"
#include "Internal.h"

#include <array>
#include <chrono>

namespace remat::detail {

//===----------------------------------------------------------------------===//
// Greedy
//===----------------------------------------------------------------------===//

/// Where a schedule is over the budget, and which values are resident there:
/// an optimistic bound on what dropping a value can save, cheap enough to
/// ask of every candidate at every greedy step. Dropping a value lowers
/// memory by at most its size at the over-budget computes it is resident
/// across, and by at most their excess.
class PressureMap {
public:
  /// Maps `schedule` at `budget`, reusing the buffers of the last map: a
  /// greedy run maps its schedule again after every move it takes, and a
  /// pinning search makes hundreds of runs (a tenth of ResNet50's solve
  /// went to allocating and filling fresh maps). Node sizes come from the
  /// executor's `plan`, in flat arrays.
  void assign(const ExecutorPlan &plan, const Schedule &schedule,
              int64_t budget) {
    size_t n = schedule.size(), nodes = plan.graph.size();
    // What residentBytes() reports, the excess over the budget at each
    // compute, and how many of each value's residence spans end in a free.
    live.resize(n);
    overSum.resize(n + 1);
    overCount.resize(n + 1);
    overSum[0] = 0;
    overCount[0] = 0;
    first.assign(nodes + 1, 0);
    int64_t now = plan.graph.argumentBytes();
    for (size_t i = 0; i < n; ++i) {
      const Event &e = schedule[i];
      bool compute = e.kind == Event::Kind::Compute;
      now += compute ? plan.allocated[e.node] : -plan.allocated[e.node];
      live[i] = now + (compute ? plan.workspace[e.node] : 0);
      bool over = compute && live[i] > budget;
      overSum[i + 1] =
          overSum[i] + (over ? static_cast<double>(live[i] - budget) : 0.0);
      overCount[i + 1] = overCount[i] + over;
      if (!compute)
        ++first[e.node + 1];
    }
    // Residence spans [compute, free) of each value, grouped by value in
    // the order of their frees. Values never freed (outputs) are never
    // candidates and have none.
    for (size_t k = 1; k < first.size(); ++k)
      first[k] += first[k - 1];
    spans.resize(first.back());
    fill.assign(first.begin(), first.end() - 1);
    open.assign(nodes, 0);
    for (size_t i = 0; i < n; ++i) {
      const Event &e = schedule[i];
      if (e.kind == Event::Kind::Compute)
        open[e.node] = static_cast<uint32_t>(i);
      else
        spans[fill[e.node]++] = {open[e.node], static_cast<uint32_t>(i)};
    }
  }

  /// Upper bound on the excess that removing `id` (of `bytes`) saves.
  double gainBound(NodeId id, int64_t bytes) const {
    double bound = 0;
    for (uint32_t k = first[id]; k < first[id + 1]; ++k) {
      auto [lo, hi] = spans[k];
      double sum = overSum[hi] - overSum[lo];
      double capped =
          static_cast<double>(bytes) * (overCount[hi] - overCount[lo]);
      bound += std::min(sum, capped);
    }
    return bound;
  }

  /// Whether the memory in use at the events where `id` is not resident
  /// between its `from`-th residence span and its last stays within
  /// `room`: holding it there instead (one computation fewer per gap) must
  /// fit on top of it. Stops at the first event over (most undos that
  /// cannot fit are found within a few events).
  bool fitsBetweenSpans(NodeId id, uint32_t from, int64_t room) const {
    if (room < 0)
      return false;
    for (uint32_t k = first[id] + from; k + 1 < first[id + 1]; ++k)
      for (uint32_t i = spans[k].second; i < spans[k + 1].first; ++i)
        if (live[i] > room)
          return false;
    return true;
  }

private:
  std::vector<int64_t> live;
  std::vector<double> overSum;
  std::vector<int32_t> overCount;
  std::vector<uint32_t> first;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  std::vector<uint32_t> open, fill; // scratch
};

/// The most simulated computations one greedy run spends per graph node
/// before it stops where it is: far more than runs that meet their budget
/// on the field's graphs need, far less than a run at a budget it cannot
/// meet would take on graphs that recompute values over and over.
constexpr int64_t kGreedyWorkPerNode = 10000;

/// How greedy keys every move when it (re)fills its heap: with the pressure
/// bound (one pass over the schedule per step, what scales to 10,000 nodes)
/// or with an exact simulation of each move (quadratic, but it reaches
/// tighter budgets on some graphs). Neither dominates the other.
enum class GreedyScoring { Bound, Exact };

/// Where a greedy run starts and what it reports beyond its answer.
struct GreedyFrom {
  /// The policies it starts from; all kept when null.
  const std::vector<Policy> *start = nullptr;
  /// Values whose policies it keeps (the one a pinning search keeps or
  /// drops, the two a shift moves, the four of two shifts), -1 padded.
  std::array<NodeId, 4> fixed = {-1, -1, -1, -1};
  bool isFixed(NodeId c) const {
    return std::find(fixed.begin(), fixed.end(), c) != fixed.end();
  }
  void hold(std::initializer_list<NodeId> values) {
    assert(values.size() <= fixed.size());
    fixed.fill(-1);
    std::copy(values.begin(), values.end(), fixed.begin());
  }
  /// Out: the policies of its answer, and the computations it simulated.
  std::vector<Policy> *policy = nullptr;
  int64_t *work = nullptr;
  /// Schedules without the cache of recomputed values.
  bool uncached = false;
  /// Passes of undos, each trying every moved value once, until one
  /// restores nothing: from the floor, a value kept spares the rebuilds of
  /// what it feeds, which can make room for another that did not fit.
  int undoPasses = 1;
  /// A cost at which the run gives up (a pinning search's answer so far):
  /// a move that reaches it ends the run, undos and all.
  double ceiling = std::numeric_limits<double>::infinity();
  /// Only an answer cheaper than this is wanted: a run that ends at or
  /// above it answers infeasible without a schedule (not scheduling and
  /// simulating what is thrown away was a tenth of a pinning search).
  double mustBeat = std::numeric_limits<double>::infinity();
  /// The executor to run on (one of the graph's), reused from run to run;
  /// one of its own when null.
  PolicyExecutor *executor = nullptr;
  /// The pressure map's buffers, reused from run to run (the graph's); its
  /// own when null.
  PressureMap *pressure = nullptr;
};

/// Greedy's runs at one budget, each answer judged against that budget.
struct GreedyRuns {
  std::vector<SolveResult> answers;
  /// The policies of each answer.
  std::vector<std::vector<Policy>> policies;
  /// Some answer fits the budget.
  bool fits = false;
  /// The run at the budget got stuck, so the retries were made.
  bool retried = false;
  /// Among the retries, greedy with exact scoring at the budget (graphs up
  /// to kExactGreedyNodes), and whether it met it.
  bool exactRan = false, exactMet = false;
};

/// An answer and the policies behind it: what a sweep carries from one
/// budget to the next, and where a pinning search starts.
struct Carried {
  SolveResult answer;
  std::vector<Policy> policy;
};

//===----------------------------------------------------------------------===//
// Tuning
//===----------------------------------------------------------------------===//

/// Graphs up to this size also get greedy with exact scoring; its cost
/// grows with the square of the graph.
constexpr size_t kExactGreedyNodes = 1000;

/// Graphs over this size get a fixed number of greedy runs: one takes
/// seconds there (4 s on 10,001 nodes near their smallest budgets, three
/// times what it takes at half the peak), so greedy does not retry at
/// smaller budgets, nor auto at the fractions below it, and on training
/// graphs the floor stands in for the ladder (a dozen runs: a refusal took
/// 45 s on 10,001 nodes). On the bench's 10,001-node graph the retries
/// changed no answer from 0.03 to 0.5 of its peak and took auto to 13 s.
constexpr size_t kManyRunsNodes = 1000;

/// The work (simulated computations, per graph node) of auto's pinning
/// search from its best answer: on ResNet50 at its smallest budgets about
/// 20 pins, 26 ms; on graphs up to kSmallGraphNodes, where pins are cheap,
/// enough to end where a whole cycle of pins finds nothing cheaper. Graphs
/// over kExactGreedyNodes get what one of that size gets: a pin costs a
/// greedy run, which grows with the graph (at 10,001 nodes the per-node
/// work took 4 s).
constexpr int64_t kPinningWorkPerNode = 3000;
constexpr int64_t kSmallGraphPinningWork = 30000;

/// The share of the pinning search's work its unpinning may spend (see
/// improveByPinning); the pins get the rest. Half: on ResNet50's 32 sweep
/// budgets, 0.7 was dearer at two (0.113 and 0.171 of its peak), cheaper
/// at none.
constexpr double kUnpinShare = 0.5;

/// The share of the pinning search's work its group promotions may spend
/// first (PinningSearch::promote): of kPinningWorkPerNode per node, also on
/// small graphs, whose own bound is ten times that.
constexpr double kPromoteShare = 0.15;

/// After the pinning search, windows of this many consecutive movable
/// values move one step toward Keep at once (PinningSearch::promoteWindows),
/// with up to kWindowShare of kPinningWorkPerNode per node more. Measured
/// on the sweep's budgets (single calls, side by side): windows of 16 with a
/// tenth of the work lowered ResNet50 at 4 budgets (0.171 of its peak: 1.0870x
/// -> 1.0856x), MobileNet, resnet, n500 and n1000 at 1, 1, 5 and 9, and raised
/// none (a result is only taken if cheaper); 0.05 of the work lowered 3 of
/// ResNet50's and none of MobileNet's, 0.15 no more than 0.1; windows of 16 and
/// 8 with 0.3, 7 of ResNet50's, its median solve about 20% slower. Before the
/// unpinning search instead, with the same total work, ResNet50 at 0.113 fell
/// to 1.2011x but gpt and unet rose at one budget each.
constexpr size_t kWindowValues = 16;
constexpr double kWindowShare = 0.1;

/// The work of the boundary shifts after the window promotions
/// (PinningSearch::shift), as a share of kPinningWorkPerNode per node (of a
/// graph of at most kExactGreedyNodes). Over the sweep's budgets, the
/// passes reach it at one of ResNet50's and end before a third of it on
/// gpt, unet, resnet and the MLP.
constexpr double kShiftShare = 0.3;

/// In training graphs a pin's greedy run gives up once its drops cost this
/// share of the answer's extra compute more than the answer: its undos
/// rarely take back that much (on ResNet50 at 0.113 of its peak, at most
/// 4% of the extra compute, mostly nothing), and a failing pin's drops
/// were most of the search's work: at 0.113, 0.142 and 0.199 of ResNet50's
/// peak 48, 53 and 91 pins fit where 21, 29 and 75 did (before the group
/// promotions, which now take some of the work: 48, 52 and 51). 0 made the
/// graphs
/// whose searches end before their work bound (MobileNet, resnet, gpt)
/// dearer at 7 sweep budgets (resnet at 0.471: 1.0370x -> 1.0452x) and
/// ResNet50 at one; 0.02 made random training graphs
/// dearer more often than cheaper; 0.1 lost ResNet50's gains. Without a
/// backward pass the undos (Release, Late) matter more: Moccasin's graphs were
/// dearer at a third of the budgets changed.
constexpr double kPinGiveUpMargin = 0.05;

/// Graphs up to this size, where a greedy run costs a millisecond or two,
/// get more of them: greedy consults its ladder wherever its run gets
/// stuck, even when a retry fits (the ladder's states are sometimes
/// cheaper), and auto consults greedy's ladder at every budget, greedy's
/// ladder with exact scoring wherever that run fails, and runs at more
/// budgets below the one asked for.
constexpr size_t kSmallGraphNodes = 256;

/// Where greedy's run gets stuck, it runs again at these fractions of the
/// budget before it turns to its ladder: its path depends on the budget,
/// and a slightly smaller one often gets through (or ends in a state that
/// fits the budget asked for) for the price of one run, where the ladder
/// takes a dozen.
constexpr double kGreedyRetryFractions[] = {0.98, 0.96};

/// Undo passes from the floor: ResNet50 at 4.110 GB 1.2820x with one,
/// 1.2703x with three (3.3% more instructions for the solve), the same
/// with six.
constexpr int kFloorUndoPasses = 8;

/// The annealing search runs in cycles of a fixed number of evaluations,
/// each from the cheapest answer so far, its temperature falling linearly
/// from a start to 0; the starts go 2%, 1%, 0.5% and 0.25% of the starting
/// answer's extra compute and then again, so that the search tries several
/// scales. A cycle does not depend on the time granted, so more time only
/// adds cycles: on one machine a longer search never ends dearer (cycles
/// whose length follows the time granted make Moccasin's n500 at 0.701 of
/// its peak 1.22x in 1 s and 1.45x in 5 s).
/// 20,000 evaluations take about 0.4 s on ResNet50, 0.3 s on n500,
/// 1 s on n1000. The scales
/// were tried in runs of a second, three each, at six hard budgets
/// (ResNet50, gpt, unet, Moccasin's n500 and n1000), against 0.5% or 1%
/// at every cycle's start and halvings from 4%: no setting wins
/// everywhere, and the spread between runs of one setting is as large as
/// the differences.
constexpr double kAnnealTemperature = 0.02;
constexpr int64_t kAnnealScales = 4;
constexpr int64_t kAnnealCycleEvaluations = 20000;

/// Without a backward pass, auto's default search ends with annealing
/// where its answer's extra compute passes kDefaultAnnealExtra of the
/// compute without remat: up to kDefaultAnnealCycles cycles, the next only
/// where the last lowered the extra compute by kDefaultAnnealMinGain of it
/// or more. There greedy's path drops early values whose recomputation
/// drags long chains back in, and no pin or window undoes that alone; the
/// annealing keeps the early values and drops later ones (Moccasin's n500
/// at 0.721 of its peak: 1.502x -> 1.168x in the first cycle, its solve
/// 0.97 s -> 1.42 s). Single calls:
/// the gains are at Moccasin's n500 and n1000 near their smallest budgets,
/// where later cycles, colder, keep finding cheaper answers (n1000 at
/// 0.665: one cycle 3.261x, three 2.382x, five 2.268x; its solve 6.3, 9.8
/// and 13.3 s); their larger budgets (overheads under 1.1x) and n100 and
/// n250 gained nothing from a cycle, nor from five seconds. On training
/// graphs the pinning search and the cache come within 5% of what five
/// seconds of annealing find (bench/results/search.md), and a cycle would
/// take ResNet50's solve past 100 ms.
constexpr double kDefaultAnnealExtra = 0.1;
constexpr int64_t kDefaultAnnealCycles = 3;
constexpr double kDefaultAnnealMinGain = 0.01;

/// auto's knobs for one graph (forGraph): which of its stages apply by the
/// graph's kind and size, and the work each may take.
struct AutoTuning {
  /// The graph marks a backward pass.
  bool training = false;
  /// At most kSmallGraphNodes nodes: more greedy runs (the ladders, runs
  /// at more budgets below the one asked for, the run without the cache)
  /// and more starts for the pinning search.
  bool small = false;
  /// At most kExactGreedyNodes nodes: greedy with exact scoring and its
  /// ladder, and on training graphs swaps after the pinning search.
  bool exactGreedy = false;
  /// Fractions of the budget greedy's runs also aim at where greedy's own
  /// answer did not retry (graphs of at most kManyRunsNodes nodes): its
  /// path depends on the budget, so a slightly smaller one can lead to a
  /// cheaper answer that also fits this one; this removes most of the
  /// cases where a larger budget cost more.
  std::vector<double> retryFractions;
  /// Fractions tried whether or not greedy retried (small graphs look
  /// further down).
  std::vector<double> deeperRetryFractions;
  /// Evaluations of the swaps from each of greedy's answers.
  int swapEvaluations = 150;
  /// Evaluations of the long search from the best answer (one costs a
  /// simulation of the schedule: about 25 microseconds on ResNet50).
  int finalSwapEvaluations = 1000;
  /// Where greedy's runs fit a training graph with exactGreedy, the long
  /// search before the pinning search stops after this many evaluations
  /// and the swaps after it get finalSwapEvaluations more: a start
  /// polished by a thousand swaps leads the pinning search to a dearer
  /// local optimum at some budgets (ResNet50 at 0.166 of its peak:
  /// 1.0968x, where 300 before and 1,300 after reach 1.0913x).
  int swapsBeforePinning = 300;
  /// Evaluations of the swaps after the pinning search. On the sweep's
  /// budgets 300 lowered gpt at 0.275 and 0.298 of its peak and ResNet50
  /// at 0.108, 0.137 and 0.194 (2.4% to 3.1% more instructions at
  /// ResNet50's slowest budgets); 1,000 lowered ResNet50 at 0.166 too,
  /// for 5% to 7%.
  int postPinningSwapEvaluations = 300;
  /// On small graphs the pinning search also starts from this many more
  /// of auto's answers, the cheapest distinct ones.
  size_t morePinningStarts = 0;
  /// The greedy run from the cost bound's cover runs only where that
  /// start peaks at most this many times the budget (on the sweep's
  /// budgets it led somewhere cheaper only where the start peaked under
  /// 1.95 times).
  int64_t coverStartPeak = 2;
  /// Annealing ends the default search (graphs without a backward pass,
  /// see kDefaultAnnealExtra).
  bool annealByDefault = false;

  static AutoTuning forGraph(const Graph &graph);
};

//===----------------------------------------------------------------------===//
// Entry points between the solver files
//===----------------------------------------------------------------------===//

/// The order every solver picks by: feasible beats infeasible; among
/// feasible answers the cheaper wins, among infeasible the lower peak.
bool isBetter(const SolveResult &a, const SolveResult &b);

SolveResult solveChenSqrt(const Graph &graph, int64_t budget,
                          const SolverOptions &);
SolveResult solveEveryLayer(const Graph &graph, int64_t budget,
                            const SolverOptions &);
SolveResult solveChenGreedy(const Graph &graph, int64_t budget,
                            const SolverOptions &);
SolveResult solveGreedy(const Graph &graph, int64_t budget,
                        const SolverOptions &);
SolveResult solveAuto(const Graph &graph, int64_t budget,
                      const SolverOptions &options);
SolveResult solveAutoCarrying(const Graph &graph, int64_t budget,
                              const SolverOptions &options, Carried *carried);

/// The checkpoint candidates that are cut vertices of the forward pass.
std::vector<NodeId> articulationCandidates(const Graph &graph);

SolveResult greedyRun(const Graph &graph, int64_t budget,
                      std::vector<std::vector<Policy>> *trajectory,
                      GreedyScoring scoring = GreedyScoring::Bound,
                      const GreedyFrom &from = {});
GreedyRuns greedyRuns(const Graph &graph, int64_t budget);
SolveResult greedyAnswer(const Graph &graph, int64_t target, int64_t budget,
                         GreedyScoring scoring,
                         std::vector<Policy> *policy = nullptr,
                         bool uncached = false);
SolveResult fromLadder(const Graph &graph, int64_t budget,
                       GreedyScoring scoring,
                       std::vector<Policy> *policy = nullptr);
std::vector<Policy> floorPolicies(const Graph &graph);
bool floorForLadder(const Graph &graph);
SolveResult floorAnswer(const Graph &graph, int64_t budget,
                        std::vector<Policy> *policy = nullptr);
int64_t scaledBudget(int64_t budget, double fraction);

SolveResult improveBySwaps(const Graph &graph, int64_t budget,
                           std::vector<Policy> &policy, int maxEvaluations);
SolveResult improveByPinning(const Graph &graph, int64_t budget,
                             std::vector<Policy> &policy, SolveResult answer,
                             int64_t maxWork, double unpinShare = kUnpinShare);
SolveResult improveByAnnealing(const Graph &graph, int64_t budget,
                               std::vector<Policy> &policy, SolveResult answer,
                               std::chrono::steady_clock::time_point deadline,
                               int64_t maxEvaluations, double floor = 0,
                               double minCycleGain = 0);
SolveResult improveByRestarts(const Graph &graph, int64_t budget,
                              std::vector<Policy> &policy, SolveResult answer,
                              std::chrono::steady_clock::time_point deadline,
                              int64_t maxRestarts);
SolveResult localSearch(const Graph &graph, int64_t budget,
                        std::vector<Policy> &policy, SolveResult answer);

} // namespace remat::detail

#endif // REMAT_LIB_REMAT_SOLVERPARTS_H
