// RUN: remat-opt %s | remat-opt | FileCheck %s
// RUN: remat-opt %s --mlir-print-op-generic | remat-opt | FileCheck %s

// Tests that train.unary and train.unary_grad round-trip with their kind
// and alpha, and that autodiff gives each train.unary its gradient op.

// CHECK-LABEL: func.func @kinds
func.func @kinds(%x: tensor<4x6xf32>, %g: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  // CHECK-NEXT: train.unary %{{.+}} {kind = #train<unary silu>} : tensor<4x6xf32>
  %0 = train.unary %x {kind = #train<unary silu>} : tensor<4x6xf32>
  // CHECK-NEXT: train.unary %{{.+}} {alpha = 2.500000e+00 : f64, kind = #train<unary pow>} : tensor<4x6xf32>
  %1 = train.unary %0 {kind = #train<unary pow>, alpha = 2.5 : f64} : tensor<4x6xf32>
  // CHECK-NEXT: train.unary_grad %{{.+}}, %{{.+}} {alpha = 1.000000e-01 : f64, kind = #train<unary leaky_relu>} : tensor<4x6xf32>
  %2 = train.unary_grad %g, %x {kind = #train<unary leaky_relu>, alpha = 0.1 : f64} : tensor<4x6xf32>
  return %0, %1, %2 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
