//===- NormAndMatmulToLinalg.cpp - L0 matmul, add and norm lowering -------===//
//
// Reference lowering of fusion.matmul, fusion.add, fusion.mul,
// fusion.activation, the two norms
// and their gradients. The formulas live in TensorMath.cpp (buildRMSNorm, ...) so that
// the fused ops reuse them.
//
//===----------------------------------------------------------------------===//

#include "TensorMath.h"

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "fusion/Dialect/Fusion/IR/ActivationMath.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/IR/PatternMatch.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// fusion.matmul -> f32 contraction (+ f32 bias per column), rounded once to
/// the result type.
struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Value acc = m.matmul(op.getLhs(), op.getRhs(), op.getTransposeLhs(),
                         op.getTransposeRhs());
    Type outElem = elementTypeOf(op.getResult());
    Value result = op.getBias()
                       ? m.addTensors(acc, op.getBias(), outElem, Bcast::Col)
                       : m.convert(acc, outElem);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// fusion.add / fusion.mul -> element-wise f32 sum / product, rhs broadcast
/// NumPy-style against lhs, rounded to the result type.
template <typename OpTy>
struct BroadcastingBinaryLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Value r = m.map({{op.getLhs()}, {op.getRhs(), Bcast::Numpy}},
                    elementTypeOf(op.getResult()),
                    [](OpBuilder &b, Location l, ValueRange a) {
                      return std::is_same_v<OpTy, AddOp> ? add(b, l, a[0], a[1])
                                                         : mul(b, l, a[0], a[1]);
                    });
    rewriter.replaceOp(op, r);
    return success();
  }
};
using AddLowering = BroadcastingBinaryLowering<AddOp>;
using MulLowering = BroadcastingBinaryLowering<MulOp>;

/// fusion.activation -> act of each element in f32, rounded to the type.
struct ActivationLowering : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    Activation act = op.getActivation();
    Value r = m.map({{op.getInput()}}, elementTypeOf(op.getResult()),
                    [act](OpBuilder &b, Location l, ValueRange a) {
                      return buildActivation(b, l, act, a[0]);
                    });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// fusion.rms_norm -> sum of squares, rsqrt, scale.
struct RMSNormLowering : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    RMSNormResult r =
        buildRMSNorm(m, op.getInput(), op.getWeight(),
                     op.getEpsilon().convertToDouble(),
                     elementTypeOf(op.getOutput()));
    SmallVector<Value> results = {r.output};
    if (op.getRstd())
      results.push_back(r.rstd);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// fusion.layer_norm -> mean, centered variance, normalize.
struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    LayerNormResult r = buildLayerNorm(
        m, op.getInput(), op.getWeight(), op.getBias(),
        op.getEpsilon().convertToDouble(), elementTypeOf(op.getOutput()));
    rewriter.replaceOp(op, {r.output, r.mean, r.rstd});
    return success();
  }
};

/// fusion.rms_norm_grad -> one row reduction, dx (plus the residual, before
/// rounding), optional dweight.
struct RMSNormGradLowering : OpRewritePattern<RMSNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormGradOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    NormGradResult r =
        buildRMSNormGrad(m, op.getGrad(), op.getInput(), op.getRstd(),
                         op.getWeight(), elementTypeOf(op.getInputGrad()),
                         op.getNormalizedInput(), op.getResidual());
    SmallVector<Value> results = {r.inputGrad};
    if (r.weightGrad)
      results.push_back(r.weightGrad);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// fusion.layer_norm_grad -> two row reductions, dx (plus the residual,
/// before rounding), optional dweight/dbias.
struct LayerNormGradLowering : OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    NormGradResult r = buildLayerNormGrad(
        m, op.getGrad(), op.getInput(), op.getMean(), op.getRstd(),
        op.getWeight(), op.getWithBiasGrad(), elementTypeOf(op.getInputGrad()),
        op.getResidual());
    SmallVector<Value> results = {r.inputGrad};
    if (r.weightGrad)
      results.push_back(r.weightGrad);
    if (r.biasGrad)
      results.push_back(r.biasGrad);
    rewriter.replaceOp(op, results);
    return success();
  }
};
} // namespace

void mlir::fusion::populateNormAndMatmulToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<MatmulLowering,        // fusion.matmul
               AddLowering,           // fusion.add
               MulLowering,           // fusion.mul
               ActivationLowering,    // fusion.activation
               RMSNormLowering,       // fusion.rms_norm
               LayerNormLowering,     // fusion.layer_norm
               RMSNormGradLowering,   // fusion.rms_norm_grad
               LayerNormGradLowering  // fusion.layer_norm_grad
               >(ctx);
}
