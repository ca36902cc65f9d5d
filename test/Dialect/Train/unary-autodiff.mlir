// RUN: remat-opt %s --train-autodiff | FileCheck %s

// Tests that autodiff gives train.unary its gradient op, from the input,
// with the same kind and alpha.

// CHECK-LABEL: func.func @f
// CHECK: %[[Y:.+]] = train.unary %[[X:.+]] {alpha = 1.000000e-01 : f64, kind = #train<unary leaky_relu>}
// CHECK: train.unary_grad %{{.+}}, %[[X]] {alpha = 1.000000e-01 : f64, kind = #train<unary leaky_relu>}
func.func @f(%w: tensor<4x3xf32> {train.role = #train<role param>}, %x: tensor<8x4xf32> {train.role = #train<role input>},
             %y: tensor<8x3xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %a = train.unary %h {kind = #train<unary leaky_relu>, alpha = 0.1 : f64} : tensor<8x3xf32>
  %l = train.mse_loss %a, %y : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
