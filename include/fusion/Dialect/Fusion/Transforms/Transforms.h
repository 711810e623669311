//===- Transforms.h - fusion decisions as public functions ------*- C++ -*-===//
//
// The logic behind each transform pass, callable from other compilers. The
// passes in Passes.td only read their options and call these.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
#define FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H

#include "fusion/Target/NVPTX/TargetInfo.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
class ModuleOp;
class Operation;
class RewritePatternSet;
namespace fusion {
class FusedMatmulOp;
class KernelConfigAttr;

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// How a norm epilogue over rows of N columns runs on a target.
struct EpilogueNormPlan {
  /// CTAs along N sharing one row block: 1 is the single-CTA (naive) fusion.
  int64_t clusterSize;
  /// Columns each CTA owns (its tile_n): N / clusterSize rounded up to the
  /// target's tile_n granularity. The last CTA's slice may extend past N;
  /// the kernel masks those columns out of the statistics.
  int64_t sliceN;
  /// The row length N.
  int64_t n;
  /// False when the cluster needs the non-portable size attribute (> 8).
  bool portable;
  /// Rows wider than the largest efficient cluster: CTAs of sliceN columns
  /// (clusterSize 1) publish partial statistics in global memory and keep
  /// their tile in shared memory (sm_90a) or tensor memory (sm_100a:
  /// `tileInTensorMemory`) until the row block's statistics are complete.
  bool throughGlobalMemory = false;
  bool tileInTensorMemory = false;
  /// A norm over groups of this many columns (norm_group_size; 0: the whole
  /// row): every CTA's slice holds whole groups, so no statistics cross CTAs.
  int64_t groupSize = 0;
  /// "one CTA holds the whole row (N = 256)" or "a cluster of 4 CTAs along N,
  /// 256 columns each, exchanging partial sums through DSMEM".
  std::string describe() const;
};

/// Decides how rows of `n` columns (ShapedType::kDynamic when unknown) are
/// normalized in a GEMM epilogue on `target`: one CTA when n fits one CTA's
/// accumulator (target.maxEpilogueTileN); a cluster along N when at most
/// target.maxEpilogueClusterSize CTAs hold the row: the smallest power of two
/// C whose CTAs hold it, each owning ceil(n / C) columns rounded up to
/// target.tileNGranularity, less the CTAs that would then own no column
/// (N = 576 on sm_90a: 3 CTAs of 192); wider rows, up to
/// target.maxClusterSize CTAs, through global memory (throughGlobalMemory,
/// tiles of target.maxEpilogueTileN columns). On failure (a dynamic N, or a
/// row of more than target.maxClusterSize CTAs) returns the reason, phrased
/// to follow "not fused: ".
/// `wideOutput` (f32 outputs): the global-memory exchange keeps the tile in
/// shared memory as 16-bit values, so f32 rows use a cluster (up to
/// target.maxClusterSize CTAs) instead.
FailureOr<EpilogueNormPlan> planEpilogueNorm(const TargetInfo &target,
                                             int64_t n, std::string &whyNot,
                                             bool wideOutput = false);

/// Decides how a norm over groups of `groupSize` columns of rows of `n`
/// (a per-head norm, norm_group_size) runs in a GEMM epilogue on `target`:
/// CTAs of the widest tile_n (a multiple of target.tileNGranularity, at most
/// target.maxEpilogueTileN, no wider than N needs) that holds whole groups,
/// each normalizing its groups alone (no cluster, no exchange). On failure
/// (a dynamic N, N not a multiple of the group, a group no such tile
/// holds, a group of other than a multiple of 8 columns, or a target whose
/// epilogue normalizes whole rows only) returns the reason, phrased to
/// follow "not fused: ". `maxTileN` (0: none) caps the tile (the small-M
/// kernel's: the narrowest tile that holds whole groups).
FailureOr<EpilogueNormPlan>
planGroupedEpilogueNorm(const TargetInfo &target, int64_t n, int64_t groupSize,
                        std::string &whyNot, int64_t maxTileN = 0);

//===----------------------------------------------------------------------===//
// Kernel planning (L1 -> L2)
//===----------------------------------------------------------------------===//

/// Chooses the kernel configuration of `op` on `target`:
///   1. checks what the kernel needs: bf16 or f16 operands of one element
///      type, static K and N, both multiples of 8 (TMA row strides of 16
///      bytes); M may be dynamic;
///   2. tile_m = 128, tile_k = 64; consumers = gemmConsumerGroups(target)
///      (2 wgmma warpgroups on sm_90a, 1 epilogue warpgroup on sm_100a);
///   3. tile_n and cluster_n: forward norm and grad epilogues reduce over
///      the whole row, so the cluster covers it as planEpilogueNorm decides
///      (cluster_n = clusterSize, tile_n = sliceN); the other epilogues take
///      tile_n = min(gemmMaxElementwiseTileN(target), N rounded up to
///      target.tileNGranularity), halved while even 2 stages do not fit, and
///      cluster_n = 1; the last column block may extend past N;
///   4. stages = the deepest in [2, 6] whose getGemmSmemLayout
///      (fusion/Target/NVPTX/GemmKernelLayout.h) fits
///      target.smemPerBlockOptin; smem_bytes = its total; on a target
///      accumulating in tensor memory, the accumulator must fit it
///      (planGemmTensorMemory: tile_n columns per stage, at most 512);
///   5. the epilogue strategy (chooseGemmEpilogueStrategy), recorded in the
///      configuration for the generator;
///   6. with `allowSplitK`, split-K for a small weight gradient;
///   7. with `allowStreamK`, stream-K for a GEMM without a row reduction or
///      prologue on a target accumulating in registers (chooseStreamK);
///   8. with `allowMulticast`, cluster_m = 2 where B's tiles may be shared
///      by a pair of CTAs along M (chooseClusterM).
/// On failure returns the reason, phrased to follow "'fusion.fused_matmul'
/// op " (lowercase, "expected X, but got Y").
/// `maxTileN` (0: none) caps tile_n where the epilogue leaves it free;
/// `maxStages` (0: GemmTiling::kMaxStages) caps the ring's depth.
FailureOr<KernelConfigAttr>
planFusedMatmul(FusedMatmulOp op, const TargetInfo &target, std::string &why,
                bool allowSplitK = false, bool allowStreamK = false,
                int64_t maxTileN = 0, int64_t maxStages = 0,
                bool allowMulticast = false);

/// The small-M kernel of `op`, planned as `config` (its main kernel), for
/// the calls whose few rows would leave most SMs idle: where the target
/// accumulates in registers (sm_90a) and the main kernel's tile_n is free
/// and wider than GemmTiling::kSmallMTileN (no row reduction, cluster,
/// split-K or stream-K), the same kernel with tiles of kSmallMTileN
/// columns and the deepest ring they fit, up to
/// GemmTiling::kSmallMMaxStages stages; otherwise nothing, with the
/// reason in `whyNot`. With a dynamic M, fusion-plan-kernels attaches it as
/// `fusion.kernel_small_m` and convert-fusion-to-gpu builds both bodies,
/// launching this one when the main kernel's tiles would occupy at most
/// 1 / GemmTiling::kSmallMOccupancy of the SMs; with a static M that few
/// tiles, it replaces the main configuration.
/// With `decodeSplits`, where the K loop carries only the accumulator (no
/// Lazy prologue, no row dot), also decode_splits =
/// GemmTiling::kSmallMMaxDecodeSplits.
std::optional<KernelConfigAttr>
planSmallMFusedMatmul(FusedMatmulOp op, const TargetInfo &target,
                      KernelConfigAttr config, std::string &whyNot,
                      bool decodeSplits = false);

/// The output columns of a tile of `tileN` accumulator columns: half of
/// them for the gated product (`up`: both weights' columns), else all; what
/// the tile counts over N divide by.
int64_t gemmOutputTileN(FusedMatmulOp op, int64_t tileN);

/// The swapped decode body of `op` (planned as `config`, the main
/// configuration): where the epilogue is element-wise (none or row_scale,
/// with col_bias and residual) or a per-head RMSNorm over heads of
/// 2 x kDecodeTileN (then tile_n is one head), the prologue is not in the
/// kernel, B is
/// nn.Linear's [N, K] weight, A, B and the output are 16-bit and `target`
/// keeps the accumulator in registers (sm_90a), a configuration of
/// GemmTiling::kDecodeTokens tokens (tile_m) by kDecodeTileN features
/// (tile_n) with the deepest ring that fits, up to kDecodeMaxStages;
/// otherwise nothing, with the reason in `whyNot`. fusion-plan-kernels
/// (decode-swap) attaches it to a dynamic M's GEMM as `fusion.kernel_decode`
/// and convert-fusion-to-gpu builds it as a third body, launched for calls
/// of at most tile_m tokens: D = y^T = W x^T, a 64-row slice of W as
/// wgmma's A, the tokens as its N.
std::optional<KernelConfigAttr> planDecodeFusedMatmul(FusedMatmulOp op,
                                                      const TargetInfo &target,
                                                      KernelConfigAttr config,
                                                      std::string &whyNot);

/// fusion-plan-kernels: rewrites every fusion.matmul into a fusion.fused_matmul
/// without prologue or epilogue (a bias becomes its col_bias), and attaches
/// `fusion.kernel` (the result of planFusedMatmul) to every
/// fusion.fused_matmul. Leaves standalone fusion.rms_norm, fusion.layer_norm,
/// fusion.add and fusion.mul in place (they have row kernels of their own).
/// Emits an error on each op that cannot run on the module's target (the
/// norm grads, gdpa and its grad, norm_attention and its grad, a matmul with
/// transpose_lhs, whatever planFusedMatmul refuses) and on a module without
/// `fusion.target` that has GEMMs to plan; then returns failure.
///
/// A Lazy Pre-Norm GEMM (prologue rms_norm, epilogue none) gets its row
/// statistics where `lazyRowStats` says: "in-kernel" (the GEMM sums the
/// squares of its A rows from the tiles in shared memory, once per output
/// tile), "kernel" (a stats-only fusion.rms_norm before it, whose rstd the
/// GEMM applies as its row_scale: A is read once more from HBM, but once per
/// row instead of once per column tile) or "auto" (lazyRowStatsInKernel).
/// A fusion.add of a fusion.gdpa_grad's query gradient (its only use) and a
/// tensor of its type defined before the gdpa_grad becomes the gdpa_grad's
/// residual where the target's attention backward kernel takes the op
/// (sm_90a and sm_100a), one kernel instead of two; a fusion.add of a
/// fusion.gdpa's output and such a tensor, the gdpa's residual likewise.
/// `splitK`: whether small weight gradients may split K (chooseSplitK).
/// `streamK`: whether GEMMs without a row reduction may spread their last
/// waves over the CTAs by K steps (chooseStreamK).
/// `smallM`: whether a GEMM planned for a dynamic token count also gets
/// `fusion.kernel_small_m` (planSmallMFusedMatmul).
///
/// Then (after the gdpa_grad's fold, before planning), under a target, a
/// fusion.add of a norm gradient's input gradient (its only use, possibly
/// through tensor.expand_shape / collapse_shape views) and a tensor of the
/// same shape becomes the norm gradient's `residual` (the other operand
/// reshaped back to dx's shape), so that the row kernel adds it instead of
/// a kernel of its own.
///
/// `report`: a remark per planned kernel (the GEMM's fusion.kernel
/// configuration; the attention kernel's items, stages, shared memory and
/// grid, describeAttentionLayout), per norm gradient given a residual, and
/// per add of a norm gradient's input gradient that did not fold (why).
///
/// `maxEpilogueCluster` (0: the target's maxEpilogueClusterSize): the most
/// CTAs of a cluster a forward norm epilogue's row may take; a wider row
/// goes through global memory (planEpilogueNorm). Grad epilogues keep the
/// target's limit (they have no global-memory form).
///
/// `rmsPrologue`: between those two folds, a fusion.rms_norm_grad whose
/// input gradient, its rows [.., H * Dv] expanded to [.., H, Dv], is a
/// fusion.gdpa_grad's output gradient (and at most its residual, which
/// becomes grad_residual) folds into that gdpa_grad as its RMSNorm-gradient
/// prologue where the target's attention backward kernel takes that form
/// (sm_90a, dense q, a cluster of the H heads; whyNoAttentionGradKernel).
/// Off by default until convert-fusion-to-gpu lowers the prologue.
///
/// `decodeSwap`: a dynamic M's GEMM may also get `fusion.kernel_decode`
/// (planDecodeFusedMatmul).
/// `smallMSplit`: a dynamic M's small-M configuration may split K
/// (decode_splits; planSmallMFusedMatmul).
/// `gemmResiduals`: a GEMM result's fusion.add with a tensor of its type
/// becomes the GEMM's residual (foldGemmResiduals).
/// `postResiduals`: a forward norm epilogue's output's fusion.add with a
/// tensor of its type becomes the GEMM's post_residual (takesPostResidual;
/// opt-in: slower than the add kernel on an H100, session 46).
/// `multicast`: GEMMs may be planned for a pair of CTAs sharing B's tiles
/// (cluster_m = 2; planFusedMatmul's allowMulticast).
/// `sideKernels`: a GEMM whose work units (static tiles x split_k) leave SMs
/// idle and whose next kernel may run beside it (findSideKernel) gets
/// fusion.side_kernel (KernelConfigAttr::getSideKernelAttrName); a split-K
/// one is planned for `sideSms` fewer SMs (-1: a quarter of the target's),
/// which the side kernel takes.
LogicalResult planKernels(ModuleOp module, StringRef lazyRowStats = "auto",
                          bool splitK = false, bool report = false,
                          int64_t maxEpilogueCluster = 0,
                          bool rmsPrologue = false, bool streamK = false,
                          bool smallM = false, bool smallMSplit = false,
                          bool decodeSwap = false, bool gemmResiduals = true,
                          bool multicast = false, bool postResiduals = false,
                          bool sideKernels = false, int64_t sideSms = -1);

/// Whether convert-fusion-to-gpu lowers `op` on the host, without a kernel:
/// shape arithmetic (tensor.dim, index constants) and reshapes, which become
/// views of the same buffer.
bool isGpuHostOp(Operation &op);

/// The kernel that may run beside the GEMM `gemm` (fusion.matmul or
/// fusion.fused_matmul) on a second stream: the next op of its block that
/// launches a kernel (tensor.dim, reshapes and index constants between them
/// are host work), if that is a norm gradient (fusion.rms_norm_grad,
/// fusion.layer_norm_grad: memory-bound rows) that uses nothing `gemm`
/// computes; null otherwise. A training step's weight gradient dW2 = dy^T n
/// and the norm gradient of dn = dy W2 are such a pair.
Operation *findSideKernel(Operation *gemm);

/// The cost model's choice for a Lazy Pre-Norm GEMM of `columnTiles` output
/// tiles per row: true to sum the rows in the kernel, false for a row
/// statistics kernel beforehand.
bool lazyRowStatsInKernel(const TargetInfo &target, int64_t columnTiles);

//===----------------------------------------------------------------------===//
// Transformations
//===----------------------------------------------------------------------===//

/// Lazy Pre-Norm (fusion-lazy-prenorm). For every fusion.rms_norm (and, with
/// `layerNorm`, fusion.layer_norm) over a 2-D tensor whose users are all
/// fusion.matmul ops taking it as lhs without transpose_lhs, and whose
/// statistics are unused: replaces each matmul by a fusion.fused_matmul with
/// the lazy prologue on the norm's input, folding the weight into B (a
/// fusion.mul, or a constant) and a LayerNorm bias beta into col_bias as
/// beta B (a 1-row fusion.matmul, or a constant) plus the matmul's own bias,
/// then erases the norm. With `report`, emits a remark on every norm
/// considered.
void applyLazyPrenorm(ModuleOp module, bool layerNorm, bool report);

/// Activation epilogue (fusion-activation-epilogue): act(GEMM) ->
/// fusion.fused_matmul with `activation`, and act(GEMM_gate) * GEMM_up over
/// the same A, prologue and row scale -> one with `up` as well. With
/// `report`, a remark on every fusion.activation.
void applyActivationEpilogue(ModuleOp module, bool report);

/// Rope epilogue (fusion-rope-epilogue): rope(GEMM) -> fusion.fused_matmul
/// with rope(cos, sin). With `report`, a remark on every fusion.rope.
void applyRopeEpilogue(ModuleOp module, bool report);

/// Epilogue norm (fusion-epilogue-norm): norm(matmul [+ residual]) ->
/// fusion.fused_matmul with a norm epilogue, the matmul's bias as col_bias,
/// when planEpilogueNorm accepts the row on the module's target. Needs
/// `fusion.target`.
void applyEpilogueNorm(ModuleOp module, bool report);

/// Norm weight fold (fusion-fold-norm-weight): a training step's RMSNorm
/// weight g into the layers n W^T after it (W diag(g)) and their weight
/// gradients (col_scale g), its gradient reading x_hat. With `report`, a
/// remark on every fusion.rms_norm.
void applyFoldNormWeight(ModuleOp module, bool report);

/// Backward regrouping (fusion-regroup-backward): a weightless norm fed by a
/// matmul and its *_grad fed by a dgrad matmul both become GEMM epilogues.
/// Without `apply`, only the remarks (a norm that would be regrouped says
/// that it was not, and why).
void applyRegroupBackward(ModuleOp module, bool report, bool apply = true,
                          bool rowDot = true);

/// FlashNormAttention formation (fusion-form-norm-attention). Without
/// `apply`, only the remarks (a block that would be formed says that it was
/// not, and why).
void applyFormNormAttention(ModuleOp module, bool report, bool apply = true);

/// Weight preparation (fusion-outline-weight-prep): in every function with
/// weight arguments (FusionDialect::kWeightArgAttrName, `fusion.weight`), the tensor ops computed from those arguments
/// (and constants) alone, and doing work (not only views of them), move into
/// a new function @<f>_prepare(the weight arguments, in order) returning
/// the values the rest of @f reads; @f gets them as arguments appended after
/// its own (each marked `fusion.prepared` = its index). With `report`, a
/// remark per function outlined or refused.
void applyOutlineWeightPrep(ModuleOp module, bool report);

/// Patterns raising linalg norms and matmuls to fusion ops, and absorbing a
/// bias add after a matmul into fusion.matmul's bias (fusion-raise-linalg).
void populateRaiseLinalgPatterns(RewritePatternSet &patterns);

} // namespace fusion
} // namespace mlir

#endif // FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
