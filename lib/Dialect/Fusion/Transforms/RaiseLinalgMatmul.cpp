//===- RaiseLinalgMatmul.cpp - raise linalg matmuls to fusion.matmul -----===//
//
// The matmul half of fusion-raise-linalg, matched op by op: linalg.matmul
// (plain or with transposing indexing maps) and linalg.batch_matmul with a
// static batch of 1, both into a zero accumulator with an f32 result (linalg
// accumulates in the result element type, fusion.matmul in f32). A
// linalg.matmul may also accumulate into a bias broadcast along the rows
// (`linalg.broadcast ins(%b : tensor<Nxf32>) ... dimensions = [0]`, the
// addmm form), which becomes fusion.matmul's bias.
//
//===----------------------------------------------------------------------===//

#include "RaiseLinalg.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::raise_linalg;

namespace {

/// Why the accumulator of a contraction is not a plain zero, or "".
std::string whyNotZeroInit(Value init) {
  if (!isPositiveZero(splatConstant(init)))
    return "the accumulator is not initialized to 0.0 (a linalg.fill of 0.0 "
           "or a zero constant), so the op is not a pure product";
  return "";
}

/// Why an operand or result type does not fit fusion.matmul, or "".
std::string whyNotMatmulTypes(Value a, Value b, Value c, int64_t rank) {
  for (Value v : {a, b}) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != rank || !isFusionFloat(t.getElementType()))
      return ("expected operands of rank " + Twine(rank) +
              " with f32, bf16 or f16 elements")
          .str();
  }
  auto t = dyn_cast<RankedTensorType>(c.getType());
  if (!t || t.getRank() != rank)
    return ("expected a result of rank " + Twine(rank)).str();
  if (!t.getElementType().isF32())
    return "the result is not f32: linalg accumulates in the result element "
           "type, fusion.matmul in f32";
  return "";
}

/// The [N] vector whose broadcast along dimension 0 is `init`, or null.
Value broadcastBias(Value init) {
  auto bc = init.getDefiningOp<linalg::BroadcastOp>();
  if (!bc || !bc.hasPureTensorSemantics() ||
      bc.getDimensions() != ArrayRef<int64_t>{0})
    return {};
  auto t = cast<RankedTensorType>(bc.getInput().getType());
  if (t.getRank() != 1 || !t.getElementType().isF32())
    return {};
  return bc.getInput();
}

} // namespace

LogicalResult RaiseMatmul::matchAndRewrite(linalg::MatmulOp op,
                                           PatternRewriter &rewriter) const {
  if (!op.hasPureTensorSemantics())
    return rewriter.notifyMatchFailure(op, "not on tensors");
  Value a = op.getInputs()[0], b = op.getInputs()[1], c = op.getOutputs()[0];
  std::string why = whyNotMatmulTypes(a, b, c, 2);
  if (!why.empty())
    return rewriter.notifyMatchFailure(op, why);
  Value bias = broadcastBias(c);
  if (!bias && !(why = whyNotZeroInit(c)).empty())
    return rewriter.notifyMatchFailure(
        op, why + ", nor a linalg.broadcast of a bias [N] along the rows");
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMap::get(3, 0, {x, y}, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != map(m, n))
    return rewriter.notifyMatchFailure(op, "unsupported output map");
  bool tl, tr;
  if (maps[0] == map(m, k))
    tl = false;
  else if (maps[0] == map(k, m))
    tl = true;
  else
    return rewriter.notifyMatchFailure(
        op, "the lhs map is neither (m, k) nor (k, m) (e.g. a broadcast)");
  if (maps[1] == map(k, n))
    tr = false;
  else if (maps[1] == map(n, k))
    tr = true;
  else
    return rewriter.notifyMatchFailure(
        op, "the rhs map is neither (k, n) nor (n, k) (e.g. a broadcast)");
  rewriter.replaceOpWithNewOp<MatmulOp>(op, c.getType(), a, b, bias, tl, tr);
  return success();
}

LogicalResult
RaiseBatchMatmul::matchAndRewrite(linalg::BatchMatmulOp op,
                                  PatternRewriter &rewriter) const {
  if (!op.hasPureTensorSemantics())
    return rewriter.notifyMatchFailure(op, "not on tensors");
  Value a = op.getInputs()[0], b = op.getInputs()[1], c = op.getOutputs()[0];
  std::string why = whyNotMatmulTypes(a, b, c, 3);
  if (why.empty())
    why = whyNotZeroInit(c);
  if (!why.empty())
    return rewriter.notifyMatchFailure(op, why);
  if (op.getIndexingMapsArray() !=
      linalg::BatchMatmulOp::getDefaultIndexingMaps(op.getContext()))
    return rewriter.notifyMatchFailure(
        op, "transposed or broadcast batch_matmul maps are not raised");
  auto ct = cast<RankedTensorType>(c.getType());
  int64_t batch = ct.getDimSize(0);
  if (batch != 1)
    return rewriter.notifyMatchFailure(
        op, "expected a static batch of 1 (fusion.matmul is 2-D), but got " +
                (ShapedType::isDynamic(batch) ? std::string("?")
                                              : std::to_string(batch)));
  Location loc = op.getLoc();
  SmallVector<ReassociationIndices> reassoc = {{0, 1}, {2}};
  auto collapse = [&](Value v) -> Value {
    return tensor::CollapseShapeOp::create(rewriter, loc, v, reassoc);
  };
  auto resultType = RankedTensorType::get(ct.getShape().drop_front(),
                                          ct.getElementType());
  Value mm = MatmulOp::create(rewriter, loc, resultType, collapse(a),
                              collapse(b), false, false);
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, ct, mm, reassoc);
  return success();
}
