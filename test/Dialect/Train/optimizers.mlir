// RUN: remat-opt %s | remat-opt | FileCheck %s

// The optimizer updates print and parse back.
// CHECK-LABEL: func.func @updates
func.func @updates(%w: tensor<4x2xf32>, %g: tensor<4x2xf32>,
                   %b: tensor<4x2xf32>, %m: tensor<4x2xf32>,
                   %v: tensor<4x2xf32>, %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  // CHECK: train.momentum_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {dampening = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64} : tensor<4x2xf32>
  %b1 = train.momentum_update %b, %g, %w, %t {momentum = 0.9 : f64, dampening = 0.1 : f64} : tensor<4x2xf32>
  // CHECK: train.sgd_update %{{.+}}, %{{.+}} lr(%{{.+}} : tensor<f32>) buffer(%{{.+}} : tensor<4x2xf32>) {momentum = 9.000000e-01 : f64, nesterov} : tensor<4x2xf32>
  %w1 = train.sgd_update %w, %g lr(%lr : tensor<f32>) buffer(%b1 : tensor<4x2xf32>) {momentum = 0.9 : f64, nesterov} : tensor<4x2xf32>
  // CHECK: train.adam_moment %{{.+}}, %{{.+}}, %{{.+}} {beta = 0.99899999999999999 : f64, square} : tensor<4x2xf32>
  %v1 = train.adam_moment %v, %g, %w {beta = 0.999 : f64, square} : tensor<4x2xf32>
  // CHECK: train.adam_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} lr(%{{.+}} : tensor<f32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64} : tensor<4x2xf32>
  %w2 = train.adam_update %w1, %m, %v1, %t lr(%lr : tensor<f32>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64} : tensor<4x2xf32>
  return %w2, %b1, %v1 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
