// RUN: remat-opt %s --convert-train-to-linalg --mlir-print-local-scope | FileCheck %s

// Optimizer updates of donated arguments write the argument's buffer (outs
// = the argument), reading the 0-d learning rate and step count through an
// empty indexing map.

// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<4x2xf32>, %[[G:[a-z0-9]+]]: tensor<4x2xf32>, %[[M:[a-z0-9]+]]: tensor<4x2xf32>, %[[V:[a-z0-9]+]]: tensor<4x2xf32>, %[[LR:[a-z0-9]+]]: tensor<f32>, %[[T:[a-z0-9]+]]: tensor<i64>)
// CHECK: %[[M1:.+]] = linalg.generic {{.*}} ins(%[[G]], %[[W]] : tensor<4x2xf32>, tensor<4x2xf32>) outs(%[[M]] : tensor<4x2xf32>)
// CHECK: %[[V1:.+]] = linalg.generic {{.*}} ins(%[[G]], %[[W]] : tensor<4x2xf32>, tensor<4x2xf32>) outs(%[[V]] : tensor<4x2xf32>)
// CHECK:   arith.mulf
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%[[M1]], %[[V1]], %[[T]], %[[LR]] : {{.*}}) outs(%[[W]] : tensor<4x2xf32>)
// CHECK:   arith.sitofp
// CHECK:   math.powf
// CHECK:   math.sqrt
func.func @adam(%w: tensor<4x2xf32>, %g: tensor<4x2xf32>, %m: tensor<4x2xf32>,
                %v: tensor<4x2xf32>, %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %m1 = train.adam_moment %m, %g, %w {beta = 0.9 : f64} : tensor<4x2xf32>
  %v1 = train.adam_moment %v, %g, %w {beta = 0.999 : f64, square} : tensor<4x2xf32>
  %w1 = train.adam_update %w, %m1, %v1, %t lr(%lr : tensor<f32>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4x2xf32>
  return %w1, %m1, %v1 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// The momentum buffer is the gradient at step 1 (a select on the count).
// CHECK-LABEL: func.func @momentum
// CHECK: linalg.generic {{.*}} outs(%arg0 : tensor<4xf32>)
// CHECK:   arith.cmpi sle
// CHECK:   arith.select
// CHECK: linalg.generic {{.*}} outs(%arg2 : tensor<4xf32>)
func.func @momentum(%b: tensor<4xf32>, %g: tensor<4xf32>, %w: tensor<4xf32>,
                    %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %b1 = train.momentum_update %b, %g, %w, %t {momentum = 0.9 : f64} : tensor<4xf32>
  %w1 = train.sgd_update %w, %g buffer(%b1 : tensor<4xf32>) {learning_rate = 0.1 : f64, momentum = 0.9 : f64} : tensor<4xf32>
  return %b1, %w1 : tensor<4xf32>, tensor<4xf32>
}
