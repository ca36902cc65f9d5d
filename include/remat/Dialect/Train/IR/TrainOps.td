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

class Train_BroadcastBinaryOp<string mnemonic, string formula>
    : Train_ComputeOp<mnemonic> {
  let summary = "Elementwise " # formula # " with broadcasting";
  let description = [{
    Operands broadcast as in NumPy: shapes are aligned at their last
    dimension, and a dimension of size 1 (or a missing leading one) repeats
    to the result's size. When all three types are equal the type is
    written once.

    ```mlir
    %s = train.}] # mnemonic # [{ %a, %b : tensor<32x16xf32>
    %t = train.}] # mnemonic # [{ %x, %c : tensor<8x4x5x5xf32>, tensor<4x1x1xf32> -> tensor<8x4x5x5xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:`
    custom<BroadcastTypes>(type($lhs), type($rhs), type($result))
  }];
  let hasVerifier = 1;
}

def Train_AddOp : Train_BroadcastBinaryOp<"add", "sum">;
def Train_SubOp : Train_BroadcastBinaryOp<"sub", "difference">;
def Train_MulOp : Train_BroadcastBinaryOp<"mul", "product">;
def Train_DivOp : Train_BroadcastBinaryOp<"div", "quotient">;

def Train_DivRhsGradOp : Train_ComputeOp<"div_rhs_grad",
    [AllTypesMatch<["grad", "result"]>]> {
  let summary = "Gradient of div with respect to its divisor, before sum_to";
  let description = [{
    `result = -grad * lhs / (rhs * rhs)`, with `lhs` and `rhs` broadcast to
    the shape of `grad`; `train.sum_to` then reduces it to the divisor's
    shape.
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$lhs,
                       Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs attr-dict `:` type($grad) `,` type($lhs) `,`
    type($rhs)
  }];
  let hasVerifier = 1;
}

def Train_SumToOp : Train_ComputeOp<"sum_to"> {
  let summary = "Sums a tensor down to a shape it was broadcast from";
  let description = [{
    The adjoint of broadcasting: the result's shape must broadcast to the
    operand's shape (see `train.add`); every element of the result is the
    sum of the operand elements it was broadcast to.

    ```mlir
    %db = train.sum_to %dy : tensor<8x4x5x5xf32> -> tensor<4x1x1xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

class Train_ReduceOp<string mnemonic, string what> : Train_ComputeOp<mnemonic> {
  let summary = "The " # what # " over the dimensions in `dims`";
  let description = [{
    The reduced dimensions (sorted, distinct) disappear from the result.

    ```mlir
    %s = train.}] # mnemonic # [{ %x {dims = array<i64: 0, 2>} : tensor<8x4x5xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_SumOp : Train_ReduceOp<"sum", "sum">;
def Train_MeanOp : Train_ReduceOp<"mean", "mean">;

def Train_BroadcastOp : Train_ComputeOp<"broadcast"> {
  let summary = "Repeats a tensor along new dimensions, times a scale";
  let description = [{
    The adjoint of `train.sum` (scale 1) and `train.mean` (scale 1/count):
    `dims` are the result dimensions that the operand lacks.

    ```mlir
    %g = train.broadcast %s {dims = array<i64: 0, 2>, scale = 1.0 : f64} : tensor<4xf32> -> tensor<8x4x5xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

class Train_UnaryOp<string mnemonic, string what>
    : Train_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = what;
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Train_UnaryGradOp<string mnemonic, string of, string saved>
    : Train_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = "Gradient of " # of # ", from its " # saved;
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$saved);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $saved attr-dict `:` type($grad)";
}

def Train_ClampOp : Train_ComputeOp<"clamp", [SameOperandsAndResultType]> {
  let summary = "Limits every element to [min, max]";
  let description = [{
    `min(max(x, min), max)`; ReLU6 is `min = 0.0, max = 6.0`. The gradient
    reads the output, like relu's, so the input need not be kept.

    ```mlir
    %h = train.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$min, F64Attr:$max);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}
def Train_ClampGradOp : Train_ComputeOp<"clamp_grad",
    [SameOperandsAndResultType]> {
  let summary = "Gradient of clamp, from its output";
  let description = [{
    `result = grad if min < output < max else 0` (PyTorch's rule: no
    gradient at the bounds).
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$output,
                       F64Attr:$min, F64Attr:$max);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($grad)";
}

def Train_TanhOp : Train_UnaryOp<"tanh", "Hyperbolic tangent">;
def Train_TanhGradOp : Train_UnaryGradOp<"tanh_grad", "tanh", "output"> {
  let description = "`result = grad * (1 - output^2)`.";
}
def Train_SigmoidOp : Train_UnaryOp<"sigmoid", "Logistic sigmoid, 1 / (1 + exp(-x))">;
def Train_SigmoidGradOp
    : Train_UnaryGradOp<"sigmoid_grad", "sigmoid", "output"> {
  let description = "`result = grad * output * (1 - output)`.";
}
def Train_GeluOp : Train_UnaryOp<"gelu", "Gaussian error linear unit"> {
  let description = [{
    The exact form, `x * (1 + erf(x / sqrt(2))) / 2` (PyTorch's default).
  }];
}
def Train_GeluGradOp : Train_UnaryGradOp<"gelu_grad", "gelu", "input"> {
  let description = [{
    `result = grad * (Phi(x) + x * phi(x))`, with the normal distribution's
    CDF `Phi` and density `phi`.
  }];
}

// The functions of train.unary. Each is a pure function of the element (and
// `alpha`), differentiated from its input by train.unary_grad.
def Train_UnaryKind : I32EnumAttr<"UnaryKind", "an elementwise function", [
    I32EnumAttrCase<"exp", 0>, I32EnumAttrCase<"log", 1>,
    I32EnumAttrCase<"sqrt", 2>, I32EnumAttrCase<"rsqrt", 3>,
    I32EnumAttrCase<"abs", 4>, I32EnumAttrCase<"sin", 5>,
    I32EnumAttrCase<"cos", 6>, I32EnumAttrCase<"erf", 7>,
    I32EnumAttrCase<"pow", 8>, I32EnumAttrCase<"silu", 9>,
    I32EnumAttrCase<"hardswish", 10>, I32EnumAttrCase<"hardsigmoid", 11>,
    I32EnumAttrCase<"mish", 12>, I32EnumAttrCase<"softplus", 13>,
    I32EnumAttrCase<"leaky_relu", 14>, I32EnumAttrCase<"elu", 15>]> {
  let cppNamespace = "::mlir::remat::train";
  let genSpecializedAttr = 0;
}
def Train_UnaryKindAttr : EnumAttr<Train_Dialect, Train_UnaryKind, "unary">;

def Train_UnaryMathOp : Train_ComputeOp<"unary", [SameOperandsAndResultType]> {
  let summary = "An elementwise function of one tensor";
  let description = [{
    `result = f(input)` per element, `f` named by `kind`, with PyTorch's
    definitions: `exp`, `log`, `sqrt`, `rsqrt` (`1 / sqrt(x)`), `abs`,
    `sin`, `cos`, `erf`, `pow` (`x^alpha`), `silu` (`x * sigmoid(x)`),
    `hardswish` (`x * clamp(x + 3, 0, 6) / 6`), `hardsigmoid`
    (`clamp(x / 6 + 1/2, 0, 1)`), `mish` (`x * tanh(softplus(x))`),
    `softplus` (`log(1 + exp(x))`, `x` above 20), `leaky_relu` (`x`, or
    `alpha * x` below 0) and `elu` (`x`, or `alpha * (exp(x) - 1)` below 0).
    `alpha` is required by `pow`, `leaky_relu` and `elu` and refused by the
    others. The adjoint is `train.unary_grad` of the same kind, from the
    input.

    ```mlir
    %y = train.unary %x {kind = #train<unary silu>} : tensor<8x16xf32>
    %p = train.unary %x {kind = #train<unary pow>, alpha = 3.0 : f64} : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_UnaryKindAttr:$kind,
                       OptionalAttr<F64Attr>:$alpha);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Train_UnaryMathGradOp
    : Train_ComputeOp<"unary_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of train.unary, from its input";
  let description = [{
    `result = grad * f'(input)` for the `f` that `kind` and `alpha` name
    (see `train.unary`); where `f` has no derivative (`abs`, `leaky_relu`
    and `hardswish` at their kinks), PyTorch's one-sided choice.
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
                       Train_UnaryKindAttr:$kind, OptionalAttr<F64Attr>:$alpha);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($grad)";
  let hasVerifier = 1;
}

def Train_ReshapeOp : Train_ComputeOp<"reshape"> {
  let summary = "Same elements in row-major order, another shape";
  let description = [{
    Produces a fresh tensor (a copy), like every train op, so that the memory
    model stays one allocation per op.

    ```mlir
    %r = train.reshape %x : tensor<8x4x2x2xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_CastOp : Train_ComputeOp<"cast"> {
  let summary = "Converts a tensor to another float element type";
  let description = [{
    Narrowing rounds to nearest even (`arith.truncf`), widening is exact
    (`arith.extf`); the shape is unchanged. Mixed precision is written with
    explicit casts: every other op requires one element type across its float
    operands and results. The adjoint casts the gradient back to the
    operand's type. A cast to the operand's own type folds away.

    ```mlir
    %h = train.cast %x : tensor<32x64xf32> -> tensor<32x64xbf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Train_TransposeOp : Train_ComputeOp<"transpose"> {
  let summary = "Permutes dimensions";
  let description = [{
    `result[i_perm[0], ..., i_perm[r-1]] = input[i_0, ..., i_r-1]`: result
    dimension `k` is input dimension `permutation[k]`.

    ```mlir
    %t = train.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_BatchMatmulOp : Train_ComputeOp<"batch_matmul"> {
  let summary = "Batched matrix product with optional transposed operands";
  let description = [{
    `train.matmul` on every index of the leading (batch) dimension of rank-3
    operands.

    ```mlir
    %s = train.batch_matmul %q, %k {transpose_rhs} : tensor<8x16x32xf32>, tensor<8x16x32xf32> -> tensor<8x16x16xf32>
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

def Train_SoftmaxOp : Train_UnaryOp<"softmax",
    "Softmax over the last dimension"> {
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along the last dimension. An element
    equal to `-inf` (a masked position) gets probability 0.
  }];
  let hasVerifier = 1;
}
def Train_SoftmaxGradOp
    : Train_UnaryGradOp<"softmax_grad", "softmax", "output"> {
  let description = "`result = output * (grad - sum(grad * output))` per row.";
  let hasVerifier = 1;
}
def Train_LogSoftmaxOp : Train_UnaryOp<"log_softmax",
    "Logarithm of the softmax over the last dimension"> {
  let hasVerifier = 1;
}
def Train_LogSoftmaxGradOp
    : Train_UnaryGradOp<"log_softmax_grad", "log_softmax", "output"> {
  let description = "`result = grad - exp(output) * sum(grad)` per row.";
  let hasVerifier = 1;
}

def Train_CausalMaskOp : Train_UnaryOp<"causal_mask",
    "Sets the positions above the diagonal of the last two dims to -inf"> {
  let description = [{
    For attention scores `[..., T, T]`: `result[..., i, j] = -inf` where
    `j > i`, else the input. Its gradient is the same mask with zeros, done by
    `train.causal_mask_grad`.
  }];
  let hasVerifier = 1;
}
def Train_CausalMaskGradOp : Train_ComputeOp<"causal_mask_grad",
    [SameOperandsAndResultType]> {
  let summary = "Zeroes the gradient above the diagonal";
  let arguments = (ins Train_FloatTensor:$grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad)";
}

class Train_NormOp<string mnemonic, string what, string dims>
    : Train_ComputeOp<mnemonic, [AllTypesMatch<["input", "result"]>,
                                 AllTypesMatch<["weight", "bias"]>]> {
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
    : Train_ComputeOp<mnemonic, [AllTypesMatch<["grad", "input", "result"]>]> {
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
    : Train_ComputeOp<mnemonic, [AllTypesMatch<["grad", "input"]>],
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

def Train_CrossEntropyOp
    : Train_ComputeOp<"cross_entropy", [], ["getWorkspaceBytes"]> {
  let summary = "Mean cross-entropy of logits against class indices";
  let description = [{
    `mean_i(logsumexp(logits[i, :]) - logits[i, labels[i]])` for logits
    `[N, C]` and integer labels `[N]` in `[0, C)` (an index outside stops
    the step with an error).

    ```mlir
    %l = train.cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels);
  let results = (outs Train_ScalarTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_CrossEntropyGradOp : Train_ComputeOp<"cross_entropy_grad",
    [AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of cross_entropy with respect to the logits";
  let description = "`(softmax(logits) - onehot(labels)) / N * loss_grad`.";
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels,
                       Train_ScalarTensor:$loss_grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad attr-dict `:` type($logits) `,`
    type($labels) `,` type($loss_grad)
  }];
  let hasVerifier = 1;
}

def Train_EmbeddingOp : Train_ComputeOp<"embedding"> {
  let summary = "Rows of a table selected by integer indices";
  let description = [{
    `result[i..., d] = table[indices[i...], d]` for a table `[V, D]`; an
    index outside `[0, V)` stops the step with an error.

    ```mlir
    %e = train.embedding %table, %tokens : tensor<100x32xf32>, tensor<4x16xi64> -> tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$table, Train_IndexTensor:$indices);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_EmbeddingGradOp : Train_ComputeOp<"embedding_grad"> {
  let summary = "Gradient of embedding with respect to its table";
  let description = "Scatter-adds the gradient rows into a zero table.";
  let arguments = (ins Train_FloatTensor:$grad, Train_IndexTensor:$indices);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_DropoutOp : Train_ComputeOp<"dropout",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Zeroes elements with a probability, from a counter-based RNG";
  let description = [{
    Element `i` is kept when the first output of Philox4x32-10 with key
    `seed` and counter `(i, offset)` maps to a uniform number in `[0, 1)` at
    or above `probability`; kept elements are scaled by
    `1 / (1 - probability)`. The mask is a pure function of `(seed, offset,
    i)`, so a recomputed dropout reproduces it bit for bit, and the op is
    its own adjoint (the same mask applied to the gradient). Give each
    dropout of a step its own `offset`.

    ```mlir
    %d = train.dropout %x, %seed, %offset {probability = 0.1 : f64} : tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_SeedTensor:$seed,
                       Train_SeedTensor:$offset, F64Attr:$probability);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed `,` $offset attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Train_Conv2DOp : Train_ComputeOp<"conv2d"> {
  let summary = "2-D convolution (cross-correlation), NCHW";
  let description = [{
    Input `[N, C, H, W]`, weight `[F, C / groups, KH, KW]`, result
    `[N, F, OH, OW]` with `OH = (H + 2 pad - dil (KH - 1) - 1) / stride + 1`
    (likewise for W). Zero padding on both sides; `groups = C = F` is a
    depthwise convolution. A bias is a separate broadcast `train.add` of a
    `[F, 1, 1]` tensor.

    ```mlir
    %y = train.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$weight,
      DefaultValuedAttr<Train_Pair, "{1, 1}">:$strides,
      DefaultValuedAttr<Train_Pair, "{0, 0}">:$padding,
      DefaultValuedAttr<Train_Pair, "{1, 1}">:$dilation,
      DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_Conv2DGradInputOp : Train_ComputeOp<"conv2d_grad_input"> {
  let summary = "Gradient of conv2d with respect to its input";
  let description = "The attributes are the convolution's.";
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$weight,
      Train_Pair:$strides, Train_Pair:$padding, Train_Pair:$dilation,
      I64Attr:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_Conv2DGradWeightOp : Train_ComputeOp<"conv2d_grad_weight"> {
  let summary = "Gradient of conv2d with respect to its weight";
  let description = "The attributes are the convolution's.";
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
      Train_Pair:$strides, Train_Pair:$padding, Train_Pair:$dilation,
      I64Attr:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

class Train_PoolOp<string mnemonic, string what>
    : Train_ComputeOp<mnemonic> {
  let summary = what # " pooling over windows of H and W, NCHW";
  let arguments = (ins Train_FloatTensor:$input, Train_Pair:$kernel,
      DefaultValuedAttr<Train_Pair, "{1, 1}">:$strides,
      DefaultValuedAttr<Train_Pair, "{0, 0}">:$padding);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_MaxPool2DOp : Train_PoolOp<"max_pool2d", "Max"> {
  let description = [{
    Padding counts as `-inf`. Output size as for `train.conv2d`.

    ```mlir
    %p = train.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
    ```
  }];
}
def Train_AvgPool2DOp : Train_PoolOp<"avg_pool2d", "Average"> {
  let description = [{
    Divides by the window size, padding included (PyTorch's default
    `count_include_pad`).
  }];
}

def Train_MaxPool2DGradOp : Train_ComputeOp<"max_pool2d_grad",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Gradient of max_pool2d";
  let description = [{
    Each window's gradient goes to the first position (row-major) holding
    the window's maximum, as in PyTorch.
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
      Train_Pair:$kernel, Train_Pair:$strides, Train_Pair:$padding);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input)
  }];
  let hasVerifier = 1;
}

def Train_AvgPool2DGradOp : Train_ComputeOp<"avg_pool2d_grad"> {
  let summary = "Gradient of avg_pool2d";
  let arguments = (ins Train_FloatTensor:$grad, Train_Pair:$kernel,
      Train_Pair:$strides, Train_Pair:$padding);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Train_UpsampleNearest2DOp : Train_ComputeOp<"upsample_nearest2d"> {
  let summary = "Nearest-neighbour upsampling of H and W by an integer scale";
  let description = [{
    ```mlir
    %u = train.upsample_nearest2d %x {scale = 2} : tensor<8x16x8x8xf32> -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, I64Attr:$scale);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_UpsampleNearest2DGradOp
    : Train_ComputeOp<"upsample_nearest2d_grad"> {
  let summary = "Gradient of upsample_nearest2d: sums each scale x scale block";
  let arguments = (ins Train_FloatTensor:$grad, I64Attr:$scale);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Train_ConcatOp : Train_ComputeOp<"concat"> {
  let summary = "Joins tensors along one dimension";
  let description = [{
    ```mlir
    %c = train.concat %a, %b {axis = 1} : tensor<8x16x8x8xf32>, tensor<8x8x8x8xf32> -> tensor<8x24x8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_SliceOp : Train_ComputeOp<"slice"> {
  let summary = "A contiguous block of a tensor";
  let description = [{
    `result[i...] = input[offsets + i...]`; the sizes are the result's.

    ```mlir
    %s = train.slice %x {offsets = array<i64: 0, 16, 0, 0>} : tensor<8x24x8x8xf32> -> tensor<8x8x8x8xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_SliceGradOp : Train_ComputeOp<"slice_grad"> {
  let summary = "Gradient of slice: the block placed in zeros";
  let arguments = (ins Train_FloatTensor:$grad, DenseI64ArrayAttr:$offsets);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
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
