//===- RowSpec.cpp - choosing a row kernel's shape ------------------------===//
//
// The spec of a standalone norm or element-wise kernel (RowSpec.h): the
// vector width from the innermost size, and for the norms how many threads
// share a row so that each holds at most four 16-byte vectors of it (up to
// 1024 threads, at most 16 vectors each beyond that).
//
//===----------------------------------------------------------------------===//

#include "RowSpec.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::fusion;

namespace {
RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
Type elementOf(Value v) { return v ? tensorType(v).getElementType() : Type(); }

/// The innermost size of `v`, or failure when it is dynamic or 0.
FailureOr<int64_t> innermostSize(Value v, StringRef name, std::string &why) {
  RankedTensorType t = tensorType(v);
  if (t.getRank() == 0) {
    why = ("expected " + name + " of rank >= 1").str();
    return failure();
  }
  int64_t n = t.getShape().back();
  if (ShapedType::isDynamic(n)) {
    why = ("expected a static innermost dimension of " + name +
           " (the kernel's vector width and launch shape depend on it), but "
           "got " + Twine("?"))
              .str();
    return failure();
  }
  if (n == 0) {
    why = ("expected a non-empty innermost dimension of " + name +
           ", but got 0")
              .str();
    return failure();
  }
  return n;
}

int64_t vectorWidth(Type elem, int64_t n) {
  int64_t v = 128 / elem.getIntOrFloatBitWidth();
  return n % v == 0 ? v : 1;
}

/// The rows of a norm: threads per row and vectors per thread.
LogicalResult shapeNorm(RowKernelSpec &s, std::string &why) {
  // A gradient holds dy, x and the parameter gradients' accumulators per
  // vector: two vectors per thread keep its registers low enough for four
  // CTAs of 128 threads per SM.
  const int64_t kPreferredVectors = s.isNormGrad() ? 2 : 4;
  constexpr int64_t kMaxThreads = 1024, kMaxVectors = 16;
  int64_t chunks = s.chunks();
  s.threadsPerRow = 32;
  while (llvm::divideCeil(chunks, s.threadsPerRow) > kPreferredVectors &&
         s.threadsPerRow < kMaxThreads)
    s.threadsPerRow *= 2;
  s.vecsPerThread = llvm::divideCeil(chunks, s.threadsPerRow);
  if (s.vecsPerThread > kMaxVectors) {
    why = ("a row of " + Twine(s.n) + " elements does not fit the row kernel (" +
           Twine(kMaxThreads) + " threads x " + Twine(kMaxVectors) +
           " vectors of " + Twine(s.vec) + " elements, " +
           Twine(kMaxThreads * kMaxVectors * s.vec) + " at most)")
              .str();
    return failure();
  }
  // A thread holding three vectors or more needs about 48 registers or more,
  // so registers already keep its SM at about 32 warps: then one row per CTA
  // (a one-warp CTA for rows of up to 1024 bf16, as Triton's persistent
  // reductions do) frees each row's slot as soon as that row is done, which
  // measured 1-3% faster than four rows per CTA at 768 and 1024 columns on
  // the H200. Smaller rows: several groups per CTA, 128 threads at least.
  s.rowsPerBlock = s.vecsPerThread >= 3
                       ? 1
                       : std::max<int64_t>(1, 128 / s.threadsPerRow);
  return success();
}

/// How `rhs` broadcasts against `lhs` viewed as [rows, n].
FailureOr<Broadcast> classify(Value lhs, Value rhs, std::string &why) {
  ArrayRef<int64_t> l = tensorType(lhs).getShape(),
                    r = tensorType(rhs).getShape();
  SmallVector<int64_t> padded(l.size() - r.size(), 1);
  llvm::append_range(padded, r);
  auto allOnes = [](ArrayRef<int64_t> s) {
    return llvm::all_of(s, [](int64_t d) { return d == 1; });
  };
  auto equal = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) { return a == b; };
  ArrayRef<int64_t> lLead = ArrayRef(l).drop_back(),
                    rLead = ArrayRef(padded).drop_back();
  bool lastIsOne = padded.back() == 1 && l.back() != 1;
  if (equal(padded, l))
    return Broadcast::Same;
  if (allOnes(rLead) && !lastIsOne)
    return Broadcast::Row;
  if (allOnes(padded))
    return Broadcast::Scalar;
  if (lastIsOne && equal(rLead, lLead))
    return Broadcast::Column;
  std::string type;
  llvm::raw_string_ostream(type) << rhs.getType();
  why = "rhs of type " + type +
        " broadcasts over some leading dimensions of lhs and not others; the "
        "element-wise kernel takes rhs as lhs's shape, a row vector [N], a "
        "column [..., 1] over all of lhs's leading dimensions, or one value "
        "(static shapes where they differ)";
  return failure();
}
} // namespace

FailureOr<RowKernelSpec> mlir::fusion::getRowKernelSpec(Operation *op,
                                                        std::string &why) {
  RowKernelSpec s;
  Value input = op->getOperand(0);
  s.elem = elementOf(input);
  FailureOr<int64_t> n = innermostSize(input, "the input", why);
  if (failed(n))
    return failure();
  s.n = *n;
  s.vec = vectorWidth(s.elem, s.n);
  LogicalResult shaped =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](RMSNormOp norm) {
            s.kind = RowOpKind::RMSNorm;
            s.weightElem = elementOf(norm.getWeight());
            s.epsilon = norm.getEpsilon().convertToDouble();
            // Statistics nothing reads are not written.
            s.rstd = norm.getRstd() && !norm.getRstd().use_empty();
            s.output = !norm.getOutput().use_empty();
            return shapeNorm(s, why);
          })
          .Case([&](LayerNormOp norm) {
            s.kind = RowOpKind::LayerNorm;
            s.weightElem = elementOf(norm.getWeight());
            s.biasElem = elementOf(norm.getBias());
            s.epsilon = norm.getEpsilon().convertToDouble();
            s.mean = !norm.getMean().use_empty();
            s.rstd = !norm.getRstd().use_empty();
            s.output = !norm.getOutput().use_empty();
            return shapeNorm(s, why);
          })
          .Case<RMSNormGradOp, LayerNormGradOp>([&](auto grad) {
            s.kind = isa<RMSNormGradOp>(op) ? RowOpKind::RMSNormGrad
                                            : RowOpKind::LayerNormGrad;
            s.weightElem = elementOf(grad.getWeight());
            s.weightGrad = static_cast<bool>(grad.getWeight());
            // Any float type: read at dy's positions, vec elements at a time
            // (16 bytes when it has dy's type).
            s.residualElem = elementOf(grad.getResidual());
            if constexpr (std::is_same_v<decltype(grad), LayerNormGradOp>)
              s.biasGrad = grad.getWithBiasGrad();
            // dy, x and dx share one element type (one vector width).
            for (auto [name, v] :
                 {std::pair<StringRef, Value>{"the input", grad.getInput()},
                  {"input_grad", grad.getInputGrad()}})
              if (elementOf(v) != s.elem) {
                std::string got, want;
                llvm::raw_string_ostream(got) << elementOf(v);
                llvm::raw_string_ostream(want) << s.elem;
                why = ("expected " + name + " of the gradient's element type " +
                       want + ", but got " + got)
                          .str();
                return failure();
              }
            return shapeNorm(s, why);
          })
          .Case<AddOp, MulOp>([&](auto binary) {
            s.kind = isa<AddOp>(op) ? RowOpKind::Add : RowOpKind::Mul;
            s.rhsElem = elementOf(binary.getRhs());
            FailureOr<Broadcast> bc =
                classify(binary.getLhs(), binary.getRhs(), why);
            if (failed(bc))
              return failure();
            s.broadcast = *bc;
            // A row vector is read in vectors too: rhs's width must allow
            // it (an f32 bias beside bf16 data reads 8 floats as 2 x 16 B).
            if (s.broadcast == Broadcast::Row &&
                s.n % vectorWidth(s.rhsElem, s.n) != 0)
              s.vec = 1;
            return success();
          })
          .Default([&](Operation *) {
            why = "not an op of the row family";
            return failure();
          });
  if (failed(shaped))
    return failure();
  return s;
}
