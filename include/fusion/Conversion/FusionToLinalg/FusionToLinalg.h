//===- FusionToLinalg.h - reference lowering of fusion ops ------*- C++ -*-===//

#ifndef FUSION_CONVERSION_FUSIONTOLINALG_FUSIONTOLINALG_H
#define FUSION_CONVERSION_FUSIONTOLINALG_FUSIONTOLINALG_H

namespace mlir {
class RewritePatternSet;
namespace fusion {

/// Patterns lowering the L0 ops (matmul, add, norms and their gradients) to
/// linalg on tensors.
void populateNormAndMatmulToLinalgPatterns(RewritePatternSet &patterns);

/// Patterns lowering gdpa and gdpa_grad to linalg on tensors.
void populateAttentionToLinalgPatterns(RewritePatternSet &patterns);

/// Patterns lowering the fused ops (fused_matmul, norm_attention and its grad).
void populateFusedOpsToLinalgPatterns(RewritePatternSet &patterns);

/// The pattern lowering rope (each head's rotary position embedding).
void populateRopeToLinalgPatterns(RewritePatternSet &patterns);

/// All of the above.
void populateFusionToLinalgPatterns(RewritePatternSet &patterns);

} // namespace fusion
} // namespace mlir

#endif // FUSION_CONVERSION_FUSIONTOLINALG_FUSIONTOLINALG_H
