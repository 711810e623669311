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
  // Dense [B, L_q, H, D] and jagged [T, H, D] q alike (sm_90a and sm_100a):
  // jagged, a cluster takes a 128-token window, one item per sequence it
  // overlaps and one for the tokens past offsets[B].
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
  if (s.saves && s.jagged && target.tensorMemoryColumns > 0)
    return "expected dense q to save ln_q and h on sm_100a (its jagged row "
           "stores do not write them yet), but got jagged q (offsets)";
  return "";
}

std::string
mlir::fusion::whyNoNormAttentionGradKernel(const TargetInfo &target,
                                           const NormAttentionShape &s) {
  // sm_90a and sm_100a alike (both have the forward).
  return "the fused backward of the block (its row statistics through "
         "DSMEM like the forward's) is not implemented yet";
}

AttentionLayout mlir::fusion::planAttentionLayout(const TargetInfo &target,
                                                  AttentionLayout layout) {
  layout.tensorMemory = target.tensorMemoryColumns > 0;
  layout.stages = 2;
  if (layout.sharedMemoryBytes() > target.smemPerBlockOptin)
    layout.stages = 1;
  return layout;
}

std::string mlir::fusion::whyNoAttentionTensorMemory(const TargetInfo &target,
                                                     const AttentionLayout &l) {
  if (!l.tensorMemory || l.tmemColumns() <= target.tensorMemoryColumns)
    return "";
  return llvm::formatv(
      "expected the f32 accumulators S [128, {0}] and O [128, {1}] to fit the "
      "{2} tensor-memory columns of {3}, but they need {4}",
      l.kvTile, l.valueDim, target.tensorMemoryColumns, target.chip,
      l.tmemColumns());
}

std::string mlir::fusion::whyNoAttentionKernel(const TargetInfo &target,
                                               const AttentionKernelShape &s) {
  for (auto [name, d] : {std::pair<const char *, int64_t>{"head dimension D", s.headDim},
                         {"value head dimension Dv", s.valueDim}})
    if (ShapedType::isDynamic(d) || d % 64 != 0 || d > 256 || d == 0)
      return llvm::formatv(
          "expected a static {0} that is a multiple of 64 up to 256 (the "
          "kernel's 128-byte swizzled boxes and its 64 x N accumulators), "
          "but got {1}",
          name, sizeText(d));
  if (ShapedType::isDynamic(s.kvLen) || s.kvLen < 1 || s.kvLen > 256)
    return llvm::formatv(
        "expected a static key/value length from 1 to 256 (keys and values "
        "are held whole in shared memory), but got {0}",
        sizeText(s.kvLen));
  AttentionLayout layout;
  layout.headDim = s.headDim;
  layout.valueDim = s.valueDim;
  layout.kvTile = llvm::alignTo(s.kvLen, 64);
  layout = planAttentionLayout(target, layout);
  std::string why = whyNoAttentionTensorMemory(target, layout);
  if (!why.empty())
    return why;
  if (layout.sharedMemoryBytes() > target.smemPerBlockOptin)
    return llvm::formatv(
        "needs {0} bytes of shared memory for D = {1}, Dv = {2} and a "
        "key/value length of {3} (one stage of q, k, v and the P tiles), but "
        "{4} has {5}",
        layout.sharedMemoryBytes(), s.headDim, s.valueDim, s.kvLen, target.chip,
        target.smemPerBlockOptin);
  return "";
}

std::string mlir::fusion::describeAttentionLayout(const TargetInfo &target,
                                                  const AttentionLayout &l,
                                                  int64_t kvLen, bool jagged) {
  std::string text =
      l.tensorMemory
          ? llvm::formatv("attention kernel on {0}: work items of {1} query "
                          "tokens (tcgen05: S and O{2} in {3} of {4} "
                          "tensor-memory columns, a producer thread, an MMA "
                          "warp and an epilogue warpgroup of a row per thread)",
                          target.chip, l.kTileM, l.norms ? ", q and ln_q" : "",
                          l.tmemColumns(), target.tensorMemoryColumns)
                .str()
          : llvm::formatv("attention kernel on {0}: work items of {1} query "
                          "tokens ({2} consumer warpgroups of {3} rows)",
                          target.chip, l.kTileM, l.kConsumers, l.kGroupRows)
                .str();
  text += l.norms ? llvm::formatv(" over {0}, each taken by a "
                                  "cluster of {1} CTAs, one per head (the "
                                  "norms' row sums through DSMEM)",
                                  jagged ? "128-token windows, one item per "
                                           "sequence the window overlaps and "
                                           "one for its tokens past offsets[B]"
                                         : "(batch, token tile)",
                                  l.heads)
                        .str()
                  : jagged ? std::string(" over (128-token window, head), one item per "
                                         "sequence the window overlaps (a window kernel "
                                         "finds each window's first sequence)")
                           : std::string(" over (batch, head, token tile)");
  text += llvm::formatv("; keys and values whole in shared memory (L_kv {0} "
                        "padded to {1}); {2} stage{3} of Q, K, V: {4} bytes of "
                        "shared memory of {5}; a persistent grid of min(items, ",
                        kvLen, l.kvTile, l.stages, l.stages == 1 ? "" : "s",
                        l.sharedMemoryBytes(), target.smemPerBlockOptin)
              .str();
  text += l.norms ? "co-resident clusters) clusters" : "SMs) CTAs";
  return text;
}

std::string mlir::fusion::whyNoAttentionGradKernel(const TargetInfo &target,
                                                   const AttentionGradShape &s) {
  const bool tmem = target.tensorMemoryColumns > 0;
  if (!tmem && target.mma != MmaKind::Wgmma)
    return llvm::formatv("no MMA engine for {0}: the {1} engine is not "
                         "implemented yet",
                         target.chip, stringifyMmaKind(target.mma));
  // sm_90a keeps dK and dV in registers (past 128 columns in column passes),
  // sm_100a in tensor memory beside S^T (then dQ) and dP^T
  // (AttentionGradLayout): 256 + D + Dv columns.
  for (auto [name, d] : {std::pair<const char *, int64_t>{"head dimension D", s.headDim},
                         {"value head dimension Dv", s.valueDim}}) {
    if (tmem && d != 64 && d != 128)
      return llvm::formatv(
          "expected a static {0} of 64 or 128 (the backward keeps dK and dV of "
          "its 128 keys in tensor memory beside S^T and dP^T: 256 + D + Dv "
          "columns), but got {1}",
          name, sizeText(d));
    if (!tmem && (ShapedType::isDynamic(d) || d < 64 || d > 256 || d % 64 != 0))
      return llvm::formatv(
          "expected a static {0} that is a multiple of 64 up to 256 (the "
          "backward keeps dK and dV of its 64 keys in registers, 128 columns "
          "per pass over the query tiles), but got {1}",
          name, sizeText(d));
  }
  // Keys in passes over the query tiles (dQ's partial sums in f32 through
  // global memory, AttentionGradKernel.cpp).
  const int64_t maxKv = AttentionGradLayout::kMaxKvLen;
  if (ShapedType::isDynamic(s.kvLen) || s.kvLen < 1 || s.kvLen > maxKv)
    return llvm::formatv(
        "expected a static key/value length from 1 to {0} for the backward "
        "{1}, but got {2}",
        maxKv,
        tmem ? "(one M = 128 MMA over 128 keys at a time, K and V in shared "
               "memory 128 keys at a time)"
             : "(one consumer warpgroup of 64 keys per 64, K and V in shared "
               "memory 128 keys at a time, 64 for heads past 128 columns)",
        sizeText(s.kvLen));
  if (s.rmsPrologue && std::max(s.headDim, s.valueDim) > AttentionGradLayout::kPassColumns)
    return llvm::formatv(
        "expected D and Dv up to {0} for gdpa_grad's RMSNorm-gradient "
        "prologue (its warps and x's tile need the registers and shared "
        "memory that wider heads take for dK and dV), but got D {1}, Dv {2}",
        AttentionGradLayout::kPassColumns, s.headDim, s.valueDim);
  if (s.rmsPrologue) {
    if (tmem)
      return llvm::formatv(
          "expected sm_90a for gdpa_grad's RMSNorm-gradient prologue (the "
          "{0} backward does not compute it yet)",
          target.chip);
    if (s.kvLen > 128)
      return llvm::formatv(
          "expected a key/value length up to 128 for gdpa_grad's "
          "RMSNorm-gradient prologue (it turns each dO tile into dh once, "
          "and keys past 128 take a second pass over the tiles), but got {0}",
          s.kvLen);
    if (s.jagged)
      return "expected dense q for gdpa_grad's RMSNorm-gradient prologue "
             "(its cluster walks the tiles of one batch), but got jagged q "
             "(offsets)";
    if (ShapedType::isDynamic(s.heads) || s.heads < 1 ||
        s.heads > target.maxEpilogueClusterSize)
      return llvm::formatv(
          "expected a static head count from 1 to {0} for gdpa_grad's "
          "RMSNorm-gradient prologue (one CTA per head, the heads of a token "
          "in one cluster, which exchanges the row sums), but got {1}",
          target.maxEpilogueClusterSize, sizeText(s.heads));
  }
  if (tmem) {
    AttentionGradLayout layout;
    layout.headDim = s.headDim;
    layout.valueDim = s.valueDim;
    layout.tensorMemory = true;
    if (layout.tmemColumns() > target.tensorMemoryColumns)
      return llvm::formatv(
          "expected S^T, dP^T [128, 128], dV [128, {0}] and dK [128, {1}] to "
          "fit the {2} tensor-memory columns of {3}, but they need {4}",
          s.valueDim, s.headDim, target.tensorMemoryColumns, target.chip,
          layout.tmemColumns());
  }
  return "";
}

AttentionGradLayout
mlir::fusion::planAttentionGradLayout(const TargetInfo &target,
                                      AttentionGradLayout layout) {
  if (target.tensorMemoryColumns > 0) {
    layout.tensorMemory = true;
    layout.kvTile = AttentionGradLayout::kTmemTile;
  }
  for (layout.stages = AttentionGradLayout::kMaxStages; layout.stages > 1;
       --layout.stages)
    if (layout.sharedMemoryBytes() <= target.smemPerBlockOptin)
      break;
  return layout;
}

AttentionGradLayout
mlir::fusion::planAttentionGradLayout(const TargetInfo &target,
                                      const AttentionGradShape &s) {
  AttentionGradLayout layout;
  layout.headDim = s.headDim;
  layout.valueDim = s.valueDim;
  layout.setKeys(s.kvLen);
  if (s.rmsPrologue)
    layout.prologueHeads = s.heads;
  layout = planAttentionGradLayout(target, layout);
  // sm_90a reads P^T from shared memory only for jagged q with a residual
  // other than do (AttentionGradKernelSpec::operandsInRegisters).
  const bool pInShared = s.jagged && s.residual && !s.residualInStage(false);
  if (!layout.tensorMemory && layout.wideHeads() && !pInShared) {
    layout.sharedP = false;
    // The value group stages dQ one block at a time: no room for the
    // residual's blocks beside it (or for the prologue's x tile).
    layout.roleGroups = !(s.residual && !s.residualInStage(false)) && !s.rmsPrologue;
    layout = planAttentionGradLayout(target, layout);
  }
  return layout;
}

std::string mlir::fusion::describeAttentionGradLayout(const TargetInfo &target,
                                                      const AttentionGradLayout &l,
                                                      int64_t kvLen) {
  if (l.tensorMemory)
    return llvm::formatv(
        "attention backward kernel on {0}: units (batch, head) with K, V whole "
        "in shared memory (L_kv {1} padded to {2}), query tiles of {3} tokens "
        "(tcgen05: S^T then dQ, dP^T, dV and dK in {4} of {5} tensor-memory "
        "columns, a producer thread, an MMA warp and an epilogue warpgroup of "
        "a row per thread); {6} stage{7} of Q, dO: {8} bytes of shared memory "
        "of {9}; a persistent grid of min(units, SMs) CTAs",
        target.chip, kvLen, l.kvTile, l.tileQ(), l.tmemColumns(),
        target.tensorMemoryColumns, l.stages, l.stages == 1 ? "" : "s",
        l.sharedMemoryBytes(), target.smemPerBlockOptin);
  std::string prologue =
      l.prologueHeads
          ? std::string(llvm::formatv(
                "; the RMSNorm gradient of dO in three producer warps, its "
                "row sums across a cluster of {0} head CTA{1} (one tile of x "
                "beside the stages); a persistent grid of min(B, co-resident "
                "clusters) clusters",
                l.prologueHeads, l.prologueHeads == 1 ? "" : "s"))
          : std::string("; a persistent grid of min(units, SMs) CTAs");
  std::string keys =
      l.kvChunks > 1
          ? std::string(llvm::formatv(
                "units (batch, head) in {0} passes of {1} keys over the query "
                "tiles (L_kv {2}; dQ's partial sums in f32 through global "
                "memory)",
                l.kvChunks, l.kvTile, kvLen))
          : std::string(llvm::formatv("units (batch, head) with K, V whole in "
                                      "shared memory (L_kv {0} padded to {1})",
                                      kvLen, l.kvTile));
  std::string columns =
      l.roleGroups
          ? std::string(llvm::formatv(
                "; D {0}, Dv {1}: both warpgroups on the same keys, one "
                "computing P^T, dV and dQ, the other dS^T and dK (each "
                "walking the tiles once a pass of keys, dQ staged a 64-column "
                "block at a time)",
                l.headDim, l.valueDim))
      : l.wideHeads()
          ? std::string(llvm::formatv(
                "; D {0}, Dv {1}: each pass of keys walks the tiles {2} times, "
                "dK's and dV's columns {3} at a time (S^T and dP^T recomputed, "
                "dQ's column blocks of the pass's columns)",
                l.headDim, l.valueDim, l.columnPasses(), l.kPassColumns))
          : std::string();
  return llvm::formatv(
      "attention backward kernel on {0}: {1}, {2} consumer warpgroup{3} "
      "of {4} keys (dK, dV in registers over the unit's query tiles of {5} "
      "tokens, dQ through dS in shared memory){6}; {7} stage{8} of Q, dO: {9} "
      "bytes of shared memory of {10}{11}",
      target.chip, keys, l.consumers(), l.consumers() == 1 ? "" : "s",
      l.kGroupKeys, l.kTileQ, columns, l.stages, l.stages == 1 ? "" : "s",
      l.sharedMemoryBytes(), target.smemPerBlockOptin, prologue);
}
