//===- RaiseLinalgChain.cpp - a norm chain as a symbolic expression -------===//
//
// The ChainEvaluator of fusion-raise-linalg. Starting from the last
// element-wise linalg.generic of a norm chain, it evaluates the yielded value
// by inlining the producers of its operands (element-wise generics, sum
// reductions, broadcasts, keep-dim expands) into one scalar expression tree
// over the row being normalized. Every tensor access is classified, from the
// indexing maps and the shapes, as a `full`, `row`, `col` or scalar element
// of the normalized input; anything else stops the evaluation with a reason.
//
//===----------------------------------------------------------------------===//

#include "RaiseLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::raise_linalg;

bool raise_linalg::same(const Expr *a, const Expr *b) {
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

bool raise_linalg::isConst(const Expr *e, double v) {
  return e->op == Expr::Const && e->value == v;
}

//===----------------------------------------------------------------------===//
// Nodes and shapes
//===----------------------------------------------------------------------===//

Expr *ChainEvaluator::fail(const Twine &reason) {
  if (why.empty())
    why = reason.str();
  return nullptr;
}

Expr *ChainEvaluator::make(Expr::Op op, Type type, Kind kind,
                           ArrayRef<Expr *> args) {
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

Expr *ChainEvaluator::constant(double v, Type type) {
  Expr *e = make(Expr::Const, type, Kind::Scalar);
  if (e)
    e->value = roundTo(v, type);
  return e;
}

Expr *ChainEvaluator::leafOf(Value v, Type type, Kind kind) {
  Expr *e = make(Expr::Leaf, type, kind);
  if (e)
    e->leaf = v;
  return e;
}

SmallVector<int64_t> ChainEvaluator::dimsOf(Kind kind) const {
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

bool ChainEvaluator::isKeepDimRowShape(ArrayRef<int64_t> shape) const {
  return shape.size() == full.size() && shape.back() == 1 &&
         shape.drop_back() == ArrayRef<int64_t>(full).drop_back();
}

//===----------------------------------------------------------------------===//
// Indexing maps
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

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
    result = reduce(red, kind, elemType);
  } else if (auto bc = dyn_cast_or_null<linalg::BroadcastOp>(def);
             bc && inlinable) {
    result = broadcast(bc, kind);
  } else if (auto ex = dyn_cast_or_null<tensor::ExpandShapeOp>(def);
             ex && inlinable && kind == Kind::Row &&
             isKeepDimRowShape(ex.getResultType().getShape()) &&
             ex.getSrcType().getShape() == ArrayRef<int64_t>(full).drop_back()) {
    // [rows] -> [rows, 1] (a keep-dim statistic).
    chain.insert(ex);
    result = element(ex.getSrc(), Kind::Row);
  } else {
    result = leafOf(t, elemType, kind);
  }
  if (!result)
    return nullptr;
  if (!result->tensor && isa<RankedTensorType>(t.getType()) &&
      result->op != Expr::Const)
    result->tensor = t;
  memo[key] = result;
  return result;
}

Expr *ChainEvaluator::reduce(linalg::ReduceOp red, Kind kind, Type elemType) {
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
  Expr *result = make(Expr::Sum, elemType, Kind::Row, {in});
  if (result)
    result->kind = Kind::Row;
  return result;
}

Expr *ChainEvaluator::broadcast(linalg::BroadcastOp bc, Kind kind) {
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
  return element(bc.getInput(), srcKind);
}

//===----------------------------------------------------------------------===//
// linalg.generic bodies
//===----------------------------------------------------------------------===//

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
    if (!isa<RankedTensorType>(in.getType()))
      return leafOf(in, v.getType(), Kind::Scalar);
    return element(in, *k);
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &body) {
    if (std::optional<double> c = scalarConstant(v))
      return constant(*c, v.getType());
    return leafOf(v, v.getType(), Kind::Scalar);
  }
  if (std::optional<double> c = scalarConstant(v))
    return constant(*c, v.getType());
  return bodyOp(def, v, op, roles);
}

Expr *ChainEvaluator::bodyOp(Operation *def, Value v, linalg::GenericOp op,
                             const Roles &roles) {
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
