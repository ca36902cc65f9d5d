// RUN: remat-opt %s --split-input-file --train-autodiff | FileCheck %s
// RUN: remat-opt %s --split-input-file --train-autodiff="learning-rate=0.5 return-gradients" | FileCheck %s --check-prefix=GRADS

// Tests that train-autodiff appends the backward pass through each op's
// adjoint and updates every parameter as soon as its gradient is complete.

// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: -> (tensor<f32> {train.role = #train<role loss>}, tensor<4x4xf32> {train.param = 0 : i64, train.role = #train<role updated_param>}, tensor<4xf32> {train.param = 1 : i64, train.role = #train<role updated_param>}, tensor<4x2xf32> {train.param = 2 : i64, train.role = #train<role updated_param>})
// CHECK-SAME: attributes {train.step}
// CHECK: %[[M0:.+]] = train.matmul %[[X:.+]], %[[W0:.+]] :
// CHECK: %[[A0:.+]] = train.bias_add %[[M0]], %[[B0:.+]] :
// CHECK: %[[H0:.+]] = train.relu %[[A0]]
// CHECK: %[[P:.+]] = train.matmul %[[H0]], %[[W1:.+]] :
// CHECK: %[[L:.+]] = train.mse_loss %[[P]], %[[Y:.+]] :
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DP:.+]] = train.mse_loss_grad %[[P]], %[[Y]], %[[ONE]]
// The weight gradient comes first so the activation can die before dx.
// CHECK: %[[DW1:.+]] = train.matmul %[[H0]], %[[DP]] {transpose_lhs}
// CHECK: %[[DH0:.+]] = train.matmul %[[DP]], %[[W1]] {transpose_rhs}
// CHECK: %[[U2:.+]] = train.sgd_update %[[W1]], %[[DW1]] {learning_rate = 1.000000e-02 : f64}
// CHECK: %[[DA0:.+]] = train.relu_grad %[[DH0]], %[[H0]]
// CHECK: %[[DB0:.+]] = train.bias_grad %[[DA0]]
// CHECK: %[[U1:.+]] = train.sgd_update %[[B0]], %[[DB0]]
// CHECK: %[[DW0:.+]] = train.matmul %[[X]], %[[DA0]] {transpose_lhs}
// CHECK-NOT: train.matmul %[[DA0]], %[[W0]]
// CHECK: %[[U0:.+]] = train.sgd_update %[[W0]], %[[DW0]]
// CHECK: return %[[L]], %[[U0]], %[[U1]], %[[U2]]

// GRADS-LABEL: func.func @two_layers
// GRADS-SAME: tensor<4x4xf32> {train.param = 0 : i64, train.role = #train<role grad>}
// GRADS: train.sgd_update {{.+}} {learning_rate = 5.000000e-01 : f64}
// GRADS: return %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[G0:.+]], %[[G1:.+]], %[[G2:.+]] :
func.func @two_layers(%w0: tensor<4x4xf32> {train.role = #train<role param>},
                      %b0: tensor<4xf32> {train.role = #train<role param>},
                      %w1: tensor<4x2xf32> {train.role = #train<role param>},
                      %x: tensor<8x4xf32> {train.role = #train<role input>},
                      %y: tensor<8x2xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %m0 = train.matmul %x, %w0 : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %a0 = train.bias_add %m0, %b0 : tensor<8x4xf32>, tensor<4xf32>
  %h0 = train.relu %a0 : tensor<8x4xf32>
  %p = train.matmul %h0, %w1 : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %l = train.mse_loss %p, %y : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value with two users gets the sum of both gradients.
// CHECK-LABEL: func.func @shared_value
// CHECK: %[[H:.+]] = train.relu
// CHECK: %[[S:.+]] = train.add %[[H]], %[[H]]
// CHECK: %[[G:.+]] = train.mse_loss_grad %[[S]]
// CHECK: %[[ACC:.+]] = train.add %[[G]], %[[G]]
// CHECK: train.relu_grad %[[ACC]], %[[H]]
func.func @shared_value(%w: tensor<4x4xf32> {train.role = #train<role param>},
                        %y: tensor<4x4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.relu %w : tensor<4x4xf32>
  %s = train.add %h, %h : tensor<4x4xf32>
  %l = train.mse_loss %s, %y : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Functions without roles are not models, and steps are not differentiated
// twice.
// CHECK-LABEL: func.func @not_a_model
// CHECK-NOT: train.sgd_update
// CHECK: return
func.func @not_a_model(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = train.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
