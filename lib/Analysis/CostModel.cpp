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

static void printLoc(Location loc, llvm::raw_ostream &os) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getLine() << ":" << file.getColumn();
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().getValue();
  } else if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    printLoc(call.getCallee(), os);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    llvm::interleave(
        fused.getLocations(), os, [&](Location l) { printLoc(l, os); }, ",");
  } else if (isa<UnknownLoc>(loc)) {
    os << "?";
  } else {
    os << loc;
  }
}

static void printType(Type type, llvm::raw_ostream &os) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    os << type;
    return;
  }
  os << tensor.getElementType() << "[";
  llvm::interleave(tensor.getShape(), os, ",");
  os << "]";
}

OpKey mlir::remat::getOpKey(Operation *op) {
  OpKey key;
  key.op = op->getName().getStringRef().str();
  // Without the file: a profile of model.mlir serves a copy of it.
  llvm::raw_string_ostream loc(key.loc);
  printLoc(op->getLoc(), loc);
  llvm::raw_string_ostream types(key.types);
  llvm::interleave(
      op->getOperandTypes(), types, [&](Type t) { printType(t, types); }, ", ");
  types << " -> ";
  llvm::interleave(
      op->getResultTypes(), types, [&](Type t) { printType(t, types); }, ", ");
  return key;
}

static std::string joinKey(StringRef a, StringRef b, StringRef c = "") {
  return (a + "\n" + b + "\n" + c).str();
}

LogicalResult CostModel::addProfile(StringRef json, StringRef source,
                                    StringRef targetName, std::string &error) {
  auto fail = [&](const Twine &message) {
    error = (source + ": " + message).str();
    return failure();
  };
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value)
    return fail("not JSON: " + llvm::toString(value.takeError()));
  const llvm::json::Object *o = value->getAsObject();
  if (!o || o->getString("format") != "remat-profile/1")
    return fail("not a profile (expected an object with \"format\": "
                "\"remat-profile/1\", as remat-run --profile writes)");
  std::optional<StringRef> measuredOn = o->getString("target");
  if (!measuredOn || *measuredOn != targetName)
    return fail("measured on '" + measuredOn.value_or("?") +
                "', but this step is priced for '" + targetName + "'");
  const llvm::json::Array *ops = o->getArray("ops");
  if (!ops)
    return fail("missing array 'ops'");
  // Per op and types, the calls and nanoseconds over every location.
  std::map<std::string, std::pair<double, double>> sums;
  for (auto [i, entry] : llvm::enumerate(*ops)) {
    const llvm::json::Object *e = entry.getAsObject();
    std::optional<StringRef> op, loc, types;
    std::optional<double> calls, ns;
    if (e) {
      op = e->getString("op");
      loc = e->getString("loc");
      types = e->getString("types");
      calls = e->getNumber("calls");
      ns = e->getNumber("ns");
    }
    if (!op || !loc || !types || !calls || !ns || !std::isfinite(*ns) ||
        *ns < 0 || !std::isfinite(*calls) || *calls <= 0)
      return fail(llvm::formatv("ops[{0}] needs strings 'op', 'loc', 'types', "
                                "a positive 'calls' and 'ns' of zero or more",
                                i));
    byLocation[joinKey(*op, *loc, *types)] = *ns;
    auto &[n, total] = sums[joinKey(*op, *types)];
    n += *calls;
    total += *calls * *ns;
  }
  for (auto &[k, sum] : sums)
    byTypes[k] = sum.second / sum.first;
  kind = Kind::Profile;
  return success();
}

double CostModel::measured(Operation *op) const {
  if (kind != Kind::Profile)
    return -1;
  OpKey key = getOpKey(op);
  auto it = byLocation.find(joinKey(key.op, key.loc, key.types));
  if (it != byLocation.end())
    return it->second;
  it = byTypes.find(joinKey(key.op, key.types));
  return it != byTypes.end() ? it->second : -1;
}

/// The text of `path`, or none with `error` naming it as `what`.
static std::optional<std::unique_ptr<llvm::MemoryBuffer>>
readFile(StringRef path, StringRef what, std::string &error) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = ("cannot read " + what + " '" + path +
             "': " + file.getError().message())
                .str();
    return std::nullopt;
  }
  return std::move(*file);
}

FailureOr<CostModel> CostModel::get(StringRef kind, StringRef descPath,
                                    StringRef targetName, StringRef profilePath,
                                    std::string &error) {
  if (kind != "flops" && kind != "roofline" && kind != "profile") {
    error = ("cost model must be 'flops', 'roofline' or 'profile', got '" +
             kind + "'")
                .str();
    return failure();
  }
  if (kind == "profile" && profilePath.empty()) {
    error = "the profile cost model needs a profile (--cost-profile=FILE, "
            "from remat-run --profile)";
    return failure();
  }
  if (!profilePath.empty()) {
    FailureOr<CostModel> model =
        get("roofline", descPath, targetName, "", error);
    if (failed(model))
      return failure();
    auto file = readFile(profilePath, "profile", error);
    if (!file || failed(model->addProfile((*file)->getBuffer(), profilePath,
                                          targetName, error)))
      return failure();
    return model;
  }
  if (kind == "flops") {
    if (!descPath.empty()) {
      error = "a target description needs --cost-model=roofline";
      return failure();
    }
    return CostModel();
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
  auto file = readFile(descPath, "target description", error);
  if (!file)
    return failure();
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
  if (double ns = measured(op); ns >= 0)
    return ns;
  double bytes = static_cast<double>(cost.getBytesRead()) +
                 static_cast<double>(cost.getBytesWritten());
  double rate =
      cost.isContraction() ? target.contractionFlops : target.loopFlops;
  double seconds =
      std::max(flops / rate, bytes / target.bandwidth) + target.opOverhead;
  return seconds * 1e9;
}

StringRef CostModel::name() const {
  switch (kind) {
  case Kind::Flops:
    return "flops";
  case Kind::Roofline:
    return "roofline";
  case Kind::Profile:
    return "profile";
  }
  llvm_unreachable("unknown cost model");
}

StringRef CostModel::unit() const {
  return kind == Kind::Flops ? "FLOPs" : "ns";
}
