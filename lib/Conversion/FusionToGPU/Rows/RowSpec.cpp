//===- RowSpec.cpp - choosing a row kernel's shape ------------------------===//
//
// The spec of a standalone norm or element-wise kernel (RowSpec.h): the
// vector width from the innermost size, and for the norms how many threads
// share a row so that each holds at most four 16-byte vectors of it (up to
// 1024 threads, at most 16 vectors each beyond that); for the norm
// gradients at most two (one where a thread also holds two accumulators per
// column, three where that makes the row exact), the rows per step, the
// register cap and the persistent grid's CTAs per SM.
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
  constexpr int64_t kPreferredVectors = 4, kMaxThreads = 1024,
                    kMaxVectors = 16;
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

constexpr int64_t kGradBlockThreads = 256, kWarpgroup = 128;

/// The rest of a norm gradient's plan for its shape (threadsPerRow,
/// vecsPerThread): groups per CTA, rows per step, the register cap and the
/// CTAs per SM. Returns the bytes of dy, x and the residual that the SM's
/// groups have in flight per step, which a memory-bound kernel wants high.
int64_t planNormGrad(RowKernelSpec &s) {
  s.rowsPerBlock = std::max<int64_t>(1, kGradBlockThreads / s.threadsPerRow);
  // The register cap for `rowsPerStep`, from what a thread holds across the
  // rows: per column the accumulators and dy and x of each row of a step
  // (one register for a bf16 pair each; f16 held widened, about three; f32
  // two), the residual (16 registers more, and half a register or one per
  // column and row); 16 more for a ragged row, and for several groups per
  // CTA. Bins calibrated with ptxas (no spills from 256 to 8192 columns,
  // bf16, f16 and f32, with and without residuals and parameter
  // gradients): they decide the CTAs per SM, 4 / 3 / 2 of 256 threads at
  // 64 / 80 / 96-128 registers. .maxntid caps it too (64 K registers for
  // the CTA); over that cap the shape is not taken.
  int64_t columns = s.vecsPerThread * s.vec;
  int64_t data = s.elem.isBF16() ? 1 : s.elem.isF16() ? 3 : 2;
  int64_t threadCap = 65536 / s.blockThreads() / 8 * 8;
  auto registerCap = [&](int64_t rowsPerStep) -> int64_t {
    int64_t held = columns * (s.paramGrads() + data * rowsPerStep);
    if (s.residualElem)
      held += 16 + columns * rowsPerStep *
                       s.residualElem.getIntOrFloatBitWidth() / 32;
    if (s.chunks() % s.threadsPerRow != 0)
      held += 16;
    if (s.rowsPerBlock > 1)
      held += 16;
    // Two accumulators over three vectors or more: ptxas needs about 24
    // registers beyond the count above (LayerNorm with dweight and dbias at
    // 768 columns: 112 without spills where 88 are counted, bf16; 88 for
    // 64, f32).
    if (s.paramGrads() > 1 && s.vecsPerThread >= 3)
      held += 24;
    return held <= 48    ? 64
           : held <= 80  ? 80
           : held <= 96  ? 96
           : held <= 128 ? 128
                         : 255;
  };
  // The CTAs per SM that the registers allow, counting a CTA's warps in
  // whole warpgroups: an SM's registers sit in four sub-partitions, one per
  // warp scheduler, and a CTA whose warps do not divide among them evenly
  // may leave its share unused (the H200 ran the 6-warp CTAs of 96-thread
  // groups, 5 per SM by the plain count, at 1.9-2.2 TB/s where CTAs of 8
  // warps with as many bytes in flight per SM ran at 3.4: as if only 4
  // were resident, and the grid's last 132 CTAs ran after the others). The
  // shapes above have whole warpgroups; this keeps the grid honest if one
  // does not.
  int64_t allocatedThreads = llvm::alignTo(s.blockThreads(), kWarpgroup);
  auto ctasPerSM = [&](int64_t cap) {
    return std::max<int64_t>(
        1, std::min(65536 / (std::min(cap, threadCap) * allocatedThreads),
                    2048 / s.blockThreads()));
  };
  // A thread of one vector in a CTA of one group takes two rows per step
  // where that keeps more bytes of dy and x in flight per SM (64 per
  // thread and step, as a thread of two vectors has) and fits the CTA's
  // registers. (With several groups per CTA, ptxas needs 80-96 registers
  // for it, and the CTAs per SM it costs take back what it brings.)
  s.gradRowsPerStep = 1;
  int64_t cap = registerCap(1);
  if (s.vecsPerThread == 1 && s.rowsPerBlock == 1) {
    int64_t twoRowsCap = registerCap(2);
    if (twoRowsCap <= threadCap &&
        2 * ctasPerSM(twoRowsCap) > ctasPerSM(cap)) {
      s.gradRowsPerStep = 2;
      cap = twoRowsCap;
    }
  }
  s.gradMaxRegisters = std::min(cap, threadCap);
  s.gradCTAsPerSM = ctasPerSM(cap);
  int64_t rowBytes = s.n * (2 * s.elem.getIntOrFloatBitWidth() +
                            (s.residualElem
                                 ? s.residualElem.getIntOrFloatBitWidth()
                                 : 0)) / 8;
  return s.gradCTAsPerSM * s.rowsPerBlock * s.gradRowsPerStep * rowBytes;
}

/// The rows of a norm gradient. A thread holds dy and x of its columns
/// (bf16 pairs kept packed until used) and an f32 accumulator per column
/// for each parameter gradient, across all the rows it visits: at most two
/// vectors per thread with one accumulator, one with two (LayerNorm's
/// dweight and dbias) or where the row is ragged (a vector past the row
/// costs a clamped address and a select per operand). Threads per row: a
/// multiple of 32 whose groups fill CTAs of whole warpgroups (32, 64, 128
/// or 256 threads, several groups in a CTA of 256, or a multiple of 128,
/// one group per CTA; see planNormGrad's ctasPerSM), the one that wastes
/// the fewest lanes of the last vector, the smaller on a tie. A row that
/// those cover only raggedly but that three vectors per thread cover
/// exactly (768 bf16 columns: one warp per row, 32 x 3 vectors, rather than
/// 128 threads with a quarter of them idle, or 96 that make 6-warp CTAs)
/// takes three where that keeps at least as many bytes in flight per SM
/// under the register cap it needs: 96 bytes of dy and x per thread, and
/// no exchange across warps. About 256 threads per CTA: its groups are
/// independent (a named barrier each, for the group sums) and add their
/// columns once, at the end, into one partial row.
LogicalResult shapeNormGrad(RowKernelSpec &s, std::string &why) {
  constexpr int64_t kMaxThreads = 1024, kMaxVectors = 16;
  int64_t chunks = s.chunks();
  auto tiles = [&](int64_t t) {
    return kGradBlockThreads % t == 0 || t % kWarpgroup == 0;
  };
  auto shape = [&](int64_t maxVectors) {
    int64_t best = 0, bestWaste = 0;
    for (int64_t t = 32; t <= kMaxThreads; t += 32) {
      if (!tiles(t))
        continue;
      int64_t v = llvm::divideCeil(chunks, t);
      if (v > maxVectors && t < kMaxThreads)
        continue;
      int64_t waste = t * v - chunks;
      if (!best || waste < bestWaste) {
        best = t;
        bestWaste = waste;
      }
      if (v == 1)
        break;
    }
    s.threadsPerRow = best;
    s.vecsPerThread = llvm::divideCeil(chunks, best);
  };
  shape(s.paramGrads() > 1 ? 1 : 2);
  if (chunks % s.threadsPerRow != 0 && s.vecsPerThread == 2)
    shape(1);
  if (s.vecsPerThread > kMaxVectors) {
    why = ("a row of " + Twine(s.n) + " elements does not fit the row kernel (" +
           Twine(kMaxThreads) + " threads x " + Twine(kMaxVectors) +
           " vectors of " + Twine(s.vec) + " elements, " +
           Twine(kMaxThreads * kMaxVectors * s.vec) + " at most)")
              .str();
    return failure();
  }
  int64_t inFlight = planNormGrad(s);
  // Three vectors a thread only where that keeps whole warps per row: the
  // loop over a group's rows runs the warp's xor shuffles and its barrier,
  // and row groups sharing a warp can take different numbers of rows (a
  // warp whose 8-thread groups at 192 columns looped 0 and 1 times hung on
  // the H200, session 23).
  if (chunks % s.threadsPerRow != 0 && chunks % 3 == 0 && (chunks / 3) % 32 == 0 &&
      tiles(chunks / 3)) {
    RowKernelSpec three = s;
    three.threadsPerRow = chunks / 3;
    three.vecsPerThread = 3;
    if (planNormGrad(three) >= inFlight)
      s = three;
  }
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

namespace {
/// fusion.rope: one element type (the tables are read in the input's
/// vectors), tables whose leading dimensions are input's after leading 1s,
/// or any rows for a 2-D input (the table row of input row r is r modulo
/// the table's rows), and vectors
/// that stay inside a head and a half of its rotary dimension (else
/// elements).
LogicalResult shapeRope(RowKernelSpec &s, RopeOp rope, std::string &why) {
  s.kind = RowOpKind::Rope;
  s.headDim = rope.getHeadDim();
  s.interleaved = rope.getInterleaved();
  auto table = cast<RankedTensorType>(rope.getCos().getType());
  s.rotaryDim = table.getShape().back();
  std::string got;
  llvm::raw_string_ostream os(got);
  if (table.getElementType() != s.elem) {
    os << table.getElementType();
    why = "expected cos and sin of the input's element type (the kernel reads "
          "them in the input's vectors), but got " +
          got;
    return failure();
  }
  ArrayRef<int64_t> x = tensorType(rope.getInput()).getShape(),
                    t = table.getShape();
  // (A 2-D input's [T, R] tables: any T, row r reads table row r mod T.)
  bool broadcasting = true;
  for (size_t i = 0; i + 1 < x.size() && x.size() != 2; ++i) {
    if (broadcasting && t[i] == 1 && x[i] != 1)
      continue;
    broadcasting = false;
    if (t[i] == x[i])
      continue;
    os << table;
    why = "expected cos's leading dimensions to be the input's, after "
          "leading 1s (one table row per position, shared by the batches), "
          "but got " +
          got;
    return failure();
  }
  // A vector holds whole pairs (interleaved) or lies in one half.
  bool whole = s.interleaved ? s.vec % 2 == 0 && s.rotaryDim % s.vec == 0
                             : (s.rotaryDim / 2) % s.vec == 0;
  if (s.headDim % s.vec != 0 || !whole)
    s.vec = 1;
  return success();
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
            else
              s.normalizedInput = grad.getNormalizedInput();
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
            return shapeNormGrad(s, why);
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
          .Case([&](ActivationOp act) {
            // Input and result share their type (SameOperandsAndResultType):
            // one element type, one vector width.
            s.kind = RowOpKind::Activation;
            s.activation = act.getActivation();
            return success();
          })
          .Case([&](RopeOp rope) { return shapeRope(s, rope, why); })
          .Default([&](Operation *) {
            why = "not an op of the row family";
            return failure();
          });
  if (failed(shaped))
    return failure();
  return s;
}

void mlir::fusion::planNormGradStages(RowKernelSpec &spec,
                                      const TargetInfo &target,
                                      int64_t maxStages) {
  spec.gradStages = 0;
  if (!spec.isNormGrad())
    return;
  auto vectorBytes = [&](Type elem) {
    return spec.vec * elem.getIntOrFloatBitWidth() / 8;
  };
  if (vectorBytes(spec.elem) != 16 ||
      (spec.residualElem && vectorBytes(spec.residualElem) != 16))
    return;
  // The CTAs the registers allow on an SM stay: each with its ring.
  auto fits = [&](int64_t stages) {
    RowKernelSpec staged = spec;
    staged.gradStages = stages;
    return staged.sharedMemoryBytes() <= target.smemPerBlockOptin &&
           spec.gradCTAsPerSM *
                   (staged.sharedMemoryBytes() + target.smemReservedPerBlock) <=
               target.smemPerSM;
  };
  for (int64_t stages = maxStages; stages >= 2; --stages)
    if (fits(stages)) {
      spec.gradStages = stages;
      return;
    }
}
