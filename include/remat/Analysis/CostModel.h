//===- CostModel.h - The price of computing an op ---------------*- C++ -*-===//
//
// What the remat pass minimizes: an op's FLOPs, or its roofline time on a
// target, max(FLOPs / rate, bytes moved / bandwidth) plus a per-op
// overhead, with contractions (library GEMM and convolution kernels) at
// their own rate. Targets come from a small JSON description (a
// calibration run writes one) or the built-in tables.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_ANALYSIS_COSTMODEL_H
#define REMAT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::remat {

/// Sustained rates of one target.
struct TargetDesc {
  std::string name;
  /// FLOP/s of contractions and of everything else.
  double contractionFlops = 0, loopFlops = 0;
  /// Bytes/s between memory and the cores.
  double bandwidth = 0;
  /// Seconds each op costs however small (loop setup, kernel launch).
  double opOverhead = 0;
};

class CostModel {
public:
  enum class Kind { Flops, Roofline };

  /// FLOPs (the default).
  CostModel() = default;
  /// The roofline on `target`.
  explicit CostModel(TargetDesc target)
      : kind(Kind::Roofline), target(std::move(target)) {}

  /// The model named `kind` ("flops" or "roofline"); the roofline's target
  /// is read from `descPath` or, when empty, the built-in one for
  /// `targetName` ("cpu", or a CUDA chip such as "sm_90"). Fails with a
  /// message.
  static FailureOr<CostModel> get(StringRef kind, StringRef descPath,
                                  StringRef targetName, std::string &error);

  /// A target description from JSON text (keys: "name",
  /// "contraction_gflops", "loop_gflops", "bandwidth_gbs",
  /// "op_overhead_us"); `source` names it in messages.
  static FailureOr<TargetDesc> parseTarget(StringRef json, StringRef source,
                                           std::string &error);

  /// The price of one execution of `op`: FLOPs, or nanoseconds. Negative
  /// when the op has no cost model.
  double price(Operation *op) const;

  Kind getKind() const { return kind; }
  const TargetDesc &getTarget() const { return target; }
  /// "flops" or "roofline".
  StringRef name() const;
  /// What prices are in: "FLOPs" or "ns".
  StringRef unit() const;

private:
  Kind kind = Kind::Flops;
  TargetDesc target;
};

} // namespace mlir::remat

#endif // REMAT_ANALYSIS_COSTMODEL_H
