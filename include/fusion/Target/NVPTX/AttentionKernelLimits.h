//===- AttentionKernelLimits.h - what the attention kernels take -*- C++ -*-===//
//
// The shapes the FlashNormAttention kernel (lib/Conversion/FusionToGPU/
// Attention/) takes on a target, in one place for the kernel's spec and for
// fusion-form-norm-attention, which forms a block into fusion.norm_attention
// for a GPU target only where that kernel takes it (elsewhere the block runs
// as its own ops' kernels).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TARGET_NVPTX_ATTENTIONKERNELLIMITS_H
#define FUSION_TARGET_NVPTX_ATTENTIONKERNELLIMITS_H

#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/IR/Types.h"

#include <string>

namespace mlir::fusion {

/// A FlashNormAttention block as the kernel sees it: q, k, v and the output
/// of one 16-bit type (`elem`; null when they differ), dense or jagged q,
/// the heads H, head dimension D and key/value length (ShapedType::kDynamic
/// where not static).
struct NormAttentionShape {
  Type elem;
  bool jagged = false;
  int64_t heads = 0, headDim = 0, kvLen = 0;
};

/// Empty when `target` has a FlashNormAttention kernel for `s`, else why
/// not (a message that follows "cannot generate an <chip> attention
/// kernel: ").
std::string whyNoNormAttentionKernel(const TargetInfo &target,
                                     const NormAttentionShape &s);

} // namespace mlir::fusion

#endif // FUSION_TARGET_NVPTX_ATTENTIONKERNELLIMITS_H
