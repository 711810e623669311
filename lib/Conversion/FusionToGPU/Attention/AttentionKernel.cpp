//===- AttentionKernel.cpp - the gdpa kernel: two MMAs per tile -----------===//
//
// fusion.gdpa on the GPU, for short keys and values held whole in shared
// memory (docs/SEED.md section 4: Kunlun's L_kv = 128). A persistent,
// warp-specialized kernel over work items (batch b, head h, query tile of
// 128 tokens), item = (b H + h) x query tiles + tile, written against the
// MmaEngine like the fused GEMM:
//
//   warpgroup 0 (producer, setmaxnreg down)
//     thread 0      for each item: wait empty[s], then TMA the item's
//                   Q [128, D], K [L_kv, D] and V [L_kv, Dv] of head h into
//                   stage s, completing full[s] (expect_tx); the other
//                   threads exit
//   warpgroups 1, 2 (consumers, setmaxnreg up), 64 query rows each
//                   wait full[s];
//                   S = Q K^T           the engine's K steps over D, with
//                                       K as a transposed B [L_kv, D];
//                   P = act(scale S)    on the accumulator registers,
//                                       rounded to the element type and
//                                       written into the group's P buffer
//                                       (128-byte swizzled, K-major: the
//                                       layout TMA would give an A tile);
//                   O = P V             the engine's K steps over L_kv,
//                                       with V as a row-major B [L_kv, Dv];
//                   arrive on empty[s] (Q, K, V read), round O into the
//                   same buffer, TMA-store it (clipped at L_q)
//
// The ring's stages let the producer load the next item while the
// consumers compute this one. Keys past L_kv are zero-filled by the TMA
// (L_kv is padded to 64): their scores are 0 and their values 0, so they
// add act(0) x 0 = 0. Query rows past L_q are zero-filled too, computed and
// not stored. The output of an item is stored from the P buffer; before the
// next item's P overwrites it, the group's store leader waits until the
// bulk stores have read it.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "../Common/TmaPipeline.h"

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

using Spec = AttentionKernelSpec;

/// The 128-byte swizzled tensor map type of a box of `shape`.
Type tensorMapType(MLIRContext *ctx, ArrayRef<int64_t> shape, Type elem) {
  auto tile = MemRefType::get(shape, elem, MemRefLayoutAttrInterface{},
                              IntegerAttr::get(IntegerType::get(ctx, 64), 3));
  return nvgpu::TensorMapDescriptorType::get(
      ctx, tile, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

class AttentionKernelEmitter : public KernelBuilder {
public:
  AttentionKernelEmitter(ImplicitLocOpBuilder &b, const Spec &s,
                         gpu::GPUFuncOp func, const TargetInfo &target,
                         RegisterBudget regs)
      : KernelBuilder(b), s(s), func(func), target(target), regs(regs) {}

  void emit();

private:
  Value arg(AttentionArg a) {
    return func.getArgument(static_cast<unsigned>(a));
  }
  /// The work item's batch, head and first query row.
  struct Item {
    Value batch, head, row;
  };
  Item decode(Value item) {
    Value tile = arith::RemUIOp::create(b, item, qTiles);
    Value bh = arith::DivUIOp::create(b, item, qTiles);
    return {arith::DivUIOp::create(b, bh, heads),
            arith::RemUIOp::create(b, bh, heads), mul(tile, idx(Spec::kTileM))};
  }
  /// Loops over this CTA's work items, carrying `inits`.
  ValueRange itemLoop(ValueRange inits,
                      function_ref<SmallVector<Value>(Item, ValueRange)> body) {
    return forLoop(gpu::BlockIdOp::create(b, gpu::Dimension::x), numItems,
                   gpu::GridDimOp::create(b, gpu::Dimension::x), inits,
                   [&](Value item, ValueRange it) { return body(decode(item), it); });
  }
  Value stageOffset(Value stage) { return mul(stage, idx(s.stageBytes())); }
  /// Named barrier 1 + c over consumer warpgroup c.
  void groupBarrier(Value c) {
    NVVM::BarrierOp::create(
        b, Type(),
        arith::AddIOp::create(b, i32(1),
                              arith::IndexCastOp::create(b, b.getI32Type(), c)),
        i32(128), NVVM::BarrierReductionAttr(), Value());
  }
  /// The generic-proxy writes to shared memory made visible to the async
  /// proxy (the MMA's and the TMA's reads).
  void fenceAsyncShared() {
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }
  /// Writes `pairs(h, j)` (vector<2xelem>, row h and 8-column group j of this
  /// thread's accumulator fragment) into the group's buffer at `offset`:
  /// `groups` 8-column groups as blocks of [64 rows, 64] with 128-byte
  /// swizzled rows.
  void writeSwizzled(Value offset, int64_t groups, AccumulatorView &view,
                     Value rowInGroup,
                     function_ref<Value(int64_t, int64_t)> pairs);

  void roles();
  void producer();
  void consumer();

  /// The target's engine for `shape` (the family checked that it has one).
  std::unique_ptr<MmaEngine> engine(const MmaShape &shape) {
    std::string whyNot;
    return createMmaEngine(target, shape, whyNot);
  }

  const Spec &s;
  gpu::GPUFuncOp func;
  const TargetInfo &target;
  RegisterBudget regs;
  TmaRing ring;
  Value tmaQ, tmaK, tmaV, tmaOut, operandMap;
  Value heads, qTiles, numItems, wg, tid;
};

void AttentionKernelEmitter::emit() {
  auto cast = [&](AttentionArg a, ArrayRef<int64_t> box) {
    return UnrealizedConversionCastOp::create(
               b, tensorMapType(ctx, box, s.elemType), arg(a))
        .getResult(0);
  };
  // Loads and stores go through 4-D maps [B, L, H, D] (coordinates
  // innermost first: column, head, token, batch), so that the TMA clips at
  // each batch's L_q and L_kv.
  tmaQ = cast(AttentionArg::TmaQ, {1, Spec::kTileM, 1, Spec::kBoxCols});
  tmaK = cast(AttentionArg::TmaK, {1, 64, 1, Spec::kBoxCols});
  tmaV = cast(AttentionArg::TmaV, {1, 64, 1, Spec::kBoxCols});
  tmaOut = cast(AttentionArg::TmaOut, {1, Spec::kGroupRows, 1, Spec::kBoxCols});
  // The MMA descriptors take the swizzle, and for an N-major B the distance
  // between its 64-column boxes, from a 2-D map type of [64, 64] boxes.
  operandMap = cast(AttentionArg::TmaK, {64, Spec::kBoxCols});
  heads = arg(AttentionArg::Heads);
  qTiles = arith::CeilDivUIOp::create(b, arg(AttentionArg::QueryLen),
                                      idx(Spec::kTileM));
  numItems = mul(mul(arg(AttentionArg::Batch), heads), qTiles);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = div(threadId, 128);
  tid = rem(threadId, 128);
  initSharedMemory(Spec::kAlignment);
  ring = TmaRing(*this, s.stages);
  Value leader = eq(threadId, 0);
  ring.init(*this, 128 * Spec::kConsumers, leader);
  // Without work items the maps are null (AttentionFamily.cpp).
  Value prefetch = both(leader, ult(idx(0), numItems));
  for (Value map : {tmaQ, tmaK, tmaV, tmaOut})
    nvgpu::TmaPrefetchOp::create(b, map, prefetch);
  gpu::BarrierOp::create(b);
  roles();
  gpu::ReturnOp::create(b);
}

/// setmaxnreg is warpgroup-wide, so it comes before the producer
/// warpgroup's split; its idle threads exit.
void AttentionKernelEmitter::roles() {
  auto setMaxRegisters = [&](int64_t count, NVVM::SetMaxRegisterAction a) {
    NVVM::SetMaxRegisterOp::create(b, b.getI32IntegerAttr(count),
                                   NVVM::SetMaxRegisterActionAttr::get(ctx, a));
  };
  scf::IfOp::create(
      b, eq(wg, 0),
      [&](OpBuilder &, Location) {
        setMaxRegisters(regs.producer, NVVM::SetMaxRegisterAction::decrease);
        ifThen(eq(tid, 0), [&] { producer(); });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        setMaxRegisters(regs.consumer, NVVM::SetMaxRegisterAction::increase);
        consumer();
        scf::YieldOp::create(b);
      });
}

/// Thread 0: the item's Q, K and V into the next free stage.
void AttentionKernelEmitter::producer() {
  std::array<int64_t, 4> box = {1, 64, 1, Spec::kBoxCols};
  itemLoop({idx(0)}, [&](Item it, ValueRange iters) {
    Value pos = iters[0];
    Value stage = ring.stageOf(*this, pos);
    ring.acquire(*this, stage, pos);
    nvgpu::MBarrierArriveExpectTxOp::create(b, ring.full, idx(s.stageBytes()),
                                            stage, Value());
    Value base = stageOffset(stage);
    auto load = [&](Value map, int64_t offset, ArrayRef<int64_t> shape,
                    int64_t col, Value row) {
      Value dst = smemView(add(base, idx(offset)), shape, s.elemType);
      nvgpu::TmaAsyncLoadOp::create(b, dst, ring.full, map,
                                    ValueRange{idx(col), it.head, row, it.batch},
                                    stage, Value(), Value());
    };
    int64_t dChunks = s.headDim / Spec::kBoxCols;
    int64_t kvSteps = s.kvTile / 64;
    // Q: D / 64 boxes [128 tokens, 64].
    for (int64_t c = 0; c < dChunks; ++c)
      load(tmaQ, c * Spec::kTileM * 128, {1, Spec::kTileM, 1, Spec::kBoxCols},
           c * Spec::kBoxCols, it.row);
    // K: per 64 columns of D, the [kvTile, 64] block of all keys.
    for (int64_t c = 0; c < dChunks; ++c)
      for (int64_t r = 0; r < kvSteps; ++r)
        load(tmaK, s.qBytes() + c * s.kvTile * 128 + r * Spec::kBoxBytes, box,
             c * Spec::kBoxCols, idx(64 * r));
    // V: per 64 keys (a K step of O = P V), Dv / 64 boxes [64 keys, 64].
    for (int64_t r = 0; r < kvSteps; ++r)
      for (int64_t e = 0; e < s.valueDim / Spec::kBoxCols; ++e)
        load(tmaV,
             s.qBytes() + s.kBytes() + r * s.valueDim * 128 + e * Spec::kBoxBytes,
             box, e * Spec::kBoxCols, idx(64 * r));
    return SmallVector<Value>{ring.nextPos(*this, pos)};
  });
}

void AttentionKernelEmitter::writeSwizzled(
    Value offset, int64_t groups, AccumulatorView &view, Value rowInGroup,
    function_ref<Value(int64_t, int64_t)> pairs) {
  int64_t blocks = groups / 8;
  Value buffer = smemView(offset, {blocks * 64, Spec::kBoxCols}, s.elemType);
  Value rowPhase = view.rowPhase();
  for (int64_t j = 0; j < groups; ++j) {
    // 16-byte chunk j % 8 of the row sits at position (j % 8) ^ (row % 8).
    Value chunk = arith::XOrIOp::create(b, idx(j % 8), rowPhase);
    Value col = add(mul(chunk, idx(8)), view.pairColumn());
    for (int64_t h = 0; h < view.rowsPerThread(); ++h) {
      Value row = add(idx((j / 8) * 64 + view.rowOffset(h)), rowInGroup);
      vector::StoreOp::create(b, pairs(h, j), buffer, ValueRange{row, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  }
}

/// Consumer warpgroup c: query rows [64 c, 64 c + 64) of each item.
void AttentionKernelEmitter::consumer() {
  std::unique_ptr<MmaEngine> scores = engine(
      MmaShape{s.kvTile, Spec::kBoxCols, s.elemType, false, /*transposeB=*/true});
  std::unique_ptr<MmaEngine> values =
      engine(MmaShape{s.valueDim, Spec::kBoxCols, s.elemType, false, false});
  Value c = sub(wg, idx(1));
  Value rowInGroup = scores->firstRow(*this, idx(0), tid);
  Value buffer = add(idx(s.groupBufferOffset()), mul(c, idx(s.groupBufferBytes())));
  Value isGroupLeader = eq(tid, 0);
  auto pairType = VectorType::get({2}, s.elemType);
  Value scale = cstF32(s.scale);
  // gelu_tanh's tanh as tanh.approx.f32 (llvm.tanh with afn; relative
  // error about 2^-11, below the rounding of P to 16 bits), one MUFU
  // instruction instead of libdevice's tanhf: the activation is on every
  // score.
  auto fastTanh = [](OpBuilder &builder, Location loc, Value u) -> Value {
    return LLVM::TanhOp::create(
        builder, loc, u,
        LLVM::FastmathFlagsAttr::get(builder.getContext(),
                                     LLVM::FastmathFlags::afn));
  };
  auto activate = [&](Value x) {
    return buildActivation(b, b.getLoc(), s.activation,
                           arith::MulFOp::create(b, x, scale), fastTanh);
  };

  itemLoop({idx(0)}, [&](Item it, ValueRange iters) {
    Value pos = iters[0];
    Value stage = ring.stageOf(*this, pos);
    ring.waitFull(*this, stage, pos);
    Value base = stageOffset(stage);

    // S = Q K^T over D.
    Value acc = scores->initAccumulator(*this);
    for (int64_t kc = 0; kc < s.headDim / Spec::kBoxCols; ++kc) {
      Value q = smemView(add(base, add(idx(kc * Spec::kTileM * 128),
                                       mul(c, idx(Spec::kGroupRows * 128)))),
                         {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
      Value k = smemView(add(base, idx(s.qBytes() + kc * s.kvTile * 128)),
                         {s.kvTile, Spec::kBoxCols}, s.elemType);
      acc = scores->issue(*this, q, k, operandMap, operandMap, acc);
    }
    scores->waitPending(*this, 0);

    // The previous item's output stores must have read the buffer.
    ifThen(isGroupLeader, [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
    });
    groupBarrier(c);
    std::unique_ptr<AccumulatorView> sView = scores->view(*this, acc, tid);
    writeSwizzled(buffer, s.kvTile / 8, *sView, rowInGroup,
                  [&](int64_t h, int64_t j) {
                    Value pair = sView->pair(h, j);
                    SmallVector<Value> p;
                    for (int64_t e = 0; e < 2; ++e)
                      p.push_back(activate(vector::ExtractOp::create(
                          b, pair, ArrayRef<int64_t>{e})));
                    Value f = vector::FromElementsOp::create(
                        b, VectorType::get({2}, b.getF32Type()), p);
                    return arith::TruncFOp::create(b, pairType, f).getResult();
                  });
    fenceAsyncShared();
    groupBarrier(c);

    // O = P V over the keys.
    Value out = values->initAccumulator(*this);
    for (int64_t r = 0; r < s.kvTile / 64; ++r) {
      Value p = smemView(add(buffer, idx(r * Spec::kBoxBytes)),
                         {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
      Value v = smemView(
          add(base, idx(s.qBytes() + s.kBytes() + r * s.valueDim * 128)),
          {64, s.valueDim}, s.elemType);
      out = values->issue(*this, p, v, operandMap, operandMap, out);
    }
    values->waitPending(*this, 0);
    // Q, K and V of this stage are read; P too (every thread of the group
    // waited for its MMAs).
    ring.release(*this, pos);
    groupBarrier(c);

    std::unique_ptr<AccumulatorView> oView = values->view(*this, out, tid);
    writeSwizzled(buffer, s.valueDim / 8, *oView, rowInGroup,
                  [&](int64_t h, int64_t j) {
                    return arith::TruncFOp::create(b, pairType, oView->pair(h, j))
                        .getResult();
                  });
    fenceAsyncShared();
    groupBarrier(c);
    ifThen(isGroupLeader, [&] {
      Value row = add(it.row, mul(c, idx(Spec::kGroupRows)));
      for (int64_t e = 0; e < s.valueDim / Spec::kBoxCols; ++e) {
        Value src = smemView(add(buffer, idx(e * Spec::kBoxBytes)),
                             {1, Spec::kGroupRows, 1, Spec::kBoxCols}, s.elemType);
        nvgpu::TmaAsyncStoreOp::create(
            b, src, tmaOut,
            ValueRange{idx(e * Spec::kBoxCols), it.head, row, it.batch}, Value());
      }
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
    });
    return SmallVector<Value>{ring.nextPos(*this, pos)};
  });
  // Shared memory must outlive the last stores that read it.
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

} // namespace

gpu::GPUFuncOp mlir::fusion::buildAttentionKernel(OpBuilder &builder,
                                                  Location loc,
                                                  gpu::GPUModuleOp module,
                                                  StringRef name,
                                                  const AttentionKernelSpec &s,
                                                  const TargetInfo &target) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  MLIRContext *ctx = builder.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type index = builder.getIndexType();
  auto func = gpu::GPUFuncOp::create(
      builder, loc, name,
      builder.getFunctionType({ptr, ptr, ptr, ptr, index, index, index}, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  auto threads = static_cast<int32_t>(s.threads());
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr({threads, 1, 1}));
  // setmaxnreg needs both .maxntid and .maxnreg (docs/MLIR22-NOTES.md 5.7).
  std::string whyNot;
  std::unique_ptr<MmaEngine> engine = createMmaEngine(target, MmaShape{}, whyNot);
  RegisterBudget regs =
      engine->registerBudget(s.threads(), Spec::kConsumers, /*producerWorks=*/false);
  func->setAttr("nvvm.maxntid", builder.getDenseI32ArrayAttr({threads, 1, 1}));
  func->setAttr("nvvm.maxnreg",
                builder.getI32IntegerAttr(static_cast<int32_t>(regs.launch)));
  builder.setInsertionPointToStart(&func.getBody().front());
  ImplicitLocOpBuilder b(loc, builder);
  AttentionKernelEmitter(b, s, func, target, regs).emit();
  return func;
}
