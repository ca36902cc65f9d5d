// RUN: remat-opt %s --convert-train-to-linalg | FileCheck %s

// The loop nests the GPU mapping may split over threads are marked: a
// softmax's rows (remat.parallel), the row's two statistics (remat.reduction:
// they only fold into a scalar with maximumf and addf) and the write of the
// row (remat.parallel: each iteration its own element).
// CHECK-LABEL: func.func @softmax
// CHECK:         scf.for {{.*}} -> (tensor<4x8xf32>)
// CHECK:           scf.for {{.*}} -> (f32)
// CHECK:             arith.maximumf
// CHECK:           } {remat.reduction}
// CHECK:           scf.for {{.*}} -> (f32)
// CHECK:             math.exp
// CHECK:           } {remat.reduction}
// CHECK:           scf.for {{.*}} -> (tensor<4x8xf32>)
// CHECK:             tensor.insert
// CHECK:           } {remat.parallel}
// CHECK:         } {remat.parallel}
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = train.softmax %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Batch norm's weight gradient: per channel, the statistics and then the
// channel's sum of dy * xhat as marked reduction nests (over batch, height
// and width), added to the zero-filled result once.
// CHECK-LABEL: func.func @bn_weight
// CHECK:         linalg.fill
// CHECK:         scf.for {{.*}} -> (tensor<3xf32>)
// CHECK-COUNT-9:   } {remat.reduction}
// CHECK:           tensor.insert %{{.*}} into %{{.*}}[%{{.*}}] : tensor<3xf32>
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    } {remat.parallel}
func.func @bn_weight(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>) -> tensor<3xf32> {
  %g = train.batch_norm_grad_weight %dy, %x : tensor<2x3x4x4xf32> -> tensor<3xf32>
  return %g : tensor<3xf32>
}
