// RUN: remat-opt %s --remat-conv-to-runtime | FileCheck %s

// Tagged loop nests whose operands are not what the tag promises stay as
// they are: shapes that disagree with the window, a third read, a nest
// inside another loop, a malformed tag.

#tag = {kind = 0 : i32, window = array<i64: 1, 1, 0, 0, 1, 1, 1>}

// CHECK-LABEL: func.func @wrong_output_shape
// CHECK-NOT: call
// CHECK: scf.for
func.func @wrong_output_shape(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x3x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
    %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    %p = arith.mulf %a, %b : f32
    memref.store %p, %y[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
  } {remat.conv2d = #tag}
  return
}

// CHECK-LABEL: func.func @third_read
// CHECK-NOT: call
// CHECK: scf.for
func.func @third_read(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x2x2xf32>, %z: memref<1x1x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
    %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    %c = memref.load %z[%c0, %c0, %c0, %c0] : memref<1x1x2x2xf32>
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %p, %c : f32
    memref.store %q, %y[%c0, %c0, %c0, %c0] : memref<1x1x2x2xf32>
  } {remat.conv2d = #tag}
  return
}

// CHECK-LABEL: func.func @nested
// CHECK-NOT: call
// CHECK: scf.for
// CHECK: scf.for
func.func @nested(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %j = %c0 to %c1 step %c1 {
    scf.for %i = %c0 to %c1 step %c1 {
      %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
      %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
      %p = arith.mulf %a, %b : f32
      memref.store %p, %y[%c0, %c0, %c0, %c0] : memref<1x1x2x2xf32>
    } {remat.conv2d = #tag}
  }
  return
}

// CHECK-LABEL: func.func @malformed_tag
// CHECK-NOT: call
// CHECK: scf.for
func.func @malformed_tag(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
    %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    %p = arith.mulf %a, %b : f32
    memref.store %p, %y[%c0, %c0, %c0, %c0] : memref<1x1x2x2xf32>
  } {remat.conv2d = {kind = 0 : i32, window = array<i64: 1, 1>}}
  return
}

// The same nest with a matching output is taken (the tests above fail for
// their one difference).
// CHECK-LABEL: func.func @matching
// CHECK: call @remat_rt_conv2d_f32
// CHECK-NOT: scf.for
func.func @matching(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
    %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    %p = arith.mulf %a, %b : f32
    memref.store %p, %y[%c0, %c0, %c0, %c0] : memref<1x1x2x2xf32>
  } {remat.conv2d = #tag}
  return
}
