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

#include <algorithm>
#include <string>

namespace mlir::fusion {

/// The attention kernel's shared-memory layout, from the 1024-byte aligned
/// base (every block a multiple of 1024 bytes, as the 128-byte swizzle
/// needs): per stage Q [128 tokens, D], K [kvTile, D], V [kvTile, Dv]
/// (16-bit); gdpa: per consumer group an output buffer [64, Dv] (sm_100a:
/// [64, max(kvTile, Dv)], P staged there too; sm_90a holds P in
/// registers); FlashNormAttention (norms): the row exchange's
/// slots (3 rounds x 2
/// item parities of [H][128] f32) and the norm parameters [3][D] f32. One
/// definition for the kernel (lib/Conversion/FusionToGPU/Attention/) and for
/// what fusion-plan-kernels reports (planAttentionLayout).
struct AttentionLayout {
  /// Query tokens per work item: two consumer warpgroups of 64 rows.
  static constexpr int64_t kTileM = 128, kConsumers = 2, kGroupRows = 64;
  static constexpr int64_t kAlignment = 1024, kExchangeRounds = 3;

  /// D (q, k), Dv (v, output) and the key/value length rounded up to 64
  /// (the TMA zero-fills the rest).
  int64_t headDim = 0, valueDim = 0, kvTile = 0;
  /// FlashNormAttention: one CTA per head, the H CTAs of a token's heads in
  /// a cluster.
  bool norms = false;
  int64_t heads = 1;
  /// Stages of (Q, K, V) in the ring: the next work item's loads overlap
  /// this one's MMAs.
  int64_t stages = 2;
  /// sm_100a (tcgen05): S [128, kvTile] and O [128, Dv] as f32 accumulators
  /// in tensor memory, side by side (S in columns [0, kvTile), O after it),
  /// one 128-row warpgroup reading them a row per thread; the P buffer is
  /// then kvTile / 64 blocks [128, 64] over the two groups' buffers, and a
  /// 16-byte slot after the parameters receives the allocation's address.
  bool tensorMemory = false;

  /// S and O; with the norms also q and ln_q of the thread's row as 16-bit
  /// pairs (D / 2 columns each).
  int64_t tmemColumns() const { return kvTile + valueDim + (norms ? headDim : 0); }
  /// What tcgen05.alloc takes: a power of two >= 32 columns.
  int64_t tmemAllocColumns() const {
    int64_t columns = 32;
    while (columns < tmemColumns())
      columns *= 2;
    return columns;
  }

  /// FlashNormAttention on sm_90a: each consumer group's 64 Q rows arrive
  /// on a barrier of the group's (the TMA boxes [64 rows, 64]), K and V on
  /// the stage's, so that a group waits only for the rows it owns and
  /// overwrites (ln_q, P, the output) while the other group runs at its
  /// own pace.
  bool groupQueryRows() const { return norms && !tensorMemory; }
  int64_t queryBoxRows() const { return groupQueryRows() ? kGroupRows : kTileM; }
  int64_t qBytes() const { return kTileM * headDim * 2; }
  int64_t kBytes() const { return kvTile * headDim * 2; }
  int64_t vBytes() const { return kvTile * valueDim * 2; }
  int64_t stageBytes() const { return qBytes() + kBytes() + vBytes(); }
  int64_t groupBufferBytes() const {
    if (norms)
      return 0;
    return kGroupRows * (tensorMemory ? std::max(kvTile, valueDim) : valueDim) * 2;
  }
  int64_t groupBufferOffset() const { return stages * stageBytes(); }
  /// The row exchange's slots (norms): one round and parity's [H][128] f32.
  int64_t slotBytes() const { return heads * kTileM * 4; }
  int64_t slotsOffset() const {
    return groupBufferOffset() + kConsumers * groupBufferBytes();
  }
  /// The norm parameters of the CTA's head (LayerNorm weight and bias,
  /// RMSNorm weight), widened to f32 once per CTA: [3][D].
  int64_t paramsOffset() const {
    return slotsOffset() + (norms ? 2 * kExchangeRounds * slotBytes() : 0);
  }
  int64_t paramsBytes() const { return norms ? 3 * headDim * 4 : 0; }
  int64_t tmemSlotOffset() const { return paramsOffset() + paramsBytes(); }
  /// The dynamic shared memory the launch asks for (with the alignment pad).
  int64_t sharedMemoryBytes() const {
    return tmemSlotOffset() + (tensorMemory ? 16 : 0) + kAlignment;
  }
};

/// `layout` with the most stages (two, else one) whose shared memory fits
/// `target`; with one stage over the limit, that one (the caller refuses it:
/// sharedMemoryBytes() > target.smemPerBlockOptin).
/// On a target with tensor memory, the tcgen05 layout (tensorMemory).
AttentionLayout planAttentionLayout(const TargetInfo &target, AttentionLayout layout);

/// Empty when `layout`'s accumulators fit `target`'s tensor memory (or it
/// has none), else why not (a message that follows "cannot generate an
/// <chip> attention kernel: ").
std::string whyNoAttentionTensorMemory(const TargetInfo &target,
                                       const AttentionLayout &layout);

/// A fusion.gdpa as its kernel sees it: D, Dv and the key/value length
/// (ShapedType::kDynamic where not static).
struct AttentionKernelShape {
  int64_t headDim = 0, valueDim = 0, kvLen = 0;
};

/// Empty when `target` has a gdpa kernel for `s` (its head dimensions,
/// key/value length, tensor memory and shared memory), else why not (a
/// message that follows "cannot generate an <chip> attention kernel: ").
/// The element types are checked by the caller (which names the operand
/// that differs). One definition for the kernel's spec and for
/// fusion-plan-kernels, which folds an add into a gdpa's residual only
/// where the kernel takes the gdpa.
std::string whyNoAttentionKernel(const TargetInfo &target,
                                 const AttentionKernelShape &s);

/// What fusion-plan-kernels{report=true} says of an attention kernel's plan:
/// items, stages and shared memory, the grid (and the cluster with norms).
std::string describeAttentionLayout(const TargetInfo &target,
                                    const AttentionLayout &layout, int64_t kvLen,
                                    bool jagged = false);

/// The attention backward kernel's (fusion.gdpa_grad) shared-memory layout,
/// from the 1024-byte aligned base, every block [64, 64] 16-bit elements
/// with 128-byte swizzled rows (8 KB):
///   K [kvTile, D], V [kvTile, Dv]  per 64 keys r, D / 64 (Dv / 64) blocks
///                                  [64 keys, 64] (the unit's, loaded once)
///   stage s < stages               Q [64 tokens, D], dO [64 tokens, Dv]
///   consumer group c               P^T [64 keys, 64 tokens] (where
///                                  sharedP), dS^T of two tile parities,
///                                  the output staging [64, min(max(D, Dv),
///                                  128)] (dQ's blocks, then the unit's dV
///                                  and dK; per column pass past 128)
/// One consumer warpgroup per 64 keys (kvTile / 64 of them). With
/// roleGroups (heads past 128 columns, AttentionGradRoles.cpp) two
/// consumer warpgroups on the same 64 keys instead, and after the stages:
///   dS^T                           the key group's, two tile parities
///   consumer group c               one output staging block [64, 64]
/// One definition for the kernel (AttentionGradKernel.cpp,
/// AttentionGradRoles.cpp) and fusion-plan-kernels' report.
///
/// sm_100a (tensorMemory, AttentionGradTcgen05Kernel.cpp): the MMAs have
/// M = 128, so the keys are always 128 (kvTile = 128; past L_kv the TMA
/// zero-fills) and a query tile has 128 tokens:
///   K, V                           per 64 columns c a block [128 keys, 64]
///                                  (16 KB: the K-major A of M = 128)
///   stage s                        Q [128 tokens, D], dO [128 tokens, Dv]
///                                  as two halves of 64 tokens laid out as
///                                  above (the N-major B of dK, dV)
///   one epilogue warpgroup         P^T and dS^T [128 keys, 128 tokens] as
///                                  two blocks [128 keys, 64 tokens] each,
///                                  and the output staging [128, max(D, Dv)]
///                                  as two halves of 64 rows
/// and the tensor memory's address slot (16 bytes) after them. Tensor
/// memory: S^T [128 keys, 128 tokens] in columns [0, 128) (dQ [128 tokens,
/// D] takes them over once S^T is read), dP^T in [128, 256), dV [128 keys,
/// Dv] and dK [128 keys, D] after them: 256 + Dv + D <= 512.
struct AttentionGradLayout {
  /// Query tokens per tile (sm_90a); keys per consumer warpgroup.
  static constexpr int64_t kTileQ = 64, kGroupKeys = 64;
  static constexpr int64_t kAlignment = 1024, kBlockBytes = 64 * 128;
  /// The most stages of (Q, dO) planned.
  static constexpr int64_t kMaxStages = 3;
  /// sm_100a: keys and query tokens per tile (the MMAs' M = 128).
  static constexpr int64_t kTmemTile = 128;

  /// Keys per pass over a unit's query tiles past kPassKeys keys (sm_90a
  /// heads wider than kPassColumns: kWidePassKeys), and the most keys
  /// (both targets).
  static constexpr int64_t kPassKeys = 128, kWidePassKeys = 64, kMaxKvLen = 256;
  /// sm_90a: the most columns of dK (dV) a consumer accumulates in one pass
  /// over the query tiles; wider heads (D or Dv 192, 256) take column
  /// passes (below).
  static constexpr int64_t kPassColumns = 128;

  int64_t headDim = 0, valueDim = 0, kvTile = 0;
  /// Passes over the unit's query tiles, kvTile keys each, for L_kv past
  /// the pass's keys (passKeysFor()); dQ's partial sums of a pass go out in
  /// f32 to global memory and the next pass adds to them.
  int64_t kvChunks = 1;
  int64_t stages = 2;
  /// sm_90a, D or Dv past kPassColumns: every pass of keys walks the query
  /// tiles columnPasses() times, pass p accumulating dK's and dV's columns
  /// [128 p, 128 p + 128) (S^T and dP^T recomputed each time) and computing
  /// dQ's column blocks of that range; keys 64 per pass (one consumer
  /// warpgroup; K and V of 128 keys, a stage and two groups' buffers need
  /// 384 (D + Dv) + 65 KB: past 227 KB from D + Dv = 448. At 192 + 192 or
  /// 64 + 256 one stage of 128 keys would fit: untried).
  bool wideHeads() const { return std::max(headDim, valueDim) > kPassColumns; }
  int64_t columnPasses() const {
    if (roleGroups)
      return 1;
    return (std::max(headDim, valueDim) + kPassColumns - 1) / kPassColumns;
  }
  /// sm_90a heads past 128 columns without a residual copied for dq (the
  /// planner's choice; AttentionGradRoles.cpp): instead of column passes,
  /// two consumer warpgroups on the same 64 keys, each walking the tiles
  /// once per pass of keys. The value group (0) computes S^T, P^T, dV
  /// [64 keys, Dv] and dQ (from the key group's dS^T); the key group (1)
  /// S^T, dP^T, dS^T (into two buffers by tile parity, before the groups'
  /// own) and dK [64 keys, D]. Each group's own buffer is then one output
  /// staging block [64, 64].
  bool roleGroups = false;
  /// The columns of a dimension of `dim` (D or Dv) in column pass `pass`
  /// (0 where the dimension ends before it).
  static int64_t passColumns(int64_t dim, int64_t pass) {
    return std::clamp<int64_t>(dim - pass * kPassColumns, 0, kPassColumns);
  }
  /// Keys per pass of keys.
  int64_t passKeysFor() const { return wideHeads() ? kWidePassKeys : kPassKeys; }
  /// kvTile and kvChunks for `kvLen` keys (headDim and valueDim set;
  /// planAttentionGradLayout makes kvTile kPassKeys on sm_100a).
  void setKeys(int64_t kvLen) {
    const int64_t passKeys = passKeysFor();
    kvTile = std::min<int64_t>((kvLen + kGroupKeys - 1) / kGroupKeys * kGroupKeys,
                               passKeys);
    kvChunks = (kvLen + passKeys - 1) / passKeys;
  }
  /// sm_100a: the tcgen05 kernel's layout (above).
  bool tensorMemory = false;
  /// The RMSNorm-gradient prologue's cluster of `heads` CTAs (0: no
  /// prologue): after the groups, one tile of x [64 tokens, Dv] (64-column
  /// blocks, 128-byte swizzled as the stage's dO: 1024-byte aligned, the
  /// swizzle's period), then the row-sum slots, [2 tile parities][heads][64]
  /// f32, then the tile's rstd, [64] f32.
  int64_t prologueHeads = 0;
  int64_t prologueSlotBytes() const { return prologueHeads * kTileQ * 4; }
  int64_t prologueInputOffset() const {
    return groupsOffset() + consumers() * groupBytes();
  }
  int64_t prologueOffset() const { return prologueInputOffset() + kTileQ * valueDim * 2; }
  int64_t prologueRstdOffset() const { return prologueOffset() + 2 * prologueSlotBytes(); }
  int64_t prologueBytes() const {
    return prologueHeads ? kTileQ * valueDim * 2 + 2 * prologueSlotBytes() + kTileQ * 4
                         : 0;
  }

  /// Query tokens per tile.
  int64_t tileQ() const { return tensorMemory ? kTmemTile : kTileQ; }
  /// sm_90a: a consumer warpgroup per 64 keys; sm_100a: one epilogue
  /// warpgroup (beside the producer's and the MMA warp's).
  int64_t consumers() const {
    return tensorMemory ? 1 : roleGroups ? 2 : kvTile / kGroupKeys;
  }
  int64_t threads() const { return 128 * (1 + consumers()); }
  int64_t kBytes() const { return kvTile * headDim * 2; }
  int64_t vBytes() const { return kvTile * valueDim * 2; }
  int64_t qBytes() const { return tileQ() * headDim * 2; }
  int64_t doBytes() const { return tileQ() * valueDim * 2; }
  int64_t stageBytes() const { return qBytes() + doBytes(); }
  int64_t stagesOffset() const { return kBytes() + vBytes(); }
  /// P^T (and each dS^T) buffer: [64 keys, 64 tokens]; sm_100a [128, 128].
  int64_t pBytes() const {
    return tensorMemory ? kTmemTile * kTmemTile * 2 : kBlockBytes;
  }
  /// sm_90a: whether the groups hold a P^T buffer (read where the kernel
  /// takes P^T from shared memory, AttentionGradKernelSpec::
  /// operandsInRegisters); dropped only for heads past 128 columns (where
  /// it buys a second stage at D = Dv = 256; the other kernels keep their
  /// layout).
  bool sharedP = true;
  /// Per consumer group: P^T (where sharedP), dS^T (2 parities; sm_100a
  /// one), the output staging.
  int64_t pOffset() const { return 0; }
  int64_t dsOffset(int64_t parity) const {
    return (tensorMemory || sharedP ? 1 + parity : parity) * pBytes();
  }
  int64_t outOffset() const {
    if (roleGroups)
      return 0;
    return tensorMemory ? 2 * pBytes() : (sharedP ? 3 : 2) * kBlockBytes;
  }
  /// roleGroups: the key group's dS^T buffers (tile parity 0, then 1)
  /// after the stages; the groups' staging blocks after both.
  int64_t roleDsOffset() const { return stagesOffset() + stages * stageBytes(); }
  /// The staging buffer's columns: dK's and dV's of a column pass, or
  /// dQ's blocks of one (sm_100a: the whole head).
  int64_t stagingColumns() const {
    if (roleGroups)
      return 64;
    return tensorMemory ? std::max(headDim, valueDim)
                        : std::min(std::max(headDim, valueDim), kPassColumns);
  }
  int64_t groupBytes() const { return outOffset() + stagingColumns() * 2 * tileQ(); }
  int64_t groupsOffset() const {
    return roleGroups ? roleDsOffset() + 2 * kBlockBytes
                      : stagesOffset() + stages * stageBytes();
  }
  /// sm_100a: where tcgen05.alloc writes the tensor memory's address.
  int64_t tmemSlotOffset() const {
    return groupsOffset() + consumers() * groupBytes() + prologueBytes();
  }
  int64_t sharedMemoryBytes() const {
    return tmemSlotOffset() + (tensorMemory ? 16 : 0) + kAlignment;
  }

  /// sm_100a: the tensor-memory columns of S^T (then dQ), dP^T, dV and dK;
  /// what tcgen05.alloc takes (a power of two >= 32).
  int64_t tmemScoreColumn() const { return 0; }
  int64_t tmemGradColumn() const { return kTmemTile; }
  int64_t tmemValueColumn() const { return 2 * kTmemTile; }
  int64_t tmemKeyColumn() const { return 2 * kTmemTile + valueDim; }
  int64_t tmemColumns() const { return tmemKeyColumn() + headDim; }
  int64_t tmemAllocColumns() const {
    int64_t columns = 32;
    while (columns < tmemColumns())
      columns *= 2;
    return columns;
  }
};

/// `layout` with the most stages (up to kMaxStages, at least one) whose
/// shared memory fits `target`; on a target with tensor memory, the tcgen05
/// layout (tensorMemory, kvTile 128).
AttentionGradLayout planAttentionGradLayout(const TargetInfo &target,
                                            AttentionGradLayout layout);

/// What fusion-plan-kernels{report=true} says of a gdpa_grad kernel's plan.
std::string describeAttentionGradLayout(const TargetInfo &target,
                                        const AttentionGradLayout &layout,
                                        int64_t kvLen);

/// A fusion.gdpa_grad as the backward kernel sees it: do, q, k, v and the
/// three gradients of one 16-bit type (`elem`; null when they differ),
/// dense or jagged q, D, Dv and L_kv (ShapedType::kDynamic where not
/// static).
struct AttentionGradShape {
  Type elem;
  bool jagged = false;
  int64_t headDim = 0, valueDim = 0, kvLen = 0;
  /// The RMSNorm-gradient prologue (gdpa_grad's rms_norm_grad): the row
  /// sums over the H x Dv of a token cross a cluster of the H heads' CTAs;
  /// `heads` is H (ShapedType::kDynamic where not static).
  bool rmsPrologue = false;
  int64_t heads = 0;
  /// A residual added to dq, and whether it is the grad operand itself.
  bool residual = false, residualIsGrad = false;
  /// sm_90a: the residual is read from the stage's dO block (do itself,
  /// D = Dv).
  bool residualInStage(bool tensorMemory) const {
    return residual && residualIsGrad && headDim == valueDim && !tensorMemory;
  }
};

/// The layout of the kernel for `s` (which the target takes:
/// whyNoAttentionGradKernel) on `target`: planAttentionGradLayout of its
/// dimensions, keys and prologue, without the P^T buffer where the sm_90a
/// kernel keeps P^T in registers and the heads are past 128 columns.
/// Shared by the kernel's spec and fusion-plan-kernels' report.
AttentionGradLayout planAttentionGradLayout(const TargetInfo &target,
                                            const AttentionGradShape &s);

/// Empty when `target` has an attention backward kernel for `s`, else why
/// not (a message that follows "cannot generate an <chip> attention
/// kernel: "). The element types are checked by the caller (which names
/// the operand that differs).
std::string whyNoAttentionGradKernel(const TargetInfo &target,
                                     const AttentionGradShape &s);

/// A FlashNormAttention block as the kernel sees it: q, k, v and the output
/// of one 16-bit type (`elem`; null when they differ), dense or jagged q,
/// the heads H, head dimension D and key/value length (ShapedType::kDynamic
/// where not static).
struct NormAttentionShape {
  Type elem;
  bool jagged = false;
  int64_t heads = 0, headDim = 0, kvLen = 0;
  /// The forward also writes ln_q and h (fusion.norm_attention's saved
  /// results, for a backward of unfused ops).
  bool saves = false;
};

/// Empty when `target` has a FlashNormAttention kernel for `s`, else why
/// not (a message that follows "cannot generate an <chip> attention
/// kernel: ").
std::string whyNoNormAttentionKernel(const TargetInfo &target,
                                     const NormAttentionShape &s);

/// Empty when `target` has a kernel for the block's backward
/// (fusion.norm_attention_grad) of `s`, else why not. No target has one yet:
/// fusion-form-norm-attention then leaves a block with its backward as its
/// ops (the backward reads ln_q and h, which disappear with a fused
/// forward), whose kernels (rms_norm_grad, gdpa_grad, add, layer_norm_grad)
/// run it.
std::string whyNoNormAttentionGradKernel(const TargetInfo &target,
                                         const NormAttentionShape &s);

} // namespace mlir::fusion

#endif // FUSION_TARGET_NVPTX_ATTENTIONKERNELLIMITS_H
