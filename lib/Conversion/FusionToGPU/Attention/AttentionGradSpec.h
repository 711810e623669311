//===- AttentionGradSpec.h - the attention backward's spec and ABI -*- C++ -*-===//
//
// What the attention backward kernel (AttentionGradKernel.cpp) is built
// from: the element type, the static head dimensions and key/value length,
// the activation and scale of a fusion.gdpa_grad, and the shared-memory
// layout that follows from them (AttentionGradLayout,
// Target/NVPTX/AttentionKernelLimits.h); and the kernel's argument list,
// shared by the kernel and its launch (AttentionGradFamily.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADSPEC_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Target/NVPTX/AttentionKernelLimits.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include <string>

namespace mlir::fusion {

struct AttentionGradKernelSpec : AttentionGradLayout {
  /// do, q, k, v and the three gradients: bf16 or f16.
  Type elemType;
  /// L_kv (up to 256; kvTile rounds it up to 64, at most passKeysFor()
  /// (sm_100a: 128), and past that kvChunks passes of kvTile keys: 128, or
  /// 64 for heads past 128 columns).
  int64_t kvLen = 0;
  /// The keys below L_kv of pass `chunk` (its first kvTile of them).
  int64_t passKeys(int64_t chunk) const {
    return std::min(kvLen - chunk * kvTile, kvTile);
  }
  Activation activation = Activation::identity;
  double scale = 1.0;
  /// Jagged q, do, dq [T, H, D] through offsets (i32 or i64) [B + 1]; k, v,
  /// dk, dv stay dense [B, L_kv, H, D].
  bool jagged = false;
  Type offsetsType;
  /// dq += residual (q's shape and element type) in f32 before the
  /// rounding. The kernel reads it at the dQ accumulator's positions from
  /// global memory (rows past the tile's last token of L_q or of the
  /// sequence clamped to that token: their dQ is not stored) and copies it
  /// into the jagged dq rows outside every sequence.
  bool residual = false;
  /// sm_90a, the residual is do itself and D = Dv (the Kunlun block's dh):
  /// the consumers read it from the stage's dO tile, still resident at the
  /// dQ epilogue (the stage goes back after dQ's MMAs), not from global
  /// memory. (sm_100a's MMA warp releases the stage with dQ's commit, before
  /// the epilogue reads dQ: global memory there.)
  bool residualInStage = false;
  /// The RMSNorm-gradient prologue (gdpa_grad's rms_norm_grad, sm_90a,
  /// dense): three warps of the producer warpgroup turn each stage's dO
  /// (the norm's output gradient) into dh = rms_norm_grad(dO, x, rstd, w)
  /// in place, the row sums over the H x Dv of a token crossing the cluster
  /// of the H heads' CTAs (`prologueHeads` of the layout); with a weight,
  /// its gradient from one partial row per prologue warp.
  bool rmsPrologue = false;
  /// The weight's element type, or null (no weight).
  Type rmsWeightType;
  /// dq += dh (grad_residual): the residual is the stage's dO block, as
  /// residualInStage, and no residual argument is passed.
  bool gradResidual = false;
  /// sm_90a: P^T and dS^T are dV's and dK's A in registers (wgmma's
  /// register form, issued before the barrier on every group's dS^T), but
  /// for jagged q with a residual copied for dq: held there, they took that
  /// kernel's spills from 36 to 76 bytes (1.5% slower at Kunlun H 2 on the
  /// H200; dense 5% faster, jagged without a residual 3%), so it writes
  /// P^T to its buffer and reads both from shared memory after the barrier.
  bool operandsInRegisters() const { return !(jagged && residual && !residualInStage); }
  /// The prologue's warps (warps 1-3 of the producer warpgroup; warp 0's
  /// thread 0 issues the TMA loads).
  static constexpr int64_t kPrologueWarps = 3;
  static constexpr int64_t kPrologueThreads = 32 * kPrologueWarps;
  /// The producer warpgroup's registers with the prologue (setmaxnreg),
  /// which the consumers give up.
  static constexpr int64_t kPrologueRegisters = 56;
};

/// The spec of `op` on `target`, or failure with `whyNot` (a message that
/// follows "cannot generate an <chip> attention kernel: ").
FailureOr<AttentionGradKernelSpec>
getAttentionGradKernelSpec(GDPAGradOp op, const TargetInfo &target,
                           std::string &whyNot);

/// The kernel's arguments, in order: the 4-D tensor maps [B, L, H, D] of
/// the loads (do, q, k, v) and of the stores (dq, dk, dv), all with boxes
/// [1, 64, 1, 64] (jagged: do, q, dq as one batch [1, T, H, D]); batch,
/// query length (jagged: T) and heads (index); jagged only, the offsets
/// (memref<?xi32|i64>) and dq viewed flat (memref<?xelem>), for the rows of
/// a sequence's last tile and the rows outside every sequence; last, with a
/// residual, the residual viewed flat (memref<?xelem>, 16-byte aligned as
/// every argument; not with grad_residual); with passes of keys (kvChunks >
/// 1), dQ's partial sums (memref<?xf32>, H x rows x D: rows = B x tile
/// ceil(L_q / tile) dense, T + tile B jagged, the query tile 64 tokens on
/// sm_90a and 128 on sm_100a; pooled, written by every pass but the last
/// and read by every pass but the first). With the RMSNorm-gradient
/// prologue, then (AttentionGradPrologueArg): x flat (memref<?xelem>), rstd
/// flat (memref<?xf32>), the 4-D tensor map of x (its tiles prefetched
/// into L2), and with a weight the weight (memref<?xw>) and the partial rows
/// of its gradient ([clusters x kPrologueWarps][H x Dv] f32).
/// The rows of dQ's partial sums (kvChunks > 1): every query tile of every
/// unit's own tileQ rows, B x tileQ ceil(L_q / tileQ) dense (`queryLen`
/// L_q), T + tileQ B jagged (`queryLen` T: a sequence's tiles start at its
/// first token and end before the next one's first token + tileQ); the
/// buffer is heads x rows x D floats. Shared by the launch (its size) and
/// the kernel (AttentionGradEmitter::dqPartialTileRow).
Value dqPartialRows(ImplicitLocOpBuilder &b, const AttentionGradKernelSpec &s,
                    Value batch, Value queryLen);

enum class AttentionGradArg {
  TmaDo, TmaQ, TmaK, TmaV, TmaDq, TmaDk, TmaDv, Batch, QueryLen, Heads,
  Offsets, DqFlat
};
enum class AttentionGradPrologueArg { Input, Rstd, TmaInput, Weight, Partials };
constexpr int64_t kAttentionGradMaps = 7, kAttentionGradDenseArgs = 10,
                  kAttentionGradJaggedArgs = 12;

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADSPEC_H
