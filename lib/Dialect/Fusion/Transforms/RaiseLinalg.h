//===- RaiseLinalg.h - fusion-raise-linalg shared declarations --*- C++ -*-===//
//
// Declarations shared by the files of fusion-raise-linalg: the scalar
// constant helpers (RaiseLinalg.cpp), the symbolic expression of a norm chain
// and its evaluator (RaiseLinalgChain.cpp), and the patterns
// (RaiseLinalgNorms.cpp, RaiseLinalgMatmul.cpp, RaiseLinalgAffine.cpp) that
// populateRaiseLinalgPatterns registers.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_DIALECT_FUSION_TRANSFORMS_RAISELINALG_H
#define FUSION_LIB_DIALECT_FUSION_TRANSFORMS_RAISELINALG_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <optional>
#include <string>

namespace mlir::fusion::raise_linalg {

//===----------------------------------------------------------------------===//
// Helpers (RaiseLinalg.cpp)
//===----------------------------------------------------------------------===//

/// Whether `t` is an element type fusion ops take: f32, bf16 or f16.
bool isFusionFloat(Type t);

/// Rounds `v` to the float type `t` (round to nearest even).
double roundTo(double v, Type t);

/// The value of a scalar float constant, looking through int-to-float
/// conversions and float extensions/truncations of constants.
std::optional<double> scalarConstant(Value v);

/// The value of a splat float tensor constant or of a linalg.fill of a
/// constant.
std::optional<double> splatConstant(Value v);

/// Whether `d` is +0.0.
bool isPositiveZero(std::optional<double> d);

//===----------------------------------------------------------------------===//
// Symbolic expressions of a norm chain (RaiseLinalgChain.cpp)
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

/// Whether `a` and `b` are the same expression (structurally).
bool same(const Expr *a, const Expr *b);

/// Whether `e` is the constant `v`.
bool isConst(const Expr *e, double v);

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

  /// Records the first failure reason; returns null.
  Expr *fail(const Twine &reason);
  /// A new node of `op` over `args`; its kind is the widest of `kind` and
  /// the args' kinds.
  Expr *make(Expr::Op op, Type type, Kind kind, ArrayRef<Expr *> args = {});
  /// A Const node of `v` rounded to `type`.
  Expr *constant(double v, Type type);
  /// A Leaf node reading `v`.
  Expr *leafOf(Value v, Type type, Kind kind);
  /// The input dimensions an element of `kind` depends on.
  SmallVector<int64_t> dimsOf(Kind kind) const;
  /// Whether `shape` is the input's shape with an innermost size of 1.
  bool isKeepDimRowShape(ArrayRef<int64_t> shape) const;
  /// Whether `size` is the input's size of dimension `dim`.
  bool sizeMatches(int64_t size, int64_t dim) const {
    return size == full[dim];
  }
  /// The role of each loop of `op` whose result is read as `kind`.
  FailureOr<Roles> loopRoles(linalg::GenericOp op, Kind kind);
  /// The kind of an operand of `type` read through `map`.
  FailureOr<Kind> accessKind(AffineMap map, Type type, const Roles &roles);
  /// The element of a linalg.reduce's result (a row sum).
  Expr *reduce(linalg::ReduceOp red, Kind kind, Type elemType);
  /// The element of a linalg.broadcast's result.
  Expr *broadcast(linalg::BroadcastOp bc, Kind kind);
  /// The element of a linalg.generic's result (element-wise or a row sum).
  Expr *generic(linalg::GenericOp op, Kind kind);
  /// The scalar `v` of the body of `op`.
  Expr *scalar(Value v, linalg::GenericOp op, const Roles &roles);
  /// `scalar` for a value computed by `def` in the generic's body.
  Expr *bodyOp(Operation *def, Value v, linalg::GenericOp op,
               const Roles &roles);

  Block *block;
  SmallVector<int64_t> full;
  const DenseSet<Operation *> &stops;
  std::deque<Expr> nodes;
  DenseMap<std::pair<Value, unsigned>, Expr *> memo;
  int64_t size = 0;
};

//===----------------------------------------------------------------------===//
// Patterns (RaiseLinalgNorms.cpp, RaiseLinalgMatmul.cpp)
//===----------------------------------------------------------------------===//

/// A linalg norm chain ending at an element-wise generic -> fusion.rms_norm
/// or fusion.layer_norm.
struct RaiseNormChain : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp root,
                                PatternRewriter &rewriter) const override;
};

/// linalg.matmul (plain or with transposing indexing maps) into a zero
/// accumulator -> fusion.matmul; into a linalg.broadcast of an [N] vector
/// along the rows (a bias as the initial accumulator) -> fusion.matmul with
/// that bias.
struct RaiseMatmul : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp op,
                                PatternRewriter &rewriter) const override;
};

/// linalg.batch_matmul with a static batch of 1 -> collapse, fusion.matmul,
/// expand. Larger batches have no faithful single fusion.matmul.
struct RaiseBatchMatmul : OpRewritePattern<linalg::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override;
};

/// A layer's affine ops folded into the layer (RaiseLinalgAffine.cpp): a bias
/// add after a biasless single-use fusion.matmul (an [N], [1, N] or broadcast
/// [N] vector, also as f32 linalg) -> fusion.matmul with bias; a fusion.mul of
/// a weightless norm's output by an [N] vector -> the norm's weight; a
/// fusion.add of a biasless LayerNorm's output and an [N] vector -> its bias.
void populateRaiseAffinePatterns(RewritePatternSet &patterns);

} // namespace mlir::fusion::raise_linalg

#endif // FUSION_LIB_DIALECT_FUSION_TRANSFORMS_RAISELINALG_H
