//===- MemoryModel.cpp - From train IR to the remat graph -----------------===//
//
// The model is the lowering's contract: every train op allocates exactly its
// result (an in-place update of a donated parameter allocates nothing),
// constants live in globals, arguments are resident for the whole step, and a
// value is freed right after its last use in block order.
//
//===----------------------------------------------------------------------===//

#include "remat/Analysis/MemoryModel.h"

#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Remat/Solvers.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::remat;
using ::remat::Event;
using ::remat::Graph;
using ::remat::Node;
using ::remat::NodeId;
using ::remat::Schedule;

std::string mlir::remat::formatBytes(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << bytes << " bytes";
  if (bytes >= 1024 * 1024)
    os << " ("
       << llvm::format("%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0))
       << " MiB)";
  return s;
}

FailureOr<int64_t> mlir::remat::parseMemoryLimit(StringRef text,
                                                 int64_t referencePeak,
                                                 std::string &error) {
  StringRef t = text.trim();
  auto malformed = [&]() -> FailureOr<int64_t> {
    error = "malformed memory limit '" + text.str() +
            "': expected bytes, a size with KiB/MiB/GiB or KB/MB/GB, or a "
            "percentage of the no-remat peak such as 50%";
    return failure();
  };
  size_t numberEnd = 0;
  while (numberEnd < t.size() &&
         (llvm::isDigit(t[numberEnd]) || t[numberEnd] == '.'))
    ++numberEnd;
  StringRef number = t.take_front(numberEnd);
  StringRef unit = t.drop_front(numberEnd).trim();
  double value;
  if (number.empty() || number.getAsDouble(value) || !std::isfinite(value))
    return malformed();
  double scale;
  if (unit.empty() || unit.equals_insensitive("b"))
    scale = 1;
  else if (unit.equals_insensitive("kib"))
    scale = 1024.0;
  else if (unit.equals_insensitive("mib"))
    scale = 1024.0 * 1024;
  else if (unit.equals_insensitive("gib"))
    scale = 1024.0 * 1024 * 1024;
  else if (unit.equals_insensitive("kb"))
    scale = 1e3;
  else if (unit.equals_insensitive("mb"))
    scale = 1e6;
  else if (unit.equals_insensitive("gb"))
    scale = 1e9;
  else if (unit == "%")
    scale = static_cast<double>(referencePeak) / 100.0;
  else
    return malformed();
  double bytes = std::floor(value * scale);
  if (bytes < 1) {
    error = "memory limit '" + text.str() + "' must be at least one byte";
    return failure();
  }
  if (bytes > 9.0e18)
    return malformed();
  return static_cast<int64_t>(bytes);
}

/// The first name in `loc` (exporters name ops after the model's modules).
static std::string sourceOf(Location loc) {
  std::string source;
  loc->walk([&](Location l) {
    if (auto name = dyn_cast<NameLoc>(l)) {
      source = name.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return source;
}

static std::string argumentName(func::FuncOp func, unsigned index) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          index, train::TrainDialect::kNameAttr))
    return name.str();
  return "arg" + std::to_string(index);
}

FailureOr<StepGraph> mlir::remat::buildStepGraph(func::FuncOp func,
                                                 const CostModel &model) {
  if (func.isExternal())
    return func.emitError("expects a function with a body");
  if (!func.getBody().hasOneBlock())
    return func.emitError("expects straight-line code: a single block");
  Block &block = func.getBody().front();
  StepGraph step;
  llvm::DenseMap<Value, NodeId> nodeOf;
  auto addValue = [&](Node node, Value value, Operation *op) {
    NodeId id = step.graph.addNode(std::move(node));
    step.values.push_back(value);
    step.ops.push_back(op);
    step.operandNodes.emplace_back();
    nodeOf[value] = id;
    return id;
  };

  for (BlockArgument arg : block.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitError("argument ")
             << arg.getArgNumber() << " must be a statically shaped tensor";
    Node node;
    node.name = argumentName(func, arg.getArgNumber());
    node.bytes = train::getTensorBytes(type);
    node.argument = true;
    node.recomputable = false;
    std::optional<train::Role> role =
        train::getArgRole(func, arg.getArgNumber());
    (role == train::Role::param   ? step.paramBytes
     : role == train::Role::state ? step.stateBytes
                                  : step.dataBytes) += node.bytes;
    addValue(std::move(node), arg, nullptr);
  }

  // Everything the loss depends on is forward; the rest (backward pass and
  // update) is what a recomputation may precede.
  llvm::SetVector<Operation *> forward;
  Operation *terminator = block.getTerminator();
  bool hasLoss = false;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (train::getResultRole(func, i) != train::Role::loss)
      continue;
    hasLoss = true;
    SmallVector<Value> worklist = {terminator->getOperand(i)};
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (def && forward.insert(def))
        llvm::append_range(worklist, def->getOperands());
    }
  }

  for (Operation &op : block.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitError("expects straight-line code: ops with regions are "
                          "not supported in a training function");
    if (op.getNumResults() != 1)
      return op.emitError("expects ops with one result in a training "
                          "function");
    Node node;
    node.name = op.getName().getStringRef().str();
    node.source = sourceOf(op.getLoc());
    if (op.hasTrait<OpTrait::ConstantLike>()) {
      // Constants become globals: no allocation, always available.
      node.argument = true;
      node.recomputable = false;
      addValue(std::move(node), op.getResult(0), &op);
      continue;
    }
    auto cost = dyn_cast<train::CostOpInterface>(op);
    if (!cost)
      return op.emitError("'")
             << op.getName()
             << "' is not supported in a training function: it has no cost "
                "model (CostOpInterface)";
    int64_t flops = cost.getFlops();
    if (flops < 0 || flops == std::numeric_limits<int64_t>::max())
      return op.emitOpError("has a FLOP count past what 64 bits hold");
    node.cost = model.price(&op);
    node.bytes = train::getTensorBytes(op.getResult(0).getType());
    node.workspace = cost.getWorkspaceBytes();
    node.backward = hasLoss && !forward.contains(&op);
    // Ops the user marks (side effects, nondeterminism, cost the model does
    // not see) are computed once; the solvers keep or pay for their results.
    node.recomputable = !op.hasAttr(train::TrainDialect::kNoRecomputeAttr);
    SmallVector<NodeId, 4> operands;
    for (Value v : op.getOperands())
      operands.push_back(nodeOf.lookup(v));
    if (std::optional<unsigned> inPlace = cost.getInPlaceOperand()) {
      Value target = op.getOperand(*inPlace);
      if (isa<BlockArgument>(target))
        node.overwrites = nodeOf.lookup(target);
    }
    NodeId id = addValue(std::move(node), op.getResult(0), &op);
    for (NodeId d : operands)
      step.graph.addEdge(d, id);
    step.operandNodes[id] = std::move(operands);
  }
  for (Value v : terminator->getOperands())
    step.graph.node(nodeOf.lookup(v)).output = true;
  if (std::string why = step.graph.verify(); !why.empty())
    return func.emitError("the step's memory model is invalid: ") << why;
  return step;
}

Schedule mlir::remat::blockOrderSchedule(const Graph &graph) {
  return ::remat::scheduleFromPolicies(
      graph, std::vector<::remat::Policy>(graph.size(), ::remat::Policy::Keep));
}

FailureOr<MemoryReport> mlir::remat::analyzeMemory(func::FuncOp func,
                                                   const CostModel &model) {
  FailureOr<StepGraph> step = buildStepGraph(func, model);
  if (failed(step))
    return failure();
  const Graph &graph = step->graph;
  Schedule schedule = blockOrderSchedule(graph);
  ::remat::SimResult sim = ::remat::simulate(graph, schedule);
  if (!sim.valid)
    return func.emitError("the function cannot run as written: ") << sim.error;
  MemoryReport report;
  report.peakBytes = sim.peakBytes;
  report.paramBytes = step->paramBytes;
  report.dataBytes = step->dataBytes;
  report.stateBytes = step->stateBytes;
  report.fixedBytes = graph.argumentBytes();
  report.cost = sim.cost;
  // Replay up to the peak to list what is resident there.
  std::vector<char> resident(graph.size(), 0);
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id)
    resident[id] = graph.node(id).argument;
  bool peakInSchedule = report.peakBytes > report.fixedBytes;
  for (size_t i = 0; peakInSchedule && i <= sim.peakEvent; ++i)
    resident[schedule[i].node] = schedule[i].kind == Event::Kind::Compute;
  if (peakInSchedule)
    report.peakOp = step->ops[schedule[sim.peakEvent].node];
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id) {
    const Node &n = graph.node(id);
    if (resident[id] && n.bytes > 0 && n.overwrites < 0)
      report.liveAtPeak.push_back({step->values[id], n.bytes});
  }
  llvm::stable_sort(report.liveAtPeak,
                    [](auto &a, auto &b) { return a.second > b.second; });
  return report;
}

int64_t mlir::remat::applySchedule(StepGraph &step, const Schedule &schedule) {
  func::FuncOp func =
      step.values.front().getParentRegion()->getParentOfType<func::FuncOp>();
  Operation *terminator = func.getBody().front().getTerminator();
  // Number clones past any already in the function, so that running the
  // pass twice never gives two recomputations the same mark.
  int64_t nextMark = 0;
  func.walk([&](Operation *op) {
    if (auto mark =
            op->getAttrOfType<IntegerAttr>(train::TrainDialect::kRecomputeAttr))
      nextMark = std::max(nextMark, mark.getInt() + 1);
  });
  SmallVector<Value> current(step.values.begin(), step.values.end());
  std::vector<char> computed(step.graph.size(), 0);
  OpBuilder builder(terminator);
  int64_t clones = 0;
  for (const Event &e : schedule) {
    if (e.kind != Event::Kind::Compute)
      continue;
    Operation *op = step.ops[e.node];
    if (computed[e.node]) {
      op = builder.clone(*op);
      op->setAttr(train::TrainDialect::kRecomputeAttr,
                  builder.getI64IntegerAttr(nextMark++));
      ++clones;
    } else {
      op->moveBefore(terminator);
      computed[e.node] = 1;
    }
    for (auto [i, d] : llvm::enumerate(step.operandNodes[e.node]))
      op->setOperand(i, current[d]);
    current[e.node] = op->getResult(0);
  }
  return clones;
}
