//===- TrainElementwiseOps.td - Elementwise ops -----------*- tablegen -*-===//
//
// Elementwise arithmetic and functions, bias and casts, with their
// gradients.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINELEMENTWISEOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINELEMENTWISEOPS_TD

def Train_BiasAddOp
    : Train_ComputeOp<"bias_add", [AllTypesMatch<["input", "result"]>], [], 1> {
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
def Train_BiasGradOp : Train_GradientOp<"bias_grad"> {
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
def Train_ReluOp : Train_ComputeOp<"relu", [SameOperandsAndResultType], [], 1> {
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
def Train_ReluGradOp
    : Train_GradientOp<"relu_grad", [SameOperandsAndResultType], [], 1> {
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
    : Train_ComputeOp<mnemonic, [], [], 1> {
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
def Train_MaximumOp : Train_BroadcastBinaryOp<"maximum", "maximum">;
def Train_MinimumOp : Train_BroadcastBinaryOp<"minimum", "minimum">;
def Train_ExtremumGradOp
    : Train_GradientOp<"extremum_grad", [AllTypesMatch<["grad", "result"]>], [],
                       2> {
  let summary = "Gradient of maximum or minimum with respect to one operand";
  let description = [{
    For `train.maximum`, `result = 0` where `lhs < rhs`, `grad / 2` where
    `lhs == rhs` and `grad` elsewhere (NaN included), with `lhs` and `rhs`
    broadcast to the shape of `grad`: PyTorch's rule, which splits a tie.
    With `minimum`, `lhs > rhs` gives 0. The gradient with respect to `rhs`
    swaps the operands; `train.sum_to` then reduces each to its operand's
    shape.
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$lhs,
                       Train_FloatTensor:$rhs, UnitAttr:$minimum);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs attr-dict `:` type($grad) `,` type($lhs) `,`
    type($rhs)
  }];
  let hasVerifier = 1;
}
def Train_ComparePredicate
    : I32EnumAttr<"ComparePredicate", "an elementwise comparison", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::remat::train";
  let genSpecializedAttr = 0;
}
def Train_ComparePredicateAttr
    : EnumAttr<Train_Dialect, Train_ComparePredicate, "cmp">;
def Train_CompareOp : Train_ComputeOp<"compare", [], [], 1> {
  let summary = "An elementwise comparison as a 0/1 mask";
  let description = [{
    `result = 1.0` where `lhs <predicate> rhs` holds and `0.0` elsewhere
    (NaN compares unequal to everything, as in PyTorch), operands broadcast
    as in `train.add`. The operands are float tensors or integer tensors
    (token ids) of one element type; the mask has a float type. A mask has
    no gradient: its adjoint gives none to either operand.

    ```mlir
    %m = train.compare %ids, %pad {predicate = #train<cmp eq>} : tensor<4x16xi64>, tensor<i64> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$lhs,
                       AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$rhs,
                       Train_ComparePredicateAttr:$predicate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}
def Train_WhereOp : Train_ComputeOp<"where", [], [], 1> {
  let summary = "Picks from two tensors by a mask";
  let description = [{
    `result = condition != 0 ? lhs : rhs` per element (`torch.where`), the
    three operands broadcast as in `train.add`. The element not picked is
    never read, so an infinity or NaN there does not reach the result. The
    adjoint sends the gradient to `lhs` where the condition holds and to
    `rhs` elsewhere (a `train.where` against zero); the condition gets
    none.

    ```mlir
    %y = train.where %m, %fill, %x : tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$condition, Train_FloatTensor:$lhs,
                       Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,`
    type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}
def Train_DivRhsGradOp
    : Train_GradientOp<"div_rhs_grad", [AllTypesMatch<["grad", "result"]>], [],
                       4> {
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
class Train_UnaryOp<string mnemonic, string what, int flopsPerElement = 0>
    : Train_ComputeOp<mnemonic, [SameOperandsAndResultType], [],
                      flopsPerElement> {
  let summary = what;
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
class Train_UnaryGradOp<string mnemonic, string of, string saved,
                        int flopsPerElement = 0>
    : Train_GradientOp<mnemonic, [SameOperandsAndResultType], [],
                       flopsPerElement> {
  let summary = "Gradient of " # of # ", from its " # saved;
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$saved);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $saved attr-dict `:` type($grad)";
}
def Train_ClampOp
    : Train_ComputeOp<"clamp", [SameOperandsAndResultType], [], 2> {
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
def Train_ClampGradOp
    : Train_GradientOp<"clamp_grad", [SameOperandsAndResultType], [], 2> {
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
def Train_TanhOp : Train_UnaryOp<"tanh", "Hyperbolic tangent", 4>;
def Train_TanhGradOp : Train_UnaryGradOp<"tanh_grad", "tanh", "output", 3> {
  let description = "`result = grad * (1 - output^2)`.";
}
def Train_SigmoidOp
    : Train_UnaryOp<"sigmoid", "Logistic sigmoid, 1 / (1 + exp(-x))", 4>;
def Train_SigmoidGradOp
    : Train_UnaryGradOp<"sigmoid_grad", "sigmoid", "output", 3> {
  let description = "`result = grad * output * (1 - output)`.";
}
def Train_GeluOp : Train_UnaryOp<"gelu", "Gaussian error linear unit", 8> {
  let description = [{
    The exact form, `x * (1 + erf(x / sqrt(2))) / 2` (PyTorch's default).
  }];
}
def Train_GeluGradOp : Train_UnaryGradOp<"gelu_grad", "gelu", "input", 12> {
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
    : Train_GradientOp<"unary_grad", [SameOperandsAndResultType]> {
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
def Train_StopGradientOp
    : Train_ComputeOp<"stop_gradient", [SameOperandsAndResultType], [], 1> {
  let summary = "The operand's values, through which no gradient flows";
  let description = [{
    A copy of the operand whose adjoint gives the operand no gradient
    (PyTorch's `detach`).

    ```mlir
    %c = train.stop_gradient %m : tensor<8x1xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
def Train_CastOp : Train_ComputeOp<"cast", [], [], 1> {
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

#endif // REMAT_DIALECT_TRAIN_IR_TRAINELEMENTWISEOPS_TD
