//===- FusionOps.cpp - fusion op verifiers --------------------------------===//
//
// Element types are checked by ODS; these verifiers check ranks, shapes,
// the presence of optional operands and results, and attribute values. Every
// message names the operand and says what was expected and what was given.
// Dynamic dimensions (`?`) match any size.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::fusion;

#define GET_OP_CLASSES
#include "fusion/Dialect/Fusion/IR/FusionOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

namespace {
/// Prints a shape as `[4096, 512]`, with `?` for dynamic sizes.
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return s;
}

bool sameDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool sameShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip_equal(a, b), [](auto pair) {
           return sameDim(std::get<0>(pair), std::get<1>(pair));
         });
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `expected <name> of rank <rank><why>, but got rank <r>`.
LogicalResult checkRank(Operation *op, StringRef name, Value v, int64_t rank,
                        StringRef why = "") {
  int64_t got = cast<RankedTensorType>(v.getType()).getRank();
  if (got == rank)
    return success();
  return op->emitOpError() << "expected " << name << " of rank " << rank << why
                           << ", but got rank " << got;
}

/// `expected <name> of shape <shape><why>, but got <shape>`.
LogicalResult checkShape(Operation *op, StringRef name, Value v,
                         ArrayRef<int64_t> expected, StringRef why = "") {
  if (sameShape(shapeOf(v), expected))
    return success();
  return op->emitOpError() << "expected " << name << " of shape "
                           << formatShape(expected) << why << ", but got "
                           << formatShape(shapeOf(v));
}

/// Checks an optional operand or result when it is present.
LogicalResult checkShapeIfPresent(Operation *op, StringRef name, Value v,
                                  ArrayRef<int64_t> expected,
                                  StringRef why = "") {
  return v ? checkShape(op, name, v, expected, why) : success();
}

LogicalResult checkEpsilon(Operation *op, StringRef name, FloatAttr eps) {
  if (!eps)
    return success();
  double value = eps.getValueAsDouble();
  if (value >= 0.0 && std::isfinite(value))
    return success();
  // APFloat prints `-0.25`, `+Inf`, `NaN` (a double streamed into a
  // diagnostic prints `-2.500000e-01`, `INF`, `nan`).
  SmallString<16> text;
  eps.getValue().toString(text);
  return op->emitOpError() << "expected " << name
                           << " to be finite and >= 0, but got " << text;
}

/// Norm input checks shared by the forward and backward norms: rank >= 1,
/// and the per-row statistics / per-column parameters derived from it.
/// Each operand is checked against the shape as known so far, then refines
/// it: a dimension the input leaves dynamic is taken from the first operand
/// that has it static, so that two operands cannot disagree about it through
/// the input (weight [128] and output [?, 64] for an input [?, ?]); the
/// message names where such a dimension came from.
struct RowShape {
  SmallVector<int64_t> full;  ///< the input shape, refined
  SmallVector<StringRef> from; ///< per dimension: the operand that fixed it
  enum Part { Full, Rows, Innermost };

  /// Checks `v` (when present) against `part` of the shape, then refines it.
  LogicalResult check(Operation *op, StringRef name, Value v, Part part) {
    if (!v)
      return success();
    size_t first = part == Innermost ? full.size() - 1 : 0;
    size_t count = part == Full ? full.size()
                   : part == Rows ? full.size() - 1
                                  : 1;
    ArrayRef<int64_t> expected = ArrayRef<int64_t>(full).slice(first, count);
    ArrayRef<int64_t> got = shapeOf(v);
    if (!sameShape(got, expected)) {
      std::string why = part == Full   ? "the shape of input"
                        : part == Rows ? "input without its innermost dimension"
                                       : "innermost dimension of input";
      for (size_t i = 0; i < count; ++i)
        if (!from[first + i].empty())
          why += ("; " + Twine(expected[i]) + " from " + from[first + i]).str();
      return op->emitOpError()
             << "expected " << name << " of shape " << formatShape(expected)
             << " (" << why << "), but got " << formatShape(got);
    }
    for (size_t i = 0; i < count; ++i)
      if (ShapedType::isDynamic(full[first + i]) && !ShapedType::isDynamic(got[i])) {
        full[first + i] = got[i];
        from[first + i] = name;
      }
    return success();
  }
};

FailureOr<RowShape> getRowShape(Operation *op, Value input) {
  ArrayRef<int64_t> shape = shapeOf(input);
  if (shape.empty())
    return op->emitOpError()
           << "expected input of rank >= 1 (normalized over its innermost "
              "dimension), but got rank 0";
  if (shape.back() == 0)
    return op->emitOpError()
           << "expected input with a non-empty innermost dimension (the one "
              "normalized over), but got "
           << formatShape(shape);
  return RowShape{llvm::to_vector(shape),
                  SmallVector<StringRef>(shape.size(), StringRef())};
}
} // namespace

//===----------------------------------------------------------------------===//
// Tensor sizes (the Fusion_SizedTensors trait of every op)
//===----------------------------------------------------------------------===//

namespace {
/// The element count and byte size of `type`, or the first of them that does
/// not fit in int64 (dynamic dimensions count as 1: the static part alone
/// must fit).
std::optional<std::string> checkTensorSize(RankedTensorType type) {
  int64_t count = 1;
  for (int64_t d : type.getShape()) {
    if (ShapedType::isDynamic(d))
      continue;
    std::optional<int64_t> next = llvm::checkedMul(count, d);
    if (!next)
      return std::string("an element count");
    count = *next;
  }
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return std::nullopt;
  int64_t bytes = llvm::divideCeil(element.getIntOrFloatBitWidth(), 8);
  if (!llvm::checkedMul(count, bytes))
    return std::string("a byte size");
  return std::nullopt;
}
} // namespace

LogicalResult mlir::fusion::verifyTensorSizes(Operation *op) {
  auto check = [&](StringRef kind, unsigned index, Type t) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(t);
    if (!type)
      return success();
    std::optional<std::string> what = checkTensorSize(type);
    if (!what)
      return success();
    return op->emitOpError()
           << "expected " << kind << " #" << index << " of type " << type
           << " to have " << *what
           << " that fits in 64 bits (at most 2^63 - 1), but "
           << formatShape(type.getShape()) << " overflows it";
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(check("operand", i, v.getType())))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(check("result", i, v.getType())))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

namespace {
/// Checks `op(lhs) @ op(rhs) -> result`; returns {M, K, N} on success.
/// `resultName` is the name of the result in the op's syntax.
FailureOr<std::array<int64_t, 3>>
verifyMatmulShapes(Operation *op, Value lhs, Value rhs, Value result,
                   bool transposeLhs, bool transposeRhs,
                   StringRef resultName = "result") {
  if (failed(checkRank(op, "lhs", lhs, 2)) ||
      failed(checkRank(op, "rhs", rhs, 2)) ||
      failed(checkRank(op, resultName, result, 2)))
    return failure();
  ArrayRef<int64_t> a = shapeOf(lhs), b = shapeOf(rhs);
  int64_t m = transposeLhs ? a[1] : a[0], k = transposeLhs ? a[0] : a[1];
  int64_t kb = transposeRhs ? b[1] : b[0], n = transposeRhs ? b[0] : b[1];
  if (!sameDim(k, kb))
    return op->emitOpError()
           << "expected the contraction dimensions of lhs and rhs to match, "
              "but got K = "
           << k << " (lhs) and K = " << kb << " (rhs)";
  if (failed(checkShape(op, resultName, result, {m, n}, " ([M, N])")))
    return failure();
  return std::array<int64_t, 3>{m, ShapedType::isDynamic(k) ? kb : k, n};
}
} // namespace

LogicalResult MatmulOp::verify() {
  FailureOr<std::array<int64_t, 3>> mkn =
      verifyMatmulShapes(*this, getLhs(), getRhs(), getResult(),
                         getTransposeLhs(), getTransposeRhs());
  if (failed(mkn))
    return failure();
  int64_t n = (*mkn)[2];
  if (ShapedType::isDynamic(n))
    n = shapeOf(getResult())[1];
  return checkShapeIfPresent(*this, "bias", getBias(), {n}, " ([N])");
}

//===----------------------------------------------------------------------===//
// AddOp, MulOp: NumPy broadcasting of rhs against lhs
//===----------------------------------------------------------------------===//

namespace {
/// `lhs op rhs -> result`: result has lhs's type; rhs broadcasts.
LogicalResult verifyBroadcastingBinary(Operation *op, Value lhs, Value rhs,
                                       Value result) {
  if (result.getType() != lhs.getType())
    return op->emitOpError() << "expected result of lhs's type " << lhs.getType()
                             << ", but got " << result.getType();
  ArrayRef<int64_t> l = shapeOf(lhs), r = shapeOf(rhs);
  if (r.size() > l.size())
    return op->emitOpError()
           << "expected rhs of rank <= " << l.size()
           << " (it broadcasts against lhs " << formatShape(l)
           << "), but got rank " << r.size() << " " << formatShape(r);
  size_t offset = l.size() - r.size();
  for (auto [i, d] : llvm::enumerate(r)) {
    int64_t want = l[offset + i];
    if (d == 1 || sameDim(d, want))
      continue;
    return op->emitOpError()
           << "expected rhs " << formatShape(r)
           << " to broadcast against lhs " << formatShape(l)
           << " (aligned at the innermost dimension, each rhs dimension "
              "equal to lhs's or 1), but dimension "
           << i << " of rhs is " << d << " where lhs has " << want;
  }
  return success();
}

/// `%a, %b : type` or `%a, %b : lhs-type, rhs-type`.
ParseResult parseBroadcastingBinary(OpAsmParser &parser,
                                    OperationState &result) {
  OpAsmParser::UnresolvedOperand lhs, rhs;
  Type lhsType, rhsType;
  if (parser.parseOperand(lhs) || parser.parseComma() ||
      parser.parseOperand(rhs) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(lhsType))
    return failure();
  rhsType = lhsType;
  if (succeeded(parser.parseOptionalComma()) && parser.parseType(rhsType))
    return failure();
  result.addTypes(lhsType);
  return parser.resolveOperands({lhs, rhs}, {lhsType, rhsType},
                                parser.getNameLoc(), result.operands);
}

void printBroadcastingBinary(OpAsmPrinter &p, Operation *op) {
  p << ' ' << op->getOperand(0) << ", " << op->getOperand(1);
  p.printOptionalAttrDict(op->getAttrs());
  p << " : " << op->getOperand(0).getType();
  if (op->getOperand(1).getType() != op->getOperand(0).getType())
    p << ", " << op->getOperand(1).getType();
}
} // namespace

LogicalResult AddOp::verify() {
  return verifyBroadcastingBinary(*this, getLhs(), getRhs(), getResult());
}
ParseResult AddOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseBroadcastingBinary(parser, result);
}
void AddOp::print(OpAsmPrinter &p) { printBroadcastingBinary(p, *this); }

LogicalResult MulOp::verify() {
  return verifyBroadcastingBinary(*this, getLhs(), getRhs(), getResult());
}
ParseResult MulOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseBroadcastingBinary(parser, result);
}
void MulOp::print(OpAsmPrinter &p) { printBroadcastingBinary(p, *this); }

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  Value input = getInput(), cos = getCos();
  if (getResult().getType() != input.getType())
    return emitOpError() << "expected result of input's type "
                         << input.getType() << ", but got "
                         << getResult().getType();
  ArrayRef<int64_t> x = shapeOf(input), c = shapeOf(cos);
  if (x.empty())
    return emitOpError("expected input of rank >= 1 ([..., heads x head_dim]), "
                       "but got rank 0");
  if (c.size() != x.size())
    return emitOpError() << "expected cos of rank " << x.size()
                         << " (input's: [..., rotary_dim]), but got rank "
                         << c.size();
  int64_t d = getHeadDim(), n = x.back(), r = c.back();
  if (d <= 0 || (!ShapedType::isDynamic(n) && n % d != 0))
    return emitOpError() << "expected head_dim > 0 dividing the innermost "
                            "dimension of input (heads x head_dim), but got "
                            "head_dim = "
                         << d << " and " << formatShape(x);
  if (ShapedType::isDynamic(r) || r <= 0 || r % 2 != 0 || r > d)
    return emitOpError() << "expected a static, even rotary dimension (cos's "
                            "innermost) in [2, head_dim = "
                         << d << "], but got " << formatShape(c);
  // [M, N] with [T, R]: row m reads table row m mod T (per-position
  // tables [L, R] shared by the B sequences of M = B x L tokens).
  if (x.size() == 2) {
    if (!ShapedType::isDynamic(c[0]) &&
        (c[0] <= 0 || (!ShapedType::isDynamic(x[0]) && x[0] % c[0] != 0)))
      return emitOpError() << "expected cos [T, R] whose rows T divide the "
                              "input's rows (row m reads table row m mod T), "
                              "but got T = "
                           << c[0] << " and " << formatShape(x);
    return success();
  }
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    if (c[i] == 1 || sameDim(c[i], x[i]))
      continue;
    return emitOpError() << "expected cos " << formatShape(c)
                         << " to have input's leading dimensions "
                         << formatShape(x.drop_back())
                         << " or 1 where one table serves them all, but "
                            "dimension "
                         << i << " is " << c[i] << " where input has " << x[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  FailureOr<RowShape> rs = getRowShape(*this, getInput());
  if (failed(rs) || failed(checkEpsilon(*this, "epsilon", getEpsilonAttr())) ||
      failed(rs->check(*this, "weight", getWeight(), RowShape::Innermost)) ||
      failed(rs->check(*this, "output", getOutput(), RowShape::Full)) ||
      failed(rs->check(*this, "rstd", getRstd(), RowShape::Rows)))
    return failure();
  return success();
}

LogicalResult LayerNormOp::verify() {
  FailureOr<RowShape> rs = getRowShape(*this, getInput());
  if (failed(rs) || failed(checkEpsilon(*this, "epsilon", getEpsilonAttr())) ||
      failed(rs->check(*this, "weight", getWeight(), RowShape::Innermost)) ||
      failed(rs->check(*this, "bias", getBias(), RowShape::Innermost)) ||
      failed(rs->check(*this, "output", getOutput(), RowShape::Full)) ||
      failed(rs->check(*this, "mean", getMean(), RowShape::Rows)) ||
      failed(rs->check(*this, "rstd", getRstd(), RowShape::Rows)))
    return failure();
  return success();
}

LogicalResult RMSNormGradOp::verify() {
  FailureOr<RowShape> rs = getRowShape(*this, getInput());
  if (failed(rs) ||
      failed(rs->check(*this, "grad", getGrad(), RowShape::Full)) ||
      failed(rs->check(*this, "rstd", getRstd(), RowShape::Rows)) ||
      failed(rs->check(*this, "weight", getWeight(), RowShape::Innermost)) ||
      failed(rs->check(*this, "input_grad", getInputGrad(), RowShape::Full)) ||
      failed(rs->check(*this, "residual", getResidual(), RowShape::Full)))
    return failure();
  if (getWeight() && !getWeightGrad())
    return emitOpError("expected a weight_grad result because weight is given");
  if (!getWeight() && getWeightGrad())
    return emitOpError("expected no weight_grad result without weight");
  return rs->check(*this, "weight_grad", getWeightGrad(), RowShape::Innermost);
}

LogicalResult LayerNormGradOp::verify() {
  FailureOr<RowShape> rs = getRowShape(*this, getInput());
  if (failed(rs) ||
      failed(rs->check(*this, "grad", getGrad(), RowShape::Full)) ||
      failed(rs->check(*this, "mean", getMean(), RowShape::Rows)) ||
      failed(rs->check(*this, "rstd", getRstd(), RowShape::Rows)) ||
      failed(rs->check(*this, "weight", getWeight(), RowShape::Innermost)) ||
      failed(rs->check(*this, "input_grad", getInputGrad(), RowShape::Full)) ||
      failed(rs->check(*this, "residual", getResidual(), RowShape::Full)))
    return failure();
  size_t expected = (getWeight() ? 1 : 0) + (getWithBiasGrad() ? 1 : 0);
  if (getParamGrads().size() != expected)
    return emitOpError() << "expected " << expected
                         << " parameter gradient result(s) (dweight with "
                            "weight, dbias with with_bias_grad), but got "
                         << getParamGrads().size();
  for (Value g : getParamGrads())
    if (failed(rs->check(*this, "parameter gradient", g, RowShape::Innermost)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
/// The dimensions of an attention problem, read off q, k, v (and offsets).
struct AttentionShape {
  SmallVector<int64_t> query; ///< [B, Lq, H, D] dense or [T, H, D] jagged
  int64_t batch, kvLen, heads, headDim, valueDim;
  /// `out` has the shape of q with the value head dimension innermost.
  SmallVector<int64_t> output() const {
    SmallVector<int64_t> s = query;
    s.back() = valueDim;
    return s;
  }
  /// Per-token statistics: q without its two innermost dimensions.
  SmallVector<int64_t> tokens() const {
    return SmallVector<int64_t>(query.begin(), query.end() - 2);
  }
  /// H * D of q (the size the norms of norm_attention run over), or dynamic.
  /// verifyAttentionShapes checked that the product fits in int64.
  int64_t hiddenSize() const {
    int64_t heads = query[query.size() - 2], dim = query.back();
    return ShapedType::isDynamic(heads) || ShapedType::isDynamic(dim)
               ? ShapedType::kDynamic
               : heads * dim;
  }
};

FailureOr<AttentionShape> verifyAttentionShapes(Operation *op, Value q,
                                                Value k, Value v,
                                                Value offsets) {
  if (offsets) {
    if (failed(checkRank(op, "query", q, 3, " ([T, H, D] with offsets)")))
      return failure();
  } else if (failed(checkRank(op, "query", q, 4, " ([B, Lq, H, D])"))) {
    return failure();
  }
  if (failed(checkRank(op, "key", k, 4, " ([B, Lkv, H, D])")) ||
      failed(checkRank(op, "value", v, 4, " ([B, Lkv, H, Dv])")))
    return failure();
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  AttentionShape s{llvm::to_vector(qs), ks[0], ks[1], ks[2], ks[3], vs[3]};
  int64_t qHeads = qs[qs.size() - 2], qDim = qs.back();
  if (!offsets && !sameDim(qs[0], ks[0]))
    return op->emitOpError() << "expected key with batch size " << qs[0]
                             << " (the query's), but got " << ks[0];
  if (!sameDim(qHeads, ks[2]))
    return op->emitOpError() << "expected key with " << qHeads
                             << " heads (the query's), but got " << ks[2];
  if (!sameDim(qDim, ks[3]))
    return op->emitOpError() << "expected key with head dimension " << qDim
                             << " (the query's), but got " << ks[3];
  if (failed(checkShape(op, "value", v, {ks[0], ks[1], ks[2], vs[3]},
                        " (batch, length and heads of key)")))
    return failure();
  if (!ShapedType::isDynamic(qHeads) && !ShapedType::isDynamic(qDim) &&
      !llvm::checkedMul(qHeads, qDim))
    return op->emitOpError()
           << "expected query heads x head dimension to fit in 64 bits, but "
              "got "
           << qHeads << " x " << qDim;
  if (offsets) {
    int64_t b = ks[0];
    std::optional<int64_t> entries =
        ShapedType::isDynamic(b) ? std::optional<int64_t>(b) : llvm::checkedAdd(b, int64_t(1));
    if (!entries)
      return op->emitOpError()
             << "expected a key batch size below 2^63 - 1 (offsets has one "
                "more entry), but got "
             << b;
    if (failed(checkShape(op, "offsets", offsets, {*entries},
                          " (key batch size + 1)")))
      return failure();
  }
  return s;
}
} // namespace

LogicalResult GDPAOp::verify() {
  FailureOr<AttentionShape> s = verifyAttentionShapes(
      *this, getQuery(), getKey(), getValue(), getOffsets());
  if (failed(s) ||
      failed(checkShape(*this, "output", getOutput(), s->output(),
                        " (query with the value head dimension)")) ||
      failed(checkShapeIfPresent(*this, "residual", getResidual(), s->output(),
                                 " (the shape of output)")))
    return failure();
  return success();
}

LogicalResult GDPAGradOp::verify() {
  FailureOr<AttentionShape> s = verifyAttentionShapes(
      *this, getQuery(), getKey(), getValue(), getOffsets());
  if (failed(s) ||
      failed(checkShape(*this, "grad", getGrad(), s->output(),
                        " (the gdpa output)")) ||
      failed(checkShape(*this, "query_grad", getQueryGrad(), s->query,
                        " (the shape of query)")) ||
      failed(checkShape(*this, "key_grad", getKeyGrad(), shapeOf(getKey()),
                        " (the shape of key)")) ||
      failed(checkShape(*this, "value_grad", getValueGrad(),
                        shapeOf(getValue()), " (the shape of value)")) ||
      failed(checkShapeIfPresent(*this, "residual", getResidual(), s->query,
                                 " (the shape of query)")))
    return failure();
  if (getGradResidual()) {
    if (getResidual())
      return emitOpError("expected grad_residual or a residual operand, not "
                         "both (grad_residual adds the output gradient)");
    if (!sameDim(s->valueDim, s->headDim))
      return emitOpError() << "expected value with head dimension "
                           << s->headDim
                           << " (the query's, for grad_residual), but got "
                           << s->valueDim;
  }
  if (static_cast<bool>(getRmsInput()) != static_cast<bool>(getRmsRstd()))
    return emitOpError("expected rms_norm_grad's input and rstd both or "
                       "neither, but got only its ")
           << (getRmsInput() ? "input" : "rstd");
  // The prologue's rows: the H * Dv values of a token.
  int64_t row = ShapedType::kDynamic;
  if (!hasRmsPrologue()) {
    if (getRmsWeight())
      return emitOpError("expected rms_weight only with rms_norm_grad");
  } else {
    int64_t heads = s->query[s->query.size() - 2];
    if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(s->valueDim)) {
      // Unlike H * D (verifyAttentionShapes), H * Dv may overflow in a
      // tensor of no elements (a zero batch).
      std::optional<int64_t> product = llvm::checkedMul(heads, s->valueDim);
      if (!product)
        return emitOpError()
               << "expected heads x value head dimension (the rms_norm_grad "
                  "row) to fit in 64 bits, but got "
               << heads << " x " << s->valueDim;
      row = *product;
    }
    if (failed(checkShape(*this, "rms_norm_grad input", getRmsInput(),
                          s->output(), " (the shape of grad)")) ||
        failed(checkShape(*this, "rms_norm_grad rstd", getRmsRstd(),
                          s->tokens(), " (one per query token)")) ||
        failed(checkShapeIfPresent(*this, "rms_weight", getRmsWeight(), {row},
                                   " (H * Dv of grad)")))
      return failure();
  }
  unsigned expected = getRmsWeight() ? 1 : 0;
  if (getParamGrads().size() != expected)
    return emitOpError() << "expected " << expected
                         << " parameter gradient result(s) (d rms_weight "
                            "with rms_weight), but got "
                         << getParamGrads().size();
  if (expected &&
      failed(checkShape(*this, "rms_weight gradient", getParamGrads()[0], {row},
                        " (H * Dv of grad)")))
    return failure();
  return success();
}

namespace {
/// Checks shared by norm_attention and its grad; returns the attention shape.
FailureOr<AttentionShape>
verifyNormAttentionShapes(Operation *op, Value q, Value k, Value v,
                          Value offsets, Value lnWeight, Value lnBias,
                          Value rmsWeight) {
  FailureOr<AttentionShape> s = verifyAttentionShapes(op, q, k, v, offsets);
  if (failed(s))
    return failure();
  if (!sameDim(s->valueDim, s->headDim))
    return op->emitOpError()
           << "expected value with head dimension " << s->headDim
           << " (the query's, for the residual), but got " << s->valueDim;
  int64_t hd = s->hiddenSize();
  if (hd == 0)
    return op->emitOpError()
           << "expected query heads x head dimension > 0 (the norms run over "
              "H * D), but got "
           << formatShape(shapeOf(q));
  constexpr StringLiteral why = " (H * D of query)";
  if (failed(checkShapeIfPresent(op, "ln_weight", lnWeight, {hd}, why)) ||
      failed(checkShapeIfPresent(op, "ln_bias", lnBias, {hd}, why)) ||
      failed(checkShapeIfPresent(op, "rms_weight", rmsWeight, {hd}, why)))
    return failure();
  return s;
}
} // namespace

namespace {
/// The saved statistics of norm_attention (results) and its grad (operands):
/// one f32 value per query token.
LogicalResult checkTokenStatistics(Operation *op, const AttentionShape &s,
                                   Value lnMean, Value lnRstd, Value rmsRstd) {
  constexpr StringLiteral why = " (one per query token)";
  for (auto [name, v] : {std::pair<StringRef, Value>{"ln_mean", lnMean},
                         {"ln_rstd", lnRstd},
                         {"rms_rstd", rmsRstd}})
    if (failed(checkShape(op, name, v, s.tokens(), why)))
      return failure();
  return success();
}
} // namespace

LogicalResult NormAttentionOp::verify() {
  FailureOr<AttentionShape> s = verifyNormAttentionShapes(
      *this, getQuery(), getKey(), getValue(), getOffsets(), getLnWeight(),
      getLnBias(), getRmsWeight());
  if (failed(s) ||
      failed(checkEpsilon(*this, "ln_epsilon", getLnEpsilonAttr())) ||
      failed(checkEpsilon(*this, "rms_epsilon", getRmsEpsilonAttr())) ||
      failed(checkShape(*this, "output", getOutput(), s->query,
                        " (the shape of query)")))
    return failure();
  if (failed(checkTokenStatistics(*this, *s, getLnMean(), getLnRstd(),
                                  getRmsRstd())))
    return failure();
  if (getSaved().empty())
    return success();
  if (getSaved().size() != 2)
    return emitOpError() << "expected 0 or 2 saved results (ln_q and h), but "
                            "got "
                         << getSaved().size();
  auto elementOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  Type elem = elementOf(getQuery());
  for (auto [name, v] : {std::pair<StringRef, Value>{"saved ln_q", getSaved()[0]},
                         {"saved h", getSaved()[1]}}) {
    if (failed(checkShape(*this, name, v, s->query, " (the shape of query)")))
      return failure();
    if (elementOf(v) != elem)
      return emitOpError() << "expected the " << name
                           << " in the element type of query (" << elem
                           << "), but got " << elementOf(v);
  }
  return success();
}

LogicalResult NormAttentionGradOp::verify() {
  FailureOr<AttentionShape> s = verifyNormAttentionShapes(
      *this, getQuery(), getKey(), getValue(), getOffsets(), getLnWeight(),
      getLnBias(), getRmsWeight());
  if (failed(s) ||
      failed(checkShape(*this, "grad", getGrad(), s->query,
                        " (the shape of query)")))
    return failure();
  if (failed(checkTokenStatistics(*this, *s, getLnMean(), getLnRstd(),
                                  getRmsRstd())))
    return failure();
  if (failed(checkShape(*this, "query_grad", getQueryGrad(), s->query,
                        " (the shape of query)")) ||
      failed(checkShape(*this, "key_grad", getKeyGrad(), shapeOf(getKey()),
                        " (the shape of key)")) ||
      failed(checkShape(*this, "value_grad", getValueGrad(),
                        shapeOf(getValue()), " (the shape of value)")))
    return failure();
  size_t expected = (getLnWeight() ? 1 : 0) + (getLnBias() ? 1 : 0) +
                    (getRmsWeight() ? 1 : 0);
  if (getParamGrads().size() != expected)
    return emitOpError() << "expected " << expected
                         << " parameter gradient result(s) (one per weight or "
                            "bias operand), but got "
                         << getParamGrads().size();
  // H * D of the query; when it is dynamic, the first static weight size
  // (the weights were checked against H * D above).
  int64_t hd = s->hiddenSize();
  for (Value w : {getLnWeight(), getLnBias(), getRmsWeight()})
    if (ShapedType::isDynamic(hd) && w)
      hd = shapeOf(w)[0];
  for (Value g : getParamGrads())
    if (failed(checkShape(*this, "parameter gradient", g, {hd},
                          " (H * D of query)")))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// FusedMatmulOp
//===----------------------------------------------------------------------===//

unsigned FusedMatmulOp::getExpectedNumExtras() {
  switch (getEpilogue()) {
  case EpilogueKind::rms_norm:
    return getSaveStats() ? 1 : 0;
  case EpilogueKind::layer_norm:
    return getSaveStats() ? 2 : 0;
  case EpilogueKind::rms_norm_grad:
    return getNormWeight() ? 1 : 0;
  case EpilogueKind::layer_norm_grad:
    return (getNormWeight() ? 1 : 0) + (getWithBiasGrad() ? 1 : 0);
  case EpilogueKind::none:
  case EpilogueKind::row_scale:
    return 0;
  }
  return 0;
}

LogicalResult FusedMatmulOp::verify() {
  FailureOr<std::array<int64_t, 3>> mkn =
      verifyMatmulShapes(*this, getLhs(), getRhs(), getOutput(),
                         getTransposeLhs(), getTransposeRhs(),
                         /*resultName=*/"output");
  if (failed(mkn))
    return failure();
  auto [m, k, n] = *mkn;
  // M and N as the operands fix them: a dimension lhs/rhs leave dynamic is
  // taken from the output, then from the first operand that has it static,
  // so that two operands cannot disagree about it.
  auto refine = [](int64_t &dim, int64_t got) {
    if (ShapedType::isDynamic(dim))
      dim = got;
  };
  refine(m, shapeOf(getOutput())[0]);
  refine(n, shapeOf(getOutput())[1]);
  // Checks `v` (when present) as [M, N], [M] or [N], then refines M and N.
  auto checkMN = [&](StringRef name, Value v, bool hasM, bool hasN) {
    if (!v)
      return success();
    SmallVector<int64_t> expected;
    if (hasM)
      expected.push_back(m);
    if (hasN)
      expected.push_back(n);
    StringRef why = hasM && hasN ? " ([M, N])" : hasM ? " ([M])" : " ([N])";
    if (failed(checkShape(*this, name, v, expected, why)))
      return failure();
    ArrayRef<int64_t> got = shapeOf(v);
    if (hasM)
      refine(m, got.front());
    if (hasN)
      refine(n, got.back());
    return success();
  };
  EpilogueKind epi = getEpilogue();
  StringRef epiName = stringifyEpilogueKind(epi);
  bool fwdNorm = epi == EpilogueKind::rms_norm || epi == EpilogueKind::layer_norm;
  bool grad = isGradEpilogue();

  // Attributes.
  bool hasPrologue = getPrologue() != PrologueKind::none;
  if (hasPrologue && !getPrologueEpsilonAttr())
    return emitOpError() << "expected prologue_epsilon with prologue "
                         << stringifyPrologueKind(getPrologue());
  if (hasPrologue && getTransposeLhs())
    return emitOpError() << "unexpected transpose_lhs with prologue "
                         << stringifyPrologueKind(getPrologue())
                         << " (the prologue normalizes the rows of A, which "
                            "transpose_lhs stores as columns of lhs)";
  if (!hasPrologue && getPrologueEpsilonAttr())
    return emitOpError("unexpected prologue_epsilon without a prologue");
  if (fwdNorm && !getEpsilonAttr())
    return emitOpError() << "expected epsilon with epilogue " << epiName;
  if (!fwdNorm && getEpsilonAttr())
    return emitOpError() << "unexpected epsilon with epilogue " << epiName;
  if (getSaveStats() && !fwdNorm)
    return emitOpError() << "unexpected save_stats with epilogue " << epiName
                         << " (only rms_norm and layer_norm save statistics)";
  if (getSaveNormInput() && !fwdNorm)
    return emitOpError() << "unexpected save_norm_input with epilogue "
                         << epiName
                         << " (only rms_norm and layer_norm save their input)";
  if (getSaveNormInput() != static_cast<bool>(getSavedNormInput()))
    return emitOpError() << (getSaveNormInput()
                                 ? "expected a saved_norm_input result with "
                                   "save_norm_input"
                                 : "unexpected saved_norm_input result "
                                   "without save_norm_input");
  if (Value saved = getSavedNormInput(); saved && saved.getType() != getOutput().getType())
    return emitOpError() << "expected saved_norm_input of the output's type "
                         << getOutput().getType() << ", but got "
                         << saved.getType();
  if (getPostResidual() && !fwdNorm)
    return emitOpError() << "unexpected post_residual operand with epilogue "
                         << epiName
                         << " (it is added to the output of an rms_norm or "
                            "layer_norm epilogue)";
  // activation: act(acc), and with up the gated act(acc) * (A @ up).
  if (std::optional<Activation> act = getActivation()) {
    if (epi != EpilogueKind::none && epi != EpilogueKind::row_scale)
      return emitOpError() << "unexpected activation with epilogue " << epiName
                           << " (only the none and row_scale epilogues apply "
                              "one)";
    if (getResidual())
      return emitOpError("unexpected residual operand with activation (the "
                         "residual stream adds after the MLP's second GEMM, "
                         "not to its activation)");
  }
  if (Value up = getUp()) {
    if (!getActivation())
      return emitOpError("expected an activation with up (the gated product "
                         "act(A @ rhs) * (A @ up))");
    if (up.getType() != getRhs().getType())
      return emitOpError() << "expected up of rhs's type " << getRhs().getType()
                           << " (the gated product's second weight), but got "
                           << up.getType();
    if (getColBias())
      return emitOpError("unexpected col_bias operand with up (the gated "
                         "product takes no bias)");
    if (getPrologue() == PrologueKind::layer_norm)
      return emitOpError("unexpected up with prologue layer_norm (its "
                         "correction, mean x colsum(B), is of rhs alone)");
  }
  if (getColScale()) {
    if (epi != EpilogueKind::none && epi != EpilogueKind::row_scale)
      return emitOpError() << "unexpected col_scale operand with epilogue "
                           << epiName
                           << " (only the none and row_scale epilogues scale "
                              "columns)";
    if (getActivation() || getRopeCos())
      return emitOpError() << "unexpected col_scale operand with "
                           << (getActivation() ? "an activation" : "rope")
                           << " (the scale applies to acc, which then is the "
                              "output)";
  }
  // rope: fusion.rope of the output, by tables [T, R] of row m mod T.
  Value ropeCos = getRopeCos(), ropeSin = getRopeSin();
  if (static_cast<bool>(ropeCos) != static_cast<bool>(ropeSin))
    return emitOpError("expected both rope tables (cos and sin) or neither");
  if (!ropeCos && (getRopeHeadDimAttr() || getRopeInterleaved()))
    return emitOpError() << "unexpected "
                         << (getRopeHeadDimAttr() ? "rope_head_dim"
                                                  : "rope_interleaved")
                         << " without rope tables";
  if (ropeCos) {
    if (!getRopeHeadDimAttr())
      return emitOpError("expected rope_head_dim with rope tables");
    if (epi != EpilogueKind::none && epi != EpilogueKind::row_scale)
      return emitOpError() << "unexpected rope with epilogue " << epiName
                           << " (only the none and row_scale epilogues rotate "
                              "their output)";
    if (getResidual() || getActivation() || getUp())
      return emitOpError() << "unexpected rope with "
                           << (getResidual()     ? "a residual"
                               : getActivation() ? "an activation"
                                                 : "up")
                           << " (it rotates a q or k projection's output)";
    if (ropeSin.getType() != ropeCos.getType())
      return emitOpError() << "expected the rope sin table of cos's type "
                           << ropeCos.getType() << ", but got "
                           << ropeSin.getType();
    ArrayRef<int64_t> t = shapeOf(ropeCos);
    int64_t d = *getRopeHeadDim();
    if (t.size() != 2)
      return emitOpError() << "expected rope tables of rank 2 ([T, R]), but "
                              "got "
                           << formatShape(t);
    if (d <= 0 || (!ShapedType::isDynamic(n) && n % d != 0))
      return emitOpError() << "expected rope_head_dim > 0 dividing N (heads x "
                              "head_dim), but got rope_head_dim = "
                           << d << " and N = " << n;
    if (ShapedType::isDynamic(t[1]) || t[1] <= 0 || t[1] % 2 != 0 || t[1] > d)
      return emitOpError() << "expected a static, even rotary dimension R in "
                              "[2, rope_head_dim = "
                           << d << "] ([T, R] tables), but got "
                           << formatShape(t);
    if (!ShapedType::isDynamic(t[0]) && !ShapedType::isDynamic(m) &&
        (t[0] <= 0 || m % t[0] != 0))
      return emitOpError() << "expected the rope tables' rows T to divide M "
                              "(row m reads table row m mod T), but got T = "
                           << t[0] << " and M = " << m;
  }
  if (getNormalizedInput() && !grad)
    return emitOpError() << "unexpected normalized_input with epilogue "
                         << epiName;
  if (getWithBiasGrad() && epi != EpilogueKind::layer_norm_grad)
    return emitOpError() << "unexpected with_bias_grad with epilogue "
                         << epiName;
  // norm_group_size G: the forward norm runs over each group of G columns.
  std::optional<int64_t> group = getNormGroupSize();
  if (group && !fwdNorm)
    return emitOpError() << "unexpected norm_group_size with epilogue "
                         << epiName
                         << " (only rms_norm and layer_norm normalize column "
                            "groups)";
  if (group && *group <= 0)
    return emitOpError() << "expected norm_group_size > 0, but got " << *group;
  // (0: the whole row; a plain value, which GCC's -Wmaybe-uninitialized
  // does not mistake for an unset optional.)
  const int64_t groupSize = group.value_or(0);
  if (failed(checkEpsilon(*this, "prologue_epsilon",
                          getPrologueEpsilonAttr())) ||
      failed(checkEpsilon(*this, "epsilon", getEpsilonAttr())))
    return failure();
  // A norm over no element divides by zero: the epilogue norms run over the
  // N columns of a row, the prologue norms over the K columns of A.
  if ((fwdNorm || grad) && n == 0)
    return emitOpError() << "expected N > 0 with epilogue " << epiName
                         << " (it normalizes rows of N columns), but got N = 0";
  if (hasPrologue && k == 0)
    return emitOpError() << "expected K > 0 with prologue "
                         << stringifyPrologueKind(getPrologue())
                         << " (it normalizes rows of A of K columns), but got "
                            "K = 0";

  // Which operands each epilogue takes.
  auto requireIff = [&](Value v, StringRef name, bool wanted) -> LogicalResult {
    if (wanted && !v)
      return emitOpError() << "expected a " << name << " operand with epilogue "
                           << epiName;
    if (!wanted && v)
      return emitOpError() << "unexpected " << name << " operand with epilogue "
                           << epiName;
    return success();
  };
  if (failed(requireIff(getRowScale(), "row_scale",
                        epi == EpilogueKind::row_scale)) ||
      failed(requireIff(getNormInput(), "norm_input", grad)) ||
      failed(requireIff(getRstd(), "rstd", grad)) ||
      failed(requireIff(getMean(), "mean",
                        epi == EpilogueKind::layer_norm_grad &&
                            !getNormalizedInput())))
    return failure();
  if (getNormWeight() && !fwdNorm && !grad)
    return emitOpError() << "unexpected norm_weight operand with epilogue "
                         << epiName;
  if (getColSum() && getPrologue() != PrologueKind::layer_norm)
    return emitOpError() << "unexpected col_sum operand with prologue "
                         << stringifyPrologueKind(getPrologue())
                         << " (only the layer_norm prologue subtracts mean x "
                            "colsum(B))";
  if (getNormBias() && epi != EpilogueKind::layer_norm)
    return emitOpError() << "unexpected norm_bias operand with epilogue "
                         << epiName << " (only layer_norm takes a bias)";
  if (!getRowDot() && (getRowDotShift() || getRowDotSum()))
    return emitOpError() << "unexpected "
                         << (getRowDotShift() ? "row_dot_shift" : "row_dot_sum")
                         << " operand without row_dot";
  if (Value rowDot = getRowDot()) {
    if (!grad)
      return emitOpError() << "unexpected row_dot operand with epilogue "
                           << epiName
                           << " (only the grad epilogues take their row sums "
                              "from a row dot)";
    if (!getNormWeight())
      return emitOpError("expected a norm_weight operand with row_dot (a "
                         "weightless norm's gradient is regrouped with "
                         "normalized_input instead)");
    bool ln = epi == EpilogueKind::layer_norm_grad;
    if (ln != static_cast<bool>(getRowDotSum()))
      return emitOpError() << (ln ? "expected a row_dot_sum operand with "
                                    "row_dot and epilogue layer_norm_grad (the "
                                    "row sum of a)"
                                  : "unexpected row_dot_sum operand with "
                                    "epilogue rms_norm_grad (only LayerNorm's "
                                    "gradient sums a)");
    if (getColBias())
      return emitOpError("unexpected col_bias operand with row_dot (the row "
                         "dots stand for the row sums of lhs @ rhs alone)");
    if (getTransposeLhs() || hasPrologue)
      return emitOpError()
             << "unexpected row_dot operand with "
             << (getTransposeLhs() ? "transpose_lhs" : "a prologue")
             << " (the row dot reads A's rows as lhs holds them, unscaled)";
    if (getNormalizedInput())
      return emitOpError("unexpected row_dot operand with normalized_input (a "
                         "weightless norm's row sum needs no next layer)");
    // [M, K]: lhs's shape, M refined like the other [M, ...] operands.
    SmallVector<int64_t> expected = {m, k};
    if (failed(checkShape(*this, "row_dot", rowDot, expected,
                          " ([M, K], the shape of lhs)")))
      return failure();
    refine(m, shapeOf(rowDot)[0]);
    for (auto [name, v] : {std::pair<StringRef, Value>{"row_dot_shift", getRowDotShift()},
                           {"row_dot_sum", getRowDotSum()}})
      if (v && failed(checkShape(*this, name, v, {k}, " ([K], a vector over lhs's columns)")))
        return failure();
  }

  // Operand shapes.
  if (failed(checkMN("residual", getResidual(), true, true)) ||
      failed(checkMN("post_residual", getPostResidual(), true, true)) ||
      failed(checkMN("row_scale", getRowScale(), true, false)) ||
      failed(checkMN("col_bias", getColBias(), false, true)) ||
      failed(checkMN("col_scale", getColScale(), false, true)) ||
      failed(checkMN("col_sum", getColSum(), false, true)) ||
      failed(checkMN("norm_input", getNormInput(), true, true)) ||
      failed(checkMN("mean", getMean(), true, false)) ||
      failed(checkMN("rstd", getRstd(), true, false)))
    return failure();

  // The norm's parameters: [N], or [G] shared by the groups.
  for (auto [name, v] : {std::pair<StringRef, Value>{"norm_weight", getNormWeight()},
                         {"norm_bias", getNormBias()}}) {
    if (!groupSize) {
      if (failed(checkMN(name, v, false, true)))
        return failure();
    } else if (failed(checkShapeIfPresent(
                   *this, name, v, {groupSize},
                   " ([norm_group_size], shared by the groups)"))) {
      return failure();
    }
  }
  // N as the operands refined it.
  if (groupSize && !ShapedType::isDynamic(n) && n % groupSize != 0)
    return emitOpError() << "expected norm_group_size to divide N (a row is N / "
                            "norm_group_size groups), but got N = "
                         << n << " and norm_group_size = " << groupSize;

  // Extra results: statistics [M] (forward; [M, N / G] with groups) or
  // parameter gradients [N].
  unsigned expected = getExpectedNumExtras();
  if (getExtras().size() != expected)
    return emitOpError() << "expected " << expected
                         << " extra result(s) for epilogue " << epiName
                         << (fwdNorm ? " (statistics with save_stats)"
                             : grad  ? " (parameter gradients)"
                                     : "")
                         << ", but got " << getExtras().size();
  for (Value extra : getExtras()) {
    if (groupSize) {
      int64_t groups = ShapedType::isDynamic(n) ? ShapedType::kDynamic : n / groupSize;
      if (failed(checkShape(*this, "statistics result", extra, {m, groups},
                            " ([M, N / norm_group_size], per row and group)")))
        return failure();
      refine(m, shapeOf(extra)[0]);
      continue;
    }
    if (failed(fwdNorm ? checkMN("statistics result", extra, true, false)
                       : checkMN("parameter gradient result", extra, false, true)))
      return failure();
  }
  return success();
}
