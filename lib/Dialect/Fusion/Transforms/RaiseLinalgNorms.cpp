//===- RaiseLinalgNorms.cpp - raise linalg norm chains to fusion norms ----===//
//
// The norm half of fusion-raise-linalg. The symbolic expression of a chain's
// output (RaiseLinalgChain.cpp) is compared with the RMSNorm and LayerNorm
// formulas of FusionOps.td, including the f32 arithmetic and the single final
// rounding; intermediates with users outside the chain are kept (read as
// opaque tensors) and the match retried, except for the f32 statistics, which
// the fused op provides. RaiseNormChain then replaces the chain with
// fusion.rms_norm or fusion.layer_norm.
//
//===----------------------------------------------------------------------===//

#include "RaiseLinalg.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::raise_linalg;

namespace {

/// `v` as the shortest text that reads back the same (like APFloat prints).
std::string formatNumber(double v) {
  SmallString<16> text;
  APFloat(v).toString(text);
  return std::string(text);
}

//===----------------------------------------------------------------------===//
// Norm templates
//===----------------------------------------------------------------------===//

/// What a norm template matched: the operands, epsilon and the nodes of the
/// statistics.
struct NormMatch {
  bool layerNorm = false;
  Value input, weight, bias;
  double epsilon = 0;
  Expr *mean = nullptr, *rstd = nullptr;
};

/// Every non-leaf node of `e` is f32.
bool allF32(const Expr *e) {
  if (e->op == Expr::Leaf)
    return true;
  if (!e->type.isF32())
    return false;
  return llvm::all_of(e->args, allF32);
}

/// The tensor read by `e`, a Leaf of `kind`, possibly extended to f32.
Value operandTerm(const Expr *e, Kind kind) {
  if (e->op == Expr::Ext && e->args[0]->op == Expr::Leaf)
    e = e->args[0];
  if (e->op != Expr::Leaf || e->kind != kind ||
      !isa<RankedTensorType>(e->leaf.getType()) ||
      !isFusionFloat(getElementTypeOrSelf(e->leaf.getType())))
    return {};
  return e->leaf;
}

/// Appends the factors of the non-scalar product `e` to `factors`.
void flattenProduct(Expr *e, SmallVectorImpl<Expr *> &factors) {
  if (e->op == Expr::Mul && e->kind != Kind::Scalar) {
    flattenProduct(e->args[0], factors);
    flattenProduct(e->args[1], factors);
    return;
  }
  factors.push_back(e);
}

/// Matches `sum(body) / N` (or `* (1/N)`) and returns body.
FailureOr<Expr *> matchMean(Expr *e, int64_t n, std::string &why) {
  if (e->op != Expr::Div && e->op != Expr::Mul) {
    why = "expected a mean (sum / N), but got another expression";
    return failure();
  }
  Expr *sum = e->args[0], *c = e->args[1];
  if (e->op == Expr::Mul && sum->op != Expr::Sum)
    std::swap(sum, c);
  if (sum->op != Expr::Sum || c->op != Expr::Const) {
    why = "expected a mean (sum / N) with a constant N";
    return failure();
  }
  double want = e->op == Expr::Div ? roundTo(double(n), c->type)
                                   : roundTo(1.0 / double(n), c->type);
  if (c->value != want) {
    why = (e->op == Expr::Div
               ? "expected the sum to be divided by " + Twine(n) +
                     " (the innermost size), but it is divided by " +
                     formatNumber(c->value)
               : "expected the sum to be multiplied by 1/" + Twine(n) +
                     " (the innermost size), but it is multiplied by " +
                     formatNumber(c->value))
              .str();
    return failure();
  }
  return sum->args[0];
}

/// Matches rsqrt(v + eps) or 1 / sqrt(v + eps); returns v and eps.
FailureOr<std::pair<Expr *, double>> matchRstd(Expr *e, std::string &why) {
  Expr *arg = nullptr;
  if (e->op == Expr::Rsqrt)
    arg = e->args[0];
  else if (e->op == Expr::Div && isConst(e->args[0], 1.0) &&
           e->args[1]->op == Expr::Sqrt)
    arg = e->args[1]->args[0];
  if (!arg) {
    why = "expected the row factor to be rsqrt(v + epsilon) or "
          "1 / sqrt(v + epsilon)";
    return failure();
  }
  if (arg->op != Expr::Add) {
    why = "expected rsqrt(v + epsilon), but the rsqrt argument is not a sum";
    return failure();
  }
  Expr *v = arg->args[0], *eps = arg->args[1];
  if (v->op == Expr::Const)
    std::swap(v, eps);
  if (eps->op != Expr::Const) {
    why = "expected epsilon to be a constant";
    return failure();
  }
  if (!(eps->value >= 0.0) || !std::isfinite(eps->value)) {
    why = "expected epsilon to be finite and >= 0, but got " +
          formatNumber(eps->value);
    return failure();
  }
  return std::make_pair(v, eps->value);
}

/// The output of a norm, stripped of its final rounding.
Expr *stripRounding(Expr *root) {
  if (root->op == Expr::Trunc && root->args[0]->type.isF32())
    return root->args[0];
  return root;
}

/// Splits a product into its full, row and (optional) col factors.
LogicalResult splitFactors(Expr *product, Expr *&fullF, Expr *&rowF,
                           Expr *&colF, std::string &why) {
  SmallVector<Expr *> factors;
  flattenProduct(product, factors);
  fullF = rowF = colF = nullptr;
  for (Expr *f : factors) {
    Expr **slot = f->kind == Kind::Full  ? &fullF
                  : f->kind == Kind::Row ? &rowF
                  : f->kind == Kind::Col ? &colF
                                         : nullptr;
    if (!slot || *slot) {
      why = "expected the output to be the product of one element term, one "
            "per-row factor and at most one weight, but got " +
            std::to_string(factors.size()) + " factors of other kinds";
      return failure();
    }
    *slot = f;
  }
  if (!fullF || !rowF) {
    why = "expected the output to be an element term times a per-row factor";
    return failure();
  }
  return success();
}

/// Matches `root` with y = x * rstd (* weight), rstd = rsqrt(mean(x * x) +
/// eps), computed in f32 and rounded once.
FailureOr<NormMatch> matchRMSNorm(Expr *root, int64_t n, std::string &why) {
  Expr *y = stripRounding(root);
  if (!allF32(y)) {
    why = "expected f32 arithmetic rounded once at the end";
    return failure();
  }
  Expr *xf, *rf, *wf;
  if (failed(splitFactors(y, xf, rf, wf, why)))
    return failure();
  NormMatch m;
  m.input = operandTerm(xf, Kind::Full);
  if (!m.input) {
    why = "expected the element term to be the input (optionally extended "
          "to f32)";
    return failure();
  }
  if (wf && !(m.weight = operandTerm(wf, Kind::Col))) {
    why = "expected the innermost factor to be a weight vector";
    return failure();
  }
  auto rstd = matchRstd(rf, why);
  if (failed(rstd))
    return failure();
  m.epsilon = rstd->second;
  FailureOr<Expr *> body = matchMean(rstd->first, n, why);
  if (failed(body))
    return failure();
  Expr *sq = *body;
  if (sq->op != Expr::Mul || !same(sq->args[0], sq->args[1]) ||
      !same(sq->args[0], xf)) {
    why = "expected the sum of squares of the input, x * x";
    return failure();
  }
  m.rstd = rf;
  return m;
}

/// Matches `root` with y = (x - mean) * rstd (* weight) (+ bias), rstd =
/// rsqrt(mean((x - mean)^2) + eps), computed in f32 and rounded once.
FailureOr<NormMatch> matchLayerNorm(Expr *root, int64_t n, std::string &why) {
  Expr *y = stripRounding(root);
  if (!allF32(y)) {
    why = "expected f32 arithmetic rounded once at the end";
    return failure();
  }
  NormMatch m;
  m.layerNorm = true;
  if (y->op == Expr::Add) {
    Expr *a = y->args[0], *b = y->args[1];
    if (a->kind == Kind::Col)
      std::swap(a, b);
    if (b->kind != Kind::Col || !(m.bias = operandTerm(b, Kind::Col))) {
      why = "expected the added term to be a bias vector";
      return failure();
    }
    y = a;
  }
  Expr *cf, *rf, *wf;
  if (failed(splitFactors(y, cf, rf, wf, why)))
    return failure();
  if (wf && !(m.weight = operandTerm(wf, Kind::Col))) {
    why = "expected the innermost factor to be a weight vector";
    return failure();
  }
  if (cf->op != Expr::Sub || cf->args[1]->kind != Kind::Row ||
      !(m.input = operandTerm(cf->args[0], Kind::Full))) {
    why = "expected the element term to be x - mean";
    return failure();
  }
  Expr *x = cf->args[0], *mean = cf->args[1];
  FailureOr<Expr *> meanBody = matchMean(mean, n, why);
  if (failed(meanBody))
    return failure();
  if (!same(*meanBody, x)) {
    why = "expected the mean to be the mean of the input";
    return failure();
  }
  auto rstd = matchRstd(rf, why);
  if (failed(rstd))
    return failure();
  m.epsilon = rstd->second;
  Expr *var = rstd->first;
  if (var->op == Expr::Sub) {
    why = "the variance is computed in one pass (E[x^2] - mean^2); "
          "fusion.layer_norm computes the two-pass centered variance, which "
          "differs numerically";
    return failure();
  }
  FailureOr<Expr *> varBody = matchMean(var, n, why);
  if (failed(varBody))
    return failure();
  Expr *sq = *varBody;
  if (sq->op != Expr::Mul || !same(sq->args[0], sq->args[1]) ||
      sq->args[0]->op != Expr::Sub || !same(sq->args[0]->args[0], x) ||
      !same(sq->args[0]->args[1], mean)) {
    why = "expected the variance to be the mean of (x - mean)^2";
    return failure();
  }
  m.mean = mean;
  m.rstd = rf;
  return m;
}

/// A recognized norm chain ending at `root`.
struct NormChain {
  NormMatch match;
  llvm::SetVector<Operation *> ops;
  /// Stat tensors with users outside the chain, and which stat they hold.
  SmallVector<std::pair<Value, bool /*isMean*/>> externalStats;
};

/// The norm chain ending at `root`. An intermediate with users outside the
/// chain is read as an opaque tensor and the match retried (f32 statistics
/// excepted: the fused op provides them).
FailureOr<NormChain> matchNormChain(linalg::GenericOp root, std::string &why) {
  auto outType = dyn_cast<RankedTensorType>(root.getResultTypes().front());
  if (root.getNumResults() != 1 || !outType || outType.getRank() < 2 ||
      root.getNumReductionLoops() != 0) {
    why = "not an element-wise 'linalg.generic' of rank >= 2 with one result";
    return failure();
  }
  if (!isFusionFloat(outType.getElementType())) {
    why = "the result element type is not f32, bf16 or f16";
    return failure();
  }
  int64_t n = outType.getShape().back();
  if (ShapedType::isDynamic(n)) {
    why = "the innermost size is dynamic";
    return failure();
  }
  DenseSet<Operation *> stops;
  std::string usedElsewhere;
  for (int attempt = 0; attempt < 8; ++attempt) {
    ChainEvaluator ev(root->getBlock(), outType.getShape(), stops);
    Expr *y = ev.root(root);
    if (!y) {
      why = usedElsewhere + ev.why;
      return failure();
    }
    std::string rmsWhy, lnWhy;
    FailureOr<NormMatch> m = matchRMSNorm(y, n, rmsWhy);
    if (failed(m))
      m = matchLayerNorm(y, n, lnWhy);
    if (failed(m)) {
      // Report the formula the output looks like.
      Expr *s = stripRounding(y);
      bool lnLike = s->op == Expr::Add;
      SmallVector<Expr *> factors;
      flattenProduct(lnLike ? s->args[0] : s, factors);
      for (Expr *f : factors)
        lnLike |= f->op == Expr::Sub && f->kind == Kind::Full;
      why = usedElsewhere + (lnLike ? "not a LayerNorm: " + lnWhy
                                    : "not an RMSNorm: " + rmsWhy);
      return failure();
    }
    NormChain chain{*m, ev.chain, {}};
    Value rstdTensor = m->rstd ? m->rstd->tensor : Value();
    Value meanTensor = m->mean ? m->mean->tensor : Value();
    Operation *offender = nullptr;
    for (Operation *op : chain.ops) {
      if (op == root.getOperation())
        continue;
      Value r = op->getResult(0);
      bool external = llvm::any_of(r.getUsers(), [&](Operation *u) {
        return !chain.ops.contains(u);
      });
      if (!external)
        continue;
      auto rt = cast<RankedTensorType>(r.getType());
      if ((r == rstdTensor || r == meanTensor) && rt.getElementType().isF32()) {
        chain.externalStats.push_back({r, r == meanTensor});
        continue;
      }
      offender = op;
      break;
    }
    if (!offender)
      return chain;
    stops.insert(offender);
    usedElsewhere = ("'" + offender->getName().getStringRef() +
                     "' computes an intermediate that has users outside the "
                     "norm, so it stays; then ")
                        .str();
  }
  why = usedElsewhere + "too many intermediates have other users";
  return failure();
}

/// Whether `user` comes after `point` (in point's block).
bool isAfter(Operation *user, Block *block, Block::iterator point) {
  Operation *anc = block->findAncestorOpInBlock(*user);
  if (!anc)
    return false;
  if (point == block->end())
    return false;
  return &*point == anc || point->isBeforeInBlock(anc);
}

/// Whether a consuming linalg.generic of `root` extends the norm (a separate
/// weight or bias generic): the match is then left to that consumer.
bool extendedByConsumer(linalg::GenericOp root) {
  for (Operation *user : root->getUsers()) {
    auto g = dyn_cast<linalg::GenericOp>(user);
    std::string ignored;
    if (!g || g == root)
      continue;
    FailureOr<NormChain> ext = matchNormChain(g, ignored);
    if (succeeded(ext) && ext->ops.contains(root))
      return true;
  }
  return false;
}

/// Where the fused norm goes in `block`: after the last of its operands
/// defined in this block.
Block::iterator afterOperands(Block *block, const NormMatch &m) {
  Block::iterator point = block->begin();
  for (Value v : {m.input, m.weight, m.bias}) {
    if (!v)
      continue;
    Operation *def = v.getDefiningOp();
    Operation *anc = def ? block->findAncestorOpInBlock(*def) : nullptr;
    if (anc && (point == block->begin() || !anc->isBeforeInBlock(&*point)))
      point = std::next(anc->getIterator());
  }
  return point;
}

/// Replaces the uses outside the chain of its statistic tensors with the
/// fused norm's `mean` and `rstd` (expanded to [..., 1] for keep-dim
/// statistics).
void replaceExternalStats(PatternRewriter &rewriter, Location loc,
                          const NormChain &chain, ArrayRef<int64_t> rowShape,
                          Value mean, Value rstd) {
  for (auto [stat, isMean] : chain.externalStats) {
    Value v = isMean ? mean : rstd;
    auto t = cast<RankedTensorType>(stat.getType());
    if (t != v.getType()) {
      // Keep-dim statistics: [..., 1].
      SmallVector<ReassociationIndices> reassoc;
      for (int64_t i = 0, e = rowShape.size(); i < e; ++i)
        reassoc.push_back({i});
      if (reassoc.empty())
        reassoc.push_back({0});
      else
        reassoc.back().push_back(rowShape.size());
      v = tensor::ExpandShapeOp::create(rewriter, loc, t, v, reassoc);
    }
    rewriter.replaceUsesWithIf(stat, v, [&](OpOperand &use) {
      return !chain.ops.contains(use.getOwner());
    });
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Pattern
//===----------------------------------------------------------------------===//

LogicalResult
RaiseNormChain::matchAndRewrite(linalg::GenericOp root,
                                PatternRewriter &rewriter) const {
  std::string why;
  FailureOr<NormChain> chain = matchNormChain(root, why);
  if (failed(chain))
    return rewriter.notifyMatchFailure(root, why);
  if (extendedByConsumer(root))
    return rewriter.notifyMatchFailure(
        root, "a consuming 'linalg.generic' extends the norm");
  NormMatch &m = chain->match;
  auto outType = cast<RankedTensorType>(root.getResultTypes().front());
  Block *block = root->getBlock();
  auto inType = cast<RankedTensorType>(m.input.getType());
  if (inType.getShape() != outType.getShape())
    return rewriter.notifyMatchFailure(
        root, "the input's shape differs from the output's");
  int64_t n = outType.getShape().back();
  for (Value v : {m.weight, m.bias})
    if (v && cast<RankedTensorType>(v.getType()).getShape() !=
                 ArrayRef<int64_t>{n})
      return rewriter.notifyMatchFailure(
          root, "expected weight and bias of shape [" + Twine(n) + "]");

  Block::iterator point = afterOperands(block, m);
  for (auto [stat, isMean] : chain->externalStats)
    for (Operation *u : stat.getUsers())
      if (!chain->ops.contains(u) && !isAfter(u, block, point))
        return rewriter.notifyMatchFailure(
            root, "a user of the norm statistics precedes the norm's "
                  "operands");

  rewriter.setInsertionPoint(block, point);
  Location loc = root.getLoc();
  SmallVector<int64_t> rowShape(outType.getShape().drop_back());
  auto statType = RankedTensorType::get(rowShape, rewriter.getF32Type());
  FloatAttr eps = rewriter.getF32FloatAttr(float(m.epsilon));
  Value output, mean, rstd;
  if (m.layerNorm) {
    auto ln = LayerNormOp::create(rewriter, loc, outType, statType, statType,
                                  m.input, m.weight, m.bias, eps);
    output = ln.getOutput();
    mean = ln.getMean();
    rstd = ln.getRstd();
  } else {
    bool wantRstd = !chain->externalStats.empty();
    auto rms = RMSNormOp::create(rewriter, loc, outType,
                                 wantRstd ? Type(statType) : Type(), m.input,
                                 m.weight, eps);
    output = rms.getOutput();
    rstd = rms.getRstd();
  }
  replaceExternalStats(rewriter, loc, *chain, rowShape, mean, rstd);
  // The matched ops, users first; erased once unused.
  SmallVector<Operation *> ops;
  for (Operation *op : chain->ops)
    if (op != root.getOperation())
      ops.push_back(op);
  llvm::sort(ops, [](Operation *a, Operation *b) {
    return b->isBeforeInBlock(a);
  });
  rewriter.replaceOp(root, output);
  for (Operation *op : ops)
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}
