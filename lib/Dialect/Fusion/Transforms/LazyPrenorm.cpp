//===- LazyPrenorm.cpp - fuse a pre-norm into the consuming GEMMs ---------===//
//
// Lazy Pre-Norm (docs/SEED.md section 2): rms_norm(A) @ B becomes a
// fused_matmul whose prologue accumulates A's row sums of squares during the
// K loop and scales the accumulator rows afterwards. The affine weight g,
// which the reference kernels cannot handle, is folded into B as diag(g) B;
// a LayerNorm bias beta becomes the column bias beta B.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The norm fields Lazy Pre-Norm needs, for either norm kind.
struct PreNorm {
  Operation *op;
  Value input, output, weight, bias;
  double epsilon;
  PrologueKind kind;
  bool statsUsed;
};

std::optional<PreNorm> asPreNorm(Operation *op) {
  if (auto rms = dyn_cast<RMSNormOp>(op))
    return PreNorm{op, rms.getInput(), rms.getOutput(), rms.getWeight(), {},
                   rms.getEpsilon().convertToDouble(), PrologueKind::rms_norm,
                   rms.getRstd() && !rms.getRstd().use_empty()};
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return PreNorm{op, ln.getInput(), ln.getOutput(), ln.getWeight(),
                   ln.getBias(), ln.getEpsilon().convertToDouble(),
                   PrologueKind::layer_norm,
                   !ln.getMean().use_empty() || !ln.getRstd().use_empty()};
  return std::nullopt;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Returns the constant elements of `v`, or null.
DenseElementsAttr constantElements(Value v) {
  DenseElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)) &&
      isa<FloatType>(attr.getElementType()))
    return attr;
  return {};
}

/// B[k, n] * g[k] (B stored [N, K] when transposed), as a new constant when
/// B and g are constants, else as a linalg.generic. Returns the new B and
/// whether it was folded at compile time.
std::pair<Value, bool> foldWeightIntoB(OpBuilder &b, Location loc, Value bMat,
                                       Value g, bool transposed) {
  auto bType = tensorType(bMat);
  if (DenseElementsAttr bc = constantElements(bMat)) {
    if (DenseElementsAttr gc = constantElements(g)) {
      SmallVector<double> gv;
      for (APFloat x : gc.getValues<APFloat>())
        gv.push_back(x.convertToDouble());
      int64_t cols = bType.getDimSize(1);
      const llvm::fltSemantics &sem =
          cast<FloatType>(bType.getElementType()).getFloatSemantics();
      SmallVector<APFloat> out;
      int64_t i = 0;
      for (APFloat x : bc.getValues<APFloat>()) {
        int64_t k = transposed ? i % cols : i / cols;
        APFloat r(x.convertToDouble() * gv[k]);
        bool lost;
        r.convert(sem, APFloat::rmNearestTiesToEven, &lost);
        out.push_back(r);
        ++i;
      }
      return {arith::ConstantOp::create(b, loc, DenseElementsAttr::get(bType, out)),
              true};
    }
  }
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  AffineMap id = AffineMap::get(2, 0, {d0, d1}, ctx);
  AffineMap gMap = AffineMap::get(2, 0, {transposed ? d1 : d0}, ctx);
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, bMat),
                                       bType.getElementType());
  Type f32 = b.getF32Type();
  auto generic = linalg::GenericOp::create(
      b, loc, bType, ValueRange{bMat, g}, ValueRange{init},
      ArrayRef<AffineMap>{id, gMap, id},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto toF32 = [&](Value v) -> Value {
          return v.getType() == f32 ? v : arith::ExtFOp::create(nb, nl, f32, v);
        };
        Value p = arith::MulFOp::create(nb, nl, toF32(args[0]), toF32(args[1]));
        Type et = bType.getElementType();
        Value r = et == f32 ? p : arith::TruncFOp::create(nb, nl, et, p).getResult();
        linalg::YieldOp::create(nb, nl, r);
      });
  return {generic.getResult(0), false};
}

/// beta B as an f32 [N] vector (B stored [N, K] when transposed).
Value biasTimesB(OpBuilder &b, Location loc, Value beta, Value bMat,
                 bool transposed) {
  MLIRContext *ctx = b.getContext();
  AffineExpr n, k;
  bindDims(ctx, n, k);
  AffineMap bMap = AffineMap::get(2, 0, transposed ? ArrayRef<AffineExpr>{n, k}
                                                   : ArrayRef<AffineExpr>{k, n},
                                  ctx);
  AffineMap betaMap = AffineMap::get(2, 0, {k}, ctx);
  AffineMap outMap = AffineMap::get(2, 0, {n}, ctx);
  Type f32 = b.getF32Type();
  OpFoldResult nSize = tensor::getMixedSize(b, loc, bMat, transposed ? 0 : 1);
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{nSize}, f32);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{beta, bMat}, ValueRange{init},
      ArrayRef<AffineMap>{betaMap, bMap, outMap},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto toF32 = [&](Value v) -> Value {
          return v.getType() == f32 ? v : arith::ExtFOp::create(nb, nl, f32, v);
        };
        Value p = arith::MulFOp::create(nb, nl, toF32(args[0]), toF32(args[1]));
        Value sum = arith::AddFOp::create(nb, nl, args[2], p);
        linalg::YieldOp::create(nb, nl, sum);
      });
  return generic.getResult(0);
}

/// Why `norm` cannot become a prologue, or the empty string.
std::string whyNotLazy(const PreNorm &norm, bool layerNormEnabled,
                       SmallVectorImpl<MatmulOp> &users) {
  if (norm.kind == PrologueKind::layer_norm && !layerNormEnabled)
    return "LayerNorm deferral is off (option layer-norm)";
  int64_t rank = tensorType(norm.input).getRank();
  if (rank != 2)
    return ("its input has rank " + Twine(rank) +
            "; the prologue needs a 2-D [M, K] GEMM operand")
        .str();
  if (norm.statsUsed)
    return "its statistics are used; the fused GEMM does not produce them";
  for (Operation *user : norm.output.getUsers()) {
    auto mm = dyn_cast<MatmulOp>(user);
    if (!mm || mm.getLhs() != norm.output || mm.getRhs() == norm.output ||
        mm.getTransposeLhs())
      return ("'" + user->getName().getStringRef() +
              "' uses the normalized tensor other than as the left operand of "
              "a fusion.matmul, so the norm would stay")
          .str();
    users.push_back(mm);
  }
  if (users.empty())
    return "its result is unused";
  return "";
}
} // namespace

void mlir::fusion::applyLazyPrenorm(ModuleOp module, bool layerNorm,
                                    bool report) {
  SmallVector<PreNorm> norms;
  module.walk([&](Operation *op) {
    if (std::optional<PreNorm> n = asPreNorm(op))
      norms.push_back(*n);
  });
  IRRewriter rewriter(module.getContext());
  for (PreNorm &norm : norms) {
    SmallVector<MatmulOp> users;
    std::string why = whyNotLazy(norm, layerNorm, users);
    if (!why.empty()) {
      remark(report, norm.op, "not fused as a Lazy Pre-Norm prologue: " + why);
      continue;
    }
    bool foldedAtCompileTime = true;
    for (MatmulOp mm : users) {
      rewriter.setInsertionPoint(mm);
      Location loc = mm.getLoc();
      bool tb = mm.getTransposeRhs();
      FusedMatmulSpec spec;
      spec.lhs = norm.input;
      spec.rhs = mm.getRhs();
      spec.transposeRhs = tb;
      spec.prologue = norm.kind;
      spec.prologueEpsilon = norm.epsilon;
      spec.outputType = mm.getResult().getType();
      if (norm.bias)
        spec.colBias = biasTimesB(rewriter, loc, norm.bias, mm.getRhs(), tb);
      if (norm.weight) {
        auto [folded, atCompileTime] =
            foldWeightIntoB(rewriter, loc, mm.getRhs(), norm.weight, tb);
        spec.rhs = folded;
        foldedAtCompileTime &= atCompileTime;
      }
      FusedMatmulOp fused = buildFusedMatmul(rewriter, loc, spec);
      rewriter.replaceOp(mm, fused.getOutput());
    }
    std::string how = "";
    if (norm.weight)
      how = foldedAtCompileTime ? "; weight folded into B at compile time"
                                : "; weight folded into B by a linalg.generic";
    if (norm.bias)
      how += "; bias applied as the column bias beta B";
    remark(report, norm.op,
           "fused as a Lazy Pre-Norm prologue into " + Twine(users.size()) +
               " fusion.fused_matmul op(s)" + how);
    rewriter.eraseOp(norm.op);
  }
}
