// RUN: remat-opt %s --split-input-file --remat-map-to-gpu | FileCheck %s

// A 2-D parallel nest becomes one kernel over 6 x 300 = 1800 threads in
// blocks of 256 (8 blocks, the last one guarded); the column index varies
// fastest (affine.delinearize_index). Allocation and free stay on the
// host, in place, as gpu ops.
// CHECK-LABEL: func.func @parallel
// CHECK:         %[[A:.*]] = gpu.alloc () : memref<6x300xf32>
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK:           %[[ID:.*]] = arith.addi
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[ID]], %c1800
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[IJ:.*]]:2 = affine.delinearize_index %[[ID]] into (6, 300)
// CHECK:             memref.load %arg0[%[[IJ]]#0, %[[IJ]]#1]
// CHECK:             memref.store {{.*}}, %[[A]][%[[IJ]]#0, %[[IJ]]#1]
// CHECK:           gpu.terminator
// CHECK:         gpu.dealloc %[[A]]
func.func @parallel(%x: memref<6x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c300 = arith.constant 300 : index
  %a = memref.alloc() : memref<6x300xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c300) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<6x300xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i, %j] : memref<6x300xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<6x300xf32>
  return
}

// -----

// A reduction over the outer dimension (a bias gradient): each of the 64
// threads runs the whole loop for its column, in the original order. No
// guard: 64 threads fill one block exactly.
// CHECK-LABEL: func.func @column_sum
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c64{{.*}},
// CHECK-NOT:       scf.if
// CHECK:           scf.for %[[R:.*]] = %c0{{.*}} to %c128
// CHECK:             memref.load %arg0[%[[R]], %{{.*}}]
func.func @column_sum(%x: memref<128x64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.for %r = %c0 to %c128 step %c1 {
    scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
      %v = memref.load %x[%r, %j] : memref<128x64xf32>
      %s = memref.load %out[%j] : memref<64xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %out[%j] : memref<64xf32>
      scf.reduce
    }
  }
  return
}

// -----

// Row loops the train lowering marked parallel map to threads (both marked
// levels); the unmarked inner reduction stays a loop in each thread.
// CHECK-LABEL: func.func @rows
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c32{{.*}},
// CHECK:           affine.delinearize_index {{.*}} into (4, 8)
// CHECK:           scf.for {{.*}} iter_args
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @rows(%x: memref<4x8x16xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> f32 {
        %v = memref.load %x[%i, %j, %k] : memref<4x8x16xf32>
        %n = arith.addf %acc, %v : f32
        scf.yield %n : f32
      }
      memref.store %s, %out[%i, %j] : memref<4x8xf32>
    } {remat.parallel}
  } {remat.parallel}
  return
}

// -----

// A scalar reduction has no parallel form here: it runs in a one-thread
// kernel with the ops that use its result (the scaling and the store), even
// across the allocation between them, which stays on the host before the
// kernel. The loads of a splat constant global become the constant.
// CHECK-LABEL: func.func @scalar
// CHECK-NOT:     memref.get_global
// CHECK:         %[[A:.*]] = gpu.alloc () : memref<f32>
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK:           %[[S:.*]] = scf.for
// CHECK:           %[[M:.*]] = arith.mulf %[[S]], %cst
// CHECK:           %[[C:.*]] = arith.mulf %[[M]], %cst
// CHECK:           memref.store %[[C]], %[[A]][]
// CHECK:         return %[[A]]
memref.global "private" constant @half : memref<f32> = dense<5.000000e-01>
func.func @scalar(%x: memref<100xf32>) -> memref<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.01 : f32
  %s = scf.for %i = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %x[%i] : memref<100xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  %a = memref.alloc() : memref<f32>
  %m = arith.mulf %s, %inv : f32
  %g = memref.get_global @half : memref<f32>
  %h = memref.load %g[] : memref<f32>
  %c = arith.mulf %m, %h : f32
  memref.store %c, %a[] : memref<f32>
  return %a : memref<f32>
}

// -----

// Frees end a serial run: compute is never moved across one, so the peak
// stays the schedule's. Two runs, two kernels, the free between them.
// CHECK-LABEL: func.func @ordered
// CHECK:         %[[T:.*]] = gpu.alloc
// CHECK:         gpu.launch
// CHECK:         gpu.dealloc %[[T]]
// CHECK:         gpu.launch
// CHECK:         return
func.func @ordered(%x: memref<f32>, %y: memref<f32>) {
  %t = memref.alloc() : memref<f32>
  %v = memref.load %x[] : memref<f32>
  memref.store %v, %t[] : memref<f32>
  %u = memref.load %t[] : memref<f32>
  memref.store %u, %y[] : memref<f32>
  memref.dealloc %t : memref<f32>
  %w = memref.load %y[] : memref<f32>
  memref.store %w, %x[] : memref<f32>
  return
}

// -----

// A linalg op with a reduction: one thread per output element (j fastest),
// the reduction a loop in registers, the output read and written once.
// CHECK-LABEL: func.func @matmul
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}},
// CHECK:           affine.delinearize_index {{.*}} into (32, 16)
// CHECK:           %[[C:.*]] = memref.load %arg2
// CHECK:           %[[S:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c8{{.*}} iter_args(%[[ACC:.*]] = %[[C]]) -> (f32) {
// CHECK:             memref.load %arg0[%{{.*}}, %[[K]]]
// CHECK:             memref.load %arg1[%[[K]], %{{.*}}]
// CHECK:             arith.mulf
// CHECK:             arith.addf %[[ACC]]
// CHECK-NOT:         memref.store
// CHECK:           }
// CHECK:           memref.store %[[S]], %arg2
// CHECK-NOT:     linalg.matmul
func.func @matmul(%a: memref<32x8xf32>, %b: memref<8x16xf32>, %c: memref<32x16xf32>) {
  linalg.matmul ins(%a, %b : memref<32x8xf32>, memref<8x16xf32>) outs(%c : memref<32x16xf32>)
  return
}

// -----

// An output the payload does not read is only written; a scalar operand is
// used as is.
// CHECK-LABEL: func.func @fill
// CHECK:         gpu.launch
// CHECK-NOT:       memref.load
// CHECK:           memref.store %arg0, %arg1
func.func @fill(%v: f32, %out: memref<4x4xf32>) {
  linalg.fill ins(%v : f32) outs(%out : memref<4x4xf32>)
  return
}

// -----

// Fusion: a zero fill and a matmul too short along k to tile (k = 8)
// accumulating into it share one kernel,
// whose thread starts its accumulator from the zero in a register (the
// fill's store is dead: only this thread reads the element); the bias and
// ReLU after it (its output allocated between them) join too, reading what
// the same thread just computed. Each buffer is still written, so the
// allocations and the peak are the schedule's: the allocation between
// members moves above the kernel.
// CHECK-LABEL: func.func @fused_chain
// CHECK:         %[[M:.*]] = gpu.alloc () : memref<4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = gpu.alloc () : memref<4x8xf32>
// CHECK:         gpu.launch
// CHECK-NOT:       memref.load %[[M]]
// CHECK-NOT:       memref.store %{{.*}}, %[[M]]
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %cst
// CHECK:           memref.store %[[SUM]], %[[M]]
// CHECK-NOT:       memref.load %[[M]]
// CHECK:           arith.addf %[[SUM]]
// CHECK:           arith.maximumf
// CHECK:           memref.store %{{.*}}, %[[R]]
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @fused_chain(%x: memref<4x8xf32>, %w: memref<8x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<4x8xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x8xf32>) outs(%m : memref<4x8xf32>)
  %r = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : memref<4x8xf32>, memref<8xf32>) outs(%r : memref<4x8xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %y = arith.maximumf %s, %zero : f32
    linalg.yield %y : f32
  }
  return %r : memref<4x8xf32>
}

// -----

// A matmul with k >= 16 gets a shared-memory tiled kernel: 16 x 16 threads,
// here 4 x 2 outputs each (a 64 x 32 tile: 2 x 2 blocks for 70 x 40), k in
// steps of 16 through two workgroup buffers (rows padded to 65 and 33).
// The transposed weight's innermost dimension is k, so consecutive threads
// load consecutive k. The last k step stops at k = 20; loads past the edge
// are guarded. The fill is the accumulators' start; the bias fused after
// it reads the register, and outputs past the edge are neither stored nor
// used.
// CHECK-LABEL: func.func @tiled
// CHECK:         %[[M:.*]] = gpu.alloc () : memref<70x40xf32>
// CHECK:         %[[R:.*]] = gpu.alloc () : memref<70x40xf32>
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) workgroup(%[[A:.*]] : memref<16x65xf32, #gpu.address_space<workgroup>>, %[[B:.*]] : memref<16x33xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT:       linalg.fill
// CHECK:           %[[ACC:.*]]:8 = scf.for %[[STEP:.*]] = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %cst,
// CHECK:             scf.if
// CHECK:               memref.load %arg0
// CHECK:             memref.store %{{.*}}, %[[A]]
// CHECK:             scf.if
// CHECK:               memref.load %arg1
// CHECK:             memref.store %{{.*}}, %[[B]]
// CHECK:             gpu.barrier
// CHECK:             %[[END:.*]] = arith.minsi
// CHECK:             scf.for %{{.*}} = %c0{{.*}} to %[[END]]
// CHECK-COUNT-4:       memref.load %[[A]]
// CHECK-COUNT-2:       memref.load %[[B]]
// CHECK-COUNT-8:       arith.addf
// CHECK:             gpu.barrier
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %[[ACC]]#0, %[[M]]
// CHECK-NOT:         memref.load %[[M]]
// CHECK:             memref.load %arg2
// CHECK-NEXT:        arith.addf %[[ACC]]#0
// CHECK-NEXT:        memref.store %{{.*}}, %[[R]]
// CHECK-NOT:     gpu.launch
// CHECK:         gpu.dealloc %[[M]]
func.func @tiled(%x: memref<70x20xf32>, %w: memref<40x20xf32>, %b: memref<40xf32>) -> memref<70x40xf32> {
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<70x40xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<70x40xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<70x20xf32>, memref<40x20xf32>) outs(%m : memref<70x40xf32>)
  %r = memref.alloc() : memref<70x40xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : memref<70x40xf32>, memref<40xf32>) outs(%r : memref<70x40xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  }
  memref.dealloc %m : memref<70x40xf32>
  return %r : memref<70x40xf32>
}

// -----

// A batched matmul without a fill starts from its output; no edges: no
// guards. One 16 x 16 tile per batch (3 blocks), one output per thread.
// CHECK-LABEL: func.func @tiled_batch
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c3{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) workgroup({{.*}} : memref<16x17xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<16x17xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT:       scf.if
// CHECK:           %[[INIT:.*]] = memref.load %arg2
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK-NOT:       scf.if
// CHECK:           gpu.terminator
func.func @tiled_batch(%a: memref<3x16x32xf32>, %b: memref<3x32x16xf32>, %c: memref<3x16x16xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x16x32xf32>, memref<3x32x16xf32>) outs(%c : memref<3x16x16xf32>)
  return
}

// -----

// With tile-contractions=false (remat-compile --gpu-tile-contractions=false)
// the same matmul gets one thread per output element.
// RUN: remat-opt %s --split-input-file --remat-map-to-gpu=tile-contractions=false | FileCheck %s --check-prefix=NAIVE
// NAIVE-LABEL: func.func @tiled_off
// NAIVE-NOT:     workgroup
// NAIVE-NOT:     gpu.barrier
// NAIVE:         return
func.func @tiled_off(%a: memref<16x32xf32>, %b: memref<32x16xf32>, %c: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x16xf32>) outs(%c : memref<16x16xf32>)
  return
}

// -----

// The generic and the copy of its result fuse; nothing fuses across the
// free (the schedule frees %m before allocating %r: both live at once would
// raise the peak), nor where a member reads a buffer another writes at an
// element other threads own (the transpose).
// CHECK-LABEL: func.func @not_fused
// CHECK:         gpu.launch
// CHECK-NOT:     gpu.launch
// CHECK:         gpu.dealloc
// CHECK:         gpu.alloc
// CHECK:         gpu.launch
// CHECK:         gpu.launch
// CHECK:         return
func.func @not_fused(%x: memref<8x8xf32>) -> memref<8x8xf32> {
  %m = memref.alloc() : memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%m : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.addf %v, %v : f32
    linalg.yield %y : f32
  }
  %n = memref.alloc() : memref<8x8xf32>
  linalg.copy ins(%m : memref<8x8xf32>) outs(%n : memref<8x8xf32>)
  memref.dealloc %m : memref<8x8xf32>
  %r = memref.alloc() : memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%n : memref<8x8xf32>) outs(%r : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.mulf %v, %v : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r : memref<8x8xf32>) outs(%n : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return %n : memref<8x8xf32>
}

// -----

// Row statistics (a softmax's maximum, then its normalized row): 64 rows
// of 1024 leave one thread per row mostly idle, so each row gets a block of
// 256 threads. The reduction nest's iterations are strided over the block
// (thread t takes t, t + 256, ...) from the identity of maximumf (-inf);
// the partial maxima meet in a tree through workgroup memory (8 halvings,
// each after a barrier) and then the accumulator's initial value. The
// write nest is strided the same way.
// CHECK-LABEL: func.func @row_blocks
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c64{{.*}}, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) workgroup(%[[S:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           %[[PART:.*]] = scf.for %{{.*}} = %[[T]] to %c1024{{.*}} step %c256{{.*}} iter_args(%[[ACC:.*]] = %[[NEGINF]]) -> (f32)
// CHECK:             arith.maximumf %[[ACC]]
// CHECK:           memref.store %[[PART]], %[[S]]
// CHECK-COUNT-9:   gpu.barrier
// CHECK:           %[[TOTAL:.*]] = memref.load %[[S]]
// CHECK-NEXT:      gpu.barrier
// CHECK:           %[[MAX:.*]] = arith.maximumf %{{.*}}, %[[TOTAL]]
// CHECK:           scf.for %{{.*}} = %[[T]] to %c1024{{.*}} step %c256
// CHECK:             arith.subf %{{.*}}, %[[MAX]]
// CHECK:             memref.store
// CHECK:           gpu.barrier
// CHECK:           gpu.terminator
func.func @row_blocks(%x: memref<64x1024xf32>, %out: memref<64x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %ninf = arith.constant 0xFF800000 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %m = scf.for %j = %c0 to %c1024 step %c1 iter_args(%acc = %ninf) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<64x1024xf32>
      %n = arith.maximumf %acc, %v : f32
      scf.yield %n : f32
    } {remat.reduction}
    scf.for %j = %c0 to %c1024 step %c1 {
      %v = memref.load %x[%i, %j] : memref<64x1024xf32>
      %d = arith.subf %v, %m : f32
      memref.store %d, %out[%i, %j] : memref<64x1024xf32>
    } {remat.parallel}
  } {remat.parallel}
  return
}

// -----

// A loss (a sum over all 8192 elements into a 0-d result, after a zero
// fill): one block of 1024 threads (the most a block has); its first
// thread stores the total.
// CHECK-LABEL: func.func @full_sum
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c1024{{.*}}, {{.*}}) workgroup(%{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %c0
// CHECK:           scf.for %{{.*}} = %[[T]] to %c8192{{.*}} step %c1024
// CHECK:           scf.if %[[FIRST]] {
// CHECK-NEXT:        memref.store %{{.*}}, %arg1[]
// CHECK:           gpu.barrier
// CHECK-NOT:     gpu.launch
func.func @full_sum(%x: memref<64x128xf32>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not split over threads: an update that is no associative fold (the
// accumulator scaled), and a fold too short for a warp (36 iterations, 4 per
// thread at least).
// CHECK-LABEL: func.func @row_threads
// CHECK-NOT:     workgroup
// CHECK:         gpu.launch
// CHECK:         scf.for
// CHECK-NOT:     workgroup
// CHECK:         gpu.launch
// CHECK:         return
func.func @row_threads(%x: memref<64x1024xf32>, %out: memref<64xf32>, %y: memref<64x36xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c36 = arith.constant 36 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %m = scf.for %j = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<64x1024xf32>
      %a = arith.mulf %acc, %half : f32
      %n = arith.addf %a, %v : f32
      scf.yield %n : f32
    } {remat.reduction}
    memref.store %m, %out[%i] : memref<64xf32>
  } {remat.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    %m = scf.for %j = %c0 to %c36 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %y[%i, %j] : memref<64x36xf32>
      %n = arith.addf %acc, %v : f32
      scf.yield %n : f32
    } {remat.reduction}
    memref.store %m, %out[%i] : memref<64xf32>
  } {remat.parallel}
  return
}

// -----

// With block-reductions=false (remat-compile --gpu-block-reductions=false)
// the loss runs in one thread.
// RUN: remat-opt %s --split-input-file --remat-map-to-gpu=block-reductions=false | FileCheck %s --check-prefix=ROWS
// ROWS-LABEL: func.func @blocks_off
// ROWS-NOT:     workgroup
// ROWS:         gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}})
// ROWS-NOT:     gpu.barrier
// ROWS:         return
func.func @blocks_off(%x: memref<64x128xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Both output sides at least 64: 16 x 16 threads with 4 x 4 outputs each;
// with register-tile=8, 8 x 8 threads with 8 x 8 outputs each (the same
// 64 x 64 tile, 64 accumulators per thread).
// RUN: remat-opt %s --split-input-file --remat-map-to-gpu=register-tile=8 | FileCheck %s --check-prefix=TILE8
// TILE8-LABEL: func.func @tiled_wide
// TILE8:         gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c64{{.*}}, {{.*}}) workgroup({{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>)
// TILE8:           scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-LABEL: func.func @tiled_wide
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) workgroup({{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>)
// CHECK:           scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
func.func @tiled_wide(%a: memref<128x32xf32>, %b: memref<32x64xf32>, %c: memref<128x64xf32>) {
  linalg.matmul ins(%a, %b : memref<128x32xf32>, memref<32x64xf32>) outs(%c : memref<128x64xf32>)
  return
}
