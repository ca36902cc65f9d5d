// RUN: remat-opt %s --convert-train-to-linalg | FileCheck %s

// Reductions whose rows run in parallel leave per-row partial results in
// scratch of exactly the size the ops report as workspace
// (getWorkspaceBytes), allocated after the result so that both are live
// together, as the memory model counts them.

// Cross-entropy: one loss term per row (4 rows x 4 bytes), then their sum
// in row order into the result.
// CHECK-LABEL: func.func @ce
// CHECK: %[[OUT:.+]] = tensor.empty() : tensor<f32>
// CHECK-NEXT: %[[TERMS:.+]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[ROWS:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[TERMS]]) -> (tensor<4xf32>)
// CHECK: } {remat.parallel}
// CHECK: %[[INIT:.+]] = tensor.insert %{{.+}} into %[[OUT]][] : tensor<f32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[INIT]]) -> (tensor<f32>)
// CHECK: tensor.extract %[[ROWS]]
// CHECK-NOT: remat.parallel
// CHECK: return
func.func @ce(%logits: tensor<4x5xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %l = train.cross_entropy %logits, %labels : tensor<4x5xf32>, tensor<4xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// Layer norm's weight gradient: each row's mean and 1/std (4 rows x 2 x 4
// bytes), then one sum over rows per weight element, both parallel.
// CHECK-LABEL: func.func @ln_weight
// CHECK: %[[OUT:.+]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT: %[[STATS:.+]] = tensor.empty() : tensor<4x2xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[STATS]]) -> (tensor<4x2xf32>)
// CHECK: } {remat.parallel}
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[OUT]]) -> (tensor<8xf32>)
// CHECK: } {remat.parallel}
// CHECK: return
func.func @ln_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<8xf32> {
  %g = train.layer_norm_grad_weight %dy, %x : tensor<4x8xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// Batch norm's weight gradient sums within its channel: no scratch.
// CHECK-LABEL: func.func @bn_weight
// CHECK-NOT: tensor<{{.*}}x2xf32>
// CHECK: return
func.func @bn_weight(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>) -> tensor<3xf32> {
  %g = train.batch_norm_grad_weight %dy, %x : tensor<2x3x4x4xf32> -> tensor<3xf32>
  return %g : tensor<3xf32>
}
