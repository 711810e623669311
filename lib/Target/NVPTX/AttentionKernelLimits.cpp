//===- AttentionKernelLimits.cpp - what the attention kernels take --------===//

#include "fusion/Target/NVPTX/AttentionKernelLimits.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fusion;

static std::string sizeText(int64_t v) {
  return ShapedType::isDynamic(v) ? std::string("?") : std::to_string(v);
}

std::string mlir::fusion::whyNoNormAttentionKernel(const TargetInfo &target,
                                                   const NormAttentionShape &s) {
  if (target.mma != MmaKind::Wgmma)
    return llvm::formatv("no MMA engine for {0}: the {1} engine is not "
                         "implemented yet",
                         target.chip, stringifyMmaKind(target.mma));
  if (s.jagged)
    return "jagged query (offsets) is not supported by the FlashNormAttention "
           "kernel yet (the gdpa kernel takes it); expected a dense query "
           "[B, Lq, H, D]";
  if (!s.elem || (!s.elem.isBF16() && !s.elem.isF16()))
    return "expected bf16 or f16 query, key, value and output of one type";
  if (ShapedType::isDynamic(s.heads) || s.heads < 1 ||
      s.heads > target.maxEpilogueClusterSize)
    return llvm::formatv(
        "expected a static head count from 1 to {0} (one CTA per head, the "
        "heads of a token in one cluster, whose norms exchange their row "
        "sums), but got {1}",
        target.maxEpilogueClusterSize, sizeText(s.heads));
  if (s.headDim != 64 && s.headDim != 128)
    return llvm::formatv(
        "expected a static head dimension of 64 or 128 (the kernel keeps q "
        "and ln_q of its rows in registers beside both accumulators), but "
        "got {0}",
        sizeText(s.headDim));
  if (ShapedType::isDynamic(s.kvLen) || s.kvLen < 1 || s.kvLen > s.headDim)
    return llvm::formatv(
        "expected a static key/value length from 1 to the head dimension "
        "{0} (P takes the place of the group's ln_q rows), but got {1}",
        s.headDim, sizeText(s.kvLen));
  return "";
}
