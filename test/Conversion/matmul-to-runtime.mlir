// RUN: remat-opt %s --remat-matmul-to-runtime | FileCheck %s

// Tests that matmuls on memrefs become runtime calls with BLAS transpose
// flags read from the indexing maps, and that other forms stay.

// CHECK-DAG: func.func private @remat_rt_matmul_f32(i32, i32, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @remat_rt_batch_matmul_f32(i32, i32, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @remat_rt_matmul_f64(i32, i32, memref<?x?xf64>, memref<?x?xf64>, memref<?x?xf64>) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @plain
// CHECK: %[[TA:.+]] = arith.constant 0 : i32
// CHECK: %[[TB:.+]] = arith.constant 0 : i32
// CHECK: call @remat_rt_matmul_f32(%[[TA]], %[[TB]], %{{.+}}, %{{.+}}, %{{.+}})
func.func @plain(%a: memref<8x4xf32>, %b: memref<4x2xf32>, %c: memref<8x2xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x2xf32>) outs(%c : memref<8x2xf32>)
  return
}

// CHECK-LABEL: func.func @transposed
// CHECK: %[[T:.+]] = arith.constant 1 : i32
// CHECK: %[[F:.+]] = arith.constant 0 : i32
// CHECK: call @remat_rt_matmul_f64(%[[T]], %[[F]],
// CHECK: %[[F2:.+]] = arith.constant 0 : i32
// CHECK: %[[T2:.+]] = arith.constant 1 : i32
// CHECK: call @remat_rt_matmul_f64(%[[F2]], %[[T2]],
func.func @transposed(%a: memref<4x8xf64>, %b: memref<4x2xf64>, %c: memref<8x2xf64>,
                      %d: memref<4x2xf64>, %e: memref<8x4xf64>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<4x8xf64>, memref<4x2xf64>) outs(%c : memref<8x2xf64>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%c, %d : memref<8x2xf64>, memref<4x2xf64>) outs(%e : memref<8x4xf64>)
  return
}

// Tensors are not the pass's business (it runs after bufferization).
// CHECK-LABEL: func.func @tensors
// CHECK: linalg.matmul
func.func @tensors(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// Batched products (train.batch_matmul's generic) call the batched entry
// with the transpose flags of their maps; a generic that is not one (here
// with a max body) stays.
// CHECK-LABEL: func.func @batched
// CHECK: %[[F:.+]] = arith.constant 0 : i32
// CHECK: %[[T:.+]] = arith.constant 1 : i32
// CHECK: call @remat_rt_batch_matmul_f32(%[[F]], %[[T]],
// CHECK: linalg.generic
// CHECK-NOT: call @remat_rt_batch_matmul_f32
// CHECK: return
#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bkT = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched(%q: memref<2x8x4xf32>, %k: memref<2x6x4xf32>, %s: memref<2x8x6xf32>) {
  linalg.generic {indexing_maps = [#bq, #bkT, #bo],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x8x4xf32>, memref<2x6x4xf32>) outs(%s : memref<2x8x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#bq, #bkT, #bo],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x8x4xf32>, memref<2x6x4xf32>) outs(%s : memref<2x8x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.maximumf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}
