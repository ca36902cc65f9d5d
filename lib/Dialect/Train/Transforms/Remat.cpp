//===- Remat.cpp - Rematerialization under a memory limit -----------------===//
//
// IR -> graph -> solver -> rewrite -> simulate the rewritten IR again. The
// second simulation, not the solver's own figure, is what gets reported and
// checked against the limit, so a rewrite bug cannot hide behind a good plan.
//
//===----------------------------------------------------------------------===//

#include "remat/Analysis/MemoryModel.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"
#include "remat/Remat/Solvers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::remat::train {
#define GEN_PASS_DEF_TRAINREMAT
#include "remat/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::remat::train

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::train;

static std::string formatPercent(double ratio) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f%%", 100.0 * ratio);
  return s;
}

/// FLOPs as an integer, time in milliseconds with the model's name.
static std::string formatCost(double cost, const CostModel &model) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (model.getKind() == CostModel::Kind::Flops)
    os << static_cast<int64_t>(cost) << " FLOPs";
  else
    os << llvm::format("%.3f", cost * 1e-6) << " ms by the "
       << (model.getKind() == CostModel::Kind::Profile ? "profile" : "roofline")
       << " on '" << model.getTarget().name << "'";
  return s;
}

namespace {
struct TrainRematPass : public train::impl::TrainRematBase<TrainRematPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }
  LogicalResult run(func::FuncOp func);
};
} // namespace

LogicalResult TrainRematPass::run(func::FuncOp func) {
  if (func.isExternal())
    return success();
  if (memoryLimit.empty())
    return func.emitError("train-remat needs a memory limit "
                          "(memory-limit=<bytes|KiB|MiB|GiB|percent>)");
  if (!::remat::isSolver(solver))
    return func.emitError("unknown solver '")
           << solver << "'; expected one of: "
           << llvm::join(::remat::solverNames(), ", ");
  if (!(timeLimit > 0))
    return func.emitError("time-limit must be a positive number of seconds, "
                          "got ")
           << timeLimit;
  if (!(searchSeconds >= 0) || !std::isfinite(searchSeconds))
    return func.emitError("search-seconds must be a number of seconds, zero "
                          "or more, got ")
           << searchSeconds;

  std::string error;
  FailureOr<CostModel> cost =
      CostModel::get(costModel, targetDesc, target, costProfile, error);
  if (failed(cost))
    return func.emitError(error);
  FailureOr<StepGraph> step = buildStepGraph(func, *cost);
  if (failed(step))
    return failure();
  ::remat::SimResult before =
      ::remat::simulate(step->graph, blockOrderSchedule(step->graph));
  if (!before.valid)
    return func.emitError("the function cannot run as written: ")
           << before.error;

  FailureOr<int64_t> budget =
      parseMemoryLimit(memoryLimit, before.peakBytes, error);
  if (failed(budget))
    return func.emitError(error);

  ::remat::SolverOptions options;
  options.timeLimitSeconds = timeLimit;
  options.searchSeconds = searchSeconds;
  ::remat::SolveResult result =
      ::remat::solve(solver, step->graph, *budget, options);
  int64_t fixed = step->graph.argumentBytes();
  if (!result.feasible)
    return func.emitError("memory limit of ")
           << formatBytes(*budget) << " cannot be met: the smallest peak the '"
           << solver << "' solver reaches is " << formatBytes(result.peakBytes)
           << " (fixed part " << formatBytes(fixed)
           << (step->stateBytes ? ": parameters, optimizer state, inputs and "
                                  "labels"
                                : ": parameters, inputs and labels")
           << "); no schedule peaks below "
           << formatBytes(step->graph.peakLowerBound())
           << " (the fixed part plus the op that needs most, with its "
              "operands)";

  int64_t clones = applySchedule(*step, result.schedule);
  FailureOr<MemoryReport> after = analyzeMemory(func, *cost);
  if (failed(after))
    return failure();
  if (after->peakBytes > *budget || after->peakBytes != result.peakBytes)
    return func.emitError("internal error: the rewritten function peaks at ")
           << formatBytes(after->peakBytes) << ", the solver's schedule at "
           << formatBytes(result.peakBytes);

  double extra = after->cost - before.cost;
  InFlightDiagnostic remark = func.emitRemark();
  remark << "train-remat: solver '" << solver << "'";
  // A timed search's answer depends on the machine: say it had one.
  if (solver == "auto" && searchSeconds > 0) {
    std::string seconds;
    llvm::raw_string_ostream(seconds)
        << llvm::format("%g", static_cast<double>(searchSeconds));
    remark << " (" << seconds << " s of extra search)";
  }
  remark << ", limit " << *budget << " bytes: peak " << after->peakBytes
         << " bytes (was " << before.peakBytes << "), fixed " << fixed
         << " bytes (parameters " << step->paramBytes << ", inputs and labels "
         << step->dataBytes;
  if (step->stateBytes)
    remark << ", optimizer state " << step->stateBytes;
  remark << "); extra compute " << formatCost(extra, *cost) << " (+"
         << formatPercent(extra / std::max(before.cost, 1.0)) << "), " << clones
         << " ops recomputed";
  if (cost->getKind() == CostModel::Kind::Profile) {
    int64_t ops = 0, measured = 0;
    func.walk([&](CostOpInterface op) {
      ++ops;
      measured += cost->isMeasured(op);
    });
    if (measured == ops)
      remark << " (the profile measured all " << ops << " ops)";
    else
      remark << " (the profile measured " << measured << " of " << ops
             << " ops; the roofline priced the rest)";
  }
  // How far from the best possible the answer can be, in milliseconds.
  double least =
      step->graph.costLowerBound(*budget) - step->graph.baselineCost();
  if (std::isfinite(least) && least > 0)
    remark << "; "
           << (::remat::meetsLowerBound(after->cost, before.cost + least)
                   ? "optimal: "
                   : "")
           << "no schedule within the limit recomputes less than "
           << formatCost(least, *cost) << " (+"
           << formatPercent(least / std::max(before.cost, 1.0)) << ")";
  return success();
}
