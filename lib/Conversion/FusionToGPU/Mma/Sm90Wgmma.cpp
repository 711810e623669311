//===- Sm90Wgmma.cpp - the sm_90a MMA engine: wgmma -----------------------===//
//
// Hopper's warpgroup MMA. A consumer group is one warpgroup (128 threads)
// computing 64 rows of the tile with m64nNk16 wgmma (N = tile_n), the f32
// accumulator in registers. Per K step (64) the four k16 instructions of
// the step go out in one commit group; the main loop keeps one group in
// flight (wgmma.wait_group 1) so that the previous step's slot can be
// released while this one runs.
//
// The accumulator fragment (PTX ISA, "Matrix fragments for wgmma.mma_async
// .m64nNk16", register D): thread (warp w, lane l) of the warpgroup holds,
// for each 8-column group j, element 4j + 2h + e at
//
//     row 16 w + l / 4 + 8 h,   column 8 j + 2 (l % 4) + e,   h, e in {0, 1}
//
// so each thread has 2 rows x 2 adjacent columns per group, and the 4 lanes
// of a quad together hold whole rows: a row reduction is two XOR shuffles.
//
//===----------------------------------------------------------------------===//

#include "MmaEngine.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

class WgmmaFragmentView : public AccumulatorView {
public:
  /// A null `acc`: the positions only (accumulatorFromPairs).
  WgmmaFragmentView(KernelBuilder &kb, Value acc, Value tid, int64_t tileN)
      : kb(kb), tid(tid), tileN(tileN) {
    // The NVGPU lowering gives the accumulator exactly this struct type, so
    // the cast folds away (reconcile-unrealized-casts).
    if (acc)
      frag = UnrealizedConversionCastOp::create(kb.b, fragType(kb.ctx, tileN), acc)
                 .getResult(0);
    quad = kb.rem(kb.rem(tid, 32), 4);
  }
  /// The accumulator as LLVM sees it: {{f32 x tileN / 2}}.
  static Type fragType(MLIRContext *ctx, int64_t tileN) {
    auto inner = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(tileN / 2, Float32Type::get(ctx)));
    return LLVM::LLVMStructType::getLiteral(ctx, {inner});
  }

  int64_t rowsPerThread() const override { return 2; }
  int64_t rowOffset(int64_t h) const override { return 8 * h; }
  int64_t columnGroups() const override { return tileN / 8; }
  Value pair(int64_t h, int64_t j) override {
    ImplicitLocOpBuilder &b = kb.b;
    auto pairType = VectorType::get({2}, b.getF32Type());
    Value x0 = LLVM::ExtractValueOp::create(b, frag, ArrayRef<int64_t>{0, 4 * j + 2 * h});
    Value x1 = LLVM::ExtractValueOp::create(b, frag, ArrayRef<int64_t>{0, 4 * j + 2 * h + 1});
    return vector::FromElementsOp::create(b, pairType, ValueRange{x0, x1});
  }
  Value pairIndex(bool fresh) override {
    return fresh ? kb.rem(kb.rem(tid, 32), 4) : quad;
  }
  Value pairColumn() override { return kb.mul(quad, kb.idx(2)); }
  Value rowPhase() override { return kb.div(kb.rem(tid, 32), 4); }
  Value rowReduce(Value v) override {
    for (int64_t offset : {1, 2}) {
      auto shfl = gpu::ShuffleOp::create(kb.b, v, kb.i32(offset), kb.i32(32),
                                         gpu::ShuffleMode::XOR);
      v = arith::AddFOp::create(kb.b, v, shfl.getShuffleResult());
    }
    return v;
  }
  Value isRowLeader(bool fresh) override { return kb.eq(pairIndex(fresh), 0); }
  /// Lanes 4 apart hold the same columns of the warp's 8 (x 2) rows.
  Value columnReduce(Value v) override {
    for (int64_t offset : {4, 8, 16}) {
      auto shfl = gpu::ShuffleOp::create(kb.b, v, kb.i32(offset), kb.i32(32),
                                         gpu::ShuffleMode::XOR);
      v = arith::AddFOp::create(kb.b, v, shfl.getShuffleResult());
    }
    return v;
  }
  Value isColumnLeader() override { return kb.ult(kb.rem(tid, 32), kb.idx(4)); }

private:
  KernelBuilder &kb;
  Value tid, frag, quad;
  int64_t tileN;
};

class Sm90WgmmaEngine : public MmaEngine {
public:
  explicit Sm90WgmmaEngine(const MmaShape &shape) : shape(shape) {}

  StringRef name() const override { return "wgmma"; }
  int64_t groupThreads() const override { return 128; }
  int64_t groupRows() const override { return 64; }

  /// The launch budget is 65536 registers per SM over the CTA's threads
  /// (at most 248); the producer warpgroup keeps `producerRegisters`; the
  /// consumers share the rest, at most 256 each.
  RegisterBudget registerBudget(int64_t threads, int64_t consumers,
                                int64_t producerRegisters) const override {
    RegisterBudget r;
    r.producer = producerRegisters;
    r.launch = std::min<int64_t>(248, 65536 / threads) / 8 * 8;
    int64_t pool = threads * r.launch - 128 * r.producer;
    r.consumer = std::min<int64_t>(256, pool / (128 * consumers) / 8 * 8);
    return r;
  }

  Value initAccumulator(KernelBuilder &kb) override {
    return nvgpu::WarpgroupMmaInitAccumulatorOp::create(kb.b, accType(kb.ctx));
  }

  /// The pairs inserted at the fragment's elements 4 j + 2 h + e.
  Value accumulatorFromPairs(
      KernelBuilder &kb, Value tid,
      function_ref<Value(AccumulatorView &, int64_t, int64_t)> pair) override {
    ImplicitLocOpBuilder &b = kb.b;
    WgmmaFragmentView positions(kb, Value(), tid, shape.tileN);
    Type type = WgmmaFragmentView::fragType(kb.ctx, shape.tileN);
    Value frag = LLVM::PoisonOp::create(b, type);
    for (int64_t j = 0; j < shape.tileN / 8; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        Value p = pair(positions, h, j);
        for (int64_t e = 0; e < 2; ++e) {
          Value x = vector::ExtractOp::create(b, p, ArrayRef<int64_t>{e});
          frag = LLVM::InsertValueOp::create(b, frag, x,
                                             ArrayRef<int64_t>{0, 4 * j + 2 * h + e});
        }
      }
    return UnrealizedConversionCastOp::create(b, accType(kb.ctx), frag).getResult(0);
  }

  Value issue(KernelBuilder &kb, Value aTile, Value bTile, Value tmaA,
              Value tmaB, Value acc) override {
    MLIRContext *ctx = kb.ctx;
    auto swizzled = [&](ArrayRef<int64_t> shapeOf) {
      return nvgpu::WarpgroupMatrixDescriptorType::get(
          ctx, MemRefType::get(shapeOf, shape.abType, MemRefLayoutAttrInterface{},
                               IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
    };
    // B as wgmma sees it: [K, N] row-major (N-major, `transposeB` in nvgpu
    // terms) or, with transpose_rhs, [N, K] (K-major, like A).
    SmallVector<int64_t> bShape =
        shape.transposeB ? SmallVector<int64_t>{shape.tileN, shape.tileK}
                         : SmallVector<int64_t>{shape.tileK, shape.tileN};
    Value dA = nvgpu::WarpgroupGenerateDescriptorOp::create(
        kb.b, swizzled({64, shape.tileK}), aTile, tmaA);
    Value dB = nvgpu::WarpgroupGenerateDescriptorOp::create(kb.b, swizzled(bShape),
                                                            bTile, tmaB);
    if (shape.transposeA || shape.transposeB || !acc)
      return explicitMma(kb, dA, dB, acc);
    return nvgpu::WarpgroupMmaOp::create(kb.b, accType(ctx), dA, dB,
                                         IntegerAttr(), UnitAttr(),
                                         kb.b.getUnitAttr(), acc);
  }

  Value issueRegisterA(KernelBuilder &kb,
                       function_ref<Value(int64_t h, int64_t j)> pairs, Value bTile,
                       Value tmaB, Value acc) override;

  void waitPending(KernelBuilder &kb, int64_t pending) override {
    NVVM::WgmmaWaitGroupSyncOp::create(kb.b, pending);
  }

  /// 16 rows per warp, lane / 4 and 8 below it.
  Value firstRow(KernelBuilder &kb, Value group, Value tid) override {
    return kb.add(kb.add(kb.mul(group, kb.idx(64)),
                         kb.mul(kb.div(tid, 32), kb.idx(16))),
                  kb.div(kb.rem(tid, 32), 4));
  }

  std::unique_ptr<AccumulatorView> view(KernelBuilder &kb, Value acc,
                                        Value tid) override {
    return std::make_unique<WgmmaFragmentView>(kb, acc, tid, shape.tileN);
  }

private:
  Type accType(MLIRContext *ctx) const {
    return nvgpu::WarpgroupAccumulatorType::get(
        ctx, VectorType::get({64, shape.tileN}, Float32Type::get(ctx)));
  }
  Value explicitMma(KernelBuilder &kb, Value descA, Value descB, Value acc);

  MmaShape shape;
};

/// One K step (64) of a K-major B (transpose_rhs), an M-major A
/// (transpose_lhs) or a fresh accumulator (null `acc`, the first k16 with
/// scale-d = 0): the four m64nNk16 wgmma of the step as NVVM ops, in one
/// commit group like nvgpu.warpgroup.mma, whose lowering takes K-major A and
/// N-major B only and always adds to its accumulator. Each operand's descriptor steps by k16 in its own major:
/// a K-major tile by 16 elements (32 bytes: 2 in the descriptor's 16-byte
/// units) inside its 128-byte swizzled rows, an M- or N-major tile by 16 of
/// its 128-byte K rows (2048 bytes: 128 units; the descriptor's leading
/// offset reaches B's further 64-column boxes).
Value Sm90WgmmaEngine::explicitMma(KernelBuilder &kb, Value descA, Value descB,
                                   Value acc) {
  ImplicitLocOpBuilder &b = kb.b;
  MLIRContext *ctx = kb.ctx;
  Type i64 = b.getI64Type();
  auto frag = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(shape.tileN / 2, b.getF32Type()));
  auto packed = LLVM::LLVMStructType::getLiteral(ctx, {frag});
  auto cast = [&](Type to, Value v) {
    return UnrealizedConversionCastOp::create(b, to, v).getResult(0);
  };
  Value a0 = cast(i64, descA), b0 = cast(i64, descB);
  // A fresh accumulator (null `acc`): the first k16 ignores its input
  // (scale-d = 0), which then need not be defined.
  Value d = acc ? LLVM::ExtractValueOp::create(b, cast(packed, acc),
                                               ArrayRef<int64_t>{0})
                      .getResult()
                : LLVM::PoisonOp::create(b, frag).getResult();
  auto wgmmaType = [&](Type t) {
    return NVVM::WGMMATypesAttr::get(
        ctx, t.isF16() ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16);
  };
  auto one = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  NVVM::WgmmaFenceAlignedOp::create(b);
  const int64_t kMajorStep = 2, mnMajorStep = 128;
  int64_t stepA = shape.transposeA ? mnMajorStep : kMajorStep;
  int64_t stepB = shape.transposeB ? kMajorStep : mnMajorStep;
  auto constant = [&](int64_t units) -> Value {
    return LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(units));
  };
  // A [M, K] row-major is K-major ("row"), M-major with transpose_lhs
  // ("col"); B [N, K] (transpose_rhs) is K-major ("col"), [K, N] N-major.
  auto layoutA = shape.transposeA ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto layoutB = shape.transposeB ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  for (int64_t k = 0; k < shape.tileK / 16; ++k) {
    Value dA = a0, dB = b0;
    if (k) {
      // One constant where both operands step alike (K-major A and B).
      Value offA = constant(k * stepA);
      Value offB = stepB == stepA ? offA : constant(k * stepB);
      dA = LLVM::AddOp::create(b, a0, offA);
      dB = LLVM::AddOp::create(b, b0, offB);
    }
    d = NVVM::WgmmaMmaAsyncOp::create(
        b, frag, d, dA, dB, NVVM::MMAShapeAttr::get(ctx, 64, shape.tileN, 16),
        wgmmaType(shape.abType), wgmmaType(shape.abType),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, acc || k ? NVVM::WGMMAScaleOut::one
                                                   : NVVM::WGMMAScaleOut::zero),
        one, one,
        NVVM::MMALayoutAttr::get(ctx, layoutA), NVVM::MMALayoutAttr::get(ctx, layoutB),
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  Value result = LLVM::InsertValueOp::create(
      b, LLVM::PoisonOp::create(b, packed), d, ArrayRef<int64_t>{0});
  return cast(accType(ctx), result);
}

/// One K step (64) with A in registers: wgmma's register form (no NVVM op
/// or nvgpu lowering takes A from registers in MLIR 22: inline PTX, one
/// m64nNk16 per k16, in one commit group as explicitMma's). A's fragment
/// of a k16 step is four 32-bit registers per thread, (row g, columns
/// 2 t, 2 t + 1), (row g + 8, same), (row g, columns 8 + 2 t, 9 + 2 t),
/// (row g + 8, same) for g = lane / 4, t = lane % 4 of the warp's 16 rows:
/// an accumulator's pairs (0, 2 k), (1, 2 k), (0, 2 k + 1), (1, 2 k + 1).
/// B as explicitMma steps it (N-major: 16 of its 128-byte K rows a step;
/// K-major: 32 bytes). A null `acc` starts a fresh accumulator (scale-d 0
/// on the first k16, its input then undefined).
Value Sm90WgmmaEngine::issueRegisterA(KernelBuilder &kb,
                                      function_ref<Value(int64_t h, int64_t j)> pairs,
                                      Value bTile, Value tmaB, Value acc) {
  ImplicitLocOpBuilder &b = kb.b;
  MLIRContext *ctx = kb.ctx;
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), f32 = b.getF32Type();
  const int64_t n = shape.tileN, regs = n / 2;
  SmallVector<int64_t> bShape = shape.transposeB ? SmallVector<int64_t>{n, shape.tileK}
                                                 : SmallVector<int64_t>{shape.tileK, n};
  auto descType = nvgpu::WarpgroupMatrixDescriptorType::get(
      ctx, MemRefType::get(bShape, shape.abType, MemRefLayoutAttrInterface{},
                           IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  Value b0 = UnrealizedConversionCastOp::create(
                 b, i64, nvgpu::WarpgroupGenerateDescriptorOp::create(b, descType, bTile, tmaB)
                             .getResult())
                 .getResult(0);
  auto frag = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(regs, f32));
  auto packed = LLVM::LLVMStructType::getLiteral(ctx, {frag});
  SmallVector<Value> d;
  if (acc) {
    Value in = LLVM::ExtractValueOp::create(
        b, UnrealizedConversionCastOp::create(b, packed, acc).getResult(0),
        ArrayRef<int64_t>{0});
    for (int64_t i = 0; i < regs; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, in, ArrayRef<int64_t>{i}));
  }
  auto word = [&](Value pair) -> Value {
    Value v = vector::BitCastOp::create(b, VectorType::get({1}, i32), pair);
    return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{0});
  };
  std::string type = shape.abType.isF16() ? "f16" : "bf16";
  const int64_t transB = shape.transposeB ? 0 : 1;
  // Every A register is written before the fence: a register the wgmma
  // reads must not be written between the fence and it.
  SmallVector<SmallVector<Value, 4>> a;
  for (int64_t k = 0; k < shape.tileK / 16; ++k)
    a.push_back({word(pairs(0, 2 * k)), word(pairs(1, 2 * k)), word(pairs(0, 2 * k + 1)),
                 word(pairs(1, 2 * k + 1))});
  NVVM::WgmmaFenceAlignedOp::create(b);
  for (int64_t k = 0; k < shape.tileK / 16; ++k) {
    Value dB = k ? LLVM::AddOp::create(
                       b, b0,
                       LLVM::ConstantOp::create(
                           b, i64, b.getI64IntegerAttr(k * (shape.transposeB ? 2 : 128))))
                       .getResult()
                 : b0;
    bool fresh = !acc && k == 0;
    // Operands: the accumulator's registers (outputs $0..), A's four, B's
    // descriptor, then (accumulating) the inputs tied to the outputs.
    std::string ptx = "{\n.reg .pred p;\nsetp.ne.b32 p, " +
                      std::string(fresh ? "0" : "1") +
                      ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
                      "k16.f32." + type + "." + type + " {";
    std::string constraints;
    for (int64_t i = 0; i < regs; ++i) {
      ptx += (i ? ", $" : "$") + std::to_string(i);
      constraints += (i ? ",=f" : "=f");
    }
    ptx += "}, {$" + std::to_string(regs) + ", $" + std::to_string(regs + 1) + ", $" +
           std::to_string(regs + 2) + ", $" + std::to_string(regs + 3) + "}, $" +
           std::to_string(regs + 4) + ", p, 1, 1, " + std::to_string(transB) + ";\n}";
    constraints += ",r,r,r,r,l";
    SmallVector<Value> operands = {a[k][0], a[k][1], a[k][2], a[k][3], dB};
    if (!fresh)
      for (int64_t i = 0; i < regs; ++i) {
        constraints += "," + std::to_string(i);
        operands.push_back(d[i]);
      }
    Value out = LLVM::InlineAsmOp::create(
                    b, frag, operands, ptx, constraints, /*has_side_effects=*/true,
                    /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
                    LLVM::AsmDialectAttr(), ArrayAttr())
                    .getRes();
    d.clear();
    for (int64_t i = 0; i < regs; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, out, ArrayRef<int64_t>{i}));
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  Value result = LLVM::PoisonOp::create(b, frag);
  for (int64_t i = 0; i < regs; ++i)
    result = LLVM::InsertValueOp::create(b, result, d[i], ArrayRef<int64_t>{i});
  result = LLVM::InsertValueOp::create(b, LLVM::PoisonOp::create(b, packed), result,
                                       ArrayRef<int64_t>{0});
  return UnrealizedConversionCastOp::create(b, accType(ctx), result).getResult(0);
}

} // namespace

std::unique_ptr<MmaEngine>
mlir::fusion::createSm90WgmmaEngine(const MmaShape &shape) {
  return std::make_unique<Sm90WgmmaEngine>(shape);
}
