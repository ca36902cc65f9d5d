//===- Autodiff.cpp - Build the training step from a forward model --------===//
//
// Reverse-mode differentiation of a straight-line function through
// AutodiffOpInterface. Each parameter's SGD update is emitted as soon as its
// gradient is complete (all its users differentiated), so the gradient dies
// early and the update is the parameter's last use, which lets the lowering
// write it in place.
//
//===----------------------------------------------------------------------===//

#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::remat::train {
#define GEN_PASS_DEF_TRAINAUTODIFF
#include "remat/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::remat::train

using namespace mlir;
using namespace mlir::remat::train;
using mlir::remat::train::TrainDialect;

namespace {
struct TrainAutodiffPass
    : public mlir::remat::train::impl::TrainAutodiffBase<TrainAutodiffPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp func);
};
} // namespace

void TrainAutodiffPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || func->hasAttr(TrainDialect::kStepAttr))
    return;
  bool isModel = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    isModel |= static_cast<bool>(func.getArgAttr(i, TrainDialect::kRoleAttr));
  if (!isModel)
    return;
  if (failed(differentiate(func)))
    signalPassFailure();
}

LogicalResult TrainAutodiffPass::differentiate(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("expects straight-line code: a single block");
  if (func.getNumResults() != 1)
    return func.emitError("a model must return exactly one value, its scalar "
                          "loss; this one returns ")
           << func.getNumResults();
  auto lossType = dyn_cast<RankedTensorType>(func.getResultTypes()[0]);
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return func.emitError("a model must return a scalar loss (a rank-0 "
                          "float tensor), got ")
           << func.getResultTypes()[0];

  SmallVector<BlockArgument> params;
  llvm::DenseMap<Value, unsigned> paramIndex, pendingUsers;
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments()) {
    std::optional<Role> role = getArgRole(func, arg.getArgNumber());
    if (!role)
      return func.emitError("argument ")
             << arg.getArgNumber() << " has no '" << TrainDialect::kRoleAttr
             << "' (#train<role param>, input or label)";
    if (*role != Role::param)
      continue;
    paramIndex[arg] = params.size();
    params.push_back(arg);
    llvm::SmallPtrSet<Operation *, 4> users(arg.user_begin(), arg.user_end());
    pendingUsers[arg] = users.size();
    if (users.empty())
      return func.emitError("parameter ")
             << arg.getArgNumber() << " is not used by the model";
  }

  Operation *terminator = block.getTerminator();
  SmallVector<Operation *> forwardOps;
  for (Operation &op : block.without_terminator())
    forwardOps.push_back(&op);

  OpBuilder b(terminator);
  Location loc = func.getLoc();
  llvm::DenseMap<Value, Value> grads;
  Value loss = terminator->getOperand(0);
  grads[loss] = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0)));
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, loc, g.getType(), it->second, g);
  };

  SmallVector<Value> updated(params.size()), finalGrads(params.size());
  for (Operation *op : llvm::reverse(forwardOps)) {
    // Constants are not trained; whatever flows into them is dead.
    if (op->getNumResults() == 1 && !op->hasTrait<OpTrait::ConstantLike>()) {
      if (Value g = grads.lookup(op->getResult(0))) {
        auto adjoint = dyn_cast<AutodiffOpInterface>(op);
        // Gradient forms and the optimizer update have no adjoint: the step
        // is first order.
        if (!adjoint && isa<TrainDialect>(op->getDialect()))
          return op->emitOpError("is not differentiable (higher-order "
                                 "gradients are not supported)");
        if (!adjoint)
          return op->emitOpError("cannot be differentiated: it does not "
                                 "implement AutodiffOpInterface");
        SmallVector<Value> operandGrads;
        b.setInsertionPoint(terminator);
        if (failed(adjoint.buildAdjoint(b, g, operandGrads)))
          return failure();
        for (auto [operand, og] :
             llvm::zip_equal(op->getOperands(), operandGrads))
          if (og)
            accumulate(operand, og);
      }
    }
    // A parameter's gradient is complete once all its users are done.
    llvm::SmallPtrSet<Value, 4> seen;
    for (Value operand : op->getOperands()) {
      auto it = pendingUsers.find(operand);
      if (it == pendingUsers.end() || !seen.insert(operand).second ||
          --it->second != 0)
        continue;
      unsigned index = paramIndex.lookup(operand);
      Value g = grads.lookup(operand);
      if (!g)
        return func.emitError("parameter ")
               << cast<BlockArgument>(operand).getArgNumber()
               << " does not affect the loss";
      finalGrads[index] = g;
      updated[index] = SgdUpdateOp::create(b, loc, operand, g,
                                           b.getF64FloatAttr(learningRate));
    }
  }

  SmallVector<Value> results = {loss};
  llvm::append_range(results, updated);
  if (returnGradients)
    llvm::append_range(results, finalGrads);
  terminator->setOperands(results);

  // Adjoints build the gradient of every operand; those of inputs, labels
  // and constants are dead and would cost compute and memory.
  llvm::SmallPtrSet<Operation *, 32> forwardSet(forwardOps.begin(),
                                                forwardOps.end());
  SmallVector<Operation *> backwardOps;
  for (Operation &op : block.without_terminator())
    if (!forwardSet.contains(&op))
      backwardOps.push_back(&op);
  for (Operation *op : llvm::reverse(backwardOps))
    if (op->use_empty())
      op->erase();

  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(b.getFunctionType(func.getArgumentTypes(), resultTypes));

  auto setRole = [&](unsigned result, Role role,
                     std::optional<unsigned> param) {
    setResultRole(func, result, role);
    if (param)
      func.setResultAttr(result, TrainDialect::kParamAttr,
                         b.getI64IntegerAttr(*param));
  };
  setRole(0, Role::loss, std::nullopt);
  for (unsigned i = 0; i < params.size(); ++i) {
    setRole(1 + i, Role::updated_param, i);
    if (returnGradients)
      setRole(1 + params.size() + i, Role::grad, i);
  }
  func->setAttr(TrainDialect::kStepAttr, b.getUnitAttr());
  return success();
}
