// RUN: remat-opt %s --split-input-file --remat-test-gpu-to-loops | FileCheck %s

// A kernel without barriers: every thread of every block in turn; what
// depends only on the block runs once per block.
// CHECK-LABEL: func.func @plain
// CHECK:         scf.for %[[BLOCK:.*]] = %c0{{.*}} to %c2
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[BLOCK]], %c4
// CHECK-NEXT:      scf.for %[[THREAD:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:        arith.addi %[[BASE]], %[[THREAD]]
// CHECK:             memref.store
// CHECK-NOT:     gpu.launch
func.func @plain(%out: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    memref.store %one, %out[%i] : memref<8xf32>
    gpu.terminator
  }
  return
}

// -----

// Barriers split a block into stretches, each run for every thread before
// the next. The block id's multiple is the same in every thread: it runs
// once per block on the host. Workgroup memory is one buffer at the step's entry; what a
// thread computes before a barrier and uses after it (%v, the loop's
// accumulator) goes through a slot per thread. A loop containing barriers
// runs on the host (its bounds are the same in every thread), its
// accumulator in a slot that each iteration's yield rewrites; what only
// depends on the block (%first) runs once per block on the host.
// CHECK-LABEL: func.func @barriers
// CHECK-DAG:     %[[SHARED:.*]] = memref.alloca() : memref<4xf32>
// CHECK-DAG:     %[[VSLOT:.*]] = memref.alloca() : memref<4xf32>
// CHECK-DAG:     %[[ACC:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %[[BLOCK:.*]] = %c0{{.*}} to %c1
// CHECK-NEXT:      %[[FIRST:.*]] = arith.muli %[[BLOCK]], %c4
// CHECK-NEXT:      scf.for %[[T:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:        %[[I:.*]] = arith.addi %[[FIRST]], %[[T]]
// CHECK-NEXT:        %[[V:.*]] = memref.load %arg0[%[[I]]]
// CHECK-NEXT:        memref.store %[[V]], %[[SHARED]][%[[T]]]
// CHECK-NEXT:        memref.store %[[V]], %[[VSLOT]][%[[T]]]
// CHECK:           scf.for %[[T:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:        memref.store %{{.*}}, %[[ACC]][%[[T]]]
// CHECK:           scf.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        scf.for %[[T:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:          %[[A:.*]] = memref.load %[[ACC]][%[[T]]]
// CHECK-NEXT:          %[[S:.*]] = memref.load %[[SHARED]][%[[K]]]
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[A]], %[[S]]
// CHECK-NEXT:          memref.store %[[SUM]], %[[NEXT:.*]][%[[T]]]
// CHECK:             scf.for %[[T:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:          %[[N:.*]] = memref.load %[[NEXT]][%[[T]]]
// CHECK-NEXT:          memref.store %[[N]], %[[ACC]][%[[T]]]
// CHECK:           scf.for %[[T:.*]] = %c0{{.*}} to %c4
// CHECK-NEXT:        memref.load %[[ACC]][%[[T]]]
// CHECK-NEXT:        memref.load %[[VSLOT]][%[[T]]]
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        arith.addi %[[FIRST]], %[[T]]
// CHECK-NEXT:        memref.store
func.func @barriers(%in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<4xf32, #gpu.address_space<workgroup>>) {
    %first = arith.muli %bx, %c4 : index
    %i = arith.addi %first, %tx : index
    %v = memref.load %in[%i] : memref<4xf32>
    memref.store %v, %shared[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %s = memref.load %shared[%k] : memref<4xf32, #gpu.address_space<workgroup>>
      %next = arith.addf %acc, %s : f32
      gpu.barrier
      scf.yield %next : f32
    }
    %r = arith.addf %sum, %v : f32
    %j = arith.addi %first, %tx : index
    memref.store %r, %out[%j] : memref<4xf32>
    gpu.terminator
  }
  return
}
