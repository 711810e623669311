//===- AttentionToLinalg.cpp - gdpa and gdpa_grad lowering ----------------===//
//
// Attention is lowered one batch at a time: an scf.for over the batch slices
// q (dense: [b, :, :, :]; jagged: tokens offsets[b] .. offsets[b+1]) and the
// dense k, v of that batch, computes per head
//
//   S[h, i, j] = scale * sum_d q[i, h, d] k[j, h, d]      (f32)
//   O[i, h, e] = sum_j act(S[h, i, j]) v[j, h, e]         (f32)
//
// and inserts the result into a zero-initialised output (so jagged tokens
// past offsets[B] stay zero). gdpa_grad's dq with a residual starts from
// the residual instead, and adds it to each batch's slice in f32.
// gdpa_grad's RMSNorm-gradient prologue computes its output gradient first,
// over all tokens at once (rows of H * Dv), before the batch loop.
//
//===----------------------------------------------------------------------===//

#include "AttentionMath.h"

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "fusion/Dialect/Fusion/IR/ActivationMath.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

//===----------------------------------------------------------------------===//
// Batch slicing
//===----------------------------------------------------------------------===//

using IT = utils::IteratorType;

RankedTensorType sliceType(ArrayRef<OpFoldResult> sizes, Type elem) {
  // Only attribute sizes are static: a size Value that happens to be a
  // constant (a tensor.dim folded through a tensor.cast) stays dynamic in the
  // slice op, so its type must say `?` too.
  SmallVector<int64_t> shape;
  for (OpFoldResult s : sizes)
    shape.push_back(isa<Attribute>(s) ? *getConstantIntValue(s)
                                      : ShapedType::kDynamic);
  return RankedTensorType::get(shape, elem);
}

/// Where batch `b`'s query tokens live: dense q [B, L, H, D] at [b, 0, 0, 0]
/// (the leading unit dimension dropped), jagged q [T, H, D] at
/// [offsets[b], 0, 0] with length offsets[b + 1] - offsets[b].
struct QuerySlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  /// The slice's sizes without the dropped batch dimension.
  SmallVector<OpFoldResult> kept;
};

QuerySlice querySlice(OpBuilder &b, Location l, Value q, Value offsets,
                      Value batch, int64_t innermost) {
  TensorMath m(b, l);
  SmallVector<OpFoldResult> sizes = m.sizes(q);
  sizes.back() = b.getIndexAttr(innermost);
  if (ShapedType::isDynamic(innermost))
    sizes.back() = m.sizes(q).back();
  QuerySlice s;
  unsigned rank = sizes.size();
  s.strides.assign(rank, b.getIndexAttr(1));
  s.offsets.assign(rank, b.getIndexAttr(0));
  if (!offsets) {
    s.offsets[0] = batch;
    s.sizes = sizes;
    s.sizes[0] = b.getIndexAttr(1);
    s.kept.assign(sizes.begin() + 1, sizes.end());
    return s;
  }
  auto token = [&](Value i) -> Value {
    Value raw = tensor::ExtractOp::create(b, l, offsets, ValueRange{i});
    return arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
  };
  Value one = arith::ConstantIndexOp::create(b, l, 1);
  Value start = token(batch);
  Value end = token(arith::AddIOp::create(b, l, batch, one));
  s.offsets[0] = start;
  s.sizes = sizes;
  s.sizes[0] = arith::SubIOp::create(b, l, end, start).getResult();
  s.kept = s.sizes;
  return s;
}

/// The query-like tensor `t` (q, dq, out, dout) restricted to batch `b`.
Value extractQuery(OpBuilder &b, Location l, Value t, const QuerySlice &s) {
  Type elem = cast<RankedTensorType>(t.getType()).getElementType();
  return tensor::ExtractSliceOp::create(b, l, sliceType(s.kept, elem), t,
                                        s.offsets, s.sizes, s.strides);
}

/// k or v [B, Lkv, H, D] restricted to batch `batch`: [Lkv, H, D].
SmallVector<OpFoldResult> kvOffsets(OpBuilder &b, Value batch) {
  return {batch, b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)};
}
Value extractKV(OpBuilder &b, Location l, Value t, Value batch) {
  TensorMath m(b, l);
  SmallVector<OpFoldResult> sizes = m.sizes(t);
  sizes[0] = b.getIndexAttr(1);
  Type elem = cast<RankedTensorType>(t.getType()).getElementType();
  return tensor::ExtractSliceOp::create(
      b, l, sliceType(ArrayRef(sizes).drop_front(), elem), t,
      kvOffsets(b, batch), sizes,
      SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
}
Value insertKV(OpBuilder &b, Location l, Value slice, Value dest, Value batch) {
  TensorMath m(b, l);
  SmallVector<OpFoldResult> sizes = m.sizes(dest);
  sizes[0] = b.getIndexAttr(1);
  return tensor::InsertSliceOp::create(
      b, l, slice, dest, kvOffsets(b, batch), sizes,
      SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
}

/// Runs `body(b, batch, iterArgs) -> new iterArgs` for every batch index.
SmallVector<Value>
forEachBatch(TensorMath &m, Value key, ValueRange inits,
             function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                             ValueRange)>
                 body) {
  OpBuilder &b = m.builder();
  Location l = m.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value one = arith::ConstantIndexOp::create(b, l, 1);
  Value batches = m.dim(key, 0);
  auto loop = scf::ForOp::create(
      b, l, zero, batches, one, inits,
      [&](OpBuilder &nb, Location nl, Value batch, ValueRange args) {
        scf::YieldOp::create(nb, nl, body(nb, nl, batch, args));
      });
  return SmallVector<Value>(loop.getResults());
}

//===----------------------------------------------------------------------===//
// Per-batch kernels on [L, H, D] slices
//===----------------------------------------------------------------------===//

/// A[h, i, j] = scale * sum_d q[i, h, d] k[j, h, d]   (f32)
Value scores(TensorMath &m, Value q, Value k, double scale) {
  MLIRContext *ctx = m.builder().getContext();
  AffineExpr h, i, j, d;
  bindDims(ctx, h, i, j, d);
  auto map = [&](ArrayRef<AffineExpr> r) { return AffineMap::get(4, 0, r, ctx); };
  SmallVector<OpFoldResult> qs = m.sizes(q), ks = m.sizes(k);
  Value scaleV = m.f32(scale);
  Value s = m.generic({q, k}, {map({i, h, d}), map({j, h, d})},
                      {qs[1], qs[0], ks[0]}, map({h, i, j}),
                      {IT::parallel, IT::parallel, IT::parallel, IT::reduction},
                      m.builder().getF32Type(), /*accumulate=*/true,
                      [](OpBuilder &b, Location l, ValueRange a) {
                        return mul(b, l, a[0], a[1]);
                      });
  return m.map({{s}}, m.builder().getF32Type(),
               [&](OpBuilder &b, Location l, ValueRange a) {
                 return mul(b, l, a[0], scaleV);
               });
}

/// O[i, h, e] = sum_j P[h, i, j] v[j, h, e]   (f32)
Value applyToValues(TensorMath &m, Value p, Value v) {
  MLIRContext *ctx = m.builder().getContext();
  AffineExpr i, h, e, j;
  bindDims(ctx, i, h, e, j);
  auto map = [&](ArrayRef<AffineExpr> r) { return AffineMap::get(4, 0, r, ctx); };
  SmallVector<OpFoldResult> ps = m.sizes(p), vs = m.sizes(v);
  return m.generic({p, v}, {map({h, i, j}), map({j, h, e})},
                   {ps[1], ps[0], vs[2]}, map({i, h, e}),
                   {IT::parallel, IT::parallel, IT::parallel, IT::reduction},
                   m.builder().getF32Type(), /*accumulate=*/true,
                   [](OpBuilder &b, Location l, ValueRange a) {
                     return mul(b, l, a[0], a[1]);
                   });
}

/// act(A) element-wise.
Value activate(TensorMath &m, Value a, Activation act) {
  return m.map({{a}}, m.builder().getF32Type(),
               [&](OpBuilder &b, Location l, ValueRange x) {
                 return buildActivation(b, l, act, x[0]);
               });
}
} // namespace

//===----------------------------------------------------------------------===//
// buildAttention / buildAttentionGrad
//===----------------------------------------------------------------------===//

Value mlir::fusion::buildAttention(TensorMath &m, Value q, Value k, Value v,
                                   const AttentionParams &p, Type outElemType,
                                   Value residual) {
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t vDim = cast<RankedTensorType>(v.getType()).getShape().back();
  SmallVector<OpFoldResult> outSizes = m.sizes(q);
  outSizes.back() = m.sizes(v).back();
  // The output starts as the residual (the value of jagged tokens in no
  // sequence), else zeros; each batch's slice is overwritten below.
  Value init = residual ? m.convert(residual, outElemType)
                        : m.splat(outSizes, outElemType, 0.0);
  return forEachBatch(
      m, k, {init},
      [&](OpBuilder &b, Location l, Value batch, ValueRange args) {
        TensorMath bm(b, l);
        QuerySlice qs = querySlice(b, l, q, p.offsets, batch,
                                   qType.getShape().back());
        Value qb = extractQuery(b, l, q, qs);
        Value kb = extractKV(b, l, k, batch);
        Value vb = extractKV(b, l, v, batch);
        Value probs = activate(bm, scores(bm, qb, kb, p.scale), p.activation);
        Value attn = applyToValues(bm, probs, vb);
        QuerySlice os = querySlice(b, l, args[0], p.offsets, batch, vDim);
        // + residual in f32, rounded once.
        Value ob;
        if (residual) {
          Value rb = extractQuery(b, l, residual, os);
          ob = bm.addTensors(attn, rb, outElemType);
        } else {
          ob = bm.convert(attn, outElemType);
        }
        Value out = tensor::InsertSliceOp::create(b, l, ob, args[0], os.offsets,
                                                  os.sizes, os.strides);
        return SmallVector<Value>{out};
      })[0];
}

AttentionGrads mlir::fusion::buildAttentionGrad(TensorMath &m, Value dout,
                                                Value q, Value k, Value v,
                                                const AttentionParams &p,
                                                Type qElem, Type kElem,
                                                Type vElem, Value residual) {
  int64_t qDim = cast<RankedTensorType>(q.getType()).getShape().back();
  int64_t vDim = cast<RankedTensorType>(v.getType()).getShape().back();
  // dq starts as the residual (the value of jagged tokens in no sequence),
  // else zeros; each batch's slice is overwritten below.
  Value dq0 = residual ? m.convert(residual, qElem) : m.splat(m.sizes(q), qElem, 0.0);
  Value dk0 = m.splat(m.sizes(k), kElem, 0.0);
  Value dv0 = m.splat(m.sizes(v), vElem, 0.0);
  MLIRContext *ctx = m.builder().getContext();
  SmallVector<Value> r = forEachBatch(
      m, k, {dq0, dk0, dv0},
      [&](OpBuilder &b, Location l, Value batch, ValueRange args) {
        TensorMath bm(b, l);
        Type f32 = b.getF32Type();
        QuerySlice qs = querySlice(b, l, q, p.offsets, batch, qDim);
        QuerySlice os = querySlice(b, l, dout, p.offsets, batch, vDim);
        Value qb = extractQuery(b, l, q, qs);
        Value dob = extractQuery(b, l, dout, os);
        Value kb = extractKV(b, l, k, batch);
        Value vb = extractKV(b, l, v, batch);
        Value a = scores(bm, qb, kb, p.scale);   // [H, L, Lkv]
        Value probs = activate(bm, a, p.activation);

        AffineExpr d0, d1, d2, d3;
        bindDims(ctx, d0, d1, d2, d3);
        auto map = [&](ArrayRef<AffineExpr> e) {
          return AffineMap::get(4, 0, e, ctx);
        };
        SmallVector<OpFoldResult> qSz = bm.sizes(qb), kSz = bm.sizes(kb),
                                  vSz = bm.sizes(vb);
        auto contraction = [&](Value x, AffineMap xm, Value y, AffineMap ym,
                               ArrayRef<OpFoldResult> outSizes,
                               AffineMap outMap) {
          return bm.generic({x, y}, {xm, ym}, outSizes, outMap,
                            {IT::parallel, IT::parallel, IT::parallel,
                             IT::reduction},
                            f32, /*accumulate=*/true,
                            [](OpBuilder &nb, Location nl, ValueRange s) {
                              return mul(nb, nl, s[0], s[1]);
                            });
        };
        // dv[j, h, e] = sum_i P[h, i, j] do[i, h, e]   dims (j, h, e, i)
        Value dvb = contraction(probs, map({d1, d3, d0}), dob, map({d3, d1, d2}),
                                {kSz[0], kSz[1], vSz[2]}, map({d0, d1, d2}));
        // dP[h, i, j] = sum_e do[i, h, e] v[j, h, e]   dims (h, i, j, e)
        Value dp = contraction(dob, map({d1, d0, d3}), vb, map({d2, d0, d3}),
                               {qSz[1], qSz[0], kSz[0]}, map({d0, d1, d2}));
        // dS = dP * act'(A) * scale
        Value scaleV = bm.f32(p.scale);
        Value ds = bm.map({{dp}, {a}}, f32,
                          [&](OpBuilder &nb, Location nl, ValueRange s) {
                            Value g = buildActivationGrad(nb, nl, p.activation, s[1]);
                            return mul(nb, nl, mul(nb, nl, s[0], g), scaleV);
                          });
        // dq[i, h, d] = sum_j dS[h, i, j] k[j, h, d]   dims (i, h, d, j)
        Value dqb = contraction(ds, map({d1, d0, d3}), kb, map({d3, d1, d2}),
                                {qSz[0], qSz[1], qSz[2]}, map({d0, d1, d2}));
        // dk[j, h, d] = sum_i dS[h, i, j] q[i, h, d]   dims (j, h, d, i)
        Value dkb = contraction(ds, map({d1, d3, d0}), qb, map({d3, d1, d2}),
                                {kSz[0], kSz[1], kSz[2]}, map({d0, d1, d2}));
        // + residual in f32, rounded once.
        Value dqRounded =
            residual ? bm.addTensors(dqb, extractQuery(b, l, residual, qs), qElem)
                     : bm.convert(dqb, qElem);
        Value dq = tensor::InsertSliceOp::create(b, l, dqRounded, args[0],
                                                 qs.offsets, qs.sizes, qs.strides);
        Value dk = insertKV(b, l, bm.convert(dkb, kElem), args[1], batch);
        Value dv = insertKV(b, l, bm.convert(dvb, vElem), args[2], batch);
        return SmallVector<Value>{dq, dk, dv};
      });
  return {r[0], r[1], r[2]};
}

//===----------------------------------------------------------------------===//
// Heads <-> rows
//===----------------------------------------------------------------------===//

namespace {
/// [..., H, D] <-> [..., H * D].
SmallVector<ReassociationIndices> headsReassociation(Value t) {
  int64_t rank = cast<RankedTensorType>(t.getType()).getRank();
  SmallVector<ReassociationIndices> r;
  for (int64_t i = 0; i + 2 < rank; ++i)
    r.push_back({i});
  r.push_back({rank - 2, rank - 1});
  return r;
}
} // namespace

Value mlir::fusion::flattenHeads(TensorMath &m, Value t) {
  return tensor::CollapseShapeOp::create(m.builder(), m.getLoc(), t,
                                         headsReassociation(t));
}

Value mlir::fusion::unflattenHeads(TensorMath &m, Value flat, Value like) {
  auto likeType = cast<RankedTensorType>(like.getType());
  auto type = RankedTensorType::get(
      likeType.getShape(), cast<RankedTensorType>(flat.getType()).getElementType());
  return tensor::ExpandShapeOp::create(m.builder(), m.getLoc(), type, flat,
                                       headsReassociation(like), m.sizes(like));
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {
/// fusion.gdpa -> per-batch scores, activation, values (+ the residual,
/// which is also the output of the jagged tokens in no sequence).
struct GDPALowering : OpRewritePattern<GDPAOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GDPAOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    AttentionParams p{op.getActivation(), op.getScale().convertToDouble(),
                      op.getOffsets()};
    rewriter.replaceOp(op, buildAttention(m, op.getQuery(), op.getKey(),
                                          op.getValue(), p,
                                          elementTypeOf(op.getOutput()),
                                          op.getResidual()));
    return success();
  }
};

/// fusion.gdpa_grad -> per-batch recomputation of the scores, then dq (+ the
/// residual), dk, dv. With the RMSNorm-gradient prologue, the output
/// gradient first: do = rms_norm_grad(grad, x, rstd, rms_weight) over the
/// [..., H * Dv] rows (buildRMSNormGrad, as fusion.rms_norm_grad computes
/// it), in f32 and rounded once to grad's element type. The unfused program
/// rounds its dh so (the rms_norm_grad's dx, of its dy's type here) before
/// gdpa_grad reads it, and so does the GPU kernel before its MMAs: every use
/// of do below (the contractions, and dq + do for grad_residual, like
/// `residual(%dh)`) reads the rounded value. Without the prologue,
/// grad_residual adds grad itself (do = grad), as `residual(%grad)` would.
struct GDPAGradLowering : OpRewritePattern<GDPAGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GDPAGradOp op,
                                PatternRewriter &rewriter) const override {
    TensorMath m(rewriter, op.getLoc());
    AttentionParams p{op.getActivation(), op.getScale().convertToDouble(),
                      op.getOffsets()};
    Value dout = op.getGrad(), residual = op.getResidual();
    NormGradResult prologue;
    if (op.hasRmsPrologue()) {
      prologue = buildRMSNormGrad(m, flattenHeads(m, dout),
                                  flattenHeads(m, op.getRmsInput()),
                                  op.getRmsRstd(), op.getRmsWeight(),
                                  elementTypeOf(dout));
      dout = unflattenHeads(m, prologue.inputGrad, op.getGrad());
    }
    if (op.getGradResidual())
      residual = dout;
    AttentionGrads g = buildAttentionGrad(
        m, dout, op.getQuery(), op.getKey(), op.getValue(), p,
        elementTypeOf(op.getQueryGrad()), elementTypeOf(op.getKeyGrad()),
        elementTypeOf(op.getValueGrad()), residual);
    SmallVector<Value> results = {g.query, g.key, g.value};
    if (prologue.weightGrad)
      results.push_back(prologue.weightGrad);
    rewriter.replaceOp(op, results);
    return success();
  }
};
} // namespace

void mlir::fusion::populateAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<GDPALowering,     // fusion.gdpa
               GDPAGradLowering  // fusion.gdpa_grad
               >(patterns.getContext());
}
