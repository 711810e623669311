//===- FusedOpsToLinalg.cpp - fused_matmul and norm_attention lowering ----===//
//
// The reference semantics of the L1 ops. They are written in the order the
// fused kernels compute (the Lazy Pre-Norm prologue scales the accumulator
// rows after the product; the norm epilogue sees the f32 accumulator, never a
// rounded intermediate), with the same norm formulas as the L0 ops
// (TensorMath.h), so that comparing a fused op with its unfused composition
// on the CPU checks the rewrite, not two different definitions.
//
//===----------------------------------------------------------------------===//

#include "AttentionMath.h"
#include "TensorMath.h"

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "fusion/Dialect/Fusion/IR/ActivationMath.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
//===----------------------------------------------------------------------===//
// fused_matmul
//===----------------------------------------------------------------------===//

/// The f32 accumulator after the prologue, row_scale and col_bias: of A @ B,
/// or of A @ UP (`rhs` = up, the gated product's second weight: the same
/// prologue and row_scale, no col_bias).
Value buildFusedAccumulator(TensorMath &m, FusedMatmulOp op, Value rhs = {}) {
  Type f32 = m.builder().getF32Type();
  bool isUp = static_cast<bool>(rhs);
  Value a = op.getLhs(), b = isUp ? rhs : op.getRhs();
  bool tb = op.getTransposeRhs();
  // The verifier allows transpose_lhs only without a prologue (which reads
  // A's rows).
  Value acc = m.matmul(a, b, op.getTransposeLhs(), tb);

  switch (op.getPrologue()) {
  case PrologueKind::none:
    break;
  case PrologueKind::rms_norm: {
    // Lazy Pre-Norm: rms_norm(A) @ B = diag(rstd) (A @ B).
    RMSNormResult stats = buildRMSNorm(
        m, a, /*weight=*/{}, op.getPrologueEpsilon()->convertToDouble(), f32);
    acc = m.mulTensors(acc, stats.rstd, Bcast::Row);
    break;
  }
  case PrologueKind::layer_norm: {
    // layer_norm(A) @ B = diag(rstd) (A @ B - mean colsum(B)), colsum(B)
    // from the col_sum operand when given (the GPU kernel's input).
    LayerNormResult stats =
        buildLayerNorm(m, a, /*weight=*/{}, /*bias=*/{},
                       op.getPrologueEpsilon()->convertToDouble(), f32);
    auto identity = [](OpBuilder &, Location, ValueRange x) { return x[0]; };
    Value colSum = op.getColSum();
    if (!colSum)
      colSum = tb ? m.sumRows({{b}}, identity) : m.sumCols({{b}}, identity);
    acc = m.map({{acc}, {stats.mean, Bcast::Row}, {stats.rstd, Bcast::Row},
                 {colSum, Bcast::Col}},
                f32, [](OpBuilder &nb, Location l, ValueRange x) {
                  Value centered = sub(nb, l, x[0], mul(nb, l, x[1], x[3]));
                  return mul(nb, l, x[2], centered);
                });
    break;
  }
  }
  if (op.getEpilogue() == EpilogueKind::row_scale)
    acc = m.mulTensors(acc, op.getRowScale(), Bcast::Row);
  if (op.getColScale())
    acc = m.mulTensors(acc, op.getColScale(), Bcast::Col);
  if (op.getColBias() && !isUp)
    acc = m.addTensors(acc, op.getColBias(), f32, Bcast::Col);
  return acc;
}

/// fusion.fused_matmul -> product, prologue scaling, epilogue.
struct FusedMatmulLowering : OpRewritePattern<FusedMatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedMatmulOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Type f32 = rewriter.getF32Type();
    Type outElem = elementTypeOf(op.getOutput());
    Value acc = buildFusedAccumulator(m, op);
    Value residual = op.getResidual();
    SmallVector<Value> results;

    if (op.isGradEpilogue()) {
      // The accumulator is the incoming gradient dh; the residual gradient is
      // added to dx.
      Type dxElem = residual ? f32 : outElem;
      // row_dot: the row sums as sum_k A[i,k] (row_dot[i,k] - shift[k])
      // and (LayerNorm) sum_k A[i,k] row_dot_sum[k], in f32 (the verifier
      // allows them without transpose_lhs and a prologue only).
      Value rowSum, rowSumG;
      if (Value rowDot = op.getRowDot()) {
        SmallVector<Operand> ins = {{op.getLhs()}, {rowDot}};
        Value shift = op.getRowDotShift();
        if (shift)
          ins.push_back({shift, Bcast::Col});
        rowSum = m.sumRows(ins, [&](OpBuilder &b, Location l, ValueRange a) {
          return mul(b, l, a[0], shift ? sub(b, l, a[1], a[2]) : a[1]);
        });
        if (Value sum = op.getRowDotSum())
          rowSumG = m.sumRows({{op.getLhs()}, {sum, Bcast::Col}},
                              [](OpBuilder &b, Location l, ValueRange a) {
                                return mul(b, l, a[0], a[1]);
                              });
      }
      NormGradResult g =
          op.getEpilogue() == EpilogueKind::rms_norm_grad
              ? buildRMSNormGrad(m, acc, op.getNormInput(), op.getRstd(),
                                 op.getNormWeight(), dxElem,
                                 op.getNormalizedInput(), Value(), rowSum)
              : buildLayerNormGrad(m, acc, op.getNormInput(), op.getMean(),
                                   op.getRstd(), op.getNormWeight(),
                                   op.getWithBiasGrad(), dxElem, Value(),
                                   rowSumG, rowSum);
      Value dx = residual ? m.addTensors(g.inputGrad, residual, outElem)
                          : g.inputGrad;
      results.push_back(dx);
      if (g.weightGrad)
        results.push_back(g.weightGrad);
      if (g.biasGrad)
        results.push_back(g.biasGrad);
      rewriter.replaceOp(op, results);
      return success();
    }

    // Forward: the residual enters the norm (post-norm).
    bool norm = op.getEpilogue() == EpilogueKind::rms_norm ||
                op.getEpilogue() == EpilogueKind::layer_norm;
    // activation: act(acc), and with up act(acc) * acc_up, rounded once
    // (the verifier allows no residual with it).
    if (std::optional<Activation> act = op.getActivation()) {
      SmallVector<Operand> ins = {{acc}};
      if (Value up = op.getUp())
        ins.push_back({buildFusedAccumulator(m, op, up)});
      Value out = m.map(ins, outElem, [&](OpBuilder &b, Location l, ValueRange x) {
        Value y = buildActivation(b, l, *act, x[0]);
        return x.size() > 1 ? mul(b, l, y, x[1]) : y;
      });
      rewriter.replaceOp(op, out);
      return success();
    }
    // rope: acc rotated per head, rounded once (no residual, norm or
    // activation with it).
    if (Value cos = op.getRopeCos()) {
      rewriter.replaceOp(op, buildRope(rewriter, op.getLoc(), acc, cos,
                                       op.getRopeSin(), *op.getRopeHeadDim(),
                                       op.getRopeInterleaved(), outElem,
                                       /*tableRowModulo=*/true));
      return success();
    }
    Value t = acc;
    if (residual)
      t = m.addTensors(acc, residual, norm ? f32 : outElem);
    else if (!norm)
      t = m.convert(acc, outElem);
    // save_norm_input: the norm's input rounded once to the output's type;
    // the norm itself reads the f32 value, as the kernels do.
    Value saved = op.getSaveNormInput() ? m.convert(t, outElem) : Value();
    // norm_group_size G: the norm over the last dimension of t viewed as
    // [M, N / G, G], its output collapsed back to [M, N]; the statistics
    // come out [M, N / G].
    std::optional<int64_t> group = op.getNormGroupSize();
    SmallVector<ReassociationIndices> groupsReassociation = {{0}, {1, 2}};
    if (norm && group) {
      auto tType = cast<RankedTensorType>(t.getType());
      int64_t n = tType.getDimSize(1);
      SmallVector<OpFoldResult> shape = {
          tensor::getMixedSize(rewriter, op.getLoc(), t, 0)};
      if (ShapedType::isDynamic(n)) {
        Value groups = arith::DivUIOp::create(
            rewriter, op.getLoc(), tensor::DimOp::create(rewriter, op.getLoc(), t, 1),
            arith::ConstantIndexOp::create(rewriter, op.getLoc(), *group));
        shape.push_back(groups);
      } else {
        shape.push_back(rewriter.getIndexAttr(n / *group));
      }
      shape.push_back(rewriter.getIndexAttr(*group));
      auto grouped = RankedTensorType::get(
          {tType.getDimSize(0), ShapedType::isDynamic(n) ? n : n / *group, *group},
          tType.getElementType());
      t = tensor::ExpandShapeOp::create(rewriter, op.getLoc(), grouped, t,
                                        groupsReassociation, shape);
    }
    // post_residual: added to the norm's f32 output before the one
    // rounding.
    Value post = op.getPostResidual();
    Type normElem = post ? f32 : outElem;
    auto ungroup = [&](Value y) -> Value {
      if (group)
        y = tensor::CollapseShapeOp::create(rewriter, op.getLoc(), y,
                                            groupsReassociation);
      return post ? m.addTensors(y, post, outElem) : y;
    };
    if (op.getEpilogue() == EpilogueKind::rms_norm) {
      RMSNormResult r =
          buildRMSNorm(m, t, op.getNormWeight(),
                       op.getEpsilon()->convertToDouble(), normElem);
      results = {ungroup(r.output)};
      if (saved)
        results.push_back(saved);
      if (op.getSaveStats())
        results.push_back(r.rstd);
    } else if (op.getEpilogue() == EpilogueKind::layer_norm) {
      LayerNormResult r =
          buildLayerNorm(m, t, op.getNormWeight(), op.getNormBias(),
                         op.getEpsilon()->convertToDouble(), normElem);
      results = {ungroup(r.output)};
      if (saved)
        results.push_back(saved);
      if (op.getSaveStats())
        results.append({r.mean, r.rstd});
    } else {
      results = {t};
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// norm_attention
//===----------------------------------------------------------------------===//

/// fusion.norm_attention -> layer_norm, gdpa, residual, rms_norm, residual,
/// all in f32.
struct NormAttentionLowering : OpRewritePattern<NormAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NormAttentionOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Type f32 = rewriter.getF32Type();
    Value q = op.getQuery();
    LayerNormResult ln = buildLayerNorm(
        m, flattenHeads(m, q), op.getLnWeight(), op.getLnBias(),
        op.getLnEpsilon().convertToDouble(), f32);
    Value lnq = unflattenHeads(m, ln.output, q);
    AttentionParams p{op.getActivation(), op.getScale().convertToDouble(),
                      op.getOffsets()};
    Value attn = buildAttention(m, lnq, op.getKey(), op.getValue(), p, f32);
    Value h = m.addTensors(attn, lnq, f32);
    RMSNormResult rms =
        buildRMSNorm(m, flattenHeads(m, h), op.getRmsWeight(),
                     op.getRmsEpsilon().convertToDouble(), f32);
    Value out = m.addTensors(unflattenHeads(m, rms.output, q), q,
                             elementTypeOf(op.getOutput()));
    SmallVector<Value> results = {out, ln.mean, ln.rstd, rms.rstd};
    // The saved ln_q and h, rounded to q's type once.
    if (!op.getSaved().empty())
      for (Value v : {lnq, h})
        results.push_back(m.convert(v, elementTypeOf(op.getSavedLnQuery())));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// fusion.norm_attention_grad -> recompute ln_q and h, then the chain rule
/// through rms_norm, the inner residual, gdpa and layer_norm.
struct NormAttentionGradLowering : OpRewritePattern<NormAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NormAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Type f32 = rewriter.getF32Type();
    Value q = op.getQuery(), dout = op.getGrad();
    Value qFlat = flattenHeads(m, q);
    // ln_q in f32, from q and the LayerNorm statistics (recomputed).
    Value lnq = unflattenHeads(
        m,
        applyLayerNorm(m, qFlat, op.getLnMean(), op.getLnRstd(),
                       op.getLnWeight(), op.getLnBias(), f32),
        q);
    AttentionParams p{op.getActivation(), op.getScale().convertToDouble(),
                      op.getOffsets()};
    Value attn = buildAttention(m, lnq, op.getKey(), op.getValue(), p, f32);
    Value h = m.addTensors(attn, lnq, f32);

    NormGradResult rg =
        buildRMSNormGrad(m, flattenHeads(m, dout), flattenHeads(m, h),
                         op.getRmsRstd(), op.getRmsWeight(), f32);
    Value dh = unflattenHeads(m, rg.inputGrad, q);
    AttentionGrads ag = buildAttentionGrad(
        m, dh, lnq, op.getKey(), op.getValue(), p, f32,
        elementTypeOf(op.getKeyGrad()), elementTypeOf(op.getValueGrad()));
    Value dlnq = m.addTensors(dh, ag.query, f32);
    NormGradResult lg = buildLayerNormGrad(
        m, flattenHeads(m, dlnq), qFlat, op.getLnMean(), op.getLnRstd(),
        op.getLnWeight(), /*withBiasGrad=*/static_cast<bool>(op.getLnBias()),
        f32);
    Value dq = m.addTensors(unflattenHeads(m, lg.inputGrad, q), dout,
                            elementTypeOf(op.getQueryGrad()));

    SmallVector<Value> results = {dq, ag.key, ag.value};
    for (Value g : {lg.weightGrad, lg.biasGrad, rg.weightGrad})
      if (g)
        results.push_back(g);
    rewriter.replaceOp(op, results);
    return success();
  }
};
} // namespace

void mlir::fusion::populateFusedOpsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FusedMatmulLowering,       // fusion.fused_matmul
               NormAttentionLowering,     // fusion.norm_attention
               NormAttentionGradLowering  // fusion.norm_attention_grad
               >(patterns.getContext());
}
