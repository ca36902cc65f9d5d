// RUN: remat-opt %s --split-input-file --pass-pipeline="builtin.module(convert-train-to-linalg,remat-bufferize-pipeline,func.func(remat-conv-to-runtime))" | FileCheck %s

// Tests that the loop nests of the three convolution ops become calls to the
// runtime's kernels, with the kind and window the runtime expects (strides,
// padding, dilation, each h then w, then groups) and the operands in the
// order it reads them; and that nests it cannot take stay as loops.

// CHECK-DAG: func.func private @remat_rt_conv2d_f32(i32, i64, i64, i64, i64, i64, i64, i64, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.+]]: memref<2x4x6x6xf32>, %[[W:.+]]: memref<6x2x3x3xf32>)
// CHECK-DAG: %[[KIND:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[A:.+]] = memref.cast %[[X]]
// CHECK-DAG: %[[B:.+]] = memref.cast %[[W]]
// CHECK-DAG: %[[O:.+]] = memref.cast %[[OUT:[^ ]+]] : memref<2x6x3x3xf32> to
// CHECK: call @remat_rt_conv2d_f32(%[[KIND]], %[[C2]], %{{.+}}, %[[C1]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[A]], %[[B]], %[[O]])
// CHECK-NOT: scf.for
// CHECK: return %[[OUT]]
func.func @forward(%x: tensor<2x4x6x6xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x3x3xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<2x4x6x6xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x3x3xf32>
  return %r : tensor<2x6x3x3xf32>
}

// -----

// The input gradient reads the output gradient, then the weight.
// CHECK-LABEL: func.func @grad_input
// CHECK-SAME: (%[[DY:.+]]: memref<1x3x5x6xf64>, %[[W:.+]]: memref<3x2x2x3xf64>)
// CHECK-DAG: %[[KIND:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[A:.+]] = memref.cast %[[DY]]
// CHECK-DAG: %[[B:.+]] = memref.cast %[[W]]
// CHECK: call @remat_rt_conv2d_f64(%[[KIND]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[A]], %[[B]], %{{.+}})
// CHECK-NOT: scf.for
func.func @grad_input(%dy: tensor<1x3x5x6xf64>, %w: tensor<3x2x2x3xf64>) -> tensor<1x2x7x6xf64> {
  %r = train.conv2d_grad_input %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 1>, dilation = array<i64: 2, 1>, groups = 1} : tensor<1x3x5x6xf64>, tensor<3x2x2x3xf64> -> tensor<1x2x7x6xf64>
  return %r : tensor<1x2x7x6xf64>
}

// -----

// The weight gradient reads the input, then the output gradient (its
// operands in the op are the other way round).
// CHECK-LABEL: func.func @grad_weight
// CHECK-SAME: (%[[DY:.+]]: memref<2x3x4x4xf32>, %[[X:.+]]: memref<2x3x4x4xf32>)
// CHECK-DAG: %[[KIND:.+]] = arith.constant 2 : i32
// CHECK-DAG: %[[G:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[A:.+]] = memref.cast %[[X]]
// CHECK-DAG: %[[B:.+]] = memref.cast %[[DY]]
// CHECK: call @remat_rt_conv2d_f32(%[[KIND]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[G]], %[[A]], %[[B]], %{{.+}})
// CHECK-NOT: scf.for
func.func @grad_weight(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>) -> tensor<3x1x3x3xf32> {
  %r = train.conv2d_grad_weight %dy, %x {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 3} : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32> -> tensor<3x1x3x3xf32>
  return %r : tensor<3x1x3x3xf32>
}

// -----

// The runtime has no bf16 kernels: the loops stay.
// CHECK-LABEL: func.func @bf16
// CHECK-NOT: call
// CHECK: scf.for
func.func @bf16(%x: tensor<1x1x4x4xbf16>, %w: tensor<1x1x3x3xbf16>) -> tensor<1x1x2x2xbf16> {
  %r = train.conv2d %x, %w : tensor<1x1x4x4xbf16>, tensor<1x1x3x3xbf16> -> tensor<1x1x2x2xbf16>
  return %r : tensor<1x1x2x2xbf16>
}
