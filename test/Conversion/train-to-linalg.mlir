// RUN: remat-opt %s --split-input-file --convert-train-to-linalg --mlir-print-local-scope | FileCheck %s

// Tests that each train op becomes linalg ops whose only fresh tensor is the
// op's result, in the original order, keeping discardable marks.

// CHECK-LABEL: func.func @matmuls
// CHECK: %[[E:.+]] = tensor.empty() : tensor<8x2xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<8x2xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x2xf32>) outs(%[[Z]] : tensor<8x2xf32>)
// CHECK: linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins({{.+}}) -> tensor<4x2xf32>
// CHECK: linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] {train.recompute = 7 : i64} ins({{.+}}) -> tensor<8x4xf32>
func.func @matmuls(%x: tensor<8x4xf32>, %w: tensor<4x2xf32>, %dy: tensor<8x2xf32>)
    -> (tensor<8x2xf32>, tensor<4x2xf32>, tensor<8x4xf32>) {
  %y = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %dw = train.matmul %x, %dy {transpose_lhs} : tensor<8x4xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %dx = train.matmul %dy, %w {transpose_rhs, train.recompute = 7 : i64} : tensor<8x2xf32>, tensor<4x2xf32> -> tensor<8x4xf32>
  return %y, %dw, %dx : tensor<8x2xf32>, tensor<4x2xf32>, tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// The bias gradient reduces rows into a zero-filled vector.
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
// The loss reduces everything into a zero-filled scalar, scaled by 1/16.
// CHECK: arith.constant 6.250000e-02 : f32
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
// Its gradient is 2/16 (p - y) dl.
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]
func.func @elementwise(%x: tensor<8x2xf32>, %b: tensor<2xf32>, %y: tensor<8x2xf32>)
    -> (tensor<2xf32>, tensor<f32>, tensor<8x2xf32>) {
  %a = train.bias_add %x, %b : tensor<8x2xf32>, tensor<2xf32>
  %h = train.relu %a : tensor<8x2xf32>
  %g = train.relu_grad %y, %h : tensor<8x2xf32>
  %db = train.bias_grad %g : tensor<8x2xf32> -> tensor<2xf32>
  %l = train.mse_loss %h, %y : tensor<8x2xf32> -> tensor<f32>
  %dl = train.mse_loss_grad %h, %y, %l : tensor<8x2xf32>, tensor<f32>
  return %db, %l, %dl : tensor<2xf32>, tensor<f32>, tensor<8x2xf32>
}

// -----

// An update of a function argument writes into the argument (it is
// donated); an update of any other value gets a fresh result.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4xf64>, %[[G:[^:]+]]: tensor<4xf64>)
// CHECK: %[[U:.+]] = linalg.generic {{.+}} ins(%[[G]] : tensor<4xf64>) outs(%[[W]] : tensor<4xf64>)
// CHECK: %[[LR:.+]] = arith.constant 2.500000e-01 : f64
// CHECK: arith.mulf %{{.+}}, %[[LR]]
// CHECK: arith.subf
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4xf64>
// CHECK: linalg.generic {{.+}} ins(%[[U]], %[[G]] : tensor<4xf64>, tensor<4xf64>) outs(%[[E]] : tensor<4xf64>)
func.func @sgd(%w: tensor<4xf64>, %g: tensor<4xf64>) -> tensor<4xf64> {
  %u = train.sgd_update %w, %g {learning_rate = 0.25 : f64} : tensor<4xf64>
  %v = train.sgd_update %u, %g {learning_rate = 0.25 : f64} : tensor<4xf64>
  return %v : tensor<4xf64>
}
