//===- RopeEpilogue.cpp - the fusion-rope-epilogue pass -------------------===//
//
// fusion.rope of a GEMM's [M, N] result (its only use) becomes that GEMM's
// rope epilogue: fusion.fused_matmul with rope(cos, sin), rope_head_dim and
// rope_interleaved, the 2-D tables [T, R] read at row m mod T. The GEMM is a
// fusion.matmul (its bias becoming col_bias) or a fused_matmul with the none
// or row_scale epilogue (Lazy Pre-Norm's) and no residual, activation, up or
// rope of its own; on a module with a fusion.target, one whose kernel can
// rotate the heads (gemmRopeTileUnit: whole 8-column groups, whole heads in
// a tile).
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// Why the GEMM producing `rope`'s input cannot take it as its epilogue, or
/// "". Where the module has a fusion.target, also why that target's GEMM
/// kernel could not rotate its heads (without one, the fold is checked on
/// the CPU only, which takes any).
std::string whyNot(RopeOp rope, const std::optional<TargetInfo> &target) {
  Value input = rope.getInput();
  Operation *producer = input.getDefiningOp();
  if (!producer || !isa<MatmulOp, FusedMatmulOp>(producer))
    return "its input is not produced by a fusion.matmul or fused_matmul";
  if (!input.hasOneUse())
    return "the GEMM's result has other users";
  if (cast<RankedTensorType>(input.getType()).getRank() != 2)
    return "the GEMM's result is not 2-D";
  if (auto fused = dyn_cast<FusedMatmulOp>(producer)) {
    std::string why = whyNoElementwiseEpilogue(fused);
    if (!why.empty())
      return why;
    if (input != fused.getOutput())
      return "the input is not the GEMM's output";
  }
  std::string why;
  if (target &&
      !gemmRopeTileUnit(
          *target, rope.getHeadDim(),
          cast<RankedTensorType>(rope.getCos().getType()).getShape().back(),
          rope.getInterleaved(), why))
    return why;
  return "";
}
} // namespace

void mlir::fusion::applyRopeEpilogue(ModuleOp module, bool report) {
  SmallVector<RopeOp> ropes;
  module.walk([&](RopeOp rope) { ropes.push_back(rope); });
  std::optional<TargetInfo> target = lookupTargetInfo(module);
  IRRewriter rewriter(module.getContext());
  for (RopeOp rope : ropes) {
    std::string why = whyNot(rope, target);
    if (!why.empty()) {
      remark(report, rope, "not folded into a GEMM epilogue: " + why);
      continue;
    }
    Operation *producer = rope.getInput().getDefiningOp();
    FusedMatmulSpec spec;
    if (auto matmul = dyn_cast<MatmulOp>(producer))
      spec = plainMatmulSpec(matmul);
    else
      spec = fusedMatmulSpec(cast<FusedMatmulOp>(producer));
    spec.ropeCos = rope.getCos();
    spec.ropeSin = rope.getSin();
    spec.ropeHeadDim = rope.getHeadDim();
    spec.ropeInterleaved = rope.getInterleaved();
    spec.outputType = rope.getResult().getType();
    // At the rope: its tables are defined by then.
    rewriter.setInsertionPoint(rope);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, rope.getLoc(), spec);
    remark(report, rope,
           "folded into the GEMM's epilogue (rope_head_dim " +
               Twine(rope.getHeadDim()) +
               (rope.getInterleaved() ? ", interleaved)" : ")"));
    rewriter.replaceOp(rope, fused.getOutput());
    rewriter.eraseOp(producer);
  }
}
