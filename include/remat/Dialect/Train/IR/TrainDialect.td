//===- TrainDialect.td - The train dialect -----------------*- tablegen -*-===//
//
// The dialect that holds a model's training graph: forward ops, their gradient
// forms and the optimizer update, on statically shaped tensors.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_TD

include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::mlir::remat::train";
  let summary = "A training graph on statically shaped tensors";
  let description = [{
    The `train` dialect represents one training step of a neural network with
    value semantics on statically shaped ranked tensors of `f32` or `f64`.

    Function arguments say what they are with the `train.role` argument
    attribute: `#train<role param>` (a trainable parameter), `input` or
    `label`. `train.name` optionally names an argument for the manifest and
    reports. A forward model is a `func.func` whose arguments all carry a
    role and which returns one value, the scalar loss (`tensor<f32>` or
    `tensor<f64>`). `train-autodiff` turns it into a training step marked
    `train.step`: optimizer state, the learning rate and the step count
    become arguments of role `state`, `lr` and `step`, and the results
    carry role `loss`, `updated_param`, `updated_state` or `grad` and, for
    the last three, `train.param`, the index of their parameter among the
    parameters.

    ```mlir
    func.func @linear(%w: tensor<4x2xf32> {train.role = #train<role param>},
                      %x: tensor<8x4xf32> {train.role = #train<role input>},
                      %y: tensor<8x2xf32> {train.role = #train<role label>})
        -> tensor<f32> {
      %p = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
      %l = train.mse_loss %p, %y : tensor<8x2xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```

    Every op implements `CostOpInterface` (FLOPs and bytes, for the
    rematerialization cost model) and `AutodiffOpInterface` (its adjoint).

    Two discardable attributes steer `train-remat` on ops: `train.no_recompute`
    (a unit attribute) forbids recomputing the op, and so anything whose
    recomputation would need its result after it is freed; the solvers keep
    its result or recompute elsewhere. `train.recompute = N` marks the clones
    that `train-remat` inserts, so that CSE does not fold them back.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral kRoleAttr = "train.role";
    static constexpr ::llvm::StringLiteral kNameAttr = "train.name";
    static constexpr ::llvm::StringLiteral kParamAttr = "train.param";
    static constexpr ::llvm::StringLiteral kStepAttr = "train.step";
    static constexpr ::llvm::StringLiteral kRecomputeAttr = "train.recompute";
    static constexpr ::llvm::StringLiteral kNoRecomputeAttr =
        "train.no_recompute";
  }];
}

// Every train op's tensors fit kMaxTensorBytes (TrainDialect.h).
def Train_TensorSizesFit : NativeOpTrait<"TensorSizesFit"> {
  let cppNamespace = "::mlir::remat::train";
}

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, !listconcat(traits, [Train_TensorSizesFit])>;

#endif // REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_TD
