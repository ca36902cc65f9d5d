//===- StepDescription.cpp - The manifest's view of a step ----------------===//
//
// What the driver needs to know about each argument and result of the step,
// read off the function before lowering: role, dtype and shape, and how to
// fill an argument sensibly when the user gives no data.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "remat/Dialect/Train/IR/TrainDialect.h"

using namespace mlir;
using namespace mlir::remat::train;

static std::string dtypeOf(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  if (e.isInteger(64))
    return "i64";
  if (e.isInteger(32))
    return "i32";
  if (e.isF16())
    return "f16";
  if (e.isBF16())
    return "bf16";
  return e.isF64() ? "f64" : e.isF32() ? "f32" : "";
}

static ::remat::TensorSpec specOf(Type type) {
  ::remat::TensorSpec spec;
  spec.dtype = dtypeOf(type);
  llvm::append_range(spec.shape, cast<RankedTensorType>(type).getShape());
  return spec;
}

/// The fill an argument's users imply: the class count or vocabulary that
/// bounds labels and token indices, and for parameters PyTorch's
/// initialization (normalization weights 1, biases 0, weights He-uniform
/// over their fan-in).
static void describeFill(func::FuncOp step, BlockArgument arg,
                         double learningRate, ::remat::TensorSpec &spec) {
  auto type = cast<RankedTensorType>(arg.getType());
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    unsigned n = use.getOperandNumber();
    auto dim = [&](Value v, unsigned d) {
      return cast<RankedTensorType>(v.getType()).getDimSize(d);
    };
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(user) && n == 1) {
      spec.range = dim(user->getOperand(0), 1);
      return;
    }
    if (isa<EmbeddingOp>(user) && n == 1) {
      spec.range = dim(user->getOperand(0), 0);
      return;
    }
    if (isa<EmbeddingGradOp>(user) && n == 1) {
      spec.range = dim(user->getResult(0), 0);
      return;
    }
    if (isa<LayerNormOp, BatchNormOp>(user) && (n == 1 || n == 2)) {
      spec.constant = n == 1 ? 1.0 : 0.0;
      return;
    }
  }
  std::optional<Role> role = getArgRole(step, arg.getArgNumber());
  // Optimizer state starts at zero, as torch.optim's does; the driver sets
  // the step count and learning rate before each step.
  if (role == Role::state) {
    spec.constant = 0.0;
    return;
  }
  if (role == Role::lr) {
    spec.constant = learningRate;
    return;
  }
  if (role != Role::param || !isa<FloatType>(type.getElementType()))
    return;
  int64_t largest = 1;
  for (int64_t d : type.getShape())
    largest = std::max(largest, d);
  if (type.getNumElements() == largest) {
    spec.constant = 0.0; // a bias
    return;
  }
  // Matmul weights are [in, out]; convolution weights [F, C, KH, KW];
  // embedding tables uniform in [-1, 1).
  int64_t fanIn = type.getRank() == 2
                      ? type.getDimSize(0)
                      : type.getNumElements() / type.getDimSize(0);
  spec.bound = std::sqrt(6.0 / static_cast<double>(fanIn));
  for (Operation *user : arg.getUsers())
    if (isa<EmbeddingOp>(user))
      spec.bound = 1.0;
}

LogicalResult mlir::remat::detail::describeStep(func::FuncOp step,
                                                double learningRate,
                                                ::remat::Manifest &m) {
  m.function = step.getName().str();
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    Type type = step.getArgumentTypes()[i];
    if (dtypeOf(type).empty())
      return step.emitError("argument ")
             << i << " has an element type the runtime cannot fill (f32, "
             << "f64, i32 or i64)";
    std::optional<Role> role = getArgRole(step, i);
    auto name = step.getArgAttrOfType<StringAttr>(i, TrainDialect::kNameAttr);
    ::remat::TensorSpec spec = specOf(type);
    spec.name = name ? name.str() : "arg" + std::to_string(i);
    spec.role = stringifyRole(role.value_or(Role::input)).str();
    describeFill(step, step.getArgument(i), learningRate, spec);
    m.arguments.push_back(std::move(spec));
  }
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    std::optional<Role> role = getResultRole(step, i);
    // Updated parameters and state are written in place, not returned.
    if (role == Role::updated_param || role == Role::updated_state)
      continue;
    ::remat::TensorSpec spec = specOf(step.getResultTypes()[i]);
    spec.role = role ? stringifyRole(*role).str() : "output";
    if (auto param =
            step.getResultAttrOfType<IntegerAttr>(i, TrainDialect::kParamAttr))
      spec.param = param.getInt();
    m.results.push_back(std::move(spec));
  }
  m.signature = m.computeSignature();
  return success();
}

FailureOr<func::FuncOp> mlir::remat::detail::findModel(ModuleOp module) {
  SmallVector<func::FuncOp> models;
  for (auto func : module.getOps<func::FuncOp>()) {
    bool isModel = func->hasAttr(TrainDialect::kStepAttr);
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      isModel |= static_cast<bool>(func.getArgAttr(i, TrainDialect::kRoleAttr));
    if (isModel)
      models.push_back(func);
  }
  if (models.size() != 1)
    return module.emitError("expects exactly one model function (arguments "
                            "with 'train.role'), found ")
           << models.size();
  return models.front();
}
