//===- TrainDialect.cpp - The train dialect -------------------------------===//
//
// Op verifiers, costs and adjoints. Costs count one multiply-add as two FLOPs
// and an elementwise op as one FLOP per element (a few for the loss), which
// is all the rematerialization cost model needs: relative prices.
//
//===----------------------------------------------------------------------===//

#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::remat::train;

#include "remat/Dialect/Train/IR/TrainEnums.cpp.inc"
#include "remat/Dialect/Train/IR/TrainInterfaces.cpp.inc"
#include "remat/Dialect/Train/IR/TrainOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "remat/Dialect/Train/IR/TrainAttrs.cpp.inc"

/// Broadcasting ops print one type when operands and result agree, else
/// `lhs, rhs -> result`.
static ParseResult parseBroadcastTypes(OpAsmParser &parser, Type &lhs,
                                       Type &rhs, Type &result) {
  if (parser.parseType(lhs))
    return failure();
  if (failed(parser.parseOptionalComma())) {
    rhs = result = lhs;
    return success();
  }
  return failure(parser.parseType(rhs) || parser.parseArrow() ||
                 parser.parseType(result));
}

static void printBroadcastTypes(OpAsmPrinter &printer, Operation *, Type lhs,
                                Type rhs, Type result) {
  printer << lhs;
  if (lhs != rhs || lhs != result)
    printer << ", " << rhs << " -> " << result;
}

#define GET_OP_CLASSES
#include "remat/Dialect/Train/IR/TrainOps.cpp.inc"

std::optional<int64_t> mlir::remat::train::getCheckedTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bytes = static_cast<int64_t>(
      llvm::divideCeil(tensor.getElementTypeBitWidth(), 8));
  for (int64_t d : tensor.getShape())
    if (llvm::MulOverflow(bytes, d, bytes) || bytes > kMaxTensorBytes)
      return std::nullopt;
  return bytes;
}

int64_t mlir::remat::train::getTensorBytes(Type type) {
  return getCheckedTensorBytes(type).value_or(kMaxTensorBytes);
}

int64_t
mlir::remat::train::saturatingProduct(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors)
    if (llvm::MulOverflow(product, f, product))
      return std::numeric_limits<int64_t>::max();
  return product;
}

/// Why `type` cannot be a train tensor (empty where it can): larger than
/// kMaxTensorBytes, or with a zero-sized dimension (no buffer to plan).
static std::string sizeProblem(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && tensor.hasStaticShape() &&
      llvm::is_contained(tensor.getShape(), 0))
    return "has a zero-sized dimension";
  if (!getCheckedTensorBytes(type))
    return "is larger than 2^53 bytes, the largest tensor the train dialect "
           "takes";
  return "";
}

LogicalResult mlir::remat::train::verifyTensorSizes(Operation *op) {
  auto check = [&](Type type, StringRef what, unsigned i) -> LogicalResult {
    std::string problem = sizeProblem(type);
    if (problem.empty())
      return success();
    return op->emitOpError()
           << what << " #" << i << " (" << type << ") " << problem;
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(check(v.getType(), "operand", i)))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(check(v.getType(), "result", i)))
      return failure();
  return success();
}

static int64_t numElements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "remat/Dialect/Train/IR/TrainOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "remat/Dialect/Train/IR/TrainAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attributes on functions
//===----------------------------------------------------------------------===//

static bool isArgRole(Role role) {
  return role == Role::param || role == Role::input || role == Role::label ||
         role == Role::state || role == Role::lr || role == Role::step ||
         role == Role::grad;
}

static bool isResultRole(Role role) {
  return role == Role::loss || role == Role::updated_param ||
         role == Role::updated_state || role == Role::grad;
}

std::optional<Role> mlir::remat::train::getArgRole(FunctionOpInterface func,
                                                   unsigned index) {
  if (auto role =
          func.getArgAttrOfType<RoleAttr>(index, TrainDialect::kRoleAttr))
    return role.getValue();
  return std::nullopt;
}

std::optional<Role> mlir::remat::train::getResultRole(FunctionOpInterface func,
                                                      unsigned index) {
  if (auto role =
          func.getResultAttrOfType<RoleAttr>(index, TrainDialect::kRoleAttr))
    return role.getValue();
  return std::nullopt;
}

void mlir::remat::train::setResultRole(FunctionOpInterface func, unsigned index,
                                       Role role) {
  func.setResultAttr(index, TrainDialect::kRoleAttr,
                     RoleAttr::get(func.getContext(), role));
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() == kRoleAttr) {
    auto role = dyn_cast<RoleAttr>(attr.getValue());
    if (role && isArgRole(role.getValue())) {
      auto func = dyn_cast<FunctionOpInterface>(op);
      Type type = func ? func.getArgumentTypes()[argIndex] : Type();
      if (std::string problem = type ? sizeProblem(type) : ""; !problem.empty())
        return op->emitError()
               << "argument " << argIndex << " (" << type << ") " << problem;
    }
    if (!role || !isArgRole(role.getValue()))
      return op->emitError() << "argument " << argIndex << ": '" << kRoleAttr
                             << "' must be #train<role param>, input, "
                                "label, state, lr, step or grad, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kNameAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "argument " << argIndex << ": '" << kNameAttr
                             << "' must be a string";
    return success();
  }
  return op->emitError() << "unknown train argument attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult TrainDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  if (attr.getName() == kRoleAttr) {
    auto role = dyn_cast<RoleAttr>(attr.getValue());
    if (!role || !isResultRole(role.getValue()))
      return op->emitError() << "result " << resultIndex << ": '" << kRoleAttr
                             << "' must be #train<role loss>, updated_param, "
                                "updated_state or grad, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kParamAttr) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getInt() < 0)
      return op->emitError() << "result " << resultIndex << ": '" << kParamAttr
                             << "' must be a non-negative integer";
    return success();
  }
  return op->emitError() << "unknown train result attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kStepAttr) {
    // Kept through lowering (func.func, then llvm.func).
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kStepAttr << "' must be a unit attribute on a function";
    return success();
  }
  if (attr.getName() == kRecomputeAttr) {
    if (!isa<IntegerAttr>(attr.getValue()))
      return op->emitError() << "'" << kRecomputeAttr << "' must be an integer";
    return success();
  }
  if (attr.getName() == kNoRecomputeAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<TrainDialect>(op->getDialect()))
      return op->emitError() << "'" << kNoRecomputeAttr
                             << "' must be a unit attribute on a train op";
    return success();
  }
  return op->emitError() << "unknown train attribute '"
                         << attr.getName().getValue() << "'";
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// All float operands and results of a train op share one element type
/// (integer operands are indices and seeds).
LogicalResult mlir::remat::train::verifySameElementType(Operation *op) {
  Type elementType;
  for (Type t :
       llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
    Type e = cast<ShapedType>(t).getElementType();
    if (isa<IntegerType>(e))
      continue;
    if (!elementType)
      elementType = e;
    else if (e != elementType)
      return op->emitOpError("operands and results must have one element "
                             "type, got ")
             << elementType << " and " << e;
  }
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  auto result = getResult().getType();
  if (lhs.getRank() != 2 || rhs.getRank() != 2 || result.getRank() != 2)
    return emitOpError("expects rank-2 operands and result");
  int64_t m = getTransposeLhs() ? lhs.getDimSize(1) : lhs.getDimSize(0);
  int64_t kl = getTransposeLhs() ? lhs.getDimSize(0) : lhs.getDimSize(1);
  int64_t kr = getTransposeRhs() ? rhs.getDimSize(1) : rhs.getDimSize(0);
  int64_t n = getTransposeRhs() ? rhs.getDimSize(0) : rhs.getDimSize(1);
  if (kl != kr)
    return emitOpError("contraction dimensions differ: ")
           << kl << " (lhs) vs " << kr << " (rhs)";
  if (result.getDimSize(0) != m || result.getDimSize(1) != n)
    return emitOpError("result shape must be ")
           << m << "x" << n << ", got " << result;
  return success();
}

LogicalResult BiasAddOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  auto input = getInput().getType(), bias = getBias().getType();
  if (input.getRank() != 2 || bias.getRank() != 1)
    return emitOpError("expects a rank-2 input and a rank-1 bias");
  if (bias.getDimSize(0) != input.getDimSize(1))
    return emitOpError("bias size ")
           << bias.getDimSize(0) << " differs from the input's last dimension "
           << input.getDimSize(1);
  return success();
}

LogicalResult BiasGradOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  auto grad = getGrad().getType(), result = getResult().getType();
  if (grad.getRank() != 2 || result.getRank() != 1)
    return emitOpError("expects a rank-2 operand and a rank-1 result");
  if (result.getDimSize(0) != grad.getDimSize(1))
    return emitOpError("result size ")
           << result.getDimSize(0) << " differs from the operand's last "
           << "dimension " << grad.getDimSize(1);
  return success();
}

LogicalResult MseLossOp::verify() { return verifySameElementType(*this); }

LogicalResult MseLossGradOp::verify() { return verifySameElementType(*this); }

/// Checks an optimizer hyperparameter: finite and in [low, high] (high
/// excluded where `open`).
static LogicalResult checkHyper(Operation *op, StringRef name, double v,
                                double low, double high, bool open = false) {
  if (std::isfinite(v) && v >= low && (open ? v < high : v <= high))
    return success();
  auto num = [](double x) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", x);
    return text;
  };
  return op->emitOpError() << name << " must be in [" << num(low) << ", "
                           << num(high) << (open ? ")" : "]") << ", got "
                           << num(v);
}

static LogicalResult checkLearningRate(Operation *op, Value lr, double attr,
                                       Type element) {
  if (lr && cast<ShapedType>(lr.getType()).getElementType() != element)
    return op->emitOpError("lr must have the parameter's element type");
  return checkHyper(op, "learning rate", attr, 0,
                    std::numeric_limits<double>::infinity());
}

LogicalResult SgdUpdateOp::verify() {
  double inf = std::numeric_limits<double>::infinity();
  if (failed(checkLearningRate(*this, getLr(),
                               getLearningRate().convertToDouble(),
                               getParam().getType().getElementType())) ||
      failed(checkHyper(*this, "weight_decay",
                        getWeightDecay().convertToDouble(), 0, inf)) ||
      failed(checkHyper(*this, "momentum", getMomentum().convertToDouble(), 0,
                        inf)))
    return failure();
  if (getBuffer() && getBuffer().getType() != getParam().getType())
    return emitOpError("the momentum buffer must have the parameter's type");
  if (getNesterov() && !getBuffer())
    return emitOpError("nesterov needs a momentum buffer");
  return success();
}

LogicalResult MomentumUpdateOp::verify() {
  double inf = std::numeric_limits<double>::infinity();
  if (failed(checkHyper(*this, "momentum", getMomentum().convertToDouble(), 0,
                        inf)) ||
      failed(checkHyper(*this, "dampening", getDampening().convertToDouble(), 0,
                        1)))
    return failure();
  return checkHyper(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0, inf);
}

LogicalResult AdamMomentOp::verify() {
  if (failed(checkHyper(*this, "beta", getBeta().convertToDouble(), 0, 1,
                        /*open=*/true)))
    return failure();
  return checkHyper(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0, std::numeric_limits<double>::infinity());
}

LogicalResult AdamUpdateOp::verify() {
  double inf = std::numeric_limits<double>::infinity();
  if (failed(checkLearningRate(*this, getLr(),
                               getLearningRate().convertToDouble(),
                               getParam().getType().getElementType())) ||
      failed(checkHyper(*this, "beta1", getBeta1().convertToDouble(), 0, 1,
                        /*open=*/true)) ||
      failed(checkHyper(*this, "beta2", getBeta2().convertToDouble(), 0, 1,
                        /*open=*/true)) ||
      failed(checkHyper(*this, "eps", getEps().convertToDouble(), 0, inf)))
    return failure();
  return checkHyper(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0, inf);
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

bool MatmulOp::isContraction() { return true; }
int64_t MatmulOp::getFlops() {
  auto lhs = getLhs().getType();
  int64_t k = getTransposeLhs() ? lhs.getDimSize(0) : lhs.getDimSize(1);
  return saturatingProduct({2, numElements(getResult()), k});
}
int64_t BiasGradOp::getFlops() { return numElements(getGrad()); }
int64_t MseLossOp::getFlops() { return 3 * numElements(getPrediction()); }
int64_t MseLossGradOp::getFlops() { return 3 * numElements(getPrediction()); }

int64_t SgdUpdateOp::getFlops() {
  // p - lr * d: 2; the decay and Nesterov's term 2 more each.
  int64_t perElement = 2 + (getWeightDecay().convertToDouble() != 0 ? 2 : 0) +
                       (getNesterov() ? 2 : 0);
  return perElement * numElements(getResult());
}
std::optional<unsigned> SgdUpdateOp::getInPlaceOperand() { return 0; }
std::optional<unsigned> MomentumUpdateOp::getInPlaceOperand() { return 0; }
std::optional<unsigned> AdamMomentOp::getInPlaceOperand() { return 0; }
std::optional<unsigned> AdamUpdateOp::getInPlaceOperand() { return 0; }

//===----------------------------------------------------------------------===//
// Adjoints
//===----------------------------------------------------------------------===//

template <typename MatmulLikeOp>
LogicalResult
mlir::remat::train::buildMatmulAdjoint(MatmulLikeOp op, OpBuilder &b, Value dy,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = op.getLoc();
  Value a = op.getLhs(), w = op.getRhs();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  auto mm = [&](Value x, Value y, bool tx, bool ty, Type type) -> Value {
    auto op = MatmulLikeOp::create(b, loc, type, x, y);
    op.setTransposeLhs(tx);
    op.setTransposeRhs(ty);
    return op;
  };
  Type aType = a.getType(), wType = w.getType();
  // y = op(a) op(w); each case keeps both gradients a single matmul. The
  // gradient of w is built first: it is the one that reads the saved
  // activation a, which can then die (or be recomputed) before da exists.
  Value da, dw;
  if (!ta && !tb) {
    dw = mm(a, dy, true, false, wType); // a^T dy
    da = mm(dy, w, false, true, aType); // dy w^T
  } else if (ta && !tb) {
    dw = mm(a, dy, false, false, wType); // a dy
    da = mm(w, dy, false, true, aType);  // w dy^T
  } else if (!ta && tb) {
    dw = mm(dy, a, true, false, wType);  // dy^T a
    da = mm(dy, w, false, false, aType); // dy w
  } else {
    dw = mm(dy, a, true, true, wType); // dy^T a^T
    da = mm(w, dy, true, true, aType); // w^T dy^T
  }
  grads.push_back(da);
  grads.push_back(dw);
  return success();
}
template LogicalResult mlir::remat::train::buildMatmulAdjoint<BatchMatmulOp>(
    BatchMatmulOp, OpBuilder &, Value, SmallVectorImpl<Value> &);

LogicalResult MatmulOp::buildAdjoint(OpBuilder &b, Value dy,
                                     SmallVectorImpl<Value> &grads) {
  return buildMatmulAdjoint(*this, b, dy, grads);
}

LogicalResult BiasAddOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(dy);
  grads.push_back(
      BiasGradOp::create(b, getLoc(), getBias().getType(), dy).getResult());
  return success();
}

LogicalResult ReluOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  grads.push_back(ReluGradOp::create(b, getLoc(), dy, getResult()));
  return success();
}

LogicalResult MseLossOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(MseLossGradOp::create(b, getLoc(), getPrediction().getType(),
                                        getPrediction(), getTarget(), dy));
  grads.push_back(Value()); // the target is data, not differentiated
  return success();
}
