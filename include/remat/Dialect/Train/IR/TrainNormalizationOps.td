//===- TrainNormalizationOps.td - Row-wise normalizations -*- tablegen -*-===//
//
// Softmax, the causal mask, layer and batch norm, with their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINNORMALIZATIONOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINNORMALIZATIONOPS_TD

def Train_SoftmaxOp
    : Train_UnaryOp<"softmax", "Softmax over the last dimension", 5> {
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along the last dimension. An element
    equal to `-inf` (a masked position) gets probability 0.
  }];
  let hasVerifier = 1;
}
def Train_SoftmaxGradOp
    : Train_UnaryGradOp<"softmax_grad", "softmax", "output", 4> {
  let description = "`result = output * (grad - sum(grad * output))` per row.";
  let hasVerifier = 1;
}
def Train_LogSoftmaxOp
    : Train_UnaryOp<"log_softmax",
                    "Logarithm of the softmax over the last dimension", 5> {
  let hasVerifier = 1;
}
def Train_LogSoftmaxGradOp
    : Train_UnaryGradOp<"log_softmax_grad", "log_softmax", "output", 4> {
  let description = "`result = grad - exp(output) * sum(grad)` per row.";
  let hasVerifier = 1;
}
def Train_CausalMaskOp
    : Train_UnaryOp<"causal_mask",
                    "Sets the positions above the diagonal of the last two dims to -inf",
                    1> {
  let description = [{
    For attention scores `[..., T, T]`: `result[..., i, j] = -inf` where
    `j > i`, else the input. Its gradient is the same mask with zeros, done by
    `train.causal_mask_grad`.
  }];
  let hasVerifier = 1;
}
def Train_CausalMaskGradOp
    : Train_GradientOp<"causal_mask_grad", [SameOperandsAndResultType], [], 1> {
  let summary = "Zeroes the gradient above the diagonal";
  let arguments = (ins Train_FloatTensor:$grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad)";
}
class Train_NormOp<string mnemonic, string what, string dims>
    : Train_ComputeOp<mnemonic, [AllTypesMatch<["input", "result"]>,
                                 AllTypesMatch<["weight", "bias"]>], [], 8> {
  let summary = what # " (training mode)";
  let description = [{
    Normalizes over }] # dims # [{ with the biased variance, then scales by
    `weight` and shifts by `bias`:
    `(x - mean) / sqrt(var + epsilon) * weight + bias`.
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$weight,
                       Train_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}
class Train_NormGradInputOp<string mnemonic, string of>
    : Train_GradientOp<mnemonic, [AllTypesMatch<["grad", "input", "result"]>],
                       [], 12> {
  let summary = "Gradient of " # of # " with respect to its input";
  let description = [{
    Recomputes the statistics from `input`, so that nothing but the input
    has to be kept for the backward pass.
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
                       Train_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($grad) `,` type($weight)
  }];
  let hasVerifier = 1;
}
class Train_NormGradWeightOp<string mnemonic, string of>
    : Train_GradientOp<mnemonic, [AllTypesMatch<["grad", "input"]>],
                      ["getWorkspaceBytes"]> {
  let summary = "Gradient of " # of # " with respect to its weight";
  let description = "`sum(grad * normalized input)` per weight element.";
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}
def Train_LayerNormOp
    : Train_NormOp<"layer_norm", "Layer normalization", "the last dimension">;
def Train_LayerNormGradInputOp
    : Train_NormGradInputOp<"layer_norm_grad_input", "layer_norm">;
def Train_LayerNormGradWeightOp
    : Train_NormGradWeightOp<"layer_norm_grad_weight", "layer_norm">;
def Train_BatchNormOp : Train_NormOp<"batch_norm", "Batch normalization",
    "every dimension but the channels (dimension 1 of NCHW)">;
def Train_BatchNormGradInputOp
    : Train_NormGradInputOp<"batch_norm_grad_input", "batch_norm">;
def Train_BatchNormGradWeightOp
    : Train_NormGradWeightOp<"batch_norm_grad_weight", "batch_norm">;

#endif // REMAT_DIALECT_TRAIN_IR_TRAINNORMALIZATIONOPS_TD
