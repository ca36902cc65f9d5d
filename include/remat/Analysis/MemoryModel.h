//===- MemoryModel.h - From train IR to the remat graph ---------*- C++ -*-===//
//
// The bridge between IR and the IR-free remat core: builds the graph of a
// straight-line training function, simulates it, and applies a schedule back
// to the IR. The pass, the memory report and remat-compile's manifest all go
// through here, so every figure comes from the same simulator.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_ANALYSIS_MEMORYMODEL_H
#define REMAT_ANALYSIS_MEMORYMODEL_H

#include "remat/Analysis/CostModel.h"
#include "remat/Remat/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::remat {

/// The graph of a function: node i stands for values[i], defined by ops[i]
/// (null for a block argument).
struct StepGraph {
  ::remat::Graph graph;
  SmallVector<Operation *> ops;
  SmallVector<Value> values;
  /// For each node, the node read by each operand of its op.
  SmallVector<SmallVector<::remat::NodeId, 4>> operandNodes;
  int64_t paramBytes = 0;
  /// Inputs and labels (and the learning rate and step count).
  int64_t dataBytes = 0;
  /// Optimizer state (momentum buffers, Adam's moments).
  int64_t stateBytes = 0;
};

/// Builds the graph of `func`, each op priced by `cost`, emitting a
/// diagnostic on what it cannot model (control flow, ops other than train
/// ops and constants, ...).
FailureOr<StepGraph> buildStepGraph(func::FuncOp func,
                                    const CostModel &cost = CostModel());

struct MemoryReport {
  int64_t peakBytes = 0;
  /// Arguments: parameters, inputs and labels, optimizer state.
  int64_t fixedBytes = 0, paramBytes = 0, dataBytes = 0, stateBytes = 0;
  double cost = 0;
  /// The op whose output allocation reaches the peak (null: the arguments).
  Operation *peakOp = nullptr;
  /// Values resident at the peak, largest first.
  SmallVector<std::pair<Value, int64_t>> liveAtPeak;
};

/// Simulates `func` as it is: block order, each value freed after its last
/// use; this is what the lowering allocates and frees.
FailureOr<MemoryReport> analyzeMemory(func::FuncOp func,
                                      const CostModel &cost = CostModel());

/// The block-order schedule that analyzeMemory simulates.
::remat::Schedule blockOrderSchedule(const ::remat::Graph &graph);

/// Rewrites the function to follow `schedule`: ops move into schedule order,
/// a recomputation becomes a clone marked `train.recompute`, and every use
/// reads the copy resident at that point. Returns the number of clones.
int64_t applySchedule(StepGraph &step, const ::remat::Schedule &schedule);

/// Parses a memory limit: bytes, KiB/MiB/GiB, KB/MB/GB, or a percentage of
/// `referencePeak`. Returns a message on failure.
FailureOr<int64_t> parseMemoryLimit(StringRef text, int64_t referencePeak,
                                    std::string &error);

/// "123456789 bytes (117.7 MiB)"; the MiB only from 1 MiB up.
std::string formatBytes(int64_t bytes);

} // namespace mlir::remat

#endif // REMAT_ANALYSIS_MEMORYMODEL_H
