//===- CostModel.cpp - The price of computing an op -----------------------===//

#include "remat/Analysis/CostModel.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::remat;

namespace {
/// Built-in targets. The CPU's rates are this project's 2-core machine as
/// bench/calibrate.py measured them (OpenBLAS sgemm for contractions, the
/// generated loops for the rest); the GPUs' are the chips' data-sheet
/// bandwidth and the contraction rate of Remat's own kernels (docs/GPU.md),
/// until a calibration run on the chip refines them.
const TargetDesc kTargets[] = {
    {"cpu", 106e9, 1.96e9, 56.6e9, 0.023e-6},
    {"sm_80", 10e12, 10e12, 1.5e12, 5e-6},
    {"sm_90", 18e12, 20e12, 3.0e12, 5e-6},
};
} // namespace

FailureOr<TargetDesc> CostModel::parseTarget(StringRef json, StringRef source,
                                             std::string &error) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value) {
    error = (source + ": not JSON: " + llvm::toString(value.takeError())).str();
    return failure();
  }
  const llvm::json::Object *o = value->getAsObject();
  if (!o) {
    error = (source + ": expected a JSON object").str();
    return failure();
  }
  TargetDesc t;
  if (std::optional<StringRef> name = o->getString("name"))
    t.name = name->str();
  struct Field {
    const char *key;
    double *into, scale;
  } fields[] = {{"contraction_gflops", &t.contractionFlops, 1e9},
                {"loop_gflops", &t.loopFlops, 1e9},
                {"bandwidth_gbs", &t.bandwidth, 1e9},
                {"op_overhead_us", &t.opOverhead, 1e-6}};
  for (const Field &f : fields) {
    std::optional<double> v = o->getNumber(f.key);
    // Rates from 1 MFLOP/s (MB/s) to 10^18, overheads up to a second: the
    // prices of every op stay finite.
    bool rate = f.scale >= 1;
    double low = rate ? 1e-3 : 0, high = rate ? 1e9 : 1e6;
    if (!v || !std::isfinite(*v) || *v < low || *v > high) {
      error = llvm::formatv("{0}: '{1}' must be a number from {2}", source,
                            f.key, rate ? "0.001 to 1e9" : "0 to 1e6")
                  .str();
      return failure();
    }
    *f.into = *v * f.scale;
  }
  return t;
}

FailureOr<CostModel> CostModel::get(StringRef kind, StringRef descPath,
                                    StringRef targetName, std::string &error) {
  if (kind == "flops") {
    if (!descPath.empty()) {
      error = "a target description needs --cost-model=roofline";
      return failure();
    }
    return CostModel();
  }
  if (kind != "roofline") {
    error =
        ("cost model must be 'flops' or 'roofline', got '" + kind + "'").str();
    return failure();
  }
  if (descPath.empty()) {
    for (const TargetDesc &t : kTargets)
      if (t.name == targetName)
        return CostModel(t);
    error = ("no built-in roofline for '" + targetName +
             "'; give one with --target-desc=FILE (bench/calibrate.py "
             "writes one)")
                .str();
    return failure();
  }
  auto file = llvm::MemoryBuffer::getFile(descPath, /*IsText=*/true);
  if (!file) {
    error = ("cannot read target description '" + descPath +
             "': " + file.getError().message())
                .str();
    return failure();
  }
  FailureOr<TargetDesc> t = parseTarget((*file)->getBuffer(), descPath, error);
  if (failed(t))
    return failure();
  return CostModel(*t);
}

double CostModel::price(Operation *op) const {
  auto cost = dyn_cast<train::CostOpInterface>(op);
  if (!cost)
    return -1;
  double flops = static_cast<double>(cost.getFlops());
  if (kind == Kind::Flops)
    return flops;
  double bytes = static_cast<double>(cost.getBytesRead()) +
                 static_cast<double>(cost.getBytesWritten());
  double rate =
      cost.isContraction() ? target.contractionFlops : target.loopFlops;
  double seconds =
      std::max(flops / rate, bytes / target.bandwidth) + target.opOverhead;
  return seconds * 1e9;
}

StringRef CostModel::name() const {
  return kind == Kind::Flops ? "flops" : "roofline";
}

StringRef CostModel::unit() const {
  return kind == Kind::Flops ? "FLOPs" : "ns";
}
