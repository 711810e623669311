//===- AttentionSpec.h - the attention kernel's spec and ABI ----*- C++ -*-===//
//
// What the attention kernel (AttentionKernel.cpp) is built from: the element
// type, the static head dimensions and key/value length, the activation and
// scale of a fusion.gdpa, and the shared-memory layout that follows from
// them; and the kernel's argument list, shared by the kernel and its launch
// (AttentionFamily.cpp).
//
// Shared memory, from the 1024-byte aligned base (every block a multiple of
// 1024 bytes, as the 128-byte swizzle needs):
//
//   stage s < stages   Q [128 tokens, D]   D / 64 boxes [128, 64]
//                      K [kvTile, D]       D / 64 blocks [kvTile, 64]
//                                          (K-major, wgmma's transposed B)
//                      V [kvTile, Dv]      kvTile / 64 K steps of Dv / 64
//                                          boxes [64, 64] (N-major B)
//   group g < 2        P [64, kvTile] of the group's rows, kvTile / 64
//                      blocks [64, 64] (K-major A of the second MMA); the
//                      output tile [64, Dv] reuses it, Dv / 64 blocks
//
// FlashNormAttention (norms): no group buffers (the group's rows of the
// stage's Q take ln_q, then P, then the output), and the row exchange's
// slots instead: 3 rounds (the LayerNorm's sum and centered sum of
// squares, the RMSNorm's sum of squares) x 2 item parities of
// [H][128] f32.
//
// sm_100a (tensorMemory): the same blocks; gdpa's P is kvTile / 64 blocks
// [128, 64] over the two group buffers (the output staging stays two 64-row
// halves), and 16 bytes after the parameters receive the tensor-memory
// address (AttentionLayout).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Target/NVPTX/AttentionKernelLimits.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <algorithm>
#include <string>

namespace mlir::fusion {

struct AttentionKernelSpec : AttentionLayout {
  /// Columns of one 128-byte swizzled box of 16-bit elements.
  static constexpr int64_t kBoxCols = 64, kBoxBytes = 64 * 128;

  /// q, k, v and the output: bf16 or f16.
  Type elemType;
  /// The key/value length L_kv (up to 256; kvTile rounds it up to 64).
  int64_t kvLen = 0;
  Activation activation = Activation::identity;
  double scale = 1.0;
  /// Jagged query (fusion.gdpa with offsets): q and the output are
  /// [T, H, D], batch b owning tokens offsets[b] .. offsets[b + 1]; k and v
  /// stay dense. offsetsType: the offsets' element type (i32 or i64).
  bool jagged = false;
  Type offsetsType;
  /// fusion.gdpa's residual (the output's shape and element type), added to
  /// O in f32 before the rounding; null when absent. residualIsQuery: it is
  /// the gdpa's own query (D = Dv), which the sm_90a consumers read from the
  /// stage's Q tile where they read it before O = P V (Dv <= 128).
  Type residualType;
  bool residualIsQuery = false;
  /// fusion.norm_attention: the norms' epsilons and their parameters'
  /// element types (null when absent).
  double lnEpsilon = 0, rmsEpsilon = 0;
  Type lnWeightType, lnBiasType, rmsWeightType;
  /// fusion.norm_attention with saved results: ln_q and h also stored, each
  /// from the group's rows (sm_100a: the row halves) when they hold it, as
  /// the output is (sm_90a jagged: by TMA where the group's rows are all the
  /// item's, else 16 bytes a thread into the flat tensor).
  bool saves = false;

  /// sm_90a: a producer warpgroup and the consumer groups; sm_100a: a
  /// producer warp, the MMA warp, two idle warps and the epilogue
  /// warpgroup.
  int64_t threads() const { return tensorMemory ? 256 : 128 * (1 + kConsumers); }
};

/// The spec of `op` on `target`, or failure with `whyNot` (a message that
/// follows "cannot generate an <chip> attention kernel: ").
FailureOr<AttentionKernelSpec> getAttentionKernelSpec(GDPAOp op,
                                                      const TargetInfo &target,
                                                      std::string &whyNot);

/// The spec of a fusion.norm_attention (the FlashNormAttention forward).
FailureOr<AttentionKernelSpec>
getNormAttentionKernelSpec(NormAttentionOp op, const TargetInfo &target,
                           std::string &whyNot);

/// The kernel's arguments: the tensor maps of q, k, v (loads) and the
/// output (stores), batch, query length and heads (index); with the norms,
/// the parameters present (memref<?xT>) and the saved statistics
/// (memref<?x?xf32>, [B, L_q]; jagged [1, T]).
/// Batch is B, QueryLen L_q (dense) or the token count T (jagged).
/// Jagged: the offsets, each 128-token window's first batch (computed by
/// the window kernel) and the output as a flat memref (the masked stores of
/// windows that are not one batch's alone).
/// With a residual: the residual as a flat memref<?xT> ([B, L_q, H, Dv] or
/// jagged [T, H, Dv], row-major), read at the output's positions. Saving
/// ln_q and h, last, their tensor maps (stores, as the output's), and
/// jagged, both as flat memrefs (as Output).
enum class AttentionArg {
  TmaQ, TmaK, TmaV, TmaOut, Batch, QueryLen, Heads,
  Offsets, WindowBatch, Output, Residual,
  LnWeight, LnBias, RmsWeight, LnMean, LnRstd, RmsRstd, TmaLnQ, TmaHidden,
  LnQFlat, HiddenFlat
};
/// The arguments `s` takes, in order.
SmallVector<AttentionArg> attentionArgs(const AttentionKernelSpec &s);

/// `t` as MLIR prints it, for the attention families' diagnostics.
std::string typeName(Type t);

/// Jagged attention: offsets[i] as a token index, clamped to [0, tokens]
/// (offsets outside it select no rows rather than rows of another tensor),
/// or `tokens` where i is past the offsets' end (an empty offsets tensor has
/// no batch). Device code (index type).
Value clampedOffset(ImplicitLocOpBuilder &b, Value offsets, Value i, Value tokens);

/// Host code: a jagged [T, H, D] memref as one batch [1, T, H, D] (the
/// attention kernels' 4-D tensor maps), and jagged per-token statistics
/// [T] as [1, T] (FlashNormAttention's [B, L_q] arguments); other memrefs
/// as they are.
Value asBatchOfOne(ImplicitLocOpBuilder &b, Value mem);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H
