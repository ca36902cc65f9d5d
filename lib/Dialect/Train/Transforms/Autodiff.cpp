//===- Autodiff.cpp - Build the training step from a forward model --------===//
//
// Reverse-mode differentiation of a straight-line function through
// AutodiffOpInterface. Each parameter's optimizer update is emitted as soon
// as its gradient is complete (all its users differentiated), so the
// gradient dies early and the update is the parameter's (and its state's)
// last use, which lets the lowering write it in place.
//
//===----------------------------------------------------------------------===//

#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
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

  if (mode != "step" && mode != "backward" && mode != "apply")
    return func.emitError("unknown mode '")
           << mode.getValue() << "'; expected step, backward or apply";
  bool update = mode != "backward";
  // The optimizer's arguments: the learning rate with runtime-lr, the step
  // count where the optimizer needs it, and its state per parameter.
  bool adam = optimizer == "adam" || optimizer == "adamw";
  if (!adam && optimizer != "sgd")
    return func.emitError("unknown optimizer '")
           << optimizer << "'; expected sgd, adam or adamw";
  if (adam && (momentum != 0 || dampening != 0 || nesterov))
    return func.emitError("momentum, dampening and nesterov are SGD's; the "
                          "optimizer is ")
           << optimizer.getValue();
  if (nesterov && (momentum <= 0 || dampening != 0))
    return func.emitError(
        "Nesterov momentum needs a positive momentum and zero dampening");
  // -1, the option's default, picks the optimizer's own; other negative
  // values are errors, not defaults.
  if (weightDecay < 0 && weightDecay != -1.0)
    return func.emitError("weight-decay must be >= 0, got ") << weightDecay;
  double decay = weightDecay >= 0       ? weightDecay
                 : optimizer == "adamw" ? 0.01
                                        : 0.0;
  bool withMomentum = !adam && momentum > 0;
  MLIRContext *ctx = func.getContext();
  Type floatType = lossType.getElementType();
  Location argLoc = func.getLoc();
  auto addArgument = [&](Type type, Role role,
                         const Twine &name) -> BlockArgument {
    unsigned index = func.getNumArguments();
    NamedAttrList attrs;
    attrs.append(TrainDialect::kRoleAttr, RoleAttr::get(ctx, role));
    attrs.append(TrainDialect::kNameAttr, StringAttr::get(ctx, name));
    (void)func.insertArgument(index, type, attrs.getDictionary(ctx), argLoc);
    return func.getArgument(index);
  };
  Value lr;
  if (runtimeLearningRate && update)
    lr = addArgument(RankedTensorType::get({}, floatType), Role::lr, "lr");
  Value stepCount;
  if (update && (adam || withMomentum))
    stepCount =
        addArgument(RankedTensorType::get({}, IntegerType::get(ctx, 64)),
                    Role::step, "step");
  SmallVector<SmallVector<Value, 2>> state(params.size());
  SmallVector<std::string> names;
  for (auto [i, p] : llvm::enumerate(params)) {
    auto named = func.getArgAttrOfType<StringAttr>(p.getArgNumber(),
                                                   TrainDialect::kNameAttr);
    std::string name =
        named ? named.getValue().str() : "param" + std::to_string(i);
    names.push_back(name);
    if (!update)
      continue;
    if (withMomentum)
      state[i].push_back(
          addArgument(p.getType(), Role::state, name + ".momentum_buffer"));
    if (adam) {
      state[i].push_back(
          addArgument(p.getType(), Role::state, name + ".exp_avg"));
      state[i].push_back(
          addArgument(p.getType(), Role::state, name + ".exp_avg_sq"));
    }
  }

  Operation *terminator = block.getTerminator();
  SmallVector<Operation *> forwardOps;
  for (Operation &op : block.without_terminator())
    forwardOps.push_back(&op);

  OpBuilder b(terminator);
  Location loc = func.getLoc();
  llvm::DenseMap<Value, Value> grads;
  Value loss = terminator->getOperand(0);
  if (mode != "apply")
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
  SmallVector<SmallVector<Value, 2>> updatedState(params.size());
  auto f64 = [](double v) { return APFloat(v); };
  // Parameter `index`'s optimizer update from its gradient `g`.
  auto emitUpdate = [&](unsigned index, Value param, Value g) {
    if (adam) {
      double coupled = optimizer == "adam" ? decay : 0.0;
      Value m = AdamMomentOp::create(b, loc, state[index][0], g, param,
                                     f64(beta1), f64(coupled));
      Value v = AdamMomentOp::create(b, loc, state[index][1], g, param,
                                     f64(beta2), f64(coupled),
                                     /*square=*/true);
      updatedState[index] = {m, v};
      updated[index] = AdamUpdateOp::create(
          b, loc, param, m, v, stepCount, lr, f64(learningRate), f64(beta1),
          f64(beta2), f64(eps), f64(decay - coupled));
      return;
    }
    Value buffer;
    if (withMomentum) {
      buffer =
          MomentumUpdateOp::create(b, loc, state[index][0], g, param, stepCount,
                                   f64(momentum), f64(dampening), f64(decay));
      updatedState[index] = {buffer};
    }
    updated[index] = SgdUpdateOp::create(
        b, loc, param, g, lr, buffer, f64(learningRate), f64(decay),
        f64(withMomentum ? momentum : 0.0), nesterov);
  };

  if (mode == "apply") {
    // The update alone, from gradient arguments: the model's ops, inputs
    // and labels go.
    terminator->setOperands({});
    for (Operation *op : llvm::reverse(forwardOps))
      op->erase();
    forwardOps.clear();
    llvm::BitVector data(func.getNumArguments());
    for (BlockArgument arg : block.getArguments()) {
      std::optional<Role> role = getArgRole(func, arg.getArgNumber());
      data[arg.getArgNumber()] = role == Role::input || role == Role::label;
    }
    if (failed(func.eraseArguments(data)))
      return failure();
    b.setInsertionPoint(terminator);
    for (auto [i, p] : llvm::enumerate(params))
      emitUpdate(i, p,
                 addArgument(p.getType(), Role::grad, names[i] + ".grad"));
  }
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
      if (!g) {
        unsigned arg = cast<BlockArgument>(operand).getArgNumber();
        InFlightDiagnostic err = func.emitError("parameter ") << arg;
        if (auto named =
                func.getArgAttrOfType<StringAttr>(arg, TrainDialect::kNameAttr))
          err << " ('" << named.getValue() << "')";
        return err << " does not affect the loss";
      }
      finalGrads[index] = g;
      if (update)
        emitUpdate(index, operand, g);
    }
  }

  // Results: the loss (not in apply mode), each updated parameter and state
  // (not in backward mode), each gradient (backward mode, or asked for).
  SmallVector<Value> results;
  SmallVector<std::pair<Role, std::optional<unsigned>>> roles;
  if (mode != "apply") {
    results.push_back(loss);
    roles.push_back({Role::loss, std::nullopt});
  }
  if (update) {
    for (auto [i, v] : llvm::enumerate(updated)) {
      results.push_back(v);
      roles.push_back({Role::updated_param, i});
    }
    for (auto [i, values] : llvm::enumerate(updatedState))
      for (Value v : values) {
        results.push_back(v);
        roles.push_back({Role::updated_state, i});
      }
  }
  if (returnGradients || !update)
    for (auto [i, g] : llvm::enumerate(finalGrads))
      if (g) {
        results.push_back(g);
        roles.push_back({Role::grad, i});
      }
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
  for (auto [k, role] : llvm::enumerate(roles))
    setRole(k, role.first, role.second);
  func->setAttr(TrainDialect::kStepAttr, b.getUnitAttr());
  return success();
}
