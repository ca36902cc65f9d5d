// RUN: remat-opt %s --remat-plan-arena | FileCheck %s

// Tests the arena plan: %a and %b live together, %c reuses %a's bytes once
// %a is freed (best fit: the lowest gap), the 100-byte buffer is padded to
// 64-byte alignment, the returned buffer keeps its own allocation, and the
// function records the arena, the live peak and every offset.

// CHECK-LABEL: func.func @step
// CHECK-SAME: remat.arena_bytes = 8320 : i64
// CHECK-SAME: remat.arena_live_bytes = 8292 : i64
// CHECK-SAME: remat.arena_offsets = array<i64: 0, 4096, 4096, 4096, 0, 4096, 8192, 100>
// CHECK-SAME: remat.arena_outside_bytes = 16 : i64
// CHECK: %[[ARENA:.+]] = memref.alloc() : memref<8320xi8>
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%c4096{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: %[[C:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: memref.view %[[ARENA]][%c8192{{.*}}][] : memref<8320xi8> to memref<25xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK: memref.dealloc %[[ARENA]]
// CHECK-NEXT: return %[[OUT]]
func.func @step(%x: memref<1024xf32>) -> memref<4xf32> attributes {train.step} {
  %a = memref.alloc() : memref<1024xf32>
  memref.copy %x, %a : memref<1024xf32> to memref<1024xf32>
  %b = memref.alloc() : memref<1024xf32>
  memref.copy %a, %b : memref<1024xf32> to memref<1024xf32>
  memref.dealloc %a : memref<1024xf32>
  %c = memref.alloc() : memref<1024xf32>
  memref.copy %b, %c : memref<1024xf32> to memref<1024xf32>
  %small = memref.alloc() : memref<25xf32>
  memref.dealloc %small : memref<25xf32>
  memref.dealloc %b : memref<1024xf32>
  memref.dealloc %c : memref<1024xf32>
  %out = memref.alloc() : memref<4xf32>
  return %out : memref<4xf32>
}

// A function without train.step is left alone.
// CHECK-LABEL: func.func @helper
// CHECK-NEXT: memref.alloc() : memref<4xf32>
func.func @helper() {
  %a = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}
