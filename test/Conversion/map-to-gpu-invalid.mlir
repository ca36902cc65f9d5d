// RUN: remat-opt %s --split-input-file --remat-map-to-gpu --verify-diagnostics

// A kernel cannot read a constant that lives in host memory; splats are
// folded, other constants are refused.
memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
func.func @read_table(%out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // expected-error @below {{the CUDA target supports only splat constants; 'table' would be read from host memory by a kernel}}
  %g = memref.get_global @table : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    %v = memref.load %g[%i] : memref<2xf32>
    memref.store %v, %out[%i] : memref<2xf32>
    scf.reduce
  }
  return
}

// -----

// A scalar read from device memory cannot reach host code across a free
// (the kernels on either side of it are separate).
func.func @escape(%x: memref<f32>, %y: memref<f32>) {
  %t = memref.alloc() : memref<f32>
  // expected-error @below {{the CUDA target cannot use a value computed on the device in host code}}
  %v = memref.load %x[] : memref<f32>
  memref.dealloc %t : memref<f32>
  memref.store %v, %y[] : memref<f32>
  return
}

// -----

// Device memory is allocated by the host, between kernels.
func.func @nested(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @below {{the CUDA target allocates device memory only at the top level of the step}}
    %t = memref.alloc() : memref<f32>
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %t[] : memref<f32>
    memref.dealloc %t : memref<f32>
  }
  return
}

// -----

// Kernels are formed from the step's straight-line body.
// expected-error @below {{expects a step function of one block}}
func.func @branches(%x: memref<f32>) {
  cf.br ^next
^next:
  return
}
