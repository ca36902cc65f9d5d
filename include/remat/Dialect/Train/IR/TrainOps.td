//===- TrainOps.td - train dialect operations --------------*- tablegen -*-===//
//
// The op classes and the families of ops, each in its own file. Every op
// costs itself and differentiates itself through the interfaces, so passes
// never switch on op kinds.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD

include "remat/Dialect/Train/IR/TrainDialect.td"
include "remat/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/EnumAttr.td"

// Mixed precision is explicit: an op's float operands and results share one
// element type, and train.cast converts between them.
def Train_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Train_ScalarTensor : 0DTensorOf<[F16, BF16, F32, F64]>;
// Class labels and embedding rows.
def Train_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
// Seeds and offsets of counter-based random numbers.
def Train_SeedTensor : 0DTensorOf<[I64]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI64Type())";
}
def Train_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;

// What an argument (param, input, label; and of a step: optimizer state,
// lr, step) or a step result (loss, updated_param, updated_state, grad) is:
// `train.role = #train<role param>`.
def Train_Role : I32EnumAttr<"Role", "the role of a step's value", [
    I32EnumAttrCase<"param", 0>, I32EnumAttrCase<"input", 1>,
    I32EnumAttrCase<"label", 2>, I32EnumAttrCase<"loss", 3>,
    I32EnumAttrCase<"updated_param", 4>, I32EnumAttrCase<"grad", 5>,
    I32EnumAttrCase<"state", 6>, I32EnumAttrCase<"updated_state", 7>,
    I32EnumAttrCase<"lr", 8>, I32EnumAttrCase<"step", 9>]> {
  let cppNamespace = "::mlir::remat::train";
  let genSpecializedAttr = 0;
}
def Train_RoleAttr : EnumAttr<Train_Dialect, Train_Role, "role">;

// An op with a cost and no adjoint: gradient forms and the optimizer update,
// which autodiff does not differentiate again (the step is first order).
// `flopsPerElement`, when positive, is the whole cost model: that many FLOPs
// per element of the result.
class Train_GradientOp<string mnemonic, list<Trait> traits = [],
                       list<string> costOverrides = [], int flopsPerElement = 0>
    : Train_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Train_CostOpInterface, costOverrides>])> {
  let extraClassDefinition = !if(!gt(flopsPerElement, 0),
      "int64_t $cppClass::getFlops() { return " # flopsPerElement #
      " * ::llvm::cast<::mlir::ShapedType>(getResult().getType())"
      ".getNumElements(); }", "");
}

// An op of the forward model: a cost and an adjoint.
class Train_ComputeOp<string mnemonic, list<Trait> traits = [],
                      list<string> costOverrides = [], int flopsPerElement = 0>
    : Train_GradientOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<Train_AutodiffOpInterface>]),
        costOverrides, flopsPerElement>;

include "remat/Dialect/Train/IR/TrainElementwiseOps.td"
include "remat/Dialect/Train/IR/TrainLayoutOps.td"
include "remat/Dialect/Train/IR/TrainContractionOps.td"
include "remat/Dialect/Train/IR/TrainNormalizationOps.td"
include "remat/Dialect/Train/IR/TrainLossOps.td"
include "remat/Dialect/Train/IR/TrainOptimizerOps.td"

#endif // REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD
