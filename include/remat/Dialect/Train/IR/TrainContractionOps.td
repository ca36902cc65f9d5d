//===- TrainContractionOps.td - Contractions --------------*- tablegen -*-===//
//
// Matrix products and convolutions with their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINCONTRACTIONOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINCONTRACTIONOPS_TD

def Train_MatmulOp : Train_ComputeOp<"matmul", [], ["isContraction"]> {
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
def Train_BatchMatmulOp
    : Train_ComputeOp<"batch_matmul", [], ["isContraction"]> {
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
def Train_Conv2DOp : Train_ComputeOp<"conv2d", [],
                                     ["isContraction", "getWorkspaceBytes"]> {
  let summary = "2-D convolution (cross-correlation), NCHW";
  let description = [{
    Input `[N, C, H, W]`, weight `[F, C / groups, KH, KW]`, result
    `[N, F, OH, OW]` with `OH = (H + 2 pad - dil (KH - 1) - 1) / stride + 1`
    (likewise for W). Zero padding on both sides; `groups = C = F` is a
    depthwise convolution. A bias is a separate broadcast `train.add` of a
    `[F, 1, 1]` tensor. Its workspace is the `remat.workspace_bytes`
    attribute the CPU target's `remat-conv-library` sets (oneDNN's scratch),
    else none; likewise for both gradients.

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
def Train_Conv2DGradInputOp
    : Train_GradientOp<"conv2d_grad_input", [],
                       ["isContraction", "getWorkspaceBytes"]> {
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
def Train_Conv2DGradWeightOp
    : Train_GradientOp<"conv2d_grad_weight", [],
                       ["isContraction", "getWorkspaceBytes"]> {
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

#endif // REMAT_DIALECT_TRAIN_IR_TRAINCONTRACTIONOPS_TD
