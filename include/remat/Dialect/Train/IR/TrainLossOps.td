//===- TrainLossOps.td - Losses, embeddings, dropout, SGD -*- tablegen -*-===//
//
// Losses, embedding lookups, dropout and the optimizer update.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD
#define REMAT_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD

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
def Train_CrossEntropyGradOp : Train_GradientOp<"cross_entropy_grad",
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
def Train_EmbeddingOp : Train_ComputeOp<"embedding", [], [], 1> {
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
def Train_EmbeddingGradOp : Train_GradientOp<"embedding_grad"> {
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
def Train_DropoutOp
    : Train_ComputeOp<"dropout", [AllTypesMatch<["input", "result"]>], [], 12> {
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
def Train_MseLossGradOp : Train_GradientOp<"mse_loss_grad",
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
#endif // REMAT_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD
