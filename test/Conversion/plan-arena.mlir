// RUN: remat-opt %s --remat-plan-arena | FileCheck %s

// Tests the arena plan: %a and %b live together, %c reuses %a's bytes once
// %a is freed (best fit: the lowest gap), the 100-byte buffer is padded to
// 64-byte alignment, the returned buffer is a view that lives to the end
// (so the step leaves the arena to its caller), and the function records
// the arena, the live peak and every offset.

// CHECK-LABEL: func.func @step
// CHECK-SAME: remat.arena_bytes = 8320 : i64
// CHECK-SAME: remat.arena_live_bytes = 8292 : i64
// CHECK-SAME: remat.arena_offsets = array<i64: 0, 4096, 4096, 4096, 0, 4096, 8192, 100, 0, 16>
// CHECK-SAME: remat.arena_outside_bytes = 0 : i64
// CHECK: %[[ARENA:.+]] = memref.alloc() : memref<8320xi8>
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%c4096{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: %[[C:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<8320xi8> to memref<1024xf32>
// CHECK: memref.view %[[ARENA]][%c8192{{.*}}][] : memref<8320xi8> to memref<25xf32>
// CHECK: %[[OUT:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<8320xi8> to memref<4xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return %[[OUT]]
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

// A step that returns nothing frees its arena before it returns; a
// zero-byte buffer stays outside it.
// CHECK-LABEL: func.func @update
// CHECK-SAME: remat.arena_bytes = 64 : i64
// CHECK-SAME: remat.arena_outside_bytes = 0 : i64
// CHECK: %[[ARENA:.+]] = memref.alloc() : memref<64xi8>
// CHECK: memref.alloc() : memref<0xf32>
// CHECK: memref.dealloc %[[ARENA]] : memref<64xi8>
// CHECK-NEXT: return
func.func @update(%p: memref<4xf32>) attributes {train.step} {
  %t = memref.alloc() : memref<4xf32>
  memref.copy %p, %t : memref<4xf32> to memref<4xf32>
  memref.copy %t, %p : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  %e = memref.alloc() : memref<0xf32>
  memref.dealloc %e : memref<0xf32>
  return
}

// Best fit in every order needs 576 bytes here (448 live at most): the
// search over gravity packings puts %d and %c at the bottom, %a on %c and
// %b on %d.
// CHECK-LABEL: func.func @gravity
// CHECK-SAME: remat.arena_bytes = 448 : i64
// CHECK-SAME: remat.arena_live_bytes = 448 : i64
// CHECK-SAME: remat.arena_offsets = array<i64: 256, 128, 0, 256, 0, 192, 192, 256>
func.func @gravity() attributes {train.step} {
  %b = memref.alloc() : memref<32xf32>
  %d = memref.alloc() : memref<64xf32>
  memref.dealloc %d : memref<64xf32>
  %c = memref.alloc() : memref<48xf32>
  memref.dealloc %b : memref<32xf32>
  %a = memref.alloc() : memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %c : memref<48xf32>
  return
}
