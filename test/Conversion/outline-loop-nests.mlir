// RUN: remat-opt %s --remat-outline-loop-nests | FileCheck %s

// Tests that each top-level loop nest moves into a private function, that
// equal nests (same ops on the same types) share one, and that index
// constants are cloned while other values from outside become arguments.

// CHECK-LABEL: func.func private @step_nest0
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[Y:.+]]: memref<8xf32>) attributes {remat.outlined}
// CHECK-DAG: arith.constant 2.0
// CHECK-DAG: arith.constant 8 : index
// CHECK: scf.for
// CHECK: memref.load %[[X]]
// CHECK: memref.store {{.+}}, %[[Y]]
// CHECK-NOT: func.func private @step_nest1
// CHECK-LABEL: func.func private @step_nest2
// CHECK-SAME: (%{{.+}}: memref<4xf32>) attributes {remat.outlined}
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[A:.+]]: memref<8xf32>, %[[B:.+]]: memref<8xf32>, %[[C:.+]]: memref<4xf32>, %[[D:.+]]: memref<8xf32>)
// CHECK: call @step_nest0(%[[A]], %[[D]]{{.*}})
// CHECK-NEXT: call @step_nest0(%[[B]], %[[D]]{{.*}})
// CHECK-NEXT: call @step_nest2(%[[C]]{{.*}})
// CHECK-NEXT: return
func.func @step(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<4xf32>, %d: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %a[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %d[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %b[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %d[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %c[%i] : memref<4xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %c[%i] : memref<4xf32>
  }
  return
}
