//===- TrainToLinalg.h - train -> linalg patterns by op family --*- C++ -*-===//
//
// Each train op becomes a few linalg (or scf) ops on tensors whose only
// fresh tensor is its result (and, after it, its reported workspace): the
// memory model's contract. The patterns are grouped by op family so that a
// pipeline can take what it needs; convert-train-to-linalg takes them all.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_CONVERSION_TRAINTOLINALG_H
#define REMAT_CONVERSION_TRAINTOLINALG_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::remat {

/// Elementwise arithmetic and functions, bias, casts and their gradients.
void populateTrainElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// Reductions, broadcasts, reshapes, transposes, concatenation, slicing.
void populateTrainLayoutToLinalgPatterns(RewritePatternSet &patterns);
/// matmul and batch_matmul.
void populateTrainContractionToLinalgPatterns(RewritePatternSet &patterns);
/// Softmax, the causal mask, layer and batch norm.
void populateTrainNormalizationToLinalgPatterns(RewritePatternSet &patterns);
/// Convolutions, pooling, upsampling.
void populateTrainConvolutionToLinalgPatterns(RewritePatternSet &patterns);
/// Losses, embeddings, dropout's random mask and the SGD update.
void populateTrainLossAndRandomToLinalgPatterns(RewritePatternSet &patterns);
/// Every family above.
void populateTrainToLinalgPatterns(RewritePatternSet &patterns);

/// What the lowering produces is legal; train ops are not.
void configureTrainToLinalgTarget(ConversionTarget &target);

} // namespace mlir::remat

#endif // REMAT_CONVERSION_TRAINTOLINALG_H
