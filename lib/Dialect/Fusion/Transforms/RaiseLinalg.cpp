//===- RaiseLinalg.cpp - raise linalg norms and matmuls to fusion ---------===//
//
// fusion-raise-linalg. Matmuls are matched op by op. Norms are matched on a
// symbolic expression: starting from the last element-wise linalg.generic of
// the chain, the pattern evaluates its yielded value by inlining the producers
// of its operands (element-wise generics, sum reductions, broadcasts) into one
// scalar expression tree over the row being normalized. Every tensor access
// is classified, from the indexing maps and the shapes, as an element of the
// full input (`full`), of a per-row tensor (`row`), of an innermost-dimension
// vector (`col`) or as a scalar; anything else stops the match. The tree is
// then compared with the RMSNorm and LayerNorm formulas of FusionOps.td,
// including the f32 arithmetic and the single final rounding.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <deque>

using namespace mlir;
using namespace mlir::fusion;

namespace {
//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool isFusionFloat(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

/// Rounds `v` to the float type `t` (round to nearest even).
double roundTo(double v, Type t) {
  auto ft = dyn_cast<FloatType>(t);
  if (!ft)
    return v;
  APFloat f(v);
  bool lost;
  f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

/// The value of a scalar float constant, looking through int-to-float
/// conversions and float extensions/truncations of constants.
std::optional<double> scalarConstant(Value v) {
  if (!v)
    return std::nullopt;
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return f.getValueAsDouble();
    return std::nullopt;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::SIToFPOp, arith::UIToFPOp>(def)) {
    APInt i;
    if (!matchPattern(def->getOperand(0), m_ConstantInt(&i)))
      return std::nullopt;
    double d = isa<arith::SIToFPOp>(def) ? double(i.getSExtValue())
                                         : double(i.getZExtValue());
    return roundTo(d, v.getType());
  }
  if (isa<arith::ExtFOp, arith::TruncFOp>(def))
    if (std::optional<double> d = scalarConstant(def->getOperand(0)))
      return roundTo(*d, v.getType());
  return std::nullopt;
}

/// The value of a splat float tensor constant or of a linalg.fill of a
/// constant.
std::optional<double> splatConstant(Value v) {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)) && attr.isSplat() &&
      isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    if (fill.hasPureTensorSemantics())
      return scalarConstant(fill.getInputs()[0]);
  return std::nullopt;
}

/// `v` as the shortest text that reads back the same (like APFloat prints).
std::string formatNumber(double v) {
  SmallString<16> text;
  APFloat(v).toString(text);
  return std::string(text);
}

bool isPositiveZero(std::optional<double> d) {
  return d && *d == 0.0 && !std::signbit(*d);
}

//===----------------------------------------------------------------------===//
// Symbolic expressions of a norm chain
//===----------------------------------------------------------------------===//

/// Which dimensions of the normalized input an element depends on, for an
/// input of rank R: all (full), all but the innermost (row), only the
/// innermost (col), none (scalar).
enum class Kind { Scalar, Col, Row, Full };

struct Expr {
  enum Op { Leaf, Const, Ext, Trunc, Add, Sub, Mul, Div, Rsqrt, Sqrt, Sum };
  Op op;
  Type type;
  Kind kind;
  Value leaf;      // Leaf: the tensor (or scalar) read
  double value = 0; // Const
  SmallVector<Expr *, 2> args;
  Value tensor;    // the tensor this node is an element of, when it is one
};

bool same(const Expr *a, const Expr *b) {
  if (a == b)
    return true;
  if (!a || !b || a->op != b->op || a->type != b->type || a->kind != b->kind ||
      a->leaf != b->leaf || a->value != b->value ||
      a->args.size() != b->args.size())
    return false;
  for (auto [x, y] : llvm::zip(a->args, b->args))
    if (!same(x, y))
      return false;
  return true;
}

bool isConst(const Expr *e, double v) {
  return e->op == Expr::Const && e->value == v;
}

/// Evaluates the element of a norm chain's last tensor as an Expr, inlining
/// its producers. `chain` collects the inlined ops; `stops` are ops that must
/// be read as opaque tensors.
class ChainEvaluator {
public:
  ChainEvaluator(Block *block, ArrayRef<int64_t> fullShape,
                 const DenseSet<Operation *> &stops)
      : block(block), full(fullShape), stops(stops) {}

  /// The element of tensor `t` read as `kind`, or null (see `why`).
  Expr *element(Value t, Kind kind);
  /// The element of `root`'s result, read as a full element.
  Expr *root(linalg::GenericOp op) { return generic(op, Kind::Full); }

  llvm::SetVector<Operation *> chain;
  std::string why;

private:
  /// How each loop of a generic maps to the dimensions of the input.
  static constexpr int64_t kUnit = -1;
  using Roles = SmallVector<int64_t>;

  Expr *fail(const Twine &reason) {
    if (why.empty())
      why = reason.str();
    return nullptr;
  }
  Expr *make(Expr::Op op, Type type, Kind kind, ArrayRef<Expr *> args = {}) {
    if (++size > 4000)
      return fail("the expression is too large");
    Expr &e = nodes.emplace_back();
    e.op = op;
    e.type = type;
    e.kind = kind;
    e.args.assign(args.begin(), args.end());
    for (Expr *a : args)
      e.kind = std::max(e.kind, a->kind);
    return &e;
  }
  Expr *constant(double v, Type type) {
    Expr *e = make(Expr::Const, type, Kind::Scalar);
    if (e)
      e->value = roundTo(v, type);
    return e;
  }
  SmallVector<int64_t> dimsOf(Kind kind) const {
    int64_t r = full.size();
    switch (kind) {
    case Kind::Full:
      return llvm::to_vector(llvm::seq<int64_t>(0, r));
    case Kind::Row:
      return llvm::to_vector(llvm::seq<int64_t>(0, r - 1));
    case Kind::Col:
      return {r - 1};
    case Kind::Scalar:
      return {};
    }
    return {};
  }
  bool isKeepDimRowShape(ArrayRef<int64_t> shape) const {
    return shape.size() == full.size() && shape.back() == 1 &&
           shape.drop_back() == ArrayRef<int64_t>(full).drop_back();
  }
  bool sizeMatches(int64_t size, int64_t dim) const {
    return size == full[dim];
  }
  FailureOr<Roles> loopRoles(linalg::GenericOp op, Kind kind);
  FailureOr<Kind> accessKind(AffineMap map, Type type, const Roles &roles);
  Expr *generic(linalg::GenericOp op, Kind kind);
  Expr *scalar(Value v, linalg::GenericOp op, const Roles &roles);

  Block *block;
  SmallVector<int64_t> full;
  const DenseSet<Operation *> &stops;
  std::deque<Expr> nodes;
  DenseMap<std::pair<Value, unsigned>, Expr *> memo;
  int64_t size = 0;
};

FailureOr<ChainEvaluator::Roles>
ChainEvaluator::loopRoles(linalg::GenericOp op, Kind kind) {
  AffineMap outMap = op.getIndexingMapsArray().back();
  auto outType = cast<RankedTensorType>(op.getResult(0).getType());
  SmallVector<int64_t> dims = dimsOf(kind);
  Roles roles(op.getNumLoops(), std::numeric_limits<int64_t>::min());
  unsigned next = 0;
  for (auto [j, e] : llvm::enumerate(outMap.getResults())) {
    int64_t size = outType.getDimSize(j);
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0 || size != 1)
        return failure();
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return failure();
    if (next < dims.size() && sizeMatches(size, dims[next]))
      roles[d.getPosition()] = dims[next++];
    else if (size == 1)
      roles[d.getPosition()] = kUnit;
    else
      return failure();
  }
  if (next != dims.size())
    return failure();
  int reductions = 0;
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    bool isReduction = it == utils::IteratorType::reduction;
    if (roles[i] != std::numeric_limits<int64_t>::min()) {
      if (isReduction)
        return failure();
      continue;
    }
    if (!isReduction || kind != Kind::Row || ++reductions > 1)
      return failure();
    roles[i] = full.size() - 1;
  }
  return roles;
}

FailureOr<Kind> ChainEvaluator::accessKind(AffineMap map, Type type,
                                           const Roles &roles) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped) {
    if (map.getNumResults() != 0)
      return failure();
    return Kind::Scalar;
  }
  SmallVector<int64_t> dims;
  for (auto [j, e] : llvm::enumerate(map.getResults())) {
    int64_t size = shaped.getDimSize(j);
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0 || size != 1)
        return failure();
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return failure();
    int64_t role = roles[d.getPosition()];
    if (role == kUnit) {
      if (size != 1)
        return failure();
      continue;
    }
    if (!sizeMatches(size, role) || (!dims.empty() && dims.back() >= role))
      return failure();
    dims.push_back(role);
  }
  for (Kind k : {Kind::Scalar, Kind::Col, Kind::Row, Kind::Full})
    if (dims == dimsOf(k))
      return k;
  return failure();
}

Expr *ChainEvaluator::element(Value t, Kind kind) {
  auto key = std::make_pair(t, unsigned(kind));
  if (Expr *e = memo.lookup(key))
    return e;
  Expr *result = nullptr;
  Type elemType = getElementTypeOrSelf(t.getType());
  Operation *def = t.getDefiningOp();
  bool inlinable = def && def->getBlock() == block && !stops.contains(def) &&
                   def->getNumResults() == 1;
  if (std::optional<double> c = splatConstant(t)) {
    result = constant(*c, elemType);
  } else if (auto gen = dyn_cast_or_null<linalg::GenericOp>(def);
             gen && inlinable) {
    result = generic(gen, kind);
  } else if (auto red = dyn_cast_or_null<linalg::ReduceOp>(def);
             red && inlinable) {
    // linalg.reduce ins(%x) outs(%zero) dimensions = [R - 1] { addf }.
    int64_t r = full.size();
    auto inType = dyn_cast<RankedTensorType>(red.getInputs()[0].getType());
    Block &body = red.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    auto add = yield.getNumOperands() == 1
                   ? yield.getOperand(0).getDefiningOp<arith::AddFOp>()
                   : nullptr;
    if (kind != Kind::Row || red.getInputs().size() != 1 || !inType ||
        inType.getShape() != ArrayRef<int64_t>(full) ||
        red.getDimensions() != ArrayRef<int64_t>{r - 1})
      return fail("linalg.reduce is not a reduction of the input over its "
                  "innermost dimension");
    if (!add || add->getBlock() != &body || body.getOperations().size() != 2 ||
        !((add.getLhs() == body.getArgument(0) &&
           add.getRhs() == body.getArgument(1)) ||
          (add.getLhs() == body.getArgument(1) &&
           add.getRhs() == body.getArgument(0))))
      return fail("linalg.reduce does not compute a plain sum");
    if (!isPositiveZero(splatConstant(red.getInits()[0])))
      return fail("linalg.reduce does not start from 0.0");
    chain.insert(red);
    Expr *in = element(red.getInputs()[0], Kind::Full);
    if (!in)
      return nullptr;
    result = make(Expr::Sum, elemType, Kind::Row, {in});
    if (result)
      result->kind = Kind::Row;
  } else if (auto bc = dyn_cast_or_null<linalg::BroadcastOp>(def);
             bc && inlinable) {
    int64_t r = full.size();
    auto outType = cast<RankedTensorType>(bc.getInit().getType());
    ArrayRef<int64_t> added = bc.getDimensions();
    Kind srcKind;
    if (kind != Kind::Full || outType.getShape() != ArrayRef<int64_t>(full))
      return fail("linalg.broadcast does not produce the input's shape");
    if (added == ArrayRef<int64_t>{r - 1})
      srcKind = Kind::Row;
    else if (SmallVector<int64_t>(added) == dimsOf(Kind::Row))
      srcKind = Kind::Col;
    else
      return fail("linalg.broadcast adds neither the innermost dimension nor "
                  "all outer dimensions");
    chain.insert(bc);
    result = element(bc.getInput(), srcKind);
  } else if (auto ex = dyn_cast_or_null<tensor::ExpandShapeOp>(def);
             ex && inlinable && kind == Kind::Row &&
             isKeepDimRowShape(ex.getResultType().getShape()) &&
             ex.getSrcType().getShape() == ArrayRef<int64_t>(full).drop_back()) {
    // [rows] -> [rows, 1] (a keep-dim statistic).
    chain.insert(ex);
    result = element(ex.getSrc(), Kind::Row);
  } else {
    result = make(Expr::Leaf, elemType, kind);
    if (result)
      result->leaf = t;
  }
  if (!result)
    return nullptr;
  if (!result->tensor && isa<RankedTensorType>(t.getType()) &&
      result->op != Expr::Const)
    result->tensor = t;
  memo[key] = result;
  return result;
}

Expr *ChainEvaluator::generic(linalg::GenericOp op, Kind kind) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumResults() != 1)
    return fail("'linalg.generic' has several outputs or is not on tensors");
  FailureOr<Roles> roles = loopRoles(op, kind);
  if (failed(roles))
    return fail("the iterator types or output indexing map of a "
                "'linalg.generic' do not fit a norm over the innermost "
                "dimension (e.g. a reduction over an outer dimension)");
  chain.insert(op);
  Block &body = op.getRegion().front();
  Value out = body.getArguments().back();
  Value yielded = cast<linalg::YieldOp>(body.getTerminator()).getOperand(0);
  bool isReduction = op.getNumReductionLoops() == 1;
  if (!isReduction) {
    if (!out.use_empty())
      return fail("an element-wise 'linalg.generic' reads its output");
    return scalar(yielded, op, *roles);
  }
  // sum_k f(...): yield addf(out, f) with out read once, from zero.
  auto add = yielded.getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body || !out.hasOneUse() ||
      (add.getLhs() != out && add.getRhs() != out))
    return fail("the reduction 'linalg.generic' does not compute a sum");
  if (!isPositiveZero(splatConstant(op.getDpsInits()[0])))
    return fail("the reduction 'linalg.generic' does not start from 0.0");
  Value term = add.getLhs() == out ? add.getRhs() : add.getLhs();
  Expr *e = scalar(term, op, *roles);
  if (!e)
    return nullptr;
  Expr *sum = make(Expr::Sum, add.getType(), Kind::Row, {e});
  if (sum)
    sum->kind = Kind::Row;
  return sum;
}

Expr *ChainEvaluator::scalar(Value v, linalg::GenericOp op,
                             const Roles &roles) {
  Block &body = op.getRegion().front();
  if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == &body) {
    OpOperand &operand = op->getOpOperand(arg.getArgNumber());
    Value in = operand.get();
    if (std::optional<double> c = scalarConstant(in))
      return constant(*c, v.getType());
    FailureOr<Kind> k =
        accessKind(op.getMatchingIndexingMap(&operand), in.getType(), roles);
    if (failed(k))
      return fail("an operand of a 'linalg.generic' is read through an "
                  "indexing map that is not an element, row, innermost or "
                  "scalar access of the normalized input");
    if (!isa<RankedTensorType>(in.getType())) {
      Expr *e = make(Expr::Leaf, v.getType(), Kind::Scalar);
      if (e)
        e->leaf = in;
      return e;
    }
    return element(in, *k);
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &body) {
    if (std::optional<double> c = scalarConstant(v))
      return constant(*c, v.getType());
    Expr *e = make(Expr::Leaf, v.getType(), Kind::Scalar);
    if (e)
      e->leaf = v;
    return e;
  }
  if (std::optional<double> c = scalarConstant(v))
    return constant(*c, v.getType());
  SmallVector<Expr *, 2> args;
  auto operands = [&]() -> bool {
    for (Value o : def->getOperands()) {
      Expr *e = scalar(o, op, roles);
      if (!e)
        return false;
      args.push_back(e);
    }
    return true;
  };
  Type t = v.getType();
  auto allConst = [&] {
    return llvm::all_of(args, [](Expr *e) { return e->op == Expr::Const; });
  };
  if (isa<arith::ExtFOp, arith::TruncFOp>(def)) {
    if (!operands())
      return nullptr;
    if (allConst())
      return constant(args[0]->value, t);
    return make(isa<arith::ExtFOp>(def) ? Expr::Ext : Expr::Trunc, t,
                args[0]->kind, args);
  }
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(def)) {
    if (!operands())
      return nullptr;
    if (allConst()) {
      double a = args[0]->value, b = args[1]->value;
      double r = isa<arith::AddFOp>(def)   ? a + b
                 : isa<arith::SubFOp>(def) ? a - b
                 : isa<arith::MulFOp>(def) ? a * b
                                           : a / b;
      return constant(r, t);
    }
    if (isa<arith::MulFOp>(def)) {
      // x * 1.0 is x exactly (torch-mlir's alpha = 1 on sub/add).
      if (isConst(args[1], 1.0))
        return args[0];
      if (isConst(args[0], 1.0))
        return args[1];
    }
    Expr::Op kindOp = isa<arith::AddFOp>(def)   ? Expr::Add
                      : isa<arith::SubFOp>(def) ? Expr::Sub
                      : isa<arith::MulFOp>(def) ? Expr::Mul
                                                : Expr::Div;
    return make(kindOp, t, Kind::Scalar, args);
  }
  if (isa<math::RsqrtOp, math::SqrtOp>(def)) {
    if (!operands())
      return nullptr;
    return make(isa<math::RsqrtOp>(def) ? Expr::Rsqrt : Expr::Sqrt, t,
                Kind::Scalar, args);
  }
  // x^2 as math.powf(x, 2.0) or math.fpowi(x, 2): x * x.
  if (isa<math::PowFOp, math::FPowIOp>(def)) {
    std::optional<double> p;
    APInt i;
    if (isa<math::PowFOp>(def))
      p = scalarConstant(def->getOperand(1));
    else if (matchPattern(def->getOperand(1), m_ConstantInt(&i)))
      p = double(i.getSExtValue());
    if (p != 2.0)
      return fail("'" + def->getName().getStringRef() +
                  "' is not a square (exponent 2)");
    Expr *base = scalar(def->getOperand(0), op, roles);
    if (!base)
      return nullptr;
    return make(Expr::Mul, t, Kind::Scalar, {base, base});
  }
  return fail("'" + def->getName().getStringRef() +
              "' in a 'linalg.generic' body is not part of a norm");
}

//===----------------------------------------------------------------------===//
// Norm templates
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// A linalg norm chain ending at an element-wise generic -> fusion.rms_norm
/// or fusion.layer_norm.
struct RaiseNormChain : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp root,
                                PatternRewriter &rewriter) const override {
    std::string why;
    FailureOr<NormChain> chain = matchNormChain(root, why);
    if (failed(chain))
      return rewriter.notifyMatchFailure(root, why);
    // Leave it to a consumer that extends the norm (a separate weight or
    // bias generic).
    for (Operation *user : root->getUsers()) {
      auto g = dyn_cast<linalg::GenericOp>(user);
      std::string ignored;
      if (!g || g == root)
        continue;
      FailureOr<NormChain> ext = matchNormChain(g, ignored);
      if (succeeded(ext) && ext->ops.contains(root))
        return rewriter.notifyMatchFailure(
            root, "a consuming 'linalg.generic' extends the norm");
    }
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

    // Insert after the last operand defined in this block.
    Block::iterator point = block->begin();
    for (Value v : {m.input, m.weight, m.bias}) {
      if (!v)
        continue;
      Operation *def = v.getDefiningOp();
      Operation *anc = def ? block->findAncestorOpInBlock(*def) : nullptr;
      if (anc && (point == block->begin() || !anc->isBeforeInBlock(&*point)))
        point = std::next(anc->getIterator());
    }
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
    for (auto [stat, isMean] : chain->externalStats) {
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
        return !chain->ops.contains(use.getOwner());
      });
    }
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
};

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

/// linalg.matmul (plain or with transposing indexing maps) into a zero
/// accumulator -> fusion.matmul.
struct RaiseMatmul : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not on tensors");
    Value a = op.getInputs()[0], b = op.getInputs()[1],
          c = op.getOutputs()[0];
    std::string why = whyNotMatmulTypes(a, b, c, 2);
    if (why.empty())
      why = whyNotZeroInit(c);
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
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
    rewriter.replaceOpWithNewOp<MatmulOp>(op, c.getType(), a, b, tl, tr);
    return success();
  }
};

/// linalg.batch_matmul with a static batch of 1 -> collapse, fusion.matmul,
/// expand. Larger batches have no faithful single fusion.matmul.
struct RaiseBatchMatmul : OpRewritePattern<linalg::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not on tensors");
    Value a = op.getInputs()[0], b = op.getInputs()[1],
          c = op.getOutputs()[0];
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
};
} // namespace

void mlir::fusion::populateRaiseLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<RaiseNormChain,   // RMSNorm / LayerNorm chains
               RaiseMatmul,      // linalg.matmul
               RaiseBatchMatmul  // linalg.batch_matmul, batch 1
               >(ctx);
}
