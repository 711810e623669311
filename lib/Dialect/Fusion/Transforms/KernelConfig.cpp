//===- KernelConfig.cpp - kernel configuration of a fused matmul ----------===//
//
// The heuristics of fusion-plan-kernels, kept apart from the pass: which tile,
// pipeline depth and cluster a fusion.fused_matmul gets on a target, and the
// shared-memory layout those choices imply. Every hardware limit comes from
// TargetInfo; the tiling, the epilogue strategy and the shared-memory layout
// are in fusion/Target/NVPTX/GemmKernelLayout.h, which the GPU lowering reads
// too, so it builds exactly the kernel the planner budgeted.
//
// The kernel (docs/design.md, "Kernel designs"): a producer warp streams A and
// B tiles by TMA into a ring of `stages` swizzled shared-memory buffers; on
// sm_90a two consumer warpgroups issue wgmma and the epilogue applies the
// norm to the accumulator registers; on sm_100a one thread issues tcgen05.mma
// into two tensor-memory accumulator stages (one for a norm row past 256
// columns) and one epilogue warpgroup reads them back (the plain GEMM and the
// one-CTA norm epilogues, so far). CTAs are persistent: one per SM,
// looping over output tiles. Rows wider than one CTA's slice are normalized
// by a cluster along N exchanging partial sums through DSMEM.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::fusion;

using K = GemmTiling;

namespace {
std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// "A/B ring 98304, row sums 512, output staging 32768, ...": where the
/// bytes go.
std::string breakdown(const GemmSmemLayout &l) {
  std::string s = ("A/B ring " + Twine(l.ringBytes()) +
                   ", row sums " + Twine(l.rowStatsBytes))
                      .str();
  if (l.storeStagingBytes)
    s += (", output staging " + Twine(l.storeStagingBytes)).str();
  if (l.normInputBytes)
    s += (", norm_input tile " + Twine(l.normInputBytes)).str();
  if (l.clusterSlotsBytes)
    s += (", DSMEM slots " + Twine(l.clusterSlotsBytes)).str();
  s += (", alignment " + Twine(K::kSmemAlignment)).str();
  return s;
}

/// The deepest ring in [kMinStages, maxStages] that fits `budget`, or
/// nothing when even kMinStages does not.
std::optional<GemmSmemLayout> deepestFit(int64_t budget, GemmSmemParams p,
                                         int64_t maxStages) {
  for (p.stages = maxStages; p.stages >= K::kMinStages; --p.stages) {
    GemmSmemLayout l = getGemmSmemLayout(p);
    if (l.totalBytes <= budget)
      return l;
  }
  return std::nullopt;
}

/// Step 1: the operand element types the MMA takes.
LogicalResult checkElementTypes(FusedMatmulOp op, std::string &why) {
  Type lhs = getElementTypeOrSelf(op.getLhs().getType());
  Type rhs = getElementTypeOrSelf(op.getRhs().getType());
  // The sm_90a wgmma path (and the planned tcgen05 one) reads bf16 or f16
  // and accumulates in f32.
  for (auto [name, t] : {std::pair<StringRef, Type>{"lhs", lhs}, {"rhs", rhs}}) {
    if (!t.isBF16() && !t.isF16()) {
      why = ("expected " + name +
             " of element type bf16 or f16 (the MMA reads bf16/f16 and "
             "accumulates in f32), but got " +
             str(t))
                .str();
      return failure();
    }
  }
  if (lhs != rhs) {
    why = "expected lhs and rhs of one element type (one MMA instruction "
          "kind), but got " +
          str(lhs) + " (lhs) and " + str(rhs) + " (rhs)";
    return failure();
  }
  return success();
}

/// Step 1: a static size a kernel launch can cover: at least one element
/// (a TMA dimension, and a tile, hold one at least), and no more than a TMA
/// dimension spans (target.maxTmaDimSize: every operand is read or written
/// through a tensor map).
LogicalResult checkLaunchDim(const TargetInfo &target, StringRef name,
                             int64_t size, std::string &why) {
  if (ShapedType::isDynamic(size))
    return success();
  if (size <= 0) {
    why = ("expected " + name +
           " > 0 (TMA tensor maps and the launch need at least one element "
           "along each dimension: every call would fail), but got " +
           name + " = " + Twine(size))
              .str();
    return failure();
  }
  if (size > target.maxTmaDimSize) {
    why = ("expected " + name + " <= " + Twine(target.maxTmaDimSize) +
           " (the elements one TMA dimension spans on " + target.chip +
           "; every call would fail), but got " + name + " = " + Twine(size))
              .str();
    return failure();
  }
  return success();
}

/// Step 1: a static dimension whose rows TMA can address: `size` elements of
/// `elementBytes` bytes must make a multiple of 16 bytes.
LogicalResult checkTmaDim(const TargetInfo &target, StringRef name,
                          int64_t size, int64_t elementBytes,
                          std::string &why) {
  if (ShapedType::isDynamic(size)) {
    why = ("expected a static " + name +
           " (the TMA descriptors and the tiling are planned for it), but "
           "got " +
           name + " = ?")
              .str();
    return failure();
  }
  if (failed(checkLaunchDim(target, name, size, why)))
    return failure();
  int64_t multiple = 16 / elementBytes;
  if (size % multiple != 0) {
    why = ("expected " + name + " to be a multiple of " + Twine(multiple) +
           " (TMA needs 16-byte row strides: " + name + " x " +
           Twine(elementBytes) + " bytes), but got " + name + " = " +
           Twine(size))
              .str();
    return failure();
  }
  return success();
}
/// Split-K: a weight gradient (transpose_lhs, dy^T x: K is the token count)
/// without prologue, epilogue, residual or bias, whose output tiles cover at
/// most half the SMs (an [H, H] weight with H <= 1024), splits K into up to
/// 16 ranges, one work item per tile and range, so that the SMs fill (on 132
/// SMs: H = 512, 8 tiles x 16 ranges; 768, 18 x 7; 1024, 32 x 4); the
/// partial sums go to an f32 workspace that a second kernel adds in order.
/// At least two K steps per range where K is static; a dynamic K is split
/// at run time into at most split_k non-empty ranges. (Other small GEMMs
/// would gain too; they keep their measured kernels for now.)
int64_t chooseSplitK(FusedMatmulOp op, const TargetInfo &target, int64_t m,
                     int64_t n, int64_t k, int64_t tileN, int64_t clusterN) {
  constexpr int64_t kMaxSplits = 16, kMinStepsPerSplit = 2;
  if (!op.getTransposeLhs() || op.getPrologue() != PrologueKind::none ||
      op.getEpilogue() != EpilogueKind::none || op.getActivation() ||
      op.getResidual() || op.getRowScale() || op.getColBias() ||
      op.getRopeCos() || clusterN != 1 || ShapedType::isDynamic(m) ||
      ShapedType::isDynamic(n))
    return 1;
  int64_t tiles =
      static_cast<int64_t>(llvm::divideCeil(m, GemmTiling::kTileM) *
                           llvm::divideCeil(n, gemmOutputTileN(op, tileN)));
  if (2 * tiles > target.multiprocessors)
    return 1;
  int64_t splits = std::min(kMaxSplits, target.multiprocessors / tiles);
  if (!ShapedType::isDynamic(k))
    splits = std::min<int64_t>(
        splits, llvm::divideCeil(k, GemmTiling::kTileK) / kMinStepsPerSplit);
  return std::max<int64_t>(1, splits);
}

/// Stream-K (sm_90a, opt-in: measured slower on the H200, the CTAs' K
/// ranges no longer sharing A and B slices in L2): a GEMM whose tiles need
/// not be a multiple of the persistent grid spreads its last full wave and
/// the partial one evenly over the CTAs by K steps (TileScheduler.h). Only
/// where each tile's epilogue is its own (no row reduction, no activation), the
/// K loop carries nothing but the accumulator (no Lazy prologue), the
/// accumulator is in registers, and K is not split already; with static M and
/// N, only where the tiles are more than the SMs and not a multiple of them (a
/// dynamic M decides at run time: whole tiles where they divide).
bool chooseStreamK(FusedMatmulOp op, const TargetInfo &target, int64_t m,
                   int64_t n, int64_t tileN, int64_t clusterN, int64_t splitK) {
  if (target.tensorMemoryColumns > 0 || splitK != 1 || clusterN != 1 ||
      op.getPrologue() != PrologueKind::none || op.isGradEpilogue() ||
      op.getActivation() || op.getRopeCos() ||
      op.getEpilogue() == EpilogueKind::rms_norm ||
      op.getEpilogue() == EpilogueKind::layer_norm)
    return false;
  if (ShapedType::isDynamic(m) || ShapedType::isDynamic(n))
    return true;
  int64_t tiles =
      static_cast<int64_t>(llvm::divideCeil(m, GemmTiling::kTileM) *
                           llvm::divideCeil(n, gemmOutputTileN(op, tileN)));
  return tiles > target.multiprocessors && tiles % target.multiprocessors != 0;
}
/// cluster_m = 2 (B's tiles multicast over a pair of CTAs along M): on a
/// target accumulating in registers, for tiles of at least two 64-column
/// boxes of B (kSwizzleCols, the 128-byte swizzle), with no cluster
/// along N, split-K, stream-K, epilogue warps, global rows or row dot (plain
/// tiles of one CTA each, whose rings the pair shares; a weight gradient,
/// transpose_lhs, too: only B's boxes are shared); not a grad epilogue (not
/// yet run as a pair on a GPU); with static M and N, only for more tiles
/// than SMs and at least two row blocks (fewer leave no L2 traffic worth
/// sharing).
int64_t chooseClusterM(FusedMatmulOp op, const TargetInfo &target, int64_t m,
                       int64_t n, int64_t tileN, int64_t clusterN,
                       int64_t splitK, bool streamK,
                       const GemmEpilogueStrategy &strategy) {
  if (target.tensorMemoryColumns > 0 || clusterN != 1 || splitK != 1 ||
      streamK || strategy.epilogueWarps || strategy.globalRows ||
      op.getRowDot() || op.isGradEpilogue() ||
      tileN % (2 * K::kSwizzleCols) != 0)
    return 1;
  if (ShapedType::isDynamic(m) || ShapedType::isDynamic(n))
    return 2;
  int64_t rowBlocks = llvm::divideCeil(m, K::kTileM);
  int64_t tiles = rowBlocks * llvm::divideCeil(n, gemmOutputTileN(op, tileN));
  return rowBlocks >= 2 && tiles > target.multiprocessors ? 2 : 1;
}
/// The rope epilogue's tiles hold whole heads: `step` (tile_n's unit)
/// becomes a multiple of gemmRopeTileUnit; false, with why, where the
/// target's epilogue cannot rotate them. Without rope, true.
bool ropeStep(FusedMatmulOp op, const TargetInfo &target, int64_t &step,
              std::string &why) {
  if (!op.getRopeCos())
    return true;
  auto table = cast<RankedTensorType>(op.getRopeCos().getType());
  std::string whyNot;
  std::optional<int64_t> unit =
      gemmRopeTileUnit(target, *op.getRopeHeadDim(), table.getShape().back(),
                       op.getRopeInterleaved(), whyNot);
  if (!unit) {
    why = "expected a rope epilogue the GEMM kernel can rotate, but " + whyNot +
          " (without the fold, fusion-fuse rope-epilogue=false, fusion.rope "
          "runs as a row kernel)";
    return false;
  }
  step = std::lcm(step, *unit);
  return true;
}
} // namespace

int64_t mlir::fusion::gemmOutputTileN(FusedMatmulOp op, int64_t tileN) {
  return op.getUp() ? tileN / 2 : tileN;
}

FailureOr<KernelConfigAttr>
mlir::fusion::planFusedMatmul(FusedMatmulOp op, const TargetInfo &target,
                              std::string &why, bool allowSplitK,
                              bool allowStreamK, int64_t maxTileN,
                              int64_t maxStages, bool allowMulticast) {
  if (maxStages <= 0)
    maxStages = K::kMaxStages;
  // Step 1: what the kernel needs. A is [M, K] row-major, or stored [K, M]
  // with transpose_lhs; B is [K, N], or [N, K] with transpose_rhs; the output
  // is [M, N]. M may be dynamic where it only sets the number of row blocks.
  if (failed(checkElementTypes(op, why)))
    return failure();
  Type elementType = getElementTypeOrSelf(op.getLhs().getType());
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  ArrayRef<int64_t> lhsShape =
      cast<RankedTensorType>(op.getLhs().getType()).getShape();
  ArrayRef<int64_t> rhsShape =
      cast<RankedTensorType>(op.getRhs().getType()).getShape();
  ArrayRef<int64_t> outShape =
      cast<RankedTensorType>(op.getOutput().getType()).getShape();
  bool transposeLhs = op.getTransposeLhs(), transposeRhs = op.getTransposeRhs();
  int64_t k = lhsShape[transposeLhs ? 0 : 1];
  if (ShapedType::isDynamic(k))
    k = transposeRhs ? rhsShape[1] : rhsShape[0];
  int64_t n = outShape[1];
  if (ShapedType::isDynamic(n))
    n = transposeRhs ? rhsShape[0] : rhsShape[1];
  int64_t m = lhsShape[transposeLhs ? 1 : 0];
  if (ShapedType::isDynamic(m))
    m = outShape[0];
  // The innermost dimension of each operand is a TMA row and must be static;
  // with transpose_lhs (a weight gradient dy^T x) that is M for lhs [K, M],
  // and K, the token count there, may stay dynamic when rhs is [K, N] too.
  bool kInnermost = !transposeLhs || transposeRhs;
  auto checkDim = [&](StringRef name, int64_t size, bool innermost) {
    return innermost ? checkTmaDim(target, name, size, elementBytes, why)
                     : checkLaunchDim(target, name, size, why);
  };
  if (failed(checkDim("M", m, transposeLhs)) ||
      failed(checkDim("K", k, kInnermost)) ||
      failed(checkTmaDim(target, "N", n, elementBytes, why)))
    return failure();

  // Step 2: tile_m = 128 for two consumer warpgroups of 64 rows each, and
  // tile_k = 64 for the 128-byte swizzle: fixed, see GemmTiling.

  // Step 3: tile_n and cluster_n. Forward norm and grad epilogues reduce
  // over the whole row of N columns, so the row must be covered by the
  // cluster: exactly the split the fusion passes decided with
  // planEpilogueNorm (one CTA, or C = ceil(N / 256) CTAs of ceil(N / C)
  // columns rounded up to the tile_n granularity; the last may extend past
  // N, and the kernel masks those columns out of the statistics). Other
  // epilogues are independent per element: the widest slice one CTA's
  // accumulator holds, no wider than N needs, and no cluster.
  EpilogueKind epilogue = op.getEpilogue();
  bool rowReduction = op.isGradEpilogue() ||
                      epilogue == EpilogueKind::rms_norm ||
                      epilogue == EpilogueKind::layer_norm;
  // A grad epilogue whose row sum is a row dot (row_dot) reduces over K in
  // the main loop: its epilogue is per element, any N, no cluster.
  bool rowDot = static_cast<bool>(op.getRowDot());
  int64_t tileN, clusterN;
  for (Value v : {op.getRowDotShift(), op.getRowDotSum()})
    if (v && getElementTypeOrSelf(v.getType()) != elementType) {
      why = "expected row_dot_shift and row_dot_sum of lhs's element type " +
            str(elementType) + " (they come by TMA beside A's tiles), but got " +
            str(getElementTypeOrSelf(v.getType()));
      return failure();
    }
  if (rowDot && getElementTypeOrSelf(op.getRowDot().getType()) != elementType) {
    why = "expected row_dot of lhs's element type " + str(elementType) +
          " (its tiles ride in the ring beside A's), but got " +
          str(getElementTypeOrSelf(op.getRowDot().getType()));
    return failure();
  }
  // (sm_90a: through a ring slot; sm_100a reads it from global memory.)
  if (rowDot && target.tensorMemoryColumns == 0 &&
      getElementTypeOrSelf(op.getNormInput().getType())
              .getIntOrFloatBitWidth() != 16) {
    why = "expected a 16-bit norm_input with row_dot (its tiles come through "
          "the ring as 16-bit values), but got " +
          str(getElementTypeOrSelf(op.getNormInput().getType()));
    return failure();
  }
  if (rowDot) {
    tileN = std::min(gemmMaxElementwiseTileN(target),
                     static_cast<int64_t>(
                         llvm::alignTo(n, target.tileNGranularity)));
    clusterN = 1;
  } else if (rowReduction) {
    // Column groups (norm_group_size): each CTA's tile holds whole groups,
    // no exchange.
    std::string whyNot;
    std::optional<int64_t> group = op.getNormGroupSize();
    int64_t outBits =
        getElementTypeOrSelf(op.getOutput().getType()).getIntOrFloatBitWidth();
    FailureOr<EpilogueNormPlan> plan =
        group
            ? planGroupedEpilogueNorm(target, n, *group, whyNot, maxTileN)
            : planEpilogueNorm(target, n, whyNot, /*wideOutput=*/outBits > 16);
    if (failed(plan)) {
      why = ((group ? "expected tiles that hold whole groups of the "
                    : "expected the CTAs of a row block to cover a row of the ") +
             stringifyEpilogueKind(epilogue) + " epilogue, but " + whyNot)
                .str();
      return failure();
    }
    tileN = plan->sliceN;
    clusterN = plan->clusterSize;
  } else {
    int64_t widest = op.getPrologue() == PrologueKind::layer_norm
                         ? gemmMaxLayerNormPrologueTileN(target)
                         : gemmMaxElementwiseTileN(target);
    // The gated product's tile holds both weights' columns, in whole
    // 64-column boxes each: 2N columns, in steps of two boxes. The rope
    // epilogue's holds whole heads.
    int64_t step = op.getUp() ? 2 * K::kSwizzleCols : target.tileNGranularity;
    if (!ropeStep(op, target, step, why))
      return failure();
    tileN = std::min(widest, static_cast<int64_t>(
                                 llvm::alignTo(op.getUp() ? 2 * n : n, step)));
    if (maxTileN > 0)
      tileN = std::min(tileN, std::max(maxTileN, step));
    tileN = std::max(step, static_cast<int64_t>(llvm::alignDown(tileN, step)));
    clusterN = 1;
  }

  // The norm_input tile of a grad epilogue has its own element type.
  int64_t normInputElementBytes = 0;
  if (op.isGradEpilogue())
    normInputElementBytes =
        getElementTypeOrSelf(op.getNormInput().getType())
            .getIntOrFloatBitWidth() /
        8;

  // Step 4: the deepest ring that fits. Without a row reduction tile_n is
  // free: halve it (keeping the MMA's N granularity) while not even the
  // shallowest ring fits. On both targets the widest tile fits.
  int64_t budget = target.smemPerBlockOptin;
  int64_t outputElementBytes =
      getElementTypeOrSelf(op.getOutput().getType()).getIntOrFloatBitWidth() / 8;
  GemmSmemParams params;
  params.tileN = tileN;
  params.clusterN = clusterN;
  params.elementBytes = elementBytes;
  params.normInputElementBytes = normInputElementBytes;
  params.grad = op.isGradEpilogue();
  params.outputElementBytes = outputElementBytes;
  params.accumulatorInTensorMemory = target.tensorMemoryColumns > 0;
  params.rowDot = rowDot;
  params.rowDotVectors = bool(op.getRowDotShift()) + bool(op.getRowDotSum());
  params.prologueRowStats =
      op.getPrologue() == PrologueKind::layer_norm || op.getRowDotSum() ? 2 : 1;
  params.exchangeRounds = (epilogue == EpilogueKind::layer_norm ||
                           epilogue == EpilogueKind::layer_norm_grad)
                              ? 2
                              : 1;
  Value residual = op.getResidual();
  bool residualLikeOutput =
      residual && getElementTypeOrSelf(residual.getType()) ==
                      getElementTypeOrSelf(op.getOutput().getType());
  auto strategyFor = [&](int64_t tileN) {
    // The row dot's and the column groups' epilogues are the consumers'
    // (nothing to wait for).
    if (rowDot || op.getNormGroupSize())
      return GemmEpilogueStrategy();
    return chooseGemmEpilogueStrategy(target, rowReduction, op.isGradEpilogue(),
                                      tileN, clusterN, n,
                                      8 * outputElementBytes, residualLikeOutput);
  };
  params.strategy = strategyFor(tileN);
  std::optional<GemmSmemLayout> layout = deepestFit(budget, params, maxStages);
  int64_t narrowest =
      op.getUp() ? 2 * K::kSwizzleCols : target.tileNGranularity;
  if (!rowReduction && !ropeStep(op, target, narrowest, why))
    return failure();
  while (!layout && (!rowReduction || rowDot) && tileN > narrowest) {
    tileN = std::max(
        narrowest, static_cast<int64_t>(llvm::alignDown(tileN / 2, narrowest)));
    params.tileN = tileN;
    params.strategy = strategyFor(tileN);
    layout = deepestFit(budget, params, maxStages);
  }
  if (!layout) {
    params.stages = K::kMinStages;
    GemmSmemLayout smallest = getGemmSmemLayout(params);
    why = ("expected at most " + Twine(target.smemPerBlockOptin) +
           " bytes of shared memory (the " + target.chip +
           " opt-in limit per CTA), but a " + Twine(K::kTileM) + "x" +
           Twine(tileN) + "x" + Twine(K::kTileK) + " tile with " +
           Twine(K::kMinStages) + " stages and cluster_n = " +
           Twine(clusterN) + " needs " + Twine(smallest.totalBytes) + " (" +
           Twine(smallest.totalBytes - target.smemPerBlockOptin) +
           " over; " + breakdown(smallest) + ")")
              .str();
    return failure();
  }

  // Step 4b: on sm_100a the accumulator lives in tensor memory: tile_n
  // columns per stage (two stages where they fit) of the 512 an SM has.
  std::string tmemWhy;
  if (!planGemmTensorMemory(target, K::kTileM, tileN, tmemWhy)) {
    why = tmemWhy;
    return failure();
  }

  // Split-K's kernel writes f32 partial sums from registers: no staging.
  int64_t splitK =
      allowSplitK ? chooseSplitK(op, target, m, n, k, tileN, clusterN) : 1;
  if (splitK > 1) {
    params.outputElementBytes = 4;
    if (std::optional<GemmSmemLayout> f32Layout =
            deepestFit(budget, params, maxStages))
      layout = f32Layout;
    else
      splitK = 1;
  }
  bool streamK = allowStreamK &&
                 chooseStreamK(op, target, m, n, tileN, clusterN, splitK);
  int64_t clusterM = allowMulticast
                         ? chooseClusterM(op, target, m, n, tileN, clusterN,
                                          splitK, streamK, params.strategy)
                         : 1;
  return KernelConfigAttr::get(
      op.getContext(), K::kTileM, tileN, K::kTileK, layout->stages, clusterN,
      gemmConsumerGroups(target), layout->totalBytes,
      params.strategy.epilogueWarps, params.strategy.globalRows,
      params.strategy.stagedResidual, splitK, streamK, /*decodeSplits=*/1,
      clusterM);
}

/// Whether a GEMM planned as `config` on `target` may take a second (or
/// third) body in the same kernel: the accumulator in registers (sm_90a),
/// and a main kernel of plain tiles (the host sizes no workspace per body
/// and launches no cluster along N; a main body of CTA pairs along M,
/// cluster_m, launches the other bodies in clusters of one).
static bool takesMoreBodies(const TargetInfo &target, KernelConfigAttr config,
                            std::string &whyNot) {
  if (target.tensorMemoryColumns > 0) {
    whyNot = "only where the accumulator is in registers (sm_90a)";
    return false;
  }
  if (config.getClusterN() != 1 || config.getSplitK() != 1 ||
      config.getStreamK() || config.getGlobalRows()) {
    whyNot = "the main kernel has a cluster, split-K or stream-K";
    return false;
  }
  return true;
}

std::optional<KernelConfigAttr>
mlir::fusion::planSmallMFusedMatmul(FusedMatmulOp op, const TargetInfo &target,
                                    KernelConfigAttr config,
                                    std::string &whyNot, bool decodeSplits) {
  if (!takesMoreBodies(target, config, whyNot))
    return std::nullopt;
  // A norm over whole rows fixes tile_n (the row's split over CTAs); one
  // over column groups (per-head norms) takes the narrowest tile of whole
  // groups.
  std::optional<int64_t> group = op.getNormGroupSize();
  if (op.isGradEpilogue() ||
      (!group && (op.getEpilogue() == EpilogueKind::rms_norm ||
                  op.getEpilogue() == EpilogueKind::layer_norm))) {
    whyNot = "the epilogue reduces over rows (tile_n is the norm's)";
    return std::nullopt;
  }
  int64_t smallTileN = GemmTiling::kSmallMTileN;
  // The gated product: a box of each weight.
  if (op.getUp())
    smallTileN = 2 * K::kSwizzleCols;
  if (group)
    smallTileN = std::lcm(*group, target.tileNGranularity);
  // The rope epilogue: whole heads.
  std::string ropeWhy;
  if (op.getRopeCos() && !ropeStep(op, target, smallTileN, ropeWhy)) {
    whyNot = ropeWhy;
    return std::nullopt;
  }
  if (config.getTileN() <= smallTileN) {
    whyNot = "the main kernel's tiles are no wider than a small-M kernel's";
    return std::nullopt;
  }
  std::string why;
  FailureOr<KernelConfigAttr> small =
      planFusedMatmul(op, target, why, /*allowSplitK=*/false,
                      /*allowStreamK=*/false, smallTileN,
                      GemmTiling::kSmallMMaxStages);
  if (failed(small)) {
    whyNot = why;
    return std::nullopt;
  }
  // K ranges per tile (decode_splits): where each range's K loop carries
  // nothing but the accumulator (no Lazy row sums in the kernel, no row
  // dot), so that range 0 may finish the tile from the others' sums (and
  // not with an activation: kept out of the hand-over, as from split-K's).
  if (decodeSplits && op.getPrologue() == PrologueKind::none &&
      !op.getRowDot() && !op.getActivation() && !op.getRopeCos()) {
    KernelConfigAttr c = *small;
    return KernelConfigAttr::get(
        op.getContext(), c.getTileM(), c.getTileN(), c.getTileK(),
        c.getStages(), c.getClusterN(), c.getConsumers(), c.getSmemBytes(),
        c.getEpilogueWarps(), c.getGlobalRows(), c.getStagedResidual(),
        c.getSplitK(), c.getStreamK(), GemmTiling::kSmallMMaxDecodeSplits,
        /*clusterM=*/1);
  }
  return *small;
}

std::optional<KernelConfigAttr>
mlir::fusion::planDecodeFusedMatmul(FusedMatmulOp op, const TargetInfo &target,
                                    KernelConfigAttr config,
                                    std::string &whyNot) {
  if (!takesMoreBodies(target, config, whyNot))
    return std::nullopt;
  // A per-head RMSNorm over heads of two consumer groups' 64 features
  // (Qwen3's q_norm / k_norm) is reduced across the CTA's tile.
  bool headNorm = op.getEpilogue() == EpilogueKind::rms_norm &&
                  op.getNormGroupSize() == 2 * K::kDecodeTileN &&
                  config.getConsumers() == 2 && op.getExtras().empty();
  if (op.getPrologue() != PrologueKind::none || op.getRowDot() ||
      (op.getEpilogue() != EpilogueKind::none &&
       op.getEpilogue() != EpilogueKind::row_scale && !headNorm) ||
      op.getSaveNormInput()) {
    whyNot = "its epilogue is not element-wise (or its prologue is in the "
             "kernel): the decode body's threads hold a token's features "
             "across the warpgroup";
    return std::nullopt;
  }
  if (op.getRopeCos()) {
    whyNot = "the decode body's threads hold a token's features across the "
             "warpgroup, not a head's rotated pairs (rope)";
    return std::nullopt;
  }
  if (op.getPostResidual()) {
    whyNot = "the decode body's per-head norm adds no post_residual";
    return std::nullopt;
  }
  if (op.getUp()) {
    whyNot = "the decode body's tiles are 64 features of one weight, the "
             "gated product's pair both weights' columns";
    return std::nullopt;
  }
  if (!op.getTransposeRhs() || op.getTransposeLhs()) {
    whyNot = "the weight is not nn.Linear's [N, K] (transpose_rhs), whose "
             "64-row slices are the decode body's MMA operand A";
    return std::nullopt;
  }
  auto is16 = [](Value v) {
    return getElementTypeOrSelf(v.getType()).getIntOrFloatBitWidth() == 16;
  };
  if (!is16(op.getLhs()) || !is16(op.getOutput())) {
    whyNot = "the decode body takes 16-bit operands and a 16-bit output";
    return std::nullopt;
  }
  int64_t tileN = headNorm ? 2 * K::kDecodeTileN : K::kDecodeTileN;
  GemmSmemParams params;
  params.tileN = tileN;
  params.decodeTokens = K::kDecodeTokens;
  std::optional<GemmSmemLayout> layout =
      deepestFit(target.smemPerBlockOptin, params, K::kDecodeMaxStages);
  if (!layout) {
    whyNot = "its ring does not fit the target's shared memory";
    return std::nullopt;
  }
  return KernelConfigAttr::get(
      op.getContext(), K::kDecodeTokens, tileN, K::kTileK, layout->stages,
      /*clusterN=*/1, config.getConsumers(), layout->totalBytes,
      /*epilogueWarps=*/false, /*globalRows=*/false, /*stagedResidual=*/false,
      /*splitK=*/1, /*streamK=*/false, /*decodeSplits=*/1, /*clusterM=*/1);
}
