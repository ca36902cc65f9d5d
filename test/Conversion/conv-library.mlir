// RUN: remat-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(remat-conv-library{threads=1 layout=blocked}))" | FileCheck %s --check-prefix=STAMP
// RUN: remat-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(remat-conv-library{threads=1 layout=blocked}),convert-train-to-linalg,remat-bufferize-pipeline,func.func(remat-conv-to-runtime))" | FileCheck %s
// RUN: remat-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(remat-conv-library{threads=1 layout=plain}))" | FileCheck %s --check-prefix=PLAIN
// RUN: remat-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(remat-conv-library{threads=1}))" | FileCheck %s --check-prefix=AUTO
// REQUIRES: onednn

// Tests that remat-conv-library records oneDNN's workspace on f32
// convolutions (not on f64 ones, which keep the runtime's kernels), that
// the op reports it, and that remat-conv-to-runtime turns such a nest into
// a call to remat_rt_conv2d_dnnl_f32 with a buffer of that many bytes
// allocated just before and freed just after.

// STAMP-LABEL: func.func @forward
// STAMP: train.conv2d {{.*}}remat.conv_layout = "blocked", remat.workspace_bytes = {{[0-9]+}} : i64
// STAMP-LABEL: func.func @f64
// STAMP-NOT: remat.workspace_bytes
// STAMP-LABEL: func.func @depthwise
// STAMP: remat.conv_layout = "blocked"

// In plain layouts a depthwise convolution keeps the runtime's kernels.
// PLAIN-LABEL: func.func @forward
// PLAIN: train.conv2d {{.*}}remat.conv_layout = "plain", remat.workspace_bytes = {{[0-9]+}} : i64

// The default (auto) may not raise the largest footprint of an op
// (operands, result, workspace) in the step: not in a step of one
// convolution, but beside a larger op, with either layout.
// AUTO-LABEL: func.func @forward
// AUTO-NOT: remat.workspace_bytes
// AUTO-LABEL: func.func @beside_a_larger_op
// AUTO: train.conv2d {{.*}}remat.conv_layout = "{{blocked|plain}}", remat.workspace_bytes = {{[0-9]+}} : i64
// PLAIN-LABEL: func.func @depthwise
// PLAIN-NOT: remat.workspace_bytes

// CHECK-DAG: func.func private @remat_rt_conv2d_dnnl_f32(i32, i32, i64, i64, i64, i64, i64, i64, i64, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?xi8>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @forward
// CHECK: %[[WS:.+]] = memref.alloc() : memref<[[N:[0-9]+]]xi8>
// CHECK: %[[C:.+]] = memref.cast %[[WS]] : memref<[[N]]xi8> to memref<?xi8>
// CHECK: call @remat_rt_conv2d_dnnl_f32({{.*}}, %[[C]])
// CHECK-NEXT: memref.dealloc %[[WS]]
// CHECK-NOT: scf.for
func.func @forward(%x: tensor<8x4x16x16xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<8x6x8x8xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<8x4x16x16xf32>, tensor<6x2x3x3xf32> -> tensor<8x6x8x8xf32>
  return %r : tensor<8x6x8x8xf32>
}

// -----

func.func @beside_a_larger_op(%x: tensor<8x4x16x16xf32>, %w: tensor<6x2x3x3xf32>, %big: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<8x4x16x16xf32>, tensor<6x2x3x3xf32> -> tensor<8x6x8x8xf32>
  %s = train.add %big, %big : tensor<256x1024xf32>, tensor<256x1024xf32> -> tensor<256x1024xf32>
  return %s : tensor<256x1024xf32>
}

// -----

// CHECK-LABEL: func.func @f64
// CHECK-NOT: memref<{{[0-9]+}}xi8>
// CHECK: call @remat_rt_conv2d_f64(
func.func @f64(%dy: tensor<1x3x5x6xf64>, %w: tensor<3x2x2x3xf64>) -> tensor<1x2x7x6xf64> {
  %r = train.conv2d_grad_input %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 1>, dilation = array<i64: 2, 1>, groups = 1} : tensor<1x3x5x6xf64>, tensor<3x2x2x3xf64> -> tensor<1x2x7x6xf64>
  return %r : tensor<1x2x7x6xf64>
}

// -----

// CHECK-LABEL: func.func @depthwise
func.func @depthwise(%x: tensor<2x8x6x6xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %r = train.conv2d %x, %w {padding = array<i64: 1, 1>, groups = 8} : tensor<2x8x6x6xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x6x6xf32>
  return %r : tensor<2x8x6x6xf32>
}
