// RUN: remat-opt %s | remat-opt | FileCheck %s
// RUN: remat-opt %s --mlir-print-op-generic | remat-opt | FileCheck %s

// Tests that every train op and the function attributes round-trip.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: train.name = "w", train.role = #train<role param>
// CHECK-SAME: train.role = #train<role input>
// CHECK-SAME: train.role = #train<role label>
func.func @forward(%w: tensor<4x2xf32> {train.role = #train<role param>, train.name = "w"},
                   %b: tensor<2xf32> {train.role = #train<role param>},
                   %x: tensor<8x4xf32> {train.role = #train<role input>},
                   %y: tensor<8x2xf32> {train.role = #train<role label>}) -> tensor<f32> {
  // CHECK: %[[M:.+]] = train.matmul %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %m = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  // CHECK: %[[A:.+]] = train.bias_add %[[M]], %{{.+}} : tensor<8x2xf32>, tensor<2xf32>
  %a = train.bias_add %m, %b : tensor<8x2xf32>, tensor<2xf32>
  // CHECK: %[[H:.+]] = train.relu %[[A]] : tensor<8x2xf32>
  %h = train.relu %a : tensor<8x2xf32>
  // CHECK: %[[S:.+]] = train.add %[[H]], %[[A]] : tensor<8x2xf32>
  %s = train.add %h, %a : tensor<8x2xf32>
  // CHECK: train.mse_loss %[[S]], %{{.+}} : tensor<8x2xf32> -> tensor<f32>
  %l = train.mse_loss %s, %y : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @gradients
// CHECK-SAME: train.role = #train<role loss>
// CHECK-SAME: train.param = 0 : i64, train.role = #train<role updated_param>
// CHECK-SAME: attributes {train.step}
func.func @gradients(%w: tensor<4x2xf64>, %x: tensor<8x4xf64>,
                     %dy: tensor<8x2xf64>, %dl: tensor<f64>)
    -> (tensor<f64> {train.role = #train<role loss>},
        tensor<4x2xf64> {train.role = #train<role updated_param>, train.param = 0}) attributes {train.step} {
  // CHECK: train.matmul %{{.+}}, %{{.+}} {transpose_lhs} : tensor<8x4xf64>, tensor<8x2xf64> -> tensor<4x2xf64>
  %dw = train.matmul %x, %dy {transpose_lhs} : tensor<8x4xf64>, tensor<8x2xf64> -> tensor<4x2xf64>
  // CHECK: train.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<8x2xf64>, tensor<4x2xf64> -> tensor<8x4xf64>
  %dx = train.matmul %dy, %w {transpose_rhs} : tensor<8x2xf64>, tensor<4x2xf64> -> tensor<8x4xf64>
  // CHECK: train.matmul %{{.+}}, %{{.+}} {transpose_lhs, transpose_rhs} : tensor<4x2xf64>, tensor<8x4xf64> -> tensor<2x8xf64>
  %t = train.matmul %w, %x {transpose_lhs, transpose_rhs} : tensor<4x2xf64>, tensor<8x4xf64> -> tensor<2x8xf64>
  // CHECK: train.bias_grad %{{.+}} : tensor<8x2xf64> -> tensor<2xf64>
  %db = train.bias_grad %dy : tensor<8x2xf64> -> tensor<2xf64>
  // CHECK: train.relu_grad %{{.+}}, %{{.+}} : tensor<8x2xf64>
  %dr = train.relu_grad %dy, %dy : tensor<8x2xf64>
  // CHECK: train.mse_loss_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<8x2xf64>, tensor<f64>
  %dp = train.mse_loss_grad %dr, %dy, %dl : tensor<8x2xf64>, tensor<f64>
  // CHECK: train.sgd_update %{{.+}}, %{{.+}} {learning_rate = 1.000000e-01 : f64} : tensor<4x2xf64>
  %w1 = train.sgd_update %w, %dw {learning_rate = 0.1 : f64} : tensor<4x2xf64>
  // CHECK: train.relu %{{.+}} {train.recompute = 3 : i64} : tensor<8x2xf64>
  %r = train.relu %dp {train.recompute = 3 : i64} : tensor<8x2xf64>
  return %dl, %w1 : tensor<f64>, tensor<4x2xf64>
}
