// RUN: remat-opt %s --verify-diagnostics --remat-conv-to-runtime -o /dev/null

// A nest whose tag promises a library workspace must become the call (the
// memory plan counted the workspace): one that does not match is an error.
#tag = {kind = 0 : i32, window = array<i64: 1, 1, 0, 0, 1, 1, 1>, workspace = 64 : i64}
func.func @library_nest_mismatch(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %y: memref<1x1x3x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{internal error: a convolution with a library workspace does not match its tag}}
  scf.for %i = %c0 to %c1 step %c1 {
    %a = memref.load %x[%c0, %c0, %c0, %c0] : memref<1x1x4x4xf32>
    %b = memref.load %w[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    %p = arith.mulf %a, %b : f32
    memref.store %p, %y[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
  } {remat.conv2d = #tag}
  return
}

// RUN: not remat-opt %s --pass-pipeline="builtin.module(func.func(remat-conv-library{layout=nchw16c}))" 2>&1 | FileCheck %s --check-prefix=LAYOUT
// LAYOUT: error: remat-conv-library: unknown layout 'nchw16c' (expected auto, blocked or plain)
