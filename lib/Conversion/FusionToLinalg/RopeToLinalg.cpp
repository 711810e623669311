//===- RopeToLinalg.cpp - reference lowering of fusion.rope ---------------===//
//
// fusion.rope as one linalg.generic over the input: each element reads its
// pair partner (column j + R/2 or j - R/2 of its head, or j ^ 1 when
// interleaved) and its token's cos and sin at its head column by
// tensor.extract, and computes x cos -+ partner sin in f32, rounded once; a
// column past the rotary dimension passes through.
//
//===----------------------------------------------------------------------===//

#include "TensorMath.h"

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

Value mlir::fusion::buildRope(OpBuilder &rewriter, Location loc, Value x,
                              Value cos, Value sin, int64_t d, bool interleaved,
                              Type outElem, bool tableRowModulo) {
  TensorMath m(rewriter, loc);
  auto type = cast<RankedTensorType>(x.getType());
  auto tableType = cast<RankedTensorType>(cos.getType());
  int64_t rank = type.getRank(), r = tableType.getShape().back();
  Type f32 = rewriter.getF32Type();
  Value init = tensor::EmptyOp::create(rewriter, loc, m.sizes(x), outElem);
  Value tableRows = tableRowModulo ? m.dim(cos, 0) : Value();
  AffineMap id = rewriter.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, init.getType(), ValueRange{x}, ValueRange{init},
      ArrayRef<AffineMap>{id, id}, parallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        auto index = [&](int64_t v) {
          return arith::ConstantIndexOp::create(b, l, v);
        };
        SmallVector<Value> at;
        for (int64_t i = 0; i < rank; ++i)
          at.push_back(linalg::IndexOp::create(b, l, i));
        Value c = at.back();
        Value j = arith::RemUIOp::create(b, l, c, index(d));
        Value rotated =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, index(r));
        // The partner column and the sign of its term.
        Value first, partner;
        if (interleaved) {
          Value bit = arith::AndIOp::create(b, l, j, index(1));
          first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, bit,
                                        index(0));
          partner = arith::SelectOp::create(
              b, l, first, arith::AddIOp::create(b, l, c, index(1)),
              arith::SubIOp::create(b, l, c, index(1)));
        } else {
          first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j,
                                        index(r / 2));
          partner = arith::SelectOp::create(
              b, l, first, arith::AddIOp::create(b, l, c, index(r / 2)),
              arith::SubIOp::create(b, l, c, index(r / 2)));
        }
        // Past the rotary dimension: the element's own column (read, not
        // used), and the tables' last column.
        partner = arith::SelectOp::create(b, l, rotated, partner, c);
        Value jj = arith::MinUIOp::create(b, l, j, index(r - 1));
        SmallVector<Value> partnerAt(at);
        partnerAt.back() = partner;
        SmallVector<Value> tableAt;
        if (tableRowModulo) {
          tableAt.push_back(arith::RemUIOp::create(b, l, at[0], tableRows));
        } else {
          for (int64_t i = 0; i + 1 < rank; ++i)
            tableAt.push_back(tableType.getDimSize(i) == 1 &&
                                      type.getDimSize(i) != 1
                                  ? Value(index(0))
                                  : at[i]);
        }
        tableAt.push_back(jj);
        auto widen = [&](Value v) { return castScalar(b, l, v, f32); };
        Value self = widen(args[0]);
        Value other = widen(tensor::ExtractOp::create(b, l, x, partnerAt));
        Value cv = widen(tensor::ExtractOp::create(b, l, cos, tableAt));
        Value sv = widen(tensor::ExtractOp::create(b, l, sin, tableAt));
        Value xc = arith::MulFOp::create(b, l, self, cv);
        Value ps = arith::MulFOp::create(b, l, other, sv);
        Value y = arith::SelectOp::create(b, l, first,
                                          arith::SubFOp::create(b, l, xc, ps),
                                          arith::AddFOp::create(b, l, xc, ps));
        y = arith::SelectOp::create(b, l, rotated, y, self);
        linalg::YieldOp::create(b, l, castScalar(b, l, y, outElem));
      });
  return generic.getResult(0);
}

namespace {
struct RopeLowering : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RopeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op,
        buildRope(
            rewriter, op.getLoc(), op.getInput(), op.getCos(), op.getSin(),
            op.getHeadDim(), op.getInterleaved(), elementTypeOf(op.getResult()),
            /*tableRowModulo=*/
            cast<RankedTensorType>(op.getInput().getType()).getRank() == 2));
    return success();
  }
};
} // namespace

void mlir::fusion::populateRopeToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeLowering>(patterns.getContext());
}
