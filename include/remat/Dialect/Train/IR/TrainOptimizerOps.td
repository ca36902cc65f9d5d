//===- TrainOptimizerOps.td - Parameter and optimizer-state updates -------===//
//
// PyTorch's SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW
// as elementwise updates. Each writes one value in place of its first
// operand when that is a function argument (a parameter or an optimizer
// state buffer, donated as torch.optim updates in place), so it allocates
// nothing and must be that argument's last user. The learning rate is the
// `lr` operand when present (a runtime argument, so a schedule needs no
// recompile), else the `learning_rate` attribute; `step` counts steps from 1.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD

def Train_SgdUpdateOp
    : Train_GradientOp<"sgd_update",
                       [AllTypesMatch<["param", "grad", "result"]>,
                        AttrSizedOperandSegments],
                       ["getInPlaceOperand", "getFlops"]> {
  let summary = "SGD step: param - lr * (momentum buffer or grad)";
  let description = [{
    `param - lr * d`, where `d` is `grad + weight_decay * param` without a
    momentum buffer, the buffer `buf` (already updated by
    `train.momentum_update`) with one, and `d + momentum * buf` with
    `nesterov`, as `torch.optim.SGD` computes it.

    ```mlir
    %w1 = train.sgd_update %w, %dw {learning_rate = 0.01 : f64} : tensor<64x16xf32>
    %w2 = train.sgd_update %w, %dw lr(%lr : tensor<f32>)
        buffer(%b1 : tensor<64x16xf32>) {momentum = 0.9 : f64}
        : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Optional<Train_ScalarTensor>:$lr,
                       Optional<Train_FloatTensor>:$buffer,
                       DefaultValuedAttr<F64Attr, "0.0">:$learning_rate,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       UnitAttr:$nesterov);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $param `,` $grad (`lr` `(` $lr^ `:` type($lr) `)`)?
    (`buffer` `(` $buffer^ `:` type($buffer) `)`)? attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Train_MomentumUpdateOp
    : Train_GradientOp<"momentum_update",
                       [AllTypesMatch<["buffer", "grad", "param", "result"]>],
                       ["getInPlaceOperand"], 5> {
  let summary = "SGD's momentum buffer after a step";
  let description = [{
    With `d = grad + weight_decay * param`: `d` at step 1, else
    `momentum * buffer + (1 - dampening) * d` (`torch.optim.SGD`).

    ```mlir
    %b1 = train.momentum_update %b, %dw, %w, %step {momentum = 0.9 : f64}
        : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$buffer, Train_FloatTensor:$grad,
                       Train_FloatTensor:$param, Train_SeedTensor:$step,
                       F64Attr:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $buffer `,` $grad `,` $param `,` $step attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Train_AdamMomentOp
    : Train_GradientOp<"adam_moment",
                       [AllTypesMatch<["moment", "grad", "param", "result"]>],
                       ["getInPlaceOperand"], 5> {
  let summary = "One of Adam's running averages after a step";
  let description = [{
    With `d = grad + weight_decay * param` (Adam's coupled weight decay; 0
    for AdamW): `beta * moment + (1 - beta) * d`, or of `d * d` with
    `square` (`exp_avg` and `exp_avg_sq` of `torch.optim.Adam`).

    ```mlir
    %v1 = train.adam_moment %v, %dw, %w {beta = 0.999 : f64, square}
        : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$moment, Train_FloatTensor:$grad,
                       Train_FloatTensor:$param, F64Attr:$beta,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$square);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $moment `,` $grad `,` $param attr-dict `:` type($moment)
  }];
  let hasVerifier = 1;
}

def Train_AdamUpdateOp
    : Train_GradientOp<"adam_update",
                       [AllTypesMatch<["param", "exp_avg", "exp_avg_sq",
                                       "result"]>],
                       ["getInPlaceOperand"], 10> {
  let summary = "Adam's (and AdamW's) parameter step";
  let description = [{
    `param * (1 - lr * weight_decay) - lr / (1 - beta1^step) * exp_avg /
    (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)`: `weight_decay` is
    AdamW's decoupled decay (0 for Adam), as `torch.optim.AdamW` computes it.

    ```mlir
    %w1 = train.adam_update %w, %m1, %v1, %step lr(%lr : tensor<f32>)
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64}
        : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$exp_avg,
                       Train_FloatTensor:$exp_avg_sq, Train_SeedTensor:$step,
                       Optional<Train_ScalarTensor>:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$learning_rate,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $param `,` $exp_avg `,` $exp_avg_sq `,` $step
    (`lr` `(` $lr^ `:` type($lr) `)`)? attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

#endif // REMAT_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD
