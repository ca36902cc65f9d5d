//===- TrainOps.td - train dialect operations --------------*- tablegen -*-===//
//
// The ops of an MLP's training step: forward, gradient forms and SGD. Each
// one costs itself and differentiates itself through the interfaces, so
// passes never switch on op kinds.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD

include "remat/Dialect/Train/IR/TrainDialect.td"
include "remat/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_FloatTensor : StaticShapeTensorOf<[F32, F64]>;
def Train_ScalarTensor : 0DTensorOf<[F32, F64]>;

class Train_ComputeOp<string mnemonic, list<Trait> traits = [],
                      list<string> costOverrides = []>
    : Train_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Train_CostOpInterface, costOverrides>,
        DeclareOpInterfaceMethods<Train_AutodiffOpInterface>])>;

def Train_MatmulOp : Train_ComputeOp<"matmul"> {
  let summary = "Matrix product with optional transposed operands";
  let description = [{
    `op(lhs) x op(rhs)` where `op` transposes its operand when
    `transpose_lhs` / `transpose_rhs` is present. Operands are rank 2 with
    the same element type; the contraction dimensions must agree.

    ```mlir
    %y = train.matmul %x, %w : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
    %dw = train.matmul %x, %dy {transpose_lhs} : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_BiasAddOp : Train_ComputeOp<"bias_add",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Adds a bias vector to every row";
  let description = [{
    `result[i, j] = input[i, j] + bias[j]`: `input` is rank 2, `bias` rank 1
    with the size of the last dimension of `input`.

    ```mlir
    %y = train.bias_add %x, %b : tensor<32x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$bias);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Train_BiasGradOp : Train_ComputeOp<"bias_grad"> {
  let summary = "Sums the rows of a gradient (the adjoint of bias_add)";
  let description = [{
    `result[j] = sum_i grad[i, j]`.

    ```mlir
    %db = train.bias_grad %dy : tensor<32x16xf32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Train_ReluOp : Train_ComputeOp<"relu", [SameOperandsAndResultType]> {
  let summary = "Rectified linear unit, max(x, 0)";
  let description = [{
    ```mlir
    %h = train.relu %x : tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Train_ReluGradOp : Train_ComputeOp<"relu_grad",
    [SameOperandsAndResultType]> {
  let summary = "Gradient of relu, from its output";
  let description = [{
    `result = grad if output > 0 else 0`, where `output` is the relu's result
    (as PyTorch does, so the relu's input need not be kept for backward).

    ```mlir
    %dx = train.relu_grad %dy, %h : tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$output);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($grad)";
}

def Train_AddOp : Train_ComputeOp<"add", [SameOperandsAndResultType]> {
  let summary = "Elementwise sum";
  let description = [{
    Autodiff uses it to accumulate the gradients of a value with several
    users.

    ```mlir
    %s = train.add %a, %b : tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Train_MseLossOp : Train_ComputeOp<"mse_loss",
    [AllTypesMatch<["prediction", "target"]>]> {
  let summary = "Mean squared error, mean((prediction - target)^2)";
  let description = [{
    The mean over all elements; the result is a rank-0 tensor of the
    operands' element type.

    ```mlir
    %l = train.mse_loss %p, %y : tensor<32x16xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$prediction,
                       Train_FloatTensor:$target);
  let results = (outs Train_ScalarTensor:$result);
  let assemblyFormat = [{
    $prediction `,` $target attr-dict `:` type($prediction) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_MseLossGradOp : Train_ComputeOp<"mse_loss_grad",
    [AllTypesMatch<["prediction", "target", "result"]>]> {
  let summary = "Gradient of mse_loss with respect to the prediction";
  let description = [{
    `result = 2 * (prediction - target) / numel * loss_grad`.

    ```mlir
    %dp = train.mse_loss_grad %p, %y, %dl : tensor<32x16xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$prediction,
                       Train_FloatTensor:$target,
                       Train_ScalarTensor:$loss_grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $prediction `,` $target `,` $loss_grad attr-dict `:` type($prediction) `,`
    type($loss_grad)
  }];
  let hasVerifier = 1;
}

def Train_SgdUpdateOp : Train_ComputeOp<"sgd_update",
    [AllTypesMatch<["param", "grad", "result"]>], ["getInPlaceOperand"]> {
  let summary = "Plain SGD step, param - learning_rate * grad";
  let description = [{
    Returns the updated parameter. When `param` is a function argument the
    lowering writes the result into the argument's buffer (the parameter is
    donated, as PyTorch's `optimizer.step()` updates in place), so the op
    allocates nothing; it must then be the last user of `param`.

    ```mlir
    %w1 = train.sgd_update %w, %dw {learning_rate = 0.01 : f64} : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       F64Attr:$learning_rate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

#endif // REMAT_DIALECT_TRAIN_IR_TRAINOPS_TD
