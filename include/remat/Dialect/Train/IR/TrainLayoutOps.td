//===- TrainLayoutOps.td - Reductions, layout, pooling ----*- tablegen -*-===//
//
// Reductions, broadcasts, reshapes, transposes, concatenation and
// slicing, pooling and upsampling, with their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINLAYOUTOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINLAYOUTOPS_TD

def Train_SumToOp : Train_GradientOp<"sum_to"> {
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
// The adjoint splits the gradient evenly among the elements equal to the
// extremum (PyTorch's amax and amin), built from train.compare, train.sum
// and broadcasts.
def Train_AmaxOp : Train_ReduceOp<"amax", "maximum">;
def Train_AminOp : Train_ReduceOp<"amin", "minimum">;
def Train_BroadcastOp : Train_ComputeOp<"broadcast", [], [], 1> {
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
def Train_ReshapeOp
    : Train_ComputeOp<"reshape", [AllElementTypesMatch<["input", "result"]>],
                      [], 1> {
  let summary = "Same elements in row-major order, another shape";
  let description = [{
    Produces a fresh tensor (a copy), like every train op, so that the memory
    model stays one allocation per op. Integer tensors (token ids, labels)
    reshape too; they have no gradient.

    ```mlir
    %r = train.reshape %x : tensor<8x4x2x2xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$input);
  let results = (outs AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}
def Train_TransposeOp : Train_ComputeOp<"transpose", [], [], 1> {
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
def Train_MaxPool2DGradOp : Train_GradientOp<"max_pool2d_grad",
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
def Train_AvgPool2DGradOp : Train_GradientOp<"avg_pool2d_grad"> {
  let summary = "Gradient of avg_pool2d";
  let arguments = (ins Train_FloatTensor:$grad, Train_Pair:$kernel,
      Train_Pair:$strides, Train_Pair:$padding);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}
def Train_UpsampleNearest2DOp
    : Train_ComputeOp<"upsample_nearest2d", [], [], 1> {
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
    : Train_GradientOp<"upsample_nearest2d_grad"> {
  let summary = "Gradient of upsample_nearest2d: sums each scale x scale block";
  let arguments = (ins Train_FloatTensor:$grad, I64Attr:$scale);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}
def Train_ConcatOp : Train_ComputeOp<"concat", [], [], 1> {
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
def Train_SliceOp
    : Train_ComputeOp<"slice", [AllElementTypesMatch<["input", "result"]>], [],
                      1> {
  let summary = "A contiguous block of a tensor";
  let description = [{
    `result[i...] = input[offsets + i...]`; the sizes are the result's.
    Integer tensors slice too; they have no gradient.

    ```mlir
    %s = train.slice %x {offsets = array<i64: 0, 16, 0, 0>} : tensor<8x24x8x8xf32> -> tensor<8x8x8x8xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$input,
                       DenseI64ArrayAttr:$offsets);
  let results = (outs AnyTypeOf<[Train_FloatTensor, Train_IndexTensor]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}
def Train_SliceGradOp : Train_GradientOp<"slice_grad", [], [], 1> {
  let summary = "Gradient of slice: the block placed in zeros";
  let arguments = (ins Train_FloatTensor:$grad, DenseI64ArrayAttr:$offsets);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

#endif // REMAT_DIALECT_TRAIN_IR_TRAINLAYOUTOPS_TD
