//===- RaiseLinalgAffine.cpp - absorb a layer's affine ops into its op ----===//
//
// The affine half of fusion-raise-linalg: a layer's bias or scale written as
// a separate op after it is folded into the op itself, where the fusion
// passes and kernels carry it for free.
//
// 1. nn.Linear's bias: `fusion.matmul ... bias(%b)`, whose bias the GEMM
//    kernel adds to the f32 accumulator (`col_bias`), so that the add costs no
//    pass over [M, N]. Matched forms, with %mm a fusion.matmul without bias
//    whose only user is the add:
//
//      fusion.add %mm, %b : tensor<MxN>, tensor<N>          (the PyTorch form)
//      fusion.add %mm, %b : tensor<MxN>, tensor<1xN>        (a keep-dim bias)
//      fusion.add %mm, %bb  (or %bb, %mm), %bb = linalg.broadcast %b [N] -> [M, N]
//
//    and, on f32 linalg (what torch-mlir emits for aten.linear), an
//    element-wise add of %mm and a column vector, `linalg.add` of %mm and a
//    broadcast, raised to the fusion.add above first. Rounding: the unfused
//    form rounds the product to the result type before adding the bias, the
//    raised one adds in f32 and rounds once (fusion.matmul's definition);
//    identical for f32 results.
//
// 2. A norm's weight and bias: `fusion.mul %n, %g` of a weightless norm's
//    output by an [N] vector (HF LlamaRMSNorm: `weight * rms_norm(x)`) becomes
//    the norm's weight, and `fusion.add %n, %beta` of a biasless LayerNorm's
//    output its bias, when the norm's output has no other user and its
//    statistics none. The unfused form rounds the normalized value before
//    scaling it; the raised norm rounds once.
//
#include "RaiseLinalg.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/Sequence.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::raise_linalg;

namespace {

/// The fusion.matmul producing `v` when it can take a bias: no bias yet and
/// `v` used only once (by the add being absorbed).
MatmulOp biaslessSingleUseMatmul(Value v) {
  auto mm = v.getDefiningOp<MatmulOp>();
  if (!mm || mm.getBias() || !v.hasOneUse())
    return {};
  return mm;
}

/// `v` as a bias [N] for a matmul result of type `resultType` ([M, N]), or
/// null: v is [N], [1, N], or a linalg.broadcast of an [N] vector to [M, N]
/// along dimension 0. `rewriter` builds the collapse of a [1, N] vector.
Value asColumnBias(Value v, RankedTensorType resultType,
                   PatternRewriter &rewriter, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t n = resultType.getDimSize(1);
  // A static size 1 against N != 1 (or an unknown N) broadcasts one value
  // over the columns: a scalar, not a column bias.
  auto isN = [&](int64_t d) {
    if (d == 1 && n != 1)
      return false;
    return d == n || ShapedType::isDynamic(d) || ShapedType::isDynamic(n);
  };
  if (type.getRank() == 1)
    return isN(type.getDimSize(0)) ? v : Value();
  if (type.getRank() != 2)
    return {};
  // [1, N] broadcasts over the rows whatever M is (equal when M = 1).
  if (type.getDimSize(0) == 1 && isN(type.getDimSize(1)))
    return tensor::CollapseShapeOp::create(
        rewriter, loc, v, SmallVector<ReassociationIndices>{{0, 1}});
  auto bc = v.getDefiningOp<linalg::BroadcastOp>();
  if (!bc || !bc.hasPureTensorSemantics() ||
      bc.getDimensions() != ArrayRef<int64_t>{0})
    return {};
  Value in = bc.getInput();
  auto inType = cast<RankedTensorType>(in.getType());
  if (inType.getRank() != 1 || !isN(inType.getDimSize(0)))
    return {};
  return in;
}

/// fusion.add of a biasless matmul and a column vector -> fusion.matmul with
/// bias (see the file comment).
struct AbsorbBiasAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(add.getType());
    if (resultType.getRank() != 2)
      return rewriter.notifyMatchFailure(add, "not a 2-D sum");
    // The matmul on the left; on the right only when both operands are
    // [M, N] of one type (a broadcast bias written first).
    SmallVector<std::pair<Value, Value>, 2> orders = {
        {add.getLhs(), add.getRhs()}};
    if (add.getRhs().getType() == add.getLhs().getType())
      orders.push_back({add.getRhs(), add.getLhs()});
    for (auto [mine, other] : orders) {
      MatmulOp mm = biaslessSingleUseMatmul(mine);
      if (!mm || mm.getType() != resultType)
        continue;
      // The new matmul takes the add's place: the bias, an operand of the
      // add, is defined before it.
      rewriter.setInsertionPoint(add);
      Value bias = asColumnBias(other, resultType, rewriter, add.getLoc());
      if (!bias)
        continue;
      rewriter.replaceOpWithNewOp<MatmulOp>(
          add, resultType, mm.getLhs(), mm.getRhs(), bias, mm.getTransposeLhs(),
          mm.getTransposeRhs());
      rewriter.eraseOp(mm);
      return success();
    }
    return rewriter.notifyMatchFailure(
        add, "no biasless single-use fusion.matmul plus an [N], [1, N] or "
             "broadcast [N] vector");
  }
};

/// Whether `body` yields arith.addf of its two inputs (either order).
bool yieldsSumOfInputs(Block &body) {
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1 || body.getNumArguments() != 3)
    return false;
  auto addf = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!addf || addf->getBlock() != &body)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (addf.getLhs() == a && addf.getRhs() == b) ||
         (addf.getLhs() == b && addf.getRhs() == a);
}

/// An f32 element-wise linalg sum of a fusion.matmul result and a column
/// vector (a linalg.generic reading it as (d0, d1) -> (d1) or (0, d1), or a
/// broadcast [M, N] tensor) -> fusion.add, which AbsorbBiasAdd then folds
/// into the matmul. Only sums with a matmul are raised.
struct RaiseBiasGeneric : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 2 ||
        op.getNumParallelLoops() != 2)
      return rewriter.notifyMatchFailure(op, "not a 2-D element-wise op of "
                                             "two inputs");
    MLIRContext *ctx = op.getContext();
    AffineExpr d0, d1;
    bindDims(ctx, d0, d1);
    AffineMap id = AffineMap::get(2, 0, {d0, d1}, ctx);
    AffineMap col = AffineMap::get(2, 0, {d1}, ctx);
    AffineMap keepCol =
        AffineMap::get(2, 0, {getAffineConstantExpr(0, ctx), d1}, ctx);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto resultType = cast<RankedTensorType>(op.getResult(0).getType());
    if (maps[2] != id || !resultType.getElementType().isF32() ||
        !yieldsSumOfInputs(*op.getBody()))
      return rewriter.notifyMatchFailure(op, "not an f32 sum");
    for (unsigned i : {0u, 1u}) {
      Value mine = op.getDpsInputs()[i], other = op.getDpsInputs()[1 - i];
      AffineMap otherMap = maps[1 - i];
      if (maps[i] != id || mine.getType() != resultType ||
          !mine.getDefiningOp<MatmulOp>() ||
          !cast<RankedTensorType>(other.getType()).getElementType().isF32())
        continue;
      if (otherMap == id && other.getType() == resultType &&
          other.getDefiningOp<linalg::BroadcastOp>()) {
        rewriter.replaceOpWithNewOp<AddOp>(op, mine, other);
        return success();
      }
      if (otherMap == col || otherMap == keepCol) {
        rewriter.replaceOpWithNewOp<AddOp>(op, mine, other);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(
        op, "not a sum of a fusion.matmul result and a column vector");
  }
};

/// linalg.add of an f32 fusion.matmul result and a linalg.broadcast [M, N]
/// -> fusion.add (then AbsorbBiasAdd).
struct RaiseBiasAdd : OpRewritePattern<linalg::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::AddOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2)
      return rewriter.notifyMatchFailure(op, "not on tensors");
    auto resultType = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!resultType || resultType.getRank() != 2 ||
        !resultType.getElementType().isF32() ||
        op.getIndexingMapsArray() !=
            SmallVector<AffineMap>(3, AffineMap::getMultiDimIdentityMap(
                                          2, op.getContext())))
      return rewriter.notifyMatchFailure(op, "not a plain 2-D f32 sum");
    for (unsigned i : {0u, 1u}) {
      Value mine = op.getDpsInputs()[i], other = op.getDpsInputs()[1 - i];
      if (mine.getType() == resultType && other.getType() == resultType &&
          mine.getDefiningOp<MatmulOp>() &&
          other.getDefiningOp<linalg::BroadcastOp>()) {
        rewriter.replaceOpWithNewOp<AddOp>(op, mine, other);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(
        op, "not a sum of a fusion.matmul result and a linalg.broadcast");
  }
};

/// `v` as a per-column vector [N] for a norm over rows of `n` columns: [N],
/// or [1, ..., 1, N] collapsed to [N]; null otherwise.
Value asNormVector(Value v, int64_t n, PatternRewriter &rewriter,
                   Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 0)
    return {};
  int64_t d = type.getDimSize(type.getRank() - 1);
  if (d == 1 && n != 1)
    return {};
  if (d != n && !ShapedType::isDynamic(d) && !ShapedType::isDynamic(n))
    return {};
  if (!llvm::all_of(type.getShape().drop_back(),
                    [](int64_t s) { return s == 1; }))
    return {};
  if (type.getRank() == 1)
    return v;
  ReassociationIndices all =
      llvm::to_vector<2>(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::CollapseShapeOp::create(rewriter, loc, v,
                                         SmallVector<ReassociationIndices>{all});
}

/// Whether the norm producing `out` can take the op using `out`: the output
/// has that one use and no statistic is used.
bool onlyUseIsAffine(Operation *norm, Value out) {
  if (!out.hasOneUse())
    return false;
  return llvm::all_of(norm->getResults().drop_front(),
                      [](Value stat) { return stat.use_empty(); });
}

/// fusion.mul of a weightless norm's output by a column vector -> the norm
/// with that weight; fusion.add of a biasless LayerNorm's output and a column
/// vector -> the LayerNorm with that bias. The new norm is built at the
/// mul/add (where the vector is defined) and replaces it.
template <typename OpTy>
struct AbsorbNormAffine : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  static constexpr bool isMul = std::is_same_v<OpTy, MulOp>;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value out = op.getLhs();
    Operation *norm = out.getDefiningOp();
    auto rms = dyn_cast_or_null<RMSNormOp>(norm);
    auto ln = dyn_cast_or_null<LayerNormOp>(norm);
    if ((!rms && !ln) || out != norm->getResult(0))
      return rewriter.notifyMatchFailure(op, "lhs is not a norm's output");
    if (isMul ? (rms ? bool(rms.getWeight()) : bool(ln.getWeight()))
              : (!ln || ln.getBias()))
      return rewriter.notifyMatchFailure(
          op, isMul ? "the norm already has a weight"
                    : "not a LayerNorm without bias");
    if (!onlyUseIsAffine(norm, out))
      return rewriter.notifyMatchFailure(
          op, "the normalized value or a statistic has other users");
    auto type = cast<RankedTensorType>(out.getType());
    Value vec = asNormVector(op.getRhs(), type.getDimSize(type.getRank() - 1),
                             rewriter, op.getLoc());
    if (!vec)
      return rewriter.notifyMatchFailure(op, "rhs is not a column vector [N]");
    Operation *raised;
    if (rms) {
      raised = RMSNormOp::create(rewriter, norm->getLoc(), norm->getResultTypes(),
                                 rms.getInput(), vec, rms.getEpsilonAttr());
    } else {
      Value weight = isMul ? vec : ln.getWeight();
      Value bias = isMul ? ln.getBias() : vec;
      raised = LayerNormOp::create(rewriter, norm->getLoc(),
                                   norm->getResultTypes(), ln.getInput(),
                                   weight, bias, ln.getEpsilonAttr());
    }
    rewriter.replaceOp(op, raised->getResult(0));
    rewriter.eraseOp(norm);
    return success();
  }
};

} // namespace

void mlir::fusion::raise_linalg::populateRaiseAffinePatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<AbsorbBiasAdd,             // fusion.add of a matmul and a bias
               RaiseBiasGeneric,          // linalg.generic matmul + column vector
               RaiseBiasAdd,              // linalg.add matmul + broadcast
               AbsorbNormAffine<MulOp>,   // fusion.mul of a norm by its weight
               AbsorbNormAffine<AddOp>    // fusion.add of a LayerNorm and its bias
               >(ctx);
}
