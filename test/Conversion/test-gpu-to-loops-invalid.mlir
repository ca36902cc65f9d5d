// RUN: remat-opt %s --split-input-file --remat-test-gpu-to-loops --verify-diagnostics

func.func @divergent_barrier(%c: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    // expected-error @below {{expects barriers only at the top level of the kernel or of loops}}
    scf.if %c {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @per_thread_bounds() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    // expected-error @below {{expects a loop with barriers to have the same bounds in every thread}}
    scf.for %i = %c0 to %tx step %c1 {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @dynamic_block(%n: index) {
  %c1 = arith.constant 1 : index
  // expected-error @below {{expects a constant block size in a kernel with barriers}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

func.func @memref_across_barrier(%m: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    // expected-error @below {{cannot keep a value of type 'memref<2xf32, strided<[1], offset: ?>>' across a barrier}}
    %view = memref.subview %m[%tx] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: ?>>
    gpu.barrier
    memref.store %zero, %view[%c1] : memref<2xf32, strided<[1], offset: ?>>
    gpu.terminator
  }
  return
}

// -----

func.func @private_memory() {
  %c1 = arith.constant 1 : index
  // expected-error @below {{expects no private memory}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             private(%p : memref<4xf32, #gpu.address_space<private>>) {
    gpu.terminator
  }
  return
}

// -----

func.func @two_blocks(%c: i1) {
  %c1 = arith.constant 1 : index
  // expected-error @below {{expects a kernel of one block}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    cf.cond_br %c, ^a, ^b
  ^a:
    gpu.terminator
  ^b:
    gpu.terminator
  }
  return
}
