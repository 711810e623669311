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
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <string>

namespace mlir::fusion {

struct AttentionKernelSpec {
  /// Query tokens per CTA work item: two consumer warpgroups of 64 rows.
  static constexpr int64_t kTileM = 128, kConsumers = 2, kGroupRows = 64;
  /// Columns of one 128-byte swizzled box of 16-bit elements.
  static constexpr int64_t kBoxCols = 64, kBoxBytes = 64 * 128;
  static constexpr int64_t kAlignment = 1024;

  /// q, k, v and the output: bf16 or f16.
  Type elemType;
  /// D (q, k), Dv (v, output): multiples of 64 up to 256; the key/value
  /// length L_kv (up to 256) and it rounded up to 64 (TMA zero-fills the
  /// rest: zero keys and values add nothing).
  int64_t headDim = 0, valueDim = 0, kvLen = 0, kvTile = 0;
  Activation activation = Activation::identity;
  double scale = 1.0;
  /// Stages of (Q, K, V) in the ring: the next work item's loads overlap
  /// this one's MMAs and activation.
  int64_t stages = 2;

  int64_t threads() const { return 128 * (1 + kConsumers); }
  int64_t qBytes() const { return kTileM * headDim * 2; }
  int64_t kBytes() const { return kvTile * headDim * 2; }
  int64_t vBytes() const { return kvTile * valueDim * 2; }
  int64_t stageBytes() const { return qBytes() + kBytes() + vBytes(); }
  int64_t groupBufferBytes() const {
    return kGroupRows * std::max(kvTile, valueDim) * 2;
  }
  int64_t groupBufferOffset() const { return stages * stageBytes(); }
  /// The dynamic shared memory the launch asks for (with the alignment pad).
  int64_t sharedMemoryBytes() const {
    return groupBufferOffset() + kConsumers * groupBufferBytes() + kAlignment;
  }
};

/// The spec of `op` on `target`, or failure with `whyNot` (a message that
/// follows "cannot generate an <chip> attention kernel: ").
FailureOr<AttentionKernelSpec> getAttentionKernelSpec(GDPAOp op,
                                                      const TargetInfo &target,
                                                      std::string &whyNot);

/// The kernel's arguments, in order: the tensor maps of q, k, v (loads) and
/// the output (stores), then batch, query length and heads (index).
enum class AttentionArg { TmaQ, TmaK, TmaV, TmaOut, Batch, QueryLen, Heads };
inline constexpr unsigned kAttentionArgs = 7;

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONSPEC_H
