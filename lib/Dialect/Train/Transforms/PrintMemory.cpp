//===- PrintMemory.cpp - Peak memory report as remarks --------------------===//
//
// The analysis behind train-remat, exposed to users and to lit: where the
// peak is and what is live there.
//
//===----------------------------------------------------------------------===//

#include "remat/Analysis/MemoryModel.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"

namespace mlir::remat::train {
#define GEN_PASS_DEF_TRAINPRINTMEMORY
#include "remat/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::remat::train

using namespace mlir;
using namespace mlir::remat;

namespace {
struct TrainPrintMemoryPass
    : public train::impl::TrainPrintMemoryBase<TrainPrintMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    FailureOr<MemoryReport> report = analyzeMemory(func);
    if (failed(report))
      return signalPassFailure();
    InFlightDiagnostic remark = func.emitRemark();
    remark << "peak " << report->peakBytes << " bytes, fixed "
           << report->fixedBytes << " bytes (parameters " << report->paramBytes
           << ", inputs and labels " << report->dataBytes;
    if (report->stateBytes)
      remark << ", optimizer state " << report->stateBytes;
    remark << "), compute " << static_cast<int64_t>(report->cost) << " FLOPs";
    if (report->peakOp)
      report->peakOp->emitRemark("peak reached here");
    for (auto [value, bytes] : ArrayRef(report->liveAtPeak).take_front(top)) {
      if (auto arg = dyn_cast<BlockArgument>(value))
        func.emitRemark() << "live at peak: argument " << arg.getArgNumber()
                          << ", " << bytes << " bytes";
      else
        value.getDefiningOp()->emitRemark()
            << "live at peak: " << bytes << " bytes";
    }
  }
};
} // namespace
