//===- LazyPrenorm.cpp - fuse a pre-norm into the consuming GEMMs ---------===//
//
// Lazy Pre-Norm (docs/SEED.md section 2): rms_norm(A) @ B becomes a
// fused_matmul whose prologue accumulates A's row sums of squares during the
// K loop and scales the accumulator rows afterwards. The affine weight g,
// which the reference kernels cannot handle, is folded into B as diag(g) B
// (a fusion.mul, or a constant); a LayerNorm bias beta becomes the column
// bias beta B (a 1-row fusion.matmul, or a constant), plus the consuming
// matmul's own bias (nn.Linear's) when it has one.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// `v` [K] reshaped to [1, K] (`row`) or [K, 1] with tensor.expand_shape.
Value expandVector(OpBuilder &b, Location loc, Value v, bool row) {
  auto type = tensorType(v);
  OpFoldResult k = tensor::getMixedSize(b, loc, v, 0);
  OpFoldResult one = b.getIndexAttr(1);
  SmallVector<int64_t> shape = {1, type.getDimSize(0)};
  SmallVector<OpFoldResult> sizes = {one, k};
  if (!row) {
    std::swap(shape[0], shape[1]);
    std::swap(sizes[0], sizes[1]);
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v,
      SmallVector<ReassociationIndices>{{0, 1}}, sizes);
}

/// The values of a constant float tensor, as doubles.
SmallVector<double> toDoubles(DenseElementsAttr attr) {
  SmallVector<double> out;
  for (APFloat x : attr.getValues<APFloat>())
    out.push_back(x.convertToDouble());
  return out;
}

/// A constant of `type` holding `values` rounded to its element type.
Value constantOf(OpBuilder &b, Location loc, RankedTensorType type,
                 ArrayRef<double> values) {
  const llvm::fltSemantics &sem =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> out;
  for (double v : values) {
    APFloat r(v);
    bool lost;
    r.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    out.push_back(r);
  }
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, out));
}

/// B[k, n] * g[k] (B stored [N, K] when transposed), as a new constant when
/// B and g are constants, else as a fusion.mul that broadcasts g over B's
/// rows ([N, K] * [K]) or, B being [K, N], over its columns as [K, 1].
/// Returns the new B and whether it was folded at compile time.
std::pair<Value, bool> foldWeightIntoB(OpBuilder &b, Location loc, Value bMat,
                                       Value g, bool transposed) {
  auto bType = tensorType(bMat);
  DenseElementsAttr bc = constantElements(bMat), gc = constantElements(g);
  if (bc && gc && bType.hasStaticShape()) {
    SmallVector<double> gv = toDoubles(gc), bv = toDoubles(bc);
    int64_t cols = bType.getDimSize(1);
    for (auto [i, x] : llvm::enumerate(bv))
      x *= gv[transposed ? i % cols : i / cols];
    return {constantOf(b, loc, bType, bv), true};
  }
  Value scale = transposed ? g : expandVector(b, loc, g, /*row=*/false);
  return {MulOp::create(b, loc, bMat, scale), false};
}

/// The f32 column bias [N] of a Lazy Pre-Norm GEMM: beta B for a LayerNorm
/// bias beta (B stored [N, K] when transposed) plus the matmul's own `bias`,
/// either of which may be null (not both). A constant when every part is;
/// otherwise beta B is `fusion.matmul` of beta as [1, K] with B into f32
/// [1, N], collapsed to [N], and the bias joins it by a `fusion.add`. Returns
/// the column bias and whether beta B was computed at compile time.
std::pair<Value, bool> columnBias(OpBuilder &b, Location loc, Value beta,
                                  Value bMat, bool transposed, Value bias) {
  if (!beta)
    return {bias, true};
  Type f32 = b.getF32Type();
  auto bType = tensorType(bMat);
  int64_t n = bType.getDimSize(transposed ? 0 : 1);
  auto vecType = RankedTensorType::get({n}, f32);
  DenseElementsAttr betaC = constantElements(beta), bC = constantElements(bMat);
  if (betaC && bC && bType.hasStaticShape()) {
    SmallVector<double> bv = toDoubles(bC), betaV = toDoubles(betaC);
    int64_t k = bType.getDimSize(transposed ? 1 : 0);
    SmallVector<double> out(n, 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i)
        out[j] += betaV[i] * bv[transposed ? j * k + i : i * n + j];
    if (DenseElementsAttr biasC = constantElements(bias)) {
      for (auto [o, x] : llvm::zip_equal(out, toDoubles(biasC)))
        o += x;
      return {constantOf(b, loc, vecType, out), true};
    }
    Value betaB = constantOf(b, loc, vecType, out);
    return {bias ? AddOp::create(b, loc, betaB, bias).getResult() : betaB,
            true};
  }
  Value row = expandVector(b, loc, beta, /*row=*/true);
  Value prod = MatmulOp::create(b, loc, RankedTensorType::get({1, n}, f32),
                                row, bMat, /*transposeLhs=*/false, transposed);
  Value betaB = tensor::CollapseShapeOp::create(
      b, loc, prod, SmallVector<ReassociationIndices>{{0, 1}});
  return {bias ? AddOp::create(b, loc, betaB, bias).getResult() : betaB,
          false};
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
    bool weightAtCompileTime = true, betaBAtCompileTime = true;
    int64_t withBias = 0;
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
      withBias += mm.getBias() ? 1 : 0;
      if (norm.bias || mm.getBias()) {
        auto [colBias, atCompileTime] = columnBias(
            rewriter, loc, norm.bias, mm.getRhs(), tb, mm.getBias());
        spec.colBias = colBias;
        betaBAtCompileTime &= atCompileTime;
      }
      if (norm.weight) {
        auto [folded, atCompileTime] =
            foldWeightIntoB(rewriter, loc, mm.getRhs(), norm.weight, tb);
        spec.rhs = folded;
        weightAtCompileTime &= atCompileTime;
      }
      FusedMatmulOp fused = buildFusedMatmul(rewriter, loc, spec);
      rewriter.replaceOp(mm, fused.getOutput());
    }
    std::string how = "";
    if (norm.weight)
      how = weightAtCompileTime
                ? "; weight folded into B at compile time"
                : "; weight folded into B by a fusion.mul (a device step per "
                  "call)";
    if (norm.bias)
      how += betaBAtCompileTime
                 ? "; bias applied as the column bias beta B, computed at "
                   "compile time"
                 : "; bias applied as the column bias beta B, a 1-row "
                   "fusion.matmul per call";
    if (withBias)
      how += ("; the bias of " + Twine(withBias) +
              " matmul(s) kept in the column bias")
                 .str();
    remark(report, norm.op,
           "fused as a Lazy Pre-Norm prologue into " + Twine(users.size()) +
               " fusion.fused_matmul op(s)" + how);
    rewriter.eraseOp(norm.op);
  }
}
