//===- CostModel.h - The price of computing an op ---------------*- C++ -*-===//
//
// What the remat pass minimizes: an op's FLOPs, or its roofline time on a
// target, max(FLOPs / rate, bytes moved / bandwidth) plus a per-op
// overhead, with contractions (library GEMM and convolution kernels) at
// their own rate; or the op's time measured by a profiled run (remat-run
// --profile), with the roofline for the ops the profile lacks. Targets come
// from a small JSON description (a calibration run writes one) or the
// built-in tables.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_ANALYSIS_COSTMODEL_H
#define REMAT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <map>
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

/// What identifies an op in a profile: its kind (`train.matmul`), its
/// location without the file name (`12:5`, or a NameLoc's name), and its
/// operand and result types (`f32[8,4], f32[4,16] -> f32[8,16]`).
struct OpKey {
  std::string op, loc, types;
};
OpKey getOpKey(Operation *op);

class CostModel {
public:
  enum class Kind { Flops, Roofline, Profile };

  /// FLOPs (the default).
  CostModel() = default;
  /// The roofline on `target`.
  explicit CostModel(TargetDesc target)
      : kind(Kind::Roofline), target(std::move(target)) {}

  /// The model named `kind` ("flops", "roofline" or "profile"); the
  /// roofline's target is read from `descPath` or, when empty, the built-in
  /// one for `targetName` ("cpu", or a CUDA chip such as "sm_90"). A
  /// `profilePath` (remat-run --profile's output, measured on `targetName`)
  /// makes it the profile model whatever `kind` says. Fails with a message.
  static FailureOr<CostModel> get(StringRef kind, StringRef descPath,
                                  StringRef targetName, StringRef profilePath,
                                  std::string &error);

  /// A target description from JSON text (keys: "name",
  /// "contraction_gflops", "loop_gflops", "bandwidth_gbs",
  /// "op_overhead_us"); `source` names it in messages.
  static FailureOr<TargetDesc> parseTarget(StringRef json, StringRef source,
                                           std::string &error);

  /// Makes this roofline the profile model: ops measured in the profile
  /// (JSON text, `source` in messages, taken on `targetName`) cost their
  /// median time.
  LogicalResult addProfile(StringRef json, StringRef source,
                           StringRef targetName, std::string &error);

  /// The price of one execution of `op`: FLOPs, or nanoseconds. Negative
  /// when the op has no cost model.
  double price(Operation *op) const;
  /// Whether the profile measured `op` (by location or, failing that, an op
  /// of the same kind and types elsewhere).
  bool isMeasured(Operation *op) const { return measured(op) >= 0; }

  Kind getKind() const { return kind; }
  const TargetDesc &getTarget() const { return target; }
  /// "flops", "roofline" or "profile".
  StringRef name() const;
  /// What prices are in: "FLOPs" or "ns".
  StringRef unit() const;

private:
  /// The profile's nanoseconds for `op`, or -1.
  double measured(Operation *op) const;

  Kind kind = Kind::Flops;
  TargetDesc target;
  /// Median nanoseconds per execution by op, location and types, and by op
  /// and types alone (averaged over locations).
  std::map<std::string, double> byLocation, byTypes;
};

} // namespace mlir::remat

#endif // REMAT_ANALYSIS_COSTMODEL_H
