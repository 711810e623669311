//===- SizeTies.cpp - which dynamic sizes of a function must agree --------===//
//
// See SizeTies.h. Each op's rule restates what its verifier requires (the
// fusion ops' in FusionOps.cpp), as ties between operand and result
// dimensions; upstream ops by their indexing maps, traits and reassociations.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/LibraryABI/SizeTies.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
int64_t rankOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getRank() : -1;
}

/// Ties of a GEMM `op(lhs) @ op(rhs) -> out`: M, K and N.
void tieMatmul(SizeTies &t, Value lhs, Value rhs, Value out, bool transposeLhs,
               bool transposeRhs) {
  t.tie(lhs, transposeLhs ? 1 : 0, out, 0);
  t.tie(lhs, transposeLhs ? 0 : 1, rhs, transposeRhs ? 1 : 0);
  t.tie(rhs, transposeRhs ? 0 : 1, out, 1);
}

void tieFusedMatmul(SizeTies &t, FusedMatmulOp op) {
  Value out = op.getOutput(), lhs = op.getLhs(), rhs = op.getRhs();
  tieMatmul(t, lhs, rhs, out, op.getTransposeLhs(), op.getTransposeRhs());
  auto rows = [&](Value v) {
    if (v)
      t.tie(v, 0, out, 0);
  };
  auto cols = [&](Value v) {
    if (v)
      t.tie(v, rankOf(v) - 1, out, 1);
  };
  for (Value v : {op.getResidual(), op.getPostResidual(), op.getNormInput(),
                  op.getSavedNormInput()})
    if (v)
      t.tieAll(v, out);
  rows(op.getRowScale());
  rows(op.getMean());
  rows(op.getRstd());
  cols(op.getColBias());
  cols(op.getColSum());
  if (!op.getNormGroupSize()) {
    cols(op.getNormWeight());
    cols(op.getNormBias());
  }
  if (Value up = op.getUp())
    t.tieAll(up, rhs);
  if (Value rowDot = op.getRowDot()) {
    t.tieAll(rowDot, lhs);
    for (Value v : {op.getRowDotShift(), op.getRowDotSum()})
      if (v)
        t.tie(v, 0, lhs, 1);
  }
  // Statistics [M] or [M, groups] (forward); parameter gradients [N].
  for (Value extra : op.getExtras()) {
    if (op.isGradEpilogue())
      cols(extra);
    else
      rows(extra);
  }
}

/// A norm over the innermost dimension of `input`: `full` values have its
/// shape, `rows` its shape without the innermost dimension, `innermost` are
/// its parameters (and their gradients).
void tieRows(SizeTies &t, Value input, ArrayRef<Value> full,
             ArrayRef<Value> rows, ArrayRef<Value> innermost) {
  int64_t rank = rankOf(input);
  for (Value v : full)
    if (v)
      t.tieAll(v, input);
  for (Value v : rows)
    if (v)
      for (int64_t d = 0; d + 1 < rank; ++d)
        t.tie(v, d, input, d);
  for (Value v : innermost)
    if (v)
      t.tie(v, 0, input, rank - 1);
}

/// q [B, Lq, H, D] (or [T, H, D] with offsets), k [B, Lkv, H, D],
/// v [B, Lkv, H, Dv].
void tieAttention(SizeTies &t, Value q, Value k, Value v, Value offsets) {
  int64_t r = rankOf(q);
  if (!offsets)
    t.tie(q, 0, k, 0);
  t.tie(q, r - 2, k, 2);
  t.tie(q, r - 1, k, 3);
  for (int64_t d = 0; d < 3; ++d)
    t.tie(v, d, k, d);
}

/// `out` has q's shape with v's head dimension innermost.
void tieAttentionOutput(SizeTies &t, Value out, Value q, Value v) {
  int64_t r = rankOf(q);
  for (int64_t d = 0; d + 1 < r; ++d)
    t.tie(out, d, q, d);
  t.tie(out, r - 1, v, 3);
}

/// Per-token values: q without its two innermost dimensions.
void tieTokens(SizeTies &t, Value q, ValueRange values) {
  for (Value v : values)
    for (int64_t d = 0; d + 2 < rankOf(q); ++d)
      t.tie(v, d, q, d);
}

/// A reshape's group of dimensions `group` of `many` standing for dimension
/// `one` of `single`: equal when all but one of the group are static 1.
void tieReassociation(SizeTies &t, Value many, ArrayRef<int64_t> group,
                      Value single, int64_t one) {
  auto shape = cast<RankedTensorType>(many.getType()).getShape();
  std::optional<int64_t> only;
  for (int64_t d : group) {
    if (shape[d] == 1)
      continue;
    if (only)
      return;
    only = d;
  }
  if (only)
    t.tie(many, *only, single, one);
}

void tieOp(SizeTies &t, Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](MatmulOp m) {
        tieMatmul(t, m.getLhs(), m.getRhs(), m.getResult(), m.getTransposeLhs(),
                  m.getTransposeRhs());
        if (Value bias = m.getBias())
          t.tie(bias, 0, m.getResult(), 1);
      })
      .Case([&](FusedMatmulOp m) { tieFusedMatmul(t, m); })
      .Case<AddOp, MulOp>([&](auto m) {
        // rhs broadcasts against lhs, aligned at the innermost dimension;
        // a static 1 broadcasts, any other size is lhs's.
        Value lhs = m.getLhs(), rhs = m.getRhs();
        t.tieAll(m.getResult(), lhs);
        auto shape = cast<RankedTensorType>(rhs.getType()).getShape();
        int64_t offset = rankOf(lhs) - rankOf(rhs);
        for (auto [d, size] : llvm::enumerate(shape))
          if (size != 1)
            t.tie(rhs, d, lhs, offset + d);
      })
      .Case([&](RopeOp r) {
        // The tables [..., R] have input's leading dimensions, or a static 1
        // (a 2-D input's [T, R]: any T dividing M, not tied).
        Value x = r.getInput();
        t.tieAll(r.getResult(), x);
        for (Value table : {r.getCos(), r.getSin()}) {
          if (rankOf(x) == 2)
            break;
          auto shape = cast<RankedTensorType>(table.getType()).getShape();
          for (int64_t d = 0; d + 1 < rankOf(x); ++d)
            if (shape[d] != 1)
              t.tie(table, d, x, d);
        }
      })
      .Case([&](RMSNormOp n) {
        tieRows(t, n.getInput(), {n.getOutput()}, {n.getRstd()},
                {n.getWeight()});
      })
      .Case([&](LayerNormOp n) {
        tieRows(t, n.getInput(), {n.getOutput()}, {n.getMean(), n.getRstd()},
                {n.getWeight(), n.getBias()});
      })
      .Case([&](RMSNormGradOp n) {
        tieRows(t, n.getInput(),
                {n.getGrad(), n.getResidual(), n.getInputGrad()}, {n.getRstd()},
                {n.getWeight(), n.getWeightGrad()});
      })
      .Case([&](LayerNormGradOp n) {
        SmallVector<Value> innermost = {n.getWeight()};
        llvm::append_range(innermost, n.getParamGrads());
        tieRows(t, n.getInput(),
                {n.getGrad(), n.getResidual(), n.getInputGrad()},
                {n.getMean(), n.getRstd()}, innermost);
      })
      .Case([&](GDPAOp a) {
        tieAttention(t, a.getQuery(), a.getKey(), a.getValue(), a.getOffsets());
        tieAttentionOutput(t, a.getOutput(), a.getQuery(), a.getValue());
        if (Value r = a.getResidual())
          t.tieAll(r, a.getOutput());
      })
      .Case([&](GDPAGradOp a) {
        tieAttention(t, a.getQuery(), a.getKey(), a.getValue(), a.getOffsets());
        tieAttentionOutput(t, a.getGrad(), a.getQuery(), a.getValue());
        t.tieAll(a.getQueryGrad(), a.getQuery());
        t.tieAll(a.getKeyGrad(), a.getKey());
        t.tieAll(a.getValueGrad(), a.getValue());
        if (Value r = a.getResidual())
          t.tieAll(r, a.getQuery());
      })
      .Case([&](NormAttentionOp a) {
        tieAttention(t, a.getQuery(), a.getKey(), a.getValue(), a.getOffsets());
        t.tieAll(a.getOutput(), a.getQuery());
        tieTokens(t, a.getQuery(),
                  {a.getLnMean(), a.getLnRstd(), a.getRmsRstd()});
      })
      .Case([&](NormAttentionGradOp a) {
        tieAttention(t, a.getQuery(), a.getKey(), a.getValue(), a.getOffsets());
        t.tieAll(a.getGrad(), a.getQuery());
        t.tieAll(a.getQueryGrad(), a.getQuery());
        t.tieAll(a.getKeyGrad(), a.getKey());
        t.tieAll(a.getValueGrad(), a.getValue());
        tieTokens(t, a.getQuery(),
                  {a.getLnMean(), a.getLnRstd(), a.getRmsRstd()});
      })
      .Case([&](tensor::EmptyOp e) {
        for (auto [d, size] : llvm::enumerate(e.getType().getShape())) {
          if (!ShapedType::isDynamic(size))
            continue;
          auto dim = e.getDynamicSize(d).getDefiningOp<tensor::DimOp>();
          APInt index;
          if (dim && matchPattern(dim.getIndex(), m_ConstantInt(&index)))
            t.tie(e.getResult(), d, dim.getSource(), index.getSExtValue());
        }
      })
      .Case([&](tensor::CastOp c) {
        if (rankOf(c.getSource()) == rankOf(c.getResult()))
          t.tieAll(c.getSource(), c.getResult());
      })
      .Case([&](tensor::CollapseShapeOp c) {
        for (auto [i, group] : llvm::enumerate(c.getReassociationIndices()))
          tieReassociation(t, c.getSrc(), group, c.getResult(), i);
      })
      .Case([&](tensor::ExpandShapeOp e) {
        for (auto [i, group] : llvm::enumerate(e.getReassociationIndices()))
          tieReassociation(t, e.getResult(), group, e.getSrc(), i);
      })
      .Case([&](linalg::LinalgOp l) {
        // Dimensions indexed by the same loop are equal.
        DenseMap<unsigned, std::pair<Value, int64_t>> loops;
        for (OpOperand &operand : l->getOpOperands()) {
          if (rankOf(operand.get()) < 0)
            continue;
          AffineMap map = l.getMatchingIndexingMap(&operand);
          for (auto [d, expr] : llvm::enumerate(map.getResults())) {
            auto loop = dyn_cast<AffineDimExpr>(expr);
            if (!loop)
              continue;
            auto [it, inserted] = loops.try_emplace(
                loop.getPosition(), std::make_pair(operand.get(), int64_t(d)));
            if (!inserted)
              t.tie(operand.get(), d, it->second.first, it->second.second);
          }
        }
        for (auto [result, init] : llvm::zip(l->getResults(), l.getDpsInits()))
          if (rankOf(result) >= 0)
            t.tieAll(result, init);
      })
      .Default([&](Operation *other) {
        if (!other->hasTrait<mlir::OpTrait::SameOperandsAndResultShape>() &&
            !other->hasTrait<mlir::OpTrait::SameOperandsAndResultType>() &&
            !other->hasTrait<mlir::OpTrait::Elementwise>())
          return;
        // Every tensor operand and result has one shape.
        Value first;
        for (Value v :
             llvm::concat<Value>(other->getOperands(), other->getResults())) {
          if (rankOf(v) < 0)
            continue;
          if (!first)
            first = v;
          else if (rankOf(v) == rankOf(first))
            t.tieAll(v, first);
        }
      });
}
} // namespace

SizeTies::SizeTies(func::FuncOp func) {
  for (Operation &op : func.getBody().front())
    tieOp(*this, &op);
}

unsigned SizeTies::id(Value v, int64_t dim) {
  auto [it, inserted] = ids.try_emplace({v, dim}, parent.size());
  if (inserted) {
    parent.push_back(it->second);
    auto type = cast<RankedTensorType>(v.getType());
    size.push_back(type.getDimSize(dim));
    conflict.push_back(false);
  }
  return it->second;
}

unsigned SizeTies::find(unsigned i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

void SizeTies::tie(Value a, int64_t da, Value b, int64_t db) {
  if (da < 0 || db < 0 || da >= rankOf(a) || db >= rankOf(b))
    return;
  unsigned x = find(id(a, da)), y = find(id(b, db));
  if (x == y)
    return;
  parent[y] = x;
  conflict[x] = conflict[x] || conflict[y] ||
                (!ShapedType::isDynamic(size[x]) &&
                 !ShapedType::isDynamic(size[y]) && size[x] != size[y]);
  if (ShapedType::isDynamic(size[x]))
    size[x] = size[y];
}

void SizeTies::tieAll(Value a, Value b) {
  if (rankOf(a) != rankOf(b))
    return;
  for (int64_t d = 0; d < rankOf(a); ++d)
    tie(a, d, b, d);
}

unsigned SizeTies::classOf(Value v, int64_t dim) { return find(id(v, dim)); }

std::optional<int64_t> SizeTies::staticSize(Value v, int64_t dim) {
  unsigned root = classOf(v, dim);
  if (conflict[root] || ShapedType::isDynamic(size[root]))
    return std::nullopt;
  return size[root];
}

bool SizeTies::consistent(Value v, int64_t dim) {
  return !conflict[classOf(v, dim)];
}
