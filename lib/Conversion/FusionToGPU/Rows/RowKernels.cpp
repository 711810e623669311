//===- RowKernels.cpp - standalone norm and element-wise kernels ----------===//
//
// The device code of the row family (RowSpec.h). Both kernels read and
// write 16-byte vectors where the innermost size allows (else elements), in
// f32 registers, and round once on the store.
//
// Norm: the CTA holds rowsPerBlock groups of threadsPerRow threads; group g
// of CTA c normalizes row c * rowsPerBlock + g. Thread t of a group holds
// vectors t, t + threadsPerRow, ... of the row (coalesced), and the
// parameters at the same columns. The row sums are reduced by xor shuffles
// in each warp, then, for groups wider than a warp, through one shared-memory
// slot per warp, summed in the same order by every thread of the group (so
// all of them see the same statistics). LayerNorm's mean and centered sum of
// squares go through the shuffles together (groupMoments: Chan's merge of
// the threads' own two-pass statistics) unless the row is ragged. Every thread
// reaches the barriers; a group past the last row re-reads the last row (so the
// loads need no branch and issue together) and skips its stores. Rows of three
// vectors or more per thread get a CTA each (RowSpec.cpp: measured faster on
// the H200).
//
// Norm gradient: groups of threadsPerRow threads (a multiple of 32),
// persistent: row group u (of units = gridDim.x * rowsPerBlock) takes rows
// u, u + units, ... below the row count, gradRowsPerStep of them per step,
// each group at its own pace (the sums of a group wider than a warp meet
// at a named barrier of its own, 1 + its place in the CTA, in shared-memory
// slots that alternate between steps; a one-warp group's sums stay in its
// xor shuffles; a step's second row past the group's rows re-reads the
// last row with dy zeroed and stores nothing). Per row: the
// statistics, x, dy and the residual loaded first (bf16 pairs kept packed),
// g = dy * weight (the weight read from L1 each time it is used), the group
// sums of g (x - mean) and of g (LayerNorm) by xor shuffles, then across
// the group's warps; dx = rstd (g - x_hat c2 - c1) plus the residual, with
// dy and x widened a second time from their packed words; each thread adds
// dy * x_hat (dweight) and dy (dbias) of its columns into f32 registers.
// After its rows, group 0 of the CTA writes its columns to shared memory,
// group 1 adds its own, ..., the last writes the sum as the CTA's partial
// row (row blockIdx.x of gridDim.x); the reduction kernel sums the partial
// rows of a column in a fixed order.
//
// Element-wise: thread t of CTA c handles vectors (c * 4 + u) * 256 + t,
// u < 4, of lhs viewed flat; rhs is read at the same place, at its column
// (a row vector), at its row (a column) or once. fusion.activation reads
// only its input: act(x) of each element in f32 (ActivationMath.h), with
// gelu_tanh's and silu's sigmoid by ex2 and rcp.approx for 16-bit types.
// fusion.rope reads each vector's partner (R / 2 columns away, or its pairs
// swapped in registers when interleaved) and its token's cos and sin at the
// vector's head column, table row = row modulo the tables' rows.
//
//===----------------------------------------------------------------------===//

#include "RowSpec.h"

#include "../Common/KernelBuilder.h"

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
class RowKernelEmitter : public KernelBuilder {
public:
  RowKernelEmitter(ImplicitLocOpBuilder &b, const RowKernelSpec &s,
                   gpu::GPUFuncOp func)
      : KernelBuilder(b), s(s), args(func.getArguments()) {}

  void emitNorm();
  void emitNormRows(Value input, Value output, Value weight, Value bias,
                    Value meanOut, Value rstdOut, Value rows);
  void emitNormGrad();
  void emitParamGradReduce();
  void emitElementwise();
  void emitRope();

private:
  /// act(x) of each element of f32 vector `x` (fusion.activation).
  Value activate(Value x);
  VectorType f32Vector() { return VectorType::get({s.vec}, b.getF32Type()); }
  /// vec elements of `mem` (element type `elem`) at flat index `at`, as f32.
  Value load(Value mem, Value at, int64_t count) {
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({count}, elem);
    int64_t bytes = count * elem.getIntOrFloatBitWidth() / 8;
    Value v = vector::LoadOp::create(b, type, mem, ValueRange{at},
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
    auto f32Type = VectorType::get({count}, b.getF32Type());
    return elem.isF32() ? v : arith::ExtFOp::create(b, f32Type, v).getResult();
  }
  void store(Value f32Values, Value mem, Value at) {
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({s.vec}, elem);
    Value v = elem.isF32() ? f32Values
                           : arith::TruncFOp::create(b, type, f32Values).getResult();
    int64_t bytes = s.vec * elem.getIntOrFloatBitWidth() / 8;
    vector::StoreOp::create(b, v, mem, ValueRange{at}, /*nontemporal=*/false,
                            llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
  }
  /// An L2 policy that keeps the lines it covers (createpolicy, which has
  /// no NVVM op).
  Value keepPolicy() {
    auto op = NVVM::InlinePtxOp::create(
        b, TypeRange{b.getI64Type()}, ValueRange{}, ValueRange{},
        b.getStringAttr("createpolicy.fractional.L2::evict_last.b64 $0, 1.0;"),
        Value());
    return op.getResult(0);
  }
  /// `load` of a norm's weight or bias, which every row reads again, with
  /// the hints Inductor's norms give it: kept in L1 (L1::evict_last) and in
  /// L2 (`policy`, made by keepPolicy at the first such load, which
  /// dominates the rest) while the rows stream past. ld.global with a cache
  /// hint has no NVVM op; 16-byte vectors here (4- and 8-byte ones take
  /// load).
  Value loadKept(Value mem, Value at, Value &policy) {
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    int64_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
    if (s.vec * elemBytes != 16)
      return load(mem, at, s.vec);
    if (!policy)
      policy = keepPolicy();
    Value base = arith::IndexCastOp::create(
        b, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, mem));
    Value address = arith::AddIOp::create(
        b, base,
        arith::IndexCastOp::create(b, b.getI64Type(), mul(at, idx(elemBytes))));
    Value pointer = LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(b.getContext(), 1), address);
    Type i32 = b.getI32Type();
    auto op = NVVM::InlinePtxOp::create(
        b, TypeRange{i32, i32, i32, i32}, ValueRange{pointer, policy},
        ValueRange{},
        b.getStringAttr("ld.global.L1::evict_last.L2::cache_hint.v4.b32 "
                        "{$0, $1, $2, $3}, [$4], $5;"),
        Value());
    Value words = vector::FromElementsOp::create(b, VectorType::get({4}, i32),
                                                 op.getResults());
    return widen(
        vector::BitCastOp::create(b, VectorType::get({s.vec}, elem), words));
  }
  /// `load` when `cond`, else zeros.
  Value loadIf(Value cond, Value mem, Value at) {
    auto ifOp = scf::IfOp::create(
        b, cond,
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, load(mem, at, s.vec));
        },
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, zeros());
        });
    return ifOp.getResult(0);
  }
  Value zeros() {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(f32Vector(), b.getF32FloatAttr(0.0)));
  }
  Value splat(Value x) {
    return vector::BroadcastOp::create(b, f32Vector(), x);
  }
  Value horizontalSum(Value v) {
    return vector::ReductionOp::create(b, vector::CombiningKind::ADD, v);
  }
  /// `v` of the lane `offset` away in the xor butterfly.
  Value xorShuffle(Value v, int64_t offset) {
    return gpu::ShuffleOp::create(b, v, offset, 32, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  /// For a group wider than a warp: each warp's `values` (value r through
  /// slot array firstArray + r, from the warp's lane 0) as every thread of
  /// the group reads them after the CTA's barrier, [warp of the group][value].
  SmallVector<SmallVector<Value>> warpValues(ArrayRef<Value> values,
                                             int64_t firstArray = 0);
  /// The sum of `partial` over the thread group of a row.
  Value groupSum(Value partial, int64_t reduction);
  /// Norm gradients with gradStages: the rows' ring in shared memory and
  /// the copies of a step into it.
  struct StagedRows {
    int64_t stages = 0;
    /// Per operand (x, dy, the residual; null when absent), flat:
    /// [stage][vector of the step's rows][thread][perVector]; the
    /// statistics (rstd, LayerNorm's mean): [stage][row][statistic][thread].
    SmallVector<Value, 3> rings;
    Value stats, steps;
    int64_t perVector = 0, stepElements = 0, stepStats = 0;
    /// The thread's own offsets in a step's vectors and statistics.
    Value threadVector, threadStat;
    /// The copies of step `step` into `slot`.
    std::function<void(const StagedRows &, Value, Value)> issue;
  };
  using RowOfStep = std::function<std::pair<Value, Value>(Value, int64_t)>;
  using DyValidOf = std::function<Value(Value, int64_t)>;
  /// With gradStages S: the ring, and the copies of steps 0 .. S - 2 issued
  /// (one cp.async group each, empty past `steps`); else nothing staged.
  StagedRows stageRows(Value steps, RowOfStep rowOfStep, DyValidOf dyValidOf,
                       ArrayRef<Value> readColumn, ArrayRef<Value> operands,
                       ArrayRef<Value> statistics);
  /// At the top of step `step`, whose slot is `slot` (step mod S): the
  /// copies of step + S - 1 issued (into the slot step - 1 was read from),
  /// then a wait for step's own; returns `slot`.
  Value enterStep(const StagedRows &staged, Value step, Value slot);
  /// The thread's element of statistic k of row r, and its first of
  /// vector v, in the step in `slot`.
  Value statIndex(const StagedRows &staged, Value slot, int64_t r, int64_t k) {
    int64_t threads = s.blockThreads();
    return add(add(mul(slot, idx(staged.stepStats)), staged.threadStat),
               idx((r * s.gradStagedStats() + k) * threads));
  }
  Value vectorIndex(const StagedRows &staged, Value slot, int64_t v) {
    int64_t threads = s.blockThreads();
    return add(add(mul(slot, idx(staged.stepElements)), staged.threadVector),
               idx(v * threads * staged.perVector));
  }
  /// Statistic k of row r of the step in `slot`; vector v of operand k.
  Value stagedStat(const StagedRows &staged, Value slot, int64_t r, int64_t k) {
    return memref::LoadOp::create(b, staged.stats,
                                  ValueRange{statIndex(staged, slot, r, k)});
  }
  Value stagedVector(const StagedRows &staged, Value slot, int64_t k,
                     int64_t v) {
    Type elem = cast<MemRefType>(staged.rings[k].getType()).getElementType();
    auto vecType = VectorType::get({staged.perVector}, elem);
    return vector::LoadOp::create(b, vecType, staged.rings[k],
                                  ValueRange{vectorIndex(staged, slot, v)},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  /// The mean of a row and the sum of its squared deviations from it, from
  /// the thread's vectors `x` (every thread of the group holding as many
  /// columns): Chan's pairwise merge of (mean, M2), one pass of shuffles.
  std::pair<Value, Value> groupMoments(ArrayRef<Value> x);
  /// Norm gradients: the sums of `partials` over the thread group of a row,
  /// across its warps through the slots of `parity` (alternating between
  /// rows, so that one named barrier per row suffices).
  SmallVector<Value> gradGroupSums(ArrayRef<Value> partials, Value parity);
  /// vec elements of `mem` at `at` as they are stored, or zeros where
  /// `inRow` (when given) is false: the load is not branched.
  Value loadPacked(Value inRow, Value mem, Value at) {
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({s.vec}, elem);
    int64_t bytes = s.vec * elem.getIntOrFloatBitWidth() / 8;
    Value v = vector::LoadOp::create(b, type, mem, ValueRange{at},
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
    if (!inRow)
      return v;
    Value zero = arith::ConstantOp::create(
        b, DenseElementsAttr::get(type, b.getFloatAttr(elem, 0.0)));
    return arith::SelectOp::create(b, inRow, v, zero);
  }
  /// A packed vector in f32: bf16 pairs by byte permutes, and again
  /// (widenAgain) by a shift and a mask, two forms LLVM does not merge, so
  /// that the packed value, not the f32 one, lives between the two uses
  /// (KernelBuilder::Bf16Widening). A norm gradient that stages its rows
  /// (gradStages, experimental) keeps arith.extf for the first: with the
  /// permutes ptxas spilled 12-24 bytes of three of its kernels.
  Value widen(Value v) {
    if (s.gradStages > 0 &&
        !cast<VectorType>(v.getType()).getElementType().isF32())
      return arith::ExtFOp::create(b, f32Vector(), v);
    return widenToF32(v, Bf16Widening::BytePermute);
  }
  Value widenAgain(Value v) { return widenToF32(v); }
  /// Shared memory for the group sums, and the thread's row group in the CTA
  /// (rowInBlock) and place in it (lane).
  void setUpGroup() {
    if (s.sharedMemoryBytes())
      initSharedMemory(16);
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    rowInBlock = div(tid, s.threadsPerRow);
    lane = rem(tid, s.threadsPerRow);
  }
  bool ragged() const { return s.chunks() % s.threadsPerRow != 0; }
  /// Vector i of this thread: chunk lane + i x threadsPerRow of the row, its
  /// first column and whether it is inside the row.
  std::pair<Value, Value> rowVector(int64_t i) {
    Value chunk = add(lane, idx(i * s.threadsPerRow));
    Value col = mul(chunk, idx(s.vec));
    Value ok = ragged() ? ult(chunk, idx(s.chunks()))
                        : arith::ConstantOp::create(b, b.getBoolAttr(true)).getResult();
    return {col, ok};
  }

  const RowKernelSpec &s;
  ValueRange args;
  Value rowInBlock, lane;
};

SmallVector<SmallVector<Value>>
RowKernelEmitter::warpValues(ArrayRef<Value> values, int64_t firstArray) {
  // Slot array a holds a value of every warp of the CTA (the shared memory
  // has room for two); each reduction of a kernel uses its own array, so a
  // second reduction's writes never race the first one's reads.
  assert(firstArray + static_cast<int64_t>(values.size()) <= 2 &&
         "the norm kernel has two slot arrays");
  int64_t warps = s.threadsPerRow / 32;
  int64_t blockWarps = s.blockThreads() / 32;
  SmallVector<Value> slots;
  for (int64_t r = 0, e = values.size(); r < e; ++r)
    slots.push_back(smemView(idx((firstArray + r) * blockWarps * 4),
                             {blockWarps}, b.getF32Type()));
  Value first = mul(rowInBlock, idx(warps));
  ifThen(eq(rem(lane, 32), 0), [&] {
    Value slot = add(first, div(lane, 32));
    for (auto [value, array] : llvm::zip(values, slots))
      memref::StoreOp::create(b, value, array, ValueRange{slot});
  });
  gpu::BarrierOp::create(b);
  SmallVector<SmallVector<Value>> out(warps);
  for (int64_t w = 0; w < warps; ++w)
    for (Value array : slots)
      out[w].push_back(
          memref::LoadOp::create(b, array, ValueRange{add(first, idx(w))}));
  return out;
}

Value RowKernelEmitter::groupSum(Value partial, int64_t reduction) {
  int64_t width = std::min<int64_t>(s.threadsPerRow, 32);
  for (int64_t offset = width / 2; offset > 0; offset /= 2)
    partial = arith::AddFOp::create(b, partial, xorShuffle(partial, offset));
  if (s.threadsPerRow <= 32)
    return partial;
  Value total = cstF32(0.0);
  for (ArrayRef<Value> warp : warpValues(partial, reduction))
    total = arith::AddFOp::create(b, total, warp[0]);
  return total;
}

std::pair<Value, Value> RowKernelEmitter::groupMoments(ArrayRef<Value> x) {
  // The thread's own columns, two-pass in registers.
  int64_t count = static_cast<int64_t>(x.size()) * s.vec;
  Value sum = cstF32(0.0);
  for (Value v : x)
    sum = arith::AddFOp::create(b, sum, horizontalSum(v));
  Value mean =
      arith::MulFOp::create(b, sum, cstF32(1.0 / static_cast<double>(count)));
  Value m2 = cstF32(0.0);
  for (Value v : x) {
    Value d = arith::SubFOp::create(b, v, splat(mean));
    m2 = arith::AddFOp::create(b, m2,
                               horizontalSum(arith::MulFOp::create(b, d, d)));
  }
  // Two halves of n columns each: mean (a + b) / 2, M2 a + M2 b plus
  // (mean b - mean a)^2 n / 2. Both lanes of a pair compute the same bits
  // (the sums commute, the difference is squared), so the whole group ends
  // with the same statistics.
  auto merge = [&](Value &mean, Value &m2, Value otherMean, Value otherM2,
                   double n) {
    Value delta = arith::SubFOp::create(b, otherMean, mean);
    Value spread = arith::MulFOp::create(
        b, arith::MulFOp::create(b, delta, delta), cstF32(n / 2));
    mean = arith::MulFOp::create(b, arith::AddFOp::create(b, mean, otherMean),
                                 cstF32(0.5));
    m2 =
        arith::AddFOp::create(b, arith::AddFOp::create(b, m2, otherM2), spread);
  };
  double n = static_cast<double>(count);
  int64_t width = std::min<int64_t>(s.threadsPerRow, 32);
  for (int64_t offset = width / 2; offset > 0; offset /= 2, n *= 2)
    merge(mean, m2, xorShuffle(mean, offset), xorShuffle(m2, offset), n);
  if (s.threadsPerRow <= 32)
    return {mean, m2};
  // Across the group's warps (n columns each): their (mean, M2) merged in
  // warp order by every thread: the mean of the means, M2 the sum of the
  // warps' M2 + n sum (mean w - mean)^2.
  SmallVector<SmallVector<Value>> warps = warpValues({mean, m2});
  Value meanSum = cstF32(0.0), m2Sum = cstF32(0.0);
  for (ArrayRef<Value> warp : warps) {
    meanSum = arith::AddFOp::create(b, meanSum, warp[0]);
    m2Sum = arith::AddFOp::create(b, m2Sum, warp[1]);
  }
  Value rowMean = arith::MulFOp::create(
      b, meanSum, cstF32(1.0 / static_cast<double>(warps.size())));
  Value spread = cstF32(0.0);
  for (ArrayRef<Value> warp : warps) {
    Value d = arith::SubFOp::create(b, warp[0], rowMean);
    spread = arith::AddFOp::create(b, spread, arith::MulFOp::create(b, d, d));
  }
  Value rowM2 = arith::AddFOp::create(
      b, m2Sum, arith::MulFOp::create(b, spread, cstF32(n)));
  return {rowMean, rowM2};
}

RowKernelEmitter::StagedRows
RowKernelEmitter::stageRows(Value steps, RowOfStep rowOfStep,
                            DyValidOf dyValidOf, ArrayRef<Value> readColumn,
                            ArrayRef<Value> operands,
                            ArrayRef<Value> statistics) {
  StagedRows staged;
  staged.stages = s.gradStages;
  if (!staged.stages)
    return staged;
  int64_t stages = staged.stages, rowsPerStep = s.gradRowsPerStep,
          vectors = rowsPerStep * s.vecsPerThread, threads = s.blockThreads();
  staged.steps = steps;
  // Flat views, indexed by the thread's own offset (set here, outside the
  // loop) plus the slot's: a step's vectors are 16 bytes x threads apart.
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  int64_t offset = s.gradRingOffset();
  for (Value mem : operands) {
    if (!mem) {
      staged.rings.push_back(Value());
      continue;
    }
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    staged.perVector = 16 * 8 / elem.getIntOrFloatBitWidth();
    staged.stepElements = vectors * threads * staged.perVector;
    staged.rings.push_back(
        smemView(idx(offset), {stages * staged.stepElements}, elem));
    offset += stages * vectors * threads * 16;
  }
  staged.threadVector = mul(tid, idx(staged.perVector));
  staged.stepStats = rowsPerStep * s.gradStagedStats() * threads;
  staged.stats =
      smemView(idx(offset), {stages * staged.stepStats}, b.getF32Type());
  staged.threadStat = tid;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  SmallVector<Value> columns(readColumn), mems(operands), statMems(statistics);
  staged.issue = [=, this](const StagedRows &st, Value step, Value slot) {
    for (int64_t r = 0; r < rowsPerStep; ++r) {
      auto [rowIndex, valid] = rowOfStep(step, r);
      for (auto [k, mem] : llvm::enumerate(statMems))
        if (mem)
          nvgpu::DeviceAsyncCopyOp::create(
              b, tokenType, st.stats, ValueRange{statIndex(st, slot, r, k)},
              mem, ValueRange{rowIndex}, b.getIndexAttr(1), Value(),
              UnitAttr());
      Value base = mul(rowIndex, idx(s.n));
      for (int64_t i = 0; i < s.vecsPerThread; ++i) {
        Value at = add(base, columns[i]);
        Value ringAt = vectorIndex(st, slot, r * s.vecsPerThread + i);
        for (auto [k, mem] : llvm::enumerate(mems)) {
          if (!mem)
            continue;
          // dy past the row, or of a row past the group's: zero-filled.
          Value elements;
          if (k == 1)
            if (Value dyValid = dyValidOf(valid, i))
              elements = arith::SelectOp::create(b, dyValid, idx(st.perVector),
                                                 idx(0));
          nvgpu::DeviceAsyncCopyOp::create(
              b, tokenType, st.rings[k], ValueRange{ringAt}, mem,
              ValueRange{at}, b.getIndexAttr(st.perVector), elements,
              b.getUnitAttr());
        }
      }
    }
  };
  for (int64_t p = 0; p + 1 < stages; ++p) {
    ifThen(ult(idx(p), steps), [&] { staged.issue(staged, idx(p), idx(p)); });
    nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange{});
  }
  return staged;
}

Value RowKernelEmitter::enterStep(const StagedRows &staged, Value step,
                                  Value slot) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  int64_t stages = staged.stages;
  // Step + S - 1 goes where step - 1 was read.
  Value previous = arith::SelectOp::create(b, eq(slot, 0), idx(stages - 1),
                                           sub(slot, idx(1)));
  Value ahead = add(step, idx(stages - 1));
  ifThen(ult(ahead, staged.steps),
         [&] { staged.issue(staged, ahead, previous); });
  Value group =
      nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange{});
  // Groups committed: S - 1 before the loop and one a step, so step's own
  // is complete once at most S - 1 are pending.
  nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(stages - 1));
  return slot;
}

SmallVector<Value> RowKernelEmitter::gradGroupSums(ArrayRef<Value> partials,
                                                   Value parity) {
  SmallVector<Value> sums(partials.begin(), partials.end());
  int64_t width = std::min<int64_t>(s.threadsPerRow, 32);
  for (int64_t offset = width / 2; offset > 0; offset /= 2)
    for (Value &sum : sums)
      sum = arith::AddFOp::create(b, sum, xorShuffle(sum, offset));
  if (s.threadsPerRow <= 32) {
    // A one-warp group has no barrier after its sums, and LLVM would then
    // keep the weight it read before them (8 f32 registers per vector)
    // instead of reading it again from L1 for dx: the warp's barrier, which
    // LLVM treats as touching memory, keeps the second read (32 x 3
    // vectors at 768 columns: 80 registers with it, spills at 80 without).
    // Threads of fewer vectors fit their caps either way and are left as
    // they ran.
    if (s.vecsPerThread >= 3)
      NVVM::SyncWarpOp::create(b, i32(-1));
    return sums;
  }
  // Slots [parity][warp of the CTA][4]: a warp's lane 0 writes its sums,
  // the group's named barrier (1 + its row group), then lane l of every
  // warp reads warp (l mod P)'s sums and the xor shuffles add them (every
  // lane gets the same bits: each step adds a pair, x + y = y + x). A warp writing the
  // slots of one parity has passed the barrier of the row between, which
  // the readers of the last row of that parity reached after reading.
  int64_t warps = s.threadsPerRow / 32;
  int64_t blockWarps = s.blockThreads() / 32;
  Value slots = smemView(idx(0), {2, blockWarps, 4}, b.getF32Type());
  Value first = mul(rowInBlock, idx(warps));
  Value laneInWarp = rem(lane, 32);
  ifThen(eq(laneInWarp, 0), [&] {
    Value warp = add(first, div(lane, 32));
    for (auto [v, sum] : llvm::enumerate(sums))
      memref::StoreOp::create(b, sum, slots,
                              ValueRange{parity, warp, idx(v)});
  });
  namedBarrier(1, rowInBlock, s.threadsPerRow);
  // Lane l reads warp (l mod P)'s sums, P = warps rounded up to a power of
  // two (0 past the warps), so that the xor steps below, which add within
  // aligned groups of P lanes, leave the total in every lane, not only in
  // the first P.
  int64_t span = llvm::PowerOf2Ceil(warps);
  Value position = rem(laneInWarp, span);
  Value reads = ult(position, idx(warps));
  Value warp = add(first, position);
  for (auto [v, sum] : llvm::enumerate(sums)) {
    auto ifOp = scf::IfOp::create(
        b, reads,
        [&](OpBuilder &, Location) {
          Value slot = memref::LoadOp::create(
              b, slots, ValueRange{parity, warp, idx(v)});
          scf::YieldOp::create(b, slot);
        },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, cstF32(0.0)); });
    sum = ifOp.getResult(0);
  }
  for (int64_t offset = span / 2; offset > 0; offset /= 2)
    for (Value &sum : sums)
      sum = arith::AddFOp::create(b, sum, xorShuffle(sum, offset));
  return sums;
}

void RowKernelEmitter::emitNorm() {
  unsigned next = 0;
  Value input = args[next++], output = args[next++];
  Value weight = s.weightElem ? args[next++] : Value();
  Value bias = s.biasElem ? args[next++] : Value();
  Value meanOut = s.mean ? args[next++] : Value();
  Value rstdOut = s.rstd ? args[next++] : Value();
  Value rows = args[next++];
  setUpGroup();
  // Without rows there is nothing to read (the grid is one CTA).
  ifThen(ult(idx(0), rows), [&] {
    emitNormRows(input, output, weight, bias, meanOut, rstdOut, rows);
  });
}

void RowKernelEmitter::emitNormRows(Value input, Value output, Value weight,
                                    Value bias, Value meanOut, Value rstdOut,
                                    Value rows) {
  bool layerNorm = s.kind == RowOpKind::LayerNorm;
  Value row = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                      idx(s.rowsPerBlock)),
                  rowInBlock);
  Value rowValid = ult(row, rows);
  Value rowBase = mul(row, idx(s.n));
  // The loads read row min(row, rows - 1): a group past the last row re-reads
  // it (and skips its stores), so the row's loads need no branch and ptxas
  // issues them together.
  Value loadBase =
      mul(arith::MinUIOp::create(b, row, sub(rows, idx(1))), idx(s.n));
  SmallVector<Value> inRow, column, x, w, bv;
  // The weight and bias: every row reads them (loadKept), where the rows
  // are whole vectors (their loads then unbranched, in this block).
  Value policy;
  auto param = [&](Value mem, Value ok, Value col) {
    return ragged() ? loadIf(ok, mem, col) : loadKept(mem, col, policy);
  };
  for (int64_t i = 0; i < s.vecsPerThread; ++i) {
    auto [col, ok] = rowVector(i);
    inRow.push_back(ok);
    column.push_back(col);
    x.push_back(ragged() ? loadIf(ok, input, add(loadBase, col))
                         : load(input, add(loadBase, col), s.vec));
    if (weight && s.output)
      w.push_back(param(weight, ok, col));
    if (bias && s.output)
      bv.push_back(param(bias, ok, col));
  }
  Value nF = cstF32(static_cast<double>(s.n));
  // LayerNorm centers x (or, with `uncentered`, its output does: x rstd +
  // shift); total is the row's sum of squares of (centered) x.
  Value mean, total;
  bool uncentered = layerNorm && !ragged();
  if (uncentered) {
    // Every thread holds as many columns: its mean and centered sum of
    // squares, merged across the group in one pass (groupMoments). x stays
    // as loaded: (x - mean) rstd = x rstd + (-mean rstd), one FMA an
    // element where centering first costs a subtraction and a multiply
    // (32 instructions a thread at 1024 columns).
    std::tie(mean, total) = groupMoments(x);
  } else {
    if (layerNorm) {
      Value partial = cstF32(0.0);
      for (Value v : x)
        partial = arith::AddFOp::create(b, partial, horizontalSum(v));
      mean = arith::DivFOp::create(b, groupSum(partial, 0), nF);
      // Centered values; the lanes past the row stay 0.
      for (int64_t i = 0; i < s.vecsPerThread; ++i) {
        Value d = arith::SubFOp::create(b, x[i], splat(mean));
        x[i] =
            ragged()
                ? arith::SelectOp::create(b, inRow[i], d, zeros()).getResult()
                : d;
      }
    }
    Value sq = cstF32(0.0);
    for (Value v : x)
      sq = arith::AddFOp::create(b, sq,
                                 horizontalSum(arith::MulFOp::create(b, v, v)));
    total = groupSum(sq, layerNorm ? 1 : 0);
  }
  Value rstd = rsqrt(arith::AddFOp::create(
      b, arith::DivFOp::create(b, total, nF), cstF32(s.epsilon)));
  Value shift =
      uncentered
          ? splat(arith::NegFOp::create(b, arith::MulFOp::create(b, mean, rstd)))
          : Value();

  for (int64_t i = 0; i < s.vecsPerThread && s.output; ++i) {
    ifThen(both(inRow[i], rowValid), [&] {
      // (fusion-contract-float-ops makes x rstd + shift one FMA.)
      Value y = arith::MulFOp::create(b, x[i], splat(rstd));
      if (shift)
        y = arith::AddFOp::create(b, y, shift);
      if (weight)
        y = arith::MulFOp::create(b, y, w[i]);
      if (bias)
        y = arith::AddFOp::create(b, y, bv[i]);
      store(y, output, add(rowBase, column[i]));
    });
  }
  if (meanOut || rstdOut)
    ifThen(both(rowValid, eq(lane, 0)), [&] {
      if (meanOut)
        memref::StoreOp::create(b, mean, meanOut, ValueRange{row});
      if (rstdOut)
        memref::StoreOp::create(b, rstd, rstdOut, ValueRange{row});
    });
}

void RowKernelEmitter::emitNormGrad() {
  // A row group's loop runs full-warp shuffles and barriers, and the groups
  // of a CTA loop different numbers of times: groups sharing a warp would
  // diverge there (the 192-column hang of session 23).
  assert(s.threadsPerRow % 32 == 0 && "norm-gradient row groups are whole warps");
  bool layerNorm = s.isLayerNorm();
  unsigned next = 0;
  Value dyMem = args[next++], xMem = args[next++];
  Value meanMem = layerNorm ? args[next++] : Value();
  Value rstdMem = args[next++];
  Value weight = s.weightElem ? args[next++] : Value();
  Value residualMem = s.residualElem ? args[next++] : Value();
  Value dxMem = args[next++];
  Value partials = s.paramGrads() ? args[next++] : Value();
  Value rows = args[next++];
  setUpGroup();
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value grid = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value units = mul(grid, idx(s.rowsPerBlock));
  Value unit = add(mul(block, idx(s.rowsPerBlock)), rowInBlock);
  // Vector i of the thread: its first column, a constant offset from
  // vector 0's (one address per operand, the offsets folded into the
  // loads). A vector that may be past the row (a ragged row's last) reads
  // the row's last vector instead, so that no load is branched, with dy
  // zeroed (`inRow`, null for a vector always inside): then g = 0, and
  // neither the sums nor the accumulators see those lanes.
  SmallVector<Value> inRow, column, readColumn;
  for (int64_t i = 0; i < s.vecsPerThread; ++i) {
    if (i == 0) {
      column.push_back(mul(lane, idx(s.vec)));
    } else {
      Value stride = idx(i * s.threadsPerRow * s.vec);
      column.push_back(add(column[0], stride));
    }
    if ((i + 1) * s.threadsPerRow <= s.chunks()) {
      inRow.push_back(Value());
      readColumn.push_back(column[i]);
      continue;
    }
    Value lastColumn = idx((s.chunks() - 1) * s.vec);
    inRow.push_back(ult(column[i], idx(s.n)));
    readColumn.push_back(arith::MinUIOp::create(b, column[i], lastColumn));
  }
  Value nF = cstF32(static_cast<double>(s.n));
  // The group's rows: unit, unit + units, ... below rows. Every row of the
  // loop exists, so its loads need no guard.
  Value remaining = arith::CeilDivUIOp::create(b, sub(rows, unit), units);
  Value any = ult(unit, rows);
  Value count = arith::SelectOp::create(b, any, remaining, idx(0));

  int64_t params = s.paramGrads();
  int64_t rowsPerStep = s.gradRowsPerStep;
  Value lastRow = sub(rows, idx(1));
  Value steps = arith::CeilDivUIOp::create(b, count, idx(rowsPerStep));
  // Row r of step `index`: its index among the group's rows, the row (a
  // row past the group's rows, in its last step, is the last row), and
  // whether it exists (null: always, the step's first).
  auto rowOfStep = [&](Value step, int64_t r) {
    Value index = add(mul(step, idx(rowsPerStep)), idx(r));
    Value rowIndex = add(unit, mul(index, units));
    if (r == 0)
      return std::make_pair(rowIndex, Value());
    // Built in this order (a function's arguments are evaluated in no fixed
    // order, and the IR must not depend on the host compiler).
    Value valid = ult(index, count);
    Value clamped = arith::MinUIOp::create(b, rowIndex, lastRow);
    return std::make_pair(clamped, valid);
  };
  // dy of vector i of a row is zero where the vector is past the row or the
  // row past the group's rows (null: never).
  auto dyValidOf = [&](Value rowValid, int64_t i) {
    Value dyValid = inRow[i];
    if (rowValid)
      dyValid = dyValid ? both(dyValid, rowValid) : rowValid;
    return dyValid;
  };
  StagedRows staged = stageRows(steps, rowOfStep, dyValidOf, readColumn,
                                {xMem, dyMem, residualMem}, {rstdMem, meanMem});
  SmallVector<Value> inits(params * s.vecsPerThread, zeros());
  // Staged: the step's slot in the ring rides along (the last iter_arg).
  int64_t accumulators = inits.size();
  if (staged.stages)
    inits.push_back(idx(0));
  ValueRange sums =
      forLoop(idx(0), steps, idx(1), inits, [&](Value step, ValueRange iters) {
        ValueRange acc = iters.take_front(accumulators);
        // The step's rows: unit + (step rowsPerStep + r) units. The first
        // exists; a later one may not (the group's last step), and then
        // reads the last row with dy zeroed and stores nothing.
        struct Row {
          int64_t index = 0;
          Value valid, base, rstd, mean;
          SmallVector<Value> at, dy, x, residual;
        };
        SmallVector<Row, 2> rowsOfStep(rowsPerStep);
        Value slot =
            staged.stages ? enterStep(staged, step, iters.back()) : Value();
        // The rows' loads, all issued before the group sums: the
        // statistics, then per vector x, dy and the residual (16-bit values
        // kept packed until used; the weight is read where it is used, an
        // L1 hit, so that it holds no registers across the sums or across
        // the loop). Staged: from the ring, where they landed steps ago.
        for (auto [r, row] : llvm::enumerate(rowsOfStep)) {
          auto [rowIndex, valid] = rowOfStep(step, r);
          row.index = r;
          row.valid = valid;
          row.base = mul(rowIndex, idx(s.n));
          row.rstd =
              slot ? stagedStat(staged, slot, r, 0)
                   : memref::LoadOp::create(b, rstdMem, ValueRange{rowIndex})
                         .getResult();
          if (layerNorm)
            row.mean =
                slot ? stagedStat(staged, slot, r, 1)
                     : memref::LoadOp::create(b, meanMem, ValueRange{rowIndex})
                           .getResult();
          for (int64_t i = 0; i < s.vecsPerThread; ++i) {
            row.at.push_back(add(row.base, readColumn[i]));
            int64_t v = r * s.vecsPerThread + i;
            if (slot) {
              row.x.push_back(stagedVector(staged, slot, 0, v));
              row.dy.push_back(stagedVector(staged, slot, 1, v));
              if (residualMem)
                row.residual.push_back(stagedVector(staged, slot, 2, v));
              continue;
            }
            row.x.push_back(loadPacked(Value(), xMem, row.at[i]));
            row.dy.push_back(
                loadPacked(dyValidOf(row.valid, i), dyMem, row.at[i]));
            if (residualMem)
              row.residual.push_back(
                  loadPacked(Value(), residualMem, row.at[i]));
          }
        }
        // dy, g = dy w and x - mean of vector i in f32, widened again after
        // the group sums (`again`: a second widening that LLVM does not merge
        // with the first, so that the packed values are what lives across
        // the sums).
        // Staged, the second widening reads the ring again instead (the
        // packed values then hold no registers across the sums), and g
        // (dy times the weight) of the first stays in its registers where
        // the thread holds at most two vectors a step: no second read and
        // widening of the weight (three vectors' g spill under the cap).
        SmallVector<Value> firstG;
        bool keepG = slot && weight && s.vecsPerThread * s.gradRowsPerStep <= 2;
        auto widenVector = [&](const Row &row, int64_t i, bool again) {
          auto widenOne = [&](Value v) {
            return again ? widenAgain(v) : widen(v);
          };
          Value dy = row.dy[i], x = row.x[i];
          if (slot && again) {
            int64_t v = row.index * s.vecsPerThread + i;
            dy = stagedVector(staged, slot, 1, v);
            x = stagedVector(staged, slot, 0, v);
          }
          Value dyF = widenOne(dy);
          Value centered = widenOne(x);
          if (layerNorm && !s.normalizedInput)
            centered = arith::SubFOp::create(b, centered, splat(row.mean));
          Value g = dyF;
          if (keepG && again) {
            g = firstG[row.index * s.vecsPerThread + i];
          } else if (weight) {
            Value w = loadPacked(Value(), weight, readColumn[i]);
            g = arith::MulFOp::create(b, dyF, widen(w));
          }
          if (keepG && !again)
            firstG.push_back(g);
          return std::make_tuple(dyF, g, centered);
        };
        // Per row, the thread's sums of g (x - mean) and of g (LayerNorm),
        // all exchanged at once.
        SmallVector<Value> partial;
        for (const Row &row : rowsOfStep) {
          Value gx, gSum;
          for (int64_t i = 0; i < s.vecsPerThread; ++i) {
            auto [dyF, g, centered] = widenVector(row, i, /*again=*/false);
            gx = gx ? math::FmaOp::create(b, g, centered, gx).getResult()
                    : arith::MulFOp::create(b, g, centered).getResult();
            if (layerNorm)
              gSum = gSum ? arith::AddFOp::create(b, gSum, g).getResult() : g;
          }
          partial.push_back(horizontalSum(gx));
          if (layerNorm)
            partial.push_back(horizontalSum(gSum));
        }
        SmallVector<Value> total = gradGroupSums(partial, rem(step, 2));
        SmallVector<Value> nextAcc(acc.begin(), acc.end());
        int64_t perRow = layerNorm ? 2 : 1;
        for (auto [r, row] : llvm::enumerate(rowsOfStep)) {
          // dx = rstd (g - x_hat c2 - c1) with x_hat = (x - mean) rstd,
          // c2 = sum(g x_hat) / N = rstd sum(g (x - mean)) / N and
          // c1 = sum(g) / N: dx = rstd g + (k2 x_hat + k1), k2 = -rstd c2,
          // k1 = -rstd c1 (RMSNorm: dx = rstd g + k2 x_hat). With a
          // normalized input the row holds x_hat itself: c2 = sum(g x_hat) / N.
          Value c2 = arith::DivFOp::create(
              b,
              s.normalizedInput
                  ? total[r * perRow]
                  : arith::MulFOp::create(b, total[r * perRow], row.rstd)
                        .getResult(),
              nF);
          Value k2 =
              arith::NegFOp::create(b, arith::MulFOp::create(b, row.rstd, c2));
          Value rstdV = splat(row.rstd), k2V = splat(k2), k1V;
          if (layerNorm) {
            Value c1 = arith::DivFOp::create(b, total[r * perRow + 1], nF);
            k1V = splat(arith::NegFOp::create(
                b, arith::MulFOp::create(b, row.rstd, c1)));
          }
          for (int64_t i = 0; i < s.vecsPerThread; ++i) {
            auto [dyF, g, centered] = widenVector(row, i, /*again=*/true);
            Value xHat =
                s.normalizedInput
                    ? centered
                    : arith::MulFOp::create(b, centered, rstdV).getResult();
            Value shift =
                k1V ? math::FmaOp::create(b, k2V, xHat, k1V).getResult()
                    : arith::MulFOp::create(b, k2V, xHat).getResult();
            Value dx = math::FmaOp::create(b, rstdV, g, shift);
            if (residualMem)
              dx = arith::AddFOp::create(b, dx, widen(row.residual[i]));
            Value stores = inRow[i];
            if (row.valid)
              stores = stores ? both(stores, row.valid) : row.valid;
            if (stores)
              ifThen(stores, [&] { store(dx, dxMem, row.at[i]); });
            else
              store(dx, dxMem, row.at[i]);
            // dweight += dy x_hat, dbias += dy (0 where dy was zeroed).
            int64_t p = 0;
            if (s.weightGrad) {
              Value &a = nextAcc[p++ * s.vecsPerThread + i];
              a = math::FmaOp::create(b, dyF, xHat, a);
            }
            if (s.biasGrad) {
              Value &a = nextAcc[p * s.vecsPerThread + i];
              a = arith::AddFOp::create(b, a, dyF);
            }
          }
        }
        if (slot)
          nextAcc.push_back(arith::SelectOp::create(
              b, eq(slot, staged.stages - 1), idx(0), add(slot, idx(1))));
        return nextAcc;
      });
  sums = sums.take_front(accumulators);
  if (!params)
    return;
  // Partial row `block` of each parameter gradient ([params][gridDim.x][n]):
  // the CTA's groups summed in order through shared memory, group 0's
  // columns plus group 1's, ..., the last group adding its own and writing
  // the row.
  auto partialAt = [&](int64_t p, Value col) {
    Value partialRow = add(mul(grid, idx(p)), block);
    return add(mul(partialRow, idx(s.n)), col);
  };
  // A partial row's vectors are 16-byte aligned where vec is 4 or 8 (n
  // is a multiple of vec).
  llvm::MaybeAlign partialAlign(std::min<int64_t>(s.vec * 4, 16));
  Value combined;
  if (s.rowsPerBlock > 1)
    combined = smemView(idx(s.gradExchangeBytes()), {params * s.n},
                        b.getF32Type());
  for (int64_t g = 0; g < s.rowsPerBlock; ++g) {
    bool first = g == 0, last = g + 1 == s.rowsPerBlock;
    ifThen(eq(rowInBlock, g), [&] {
      for (int64_t p = 0; p < params; ++p)
        for (int64_t i = 0; i < s.vecsPerThread; ++i) {
          auto write = [&] {
            Value sum = sums[p * s.vecsPerThread + i];
            Value at = add(idx(p * s.n), column[i]);
            if (!first)
              sum = arith::AddFOp::create(
                  b,
                  vector::LoadOp::create(b, f32Vector(), combined,
                                         ValueRange{at}),
                  sum);
            if (last)
              vector::StoreOp::create(b, sum, partials,
                                      ValueRange{partialAt(p, column[i])},
                                      /*nontemporal=*/false, partialAlign);
            else
              vector::StoreOp::create(b, sum, combined, ValueRange{at});
          };
          if (inRow[i])
            ifThen(inRow[i], write);
          else
            write();
        }
    });
    if (!last)
      gpu::BarrierOp::create(b);
  }
}

void RowKernelEmitter::emitParamGradReduce() {
  constexpr int64_t kCols = RowKernelSpec::kReduceColumns,
                    kWarps = RowKernelSpec::kReduceWarps,
                    kUnroll = RowKernelSpec::kReduceUnroll,
                    kThreads = kWarps * 32;
  static_assert((kUnroll & (kUnroll - 1)) == 0,
                "the accumulators are added pairwise");
  Value partials = args[0];
  SmallVector<Value> outs{args[1]};
  if (s.paramGrads() == 2)
    outs.push_back(args[2]);
  Value units = args[outs.size() + 1];
  initSharedMemory(16);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // Thread t: column t mod kCols of the CTA's, and its partial rows
  // t / kCols, t / kCols + kThreads / kCols, ... (a warp reads 32 / kCols
  // rows' kCols columns at once).
  Value lane = rem(tid, kCols), first = div(tid, kCols);
  Value col =
      add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kCols)), lane);
  Value param = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value colValid = ult(col, idx(s.n));
  Value base = mul(param, mul(units, idx(s.n)));
  constexpr int64_t kRows = kThreads / kCols;
  // Row first + kRows (kUnroll q + a) goes into accumulator a, in order.
  SmallVector<Value> inits(kUnroll, cstF32(0.0));
  ValueRange acc = forLoop(
      first, units, idx(kRows * kUnroll), inits, [&](Value r, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t a = 0; a < kUnroll; ++a) {
          Value pr = add(r, idx(a * kRows));
          Value ok = both(ult(pr, units), colValid);
          auto ifOp = scf::IfOp::create(
              b, ok,
              [&](OpBuilder &, Location) {
                scf::YieldOp::create(
                    b, memref::LoadOp::create(
                           b, partials,
                           ValueRange{add(base, add(mul(pr, idx(s.n)), col))})
                           .getResult());
              },
              [&](OpBuilder &, Location) { scf::YieldOp::create(b, cstF32(0.0)); });
          next.push_back(arith::AddFOp::create(b, acc[a], ifOp.getResult(0)));
        }
        return next;
      });
  // The accumulators added pairwise: (a0 + a1) + (a2 + a3), ...
  SmallVector<Value> level(acc.begin(), acc.end());
  while (level.size() > 1) {
    SmallVector<Value> pairs;
    for (size_t a = 0; a < level.size(); a += 2)
      pairs.push_back(arith::AddFOp::create(b, level[a], level[a + 1]));
    level = std::move(pairs);
  }
  Value sum = level.front();
  static_assert(kRows * kCols * 4 + 16 == RowKernelSpec::kReduceSharedBytes,
                "one slot per thread");
  Value slots = smemView(idx(0), {kRows, kCols}, b.getF32Type());
  memref::StoreOp::create(b, sum, slots, ValueRange{first, lane});
  gpu::BarrierOp::create(b);
  // The first kCols threads add the kRows sums of their column in order.
  ifThen(both(eq(first, 0), colValid), [&] {
    Value total = cstF32(0.0);
    for (int64_t w = 0; w < kRows; ++w)
      total = arith::AddFOp::create(
          b, total, memref::LoadOp::create(b, slots, ValueRange{idx(w), lane}));
    if (outs.size() == 1) {
      memref::StoreOp::create(b, total, outs[0], ValueRange{col});
      return;
    }
    auto ifOp = scf::IfOp::create(b, eq(param, 0), /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      memref::StoreOp::create(b, total, outs[0], ValueRange{col});
      b.setInsertionPointToStart(ifOp.elseBlock());
      memref::StoreOp::create(b, total, outs[1], ValueRange{col});
    }
  });
}

Value RowKernelEmitter::activate(Value x) {
  if (s.activation == Activation::identity)
    return x;
  // For 16-bit types silu and gelu_tanh by fastSigmoid (ex2.approx and
  // rcp.approx: relative error about 2^-21 everywhere, where the tanh form
  // errs by |x| 2^-12 absolute in their negative tails), as the GEMM
  // epilogue's; f32 gets the exact formulas (kernelActivation).
  return kernelActivation(b, b.getLoc(), s.activation, x, s.elem);
}

void RowKernelEmitter::emitRope() {
  // input, cos, sin, output, rows, the tables' rows.
  Value input = args[0], cosTable = args[1], sinTable = args[2];
  Value output = args[3], rows = args[4], tableRows = args[5];
  int64_t r = s.rotaryDim, half = r / 2;
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value vectors = mul(rows, idx(s.chunks()));
  for (int64_t u = 0; u < RowKernelSpec::kVectorsPerThread; ++u) {
    Value v =
        add(mul(add(mul(block, idx(RowKernelSpec::kVectorsPerThread)), idx(u)),
                idx(s.blockThreads())),
            tid);
    ifThen(ult(v, vectors), [&] {
      Value at = mul(v, idx(s.vec));
      Value row = div(v, s.chunks());
      Value col = mul(rem(v, s.chunks()), idx(s.vec));
      Value j = rem(col, s.headDim);
      Value rotated = ult(j, idx(r));
      // Past the rotary dimension the tables' last vector is read and not
      // used; the table row of input row `row` (one table for the batches).
      Value tableAt =
          add(mul(arith::RemUIOp::create(b, row, tableRows), idx(r)),
              arith::MinUIOp::create(b, j, idx(r - s.vec)));
      Value x = load(input, at, s.vec);
      Value c = load(cosTable, tableAt, s.vec);
      Value sn = load(sinTable, tableAt, s.vec);
      // The partner's term, -partner sin or +partner sin.
      Value term;
      if (s.interleaved && s.vec > 1) {
        // Whole pairs (2i, 2i + 1) in the vector: swap them in registers.
        SmallVector<int64_t> swap;
        SmallVector<float> signs;
        for (int64_t e = 0; e < s.vec; ++e) {
          swap.push_back(e ^ 1);
          signs.push_back(e % 2 ? 1.0f : -1.0f);
        }
        Value swapped = vector::ShuffleOp::create(b, x, x, swap);
        Value sign = arith::ConstantOp::create(
            b, DenseElementsAttr::get(f32Vector(), ArrayRef<float>(signs)));
        term = arith::MulFOp::create(b, arith::MulFOp::create(b, swapped, sn),
                                     sign);
      } else {
        Value first, partner;
        if (s.interleaved) {
          first = eq(arith::AndIOp::create(b, j, idx(1)), 0);
          partner =
              arith::SelectOp::create(b, first, add(col, idx(1)),
                                      arith::SubIOp::create(b, col, idx(1)));
        } else {
          first = ult(j, idx(half));
          partner =
              arith::SelectOp::create(b, first, add(col, idx(half)),
                                      arith::SubIOp::create(b, col, idx(half)));
        }
        partner = arith::SelectOp::create(b, rotated, partner, col);
        Value p = load(input, add(mul(row, idx(s.n)), partner), s.vec);
        Value sign =
            arith::SelectOp::create(b, first, cstF32(-1.0), cstF32(1.0));
        term = arith::MulFOp::create(b, arith::MulFOp::create(b, p, sn),
                                     splat(sign));
      }
      Value y = arith::AddFOp::create(b, arith::MulFOp::create(b, x, c), term);
      store(arith::SelectOp::create(b, rotated, y, x), output, at);
    });
  }
}

void RowKernelEmitter::emitElementwise() {
  if (s.isRope())
    return emitRope();
  // Binary: lhs, rhs, output, rows; unary: input, output, rows.
  bool unary = s.isUnary();
  Value lhs = args[0], rhs = unary ? Value() : args[1];
  Value output = args[unary ? 1 : 2], rows = args[unary ? 2 : 3];
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value vectors = mul(rows, idx(s.chunks()));
  for (int64_t u = 0; u < RowKernelSpec::kVectorsPerThread; ++u) {
    Value v = add(mul(add(mul(block, idx(RowKernelSpec::kVectorsPerThread)),
                          idx(u)),
                      idx(s.blockThreads())),
                  tid);
    ifThen(ult(v, vectors), [&] {
      Value at = mul(v, idx(s.vec));
      Value x = load(lhs, at, s.vec);
      if (unary) {
        store(activate(x), output, at);
        return;
      }
      Value y;
      switch (s.broadcast) {
      case Broadcast::Same:
        y = load(rhs, at, s.vec);
        break;
      case Broadcast::Row:
        y = load(rhs, mul(rem(v, s.chunks()), idx(s.vec)), s.vec);
        break;
      case Broadcast::Column:
        y = splat(vector::ExtractOp::create(
            b, load(rhs, div(v, s.chunks()), 1), ArrayRef<int64_t>{0}));
        break;
      case Broadcast::Scalar:
        y = splat(vector::ExtractOp::create(b, load(rhs, idx(0), 1),
                                            ArrayRef<int64_t>{0}));
        break;
      }
      Value r = s.kind == RowOpKind::Add
                    ? arith::AddFOp::create(b, x, y).getResult()
                    : arith::MulFOp::create(b, x, y).getResult();
      store(r, output, at);
    });
  }
}
} // namespace

gpu::GPUFuncOp mlir::fusion::buildRowKernel(OpBuilder &builder, Location loc,
                                            gpu::GPUModuleOp module,
                                            StringRef name,
                                            const RowKernelSpec &s) {
  OpBuilder::InsertionGuard guard(builder);
  auto flat = [&](Type elem) {
    return MemRefType::get({ShapedType::kDynamic}, elem);
  };
  Type f32 = builder.getF32Type();
  SmallVector<Type> types;
  if (s.isNormGrad()) {
    types = {flat(s.elem), flat(s.elem)};
    if (s.isLayerNorm())
      types.push_back(flat(f32));
    types.push_back(flat(f32));
    if (s.weightElem)
      types.push_back(flat(s.weightElem));
    if (s.residualElem)
      types.push_back(flat(s.residualElem));
    types.push_back(flat(s.elem));
    if (s.paramGrads())
      types.push_back(flat(f32));
  } else if (s.isNorm()) {
    types = {flat(s.elem), flat(s.elem)};
    if (s.weightElem)
      types.push_back(flat(s.weightElem));
    if (s.biasElem)
      types.push_back(flat(s.biasElem));
    if (s.mean)
      types.push_back(flat(f32));
    if (s.rstd)
      types.push_back(flat(f32));
  } else if (s.isUnary()) {
    types = {flat(s.elem), flat(s.elem)};
  } else if (s.isRope()) {
    types = {flat(s.elem), flat(s.elem), flat(s.elem), flat(s.elem)};
  } else {
    types = {flat(s.elem), flat(s.rhsElem), flat(s.elem)};
  }
  types.push_back(builder.getIndexType());
  if (s.isRope())
    types.push_back(builder.getIndexType()); // the tables' rows
  std::optional<int64_t> maxRegisters;
  if (s.isNormGrad())
    maxRegisters = s.gradMaxRegisters;
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, module, name, types,
                                         s.blockThreads(), maxRegisters);
  ImplicitLocOpBuilder b(loc, builder);
  RowKernelEmitter emitter(b, s, func);
  if (s.isNormGrad())
    emitter.emitNormGrad();
  else if (s.isNorm())
    emitter.emitNorm();
  else
    emitter.emitElementwise();
  gpu::ReturnOp::create(b);
  return func;
}

gpu::GPUFuncOp mlir::fusion::buildParamGradReduceKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    const RowKernelSpec &s) {
  OpBuilder::InsertionGuard guard(builder);
  auto flatF32 = MemRefType::get({ShapedType::kDynamic}, builder.getF32Type());
  SmallVector<Type> types(1 + s.paramGrads(), flatF32);
  types.push_back(builder.getIndexType());
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, module, name, types,
                                         32 * RowKernelSpec::kReduceWarps);
  ImplicitLocOpBuilder b(loc, builder);
  RowKernelEmitter(b, s, func).emitParamGradReduce();
  gpu::ReturnOp::create(b);
  return func;
}
