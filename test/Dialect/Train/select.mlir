// RUN: remat-opt %s | remat-opt | FileCheck %s

// Tests that the comparison, selection, extremum and stop_gradient ops
// round-trip.

// CHECK-LABEL: func.func @ops
// CHECK: train.compare %{{.+}}, %{{.+}} {predicate = #train<cmp eq>} : tensor<4x16xi64>, tensor<i64> -> tensor<4x16xf32>
// CHECK: train.compare %{{.+}}, %{{.+}} {predicate = #train<cmp ge>} : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK: train.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK: train.maximum %{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK: train.minimum %{{.+}}, %{{.+}} : tensor<4x16xf32>
// CHECK: train.extremum_grad %{{.+}}, %{{.+}}, %{{.+}} {minimum} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>
// CHECK: train.amax %{{.+}} {dims = array<i64: 1>} : tensor<4x16xf32> -> tensor<4xf32>
// CHECK: train.amin %{{.+}} {dims = array<i64: 0, 1>} : tensor<4x16xf32> -> tensor<f32>
// CHECK: train.stop_gradient %{{.+}} : tensor<4x16xf32>
func.func @ops(%ids: tensor<4x16xi64>, %pad: tensor<i64>, %x: tensor<4x16xf32>,
               %b: tensor<16xf32>, %fill: tensor<f32>) {
  %m = train.compare %ids, %pad {predicate = #train<cmp eq>} : tensor<4x16xi64>, tensor<i64> -> tensor<4x16xf32>
  %n = train.compare %x, %b {predicate = #train<cmp ge>} : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %w = train.where %m, %fill, %x : tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %hi = train.maximum %x, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %lo = train.minimum %x, %w : tensor<4x16xf32>
  %g = train.extremum_grad %lo, %x, %b {minimum} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>
  %r = train.amax %x {dims = array<i64: 1>} : tensor<4x16xf32> -> tensor<4xf32>
  %s = train.amin %x {dims = array<i64: 0, 1>} : tensor<4x16xf32> -> tensor<f32>
  %d = train.stop_gradient %x : tensor<4x16xf32>
  return
}
