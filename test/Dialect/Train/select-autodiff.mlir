// RUN: remat-opt %s --train-autodiff | FileCheck %s

// Tests the adjoints: a mask gets no gradient, train.where routes the
// gradient by its condition, maximum and minimum split ties through
// train.extremum_grad, amax spreads it evenly over the maxima, and nothing
// flows through train.stop_gradient.

// CHECK-LABEL: func.func @where
// CHECK: %[[M:.+]] = train.compare %[[IDS:.+]], %{{.+}} {predicate = #train<cmp eq>}
// CHECK: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: train.where %[[M]], %{{.+}}, %[[Z]]
// CHECK: %[[DX:.+]] = train.where %[[M]], %[[Z]], %{{.+}}
// CHECK-NOT: train.compare
// CHECK: return
func.func @where(%w: tensor<4x3xf32> {train.role = #train<role param>}, %f: tensor<f32> {train.role = #train<role param>},
                 %x: tensor<8x4xf32> {train.role = #train<role input>}, %ids: tensor<8x3xi64> {train.role = #train<role input>},
                 %y: tensor<8x3xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %pad = arith.constant dense<0> : tensor<i64>
  %m = train.compare %ids, %pad {predicate = #train<cmp eq>} : tensor<8x3xi64>, tensor<i64> -> tensor<8x3xf32>
  %a = train.where %m, %f, %h : tensor<8x3xf32>, tensor<f32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %l = train.mse_loss %a, %y : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @extrema
// CHECK: %[[H:.+]] = train.matmul
// CHECK: %[[MX:.+]] = train.maximum %[[H]], %[[B:[^ ]+]] :
// CHECK: %[[AM:.+]] = train.amax %[[MX]] {dims = array<i64: 1>}
// CHECK: %[[WIDE:.+]] = train.broadcast %[[AM]] {dims = array<i64: 1>
// CHECK: %[[EQ:.+]] = train.compare %[[MX]], %[[WIDE]] {predicate = #train<cmp eq>}
// CHECK: %[[CNT:.+]] = train.sum %[[EQ]] {dims = array<i64: 1>}
// CHECK: %[[SHARE:.+]] = train.div %{{.+}}, %[[CNT]]
// CHECK: %[[SPREAD:.+]] = train.broadcast %[[SHARE]]
// CHECK: %[[G:.+]] = train.mul %[[EQ]], %[[SPREAD]]
// CHECK: train.extremum_grad %[[G]], %[[H]], %[[B]] :
// CHECK: %[[GB:.+]] = train.extremum_grad %[[G]], %[[B]], %[[H]] :
// CHECK: train.sum_to %[[GB]]
func.func @extrema(%w: tensor<4x3xf32> {train.role = #train<role param>}, %b: tensor<3xf32> {train.role = #train<role param>},
                   %x: tensor<8x4xf32> {train.role = #train<role input>},
                   %y: tensor<8xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %mx = train.maximum %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %am = train.amax %mx {dims = array<i64: 1>} : tensor<8x3xf32> -> tensor<8xf32>
  %l = train.mse_loss %am, %y : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @stop
// CHECK: %[[H:.+]] = train.matmul
// CHECK: %[[S:.+]] = train.stop_gradient %[[H]]
// CHECK: %[[P:.+]] = train.mul %[[H]], %[[S]]
// CHECK: %[[G:.+]] = train.mse_loss_grad %[[P]]
// CHECK-NEXT: %[[DH:.+]] = train.mul %[[G]], %[[S]]
// CHECK-NOT: train.mul %[[G]], %[[H]]
// CHECK: train.matmul %[[X:.+]], %[[DH]] {transpose_lhs}
func.func @stop(%w: tensor<4x3xf32> {train.role = #train<role param>}, %x: tensor<8x4xf32> {train.role = #train<role input>},
                %y: tensor<8x3xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %s = train.stop_gradient %h : tensor<8x3xf32>
  %p = train.mul %h, %s : tensor<8x3xf32>
  %l = train.mse_loss %p, %y : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
