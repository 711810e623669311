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
// all of them see the same statistics). Every thread reaches the barriers;
// a group past the last row re-reads the last row (so the loads need no
// branch and issue together) and skips its stores. Rows of three vectors or
// more per thread get a CTA each (RowSpec.cpp: measured faster on the H200).
//
// Norm gradient: the same groups, persistent: row group u (of units =
// gridDim.x * rowsPerBlock) takes rows u, u + units, ..., every group the
// same number of steps (rows past the end skip their loads and stores, so
// every thread reaches the barriers). Per row: x_hat from x and the saved
// statistics, g = dy * weight, the group sums of g * x_hat (and of g for
// LayerNorm), dx = rstd (g - sum(g) / N - x_hat sum(g x_hat) / N), plus the
// residual when there is one (read with dy, at dy's positions); each
// thread adds dy * x_hat (dweight) and dy (dbias) of its columns into
// registers and finally writes them as partial row u. The reduction kernel
// sums the partial rows of a column in a fixed order.
//
// Element-wise: thread t of CTA c handles vectors (c * 4 + u) * 256 + t,
// u < 4, of lhs viewed flat; rhs is read at the same place, at its column
// (a row vector), at its row (a column) or once.
//
//===----------------------------------------------------------------------===//

#include "RowSpec.h"

#include "../Common/KernelBuilder.h"

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

private:
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
  /// The sum of `partial` over the thread group of a row.
  Value groupSum(Value partial, int64_t reduction);
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

Value RowKernelEmitter::groupSum(Value partial, int64_t reduction) {
  int64_t width = std::min<int64_t>(s.threadsPerRow, 32);
  for (int64_t offset = width / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, partial, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = arith::AddFOp::create(b, partial, other);
  }
  if (s.threadsPerRow <= 32)
    return partial;
  // One slot per warp of the group; reduction r uses its own slots, so the
  // second reduction's writes never race the first one's reads.
  int64_t warps = s.threadsPerRow / 32;
  int64_t blockWarps = s.blockThreads() / 32;
  Value slots = smemView(idx(reduction * blockWarps * 4), {blockWarps},
                         b.getF32Type());
  Value first = mul(rowInBlock, idx(warps));
  ifThen(eq(rem(lane, 32), 0), [&] {
    memref::StoreOp::create(b, partial, slots,
                            ValueRange{add(first, div(lane, 32))});
  });
  gpu::BarrierOp::create(b);
  Value total = cstF32(0.0);
  for (int64_t w = 0; w < warps; ++w)
    total = arith::AddFOp::create(
        b, total,
        memref::LoadOp::create(b, slots, ValueRange{add(first, idx(w))}));
  return total;
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
  for (int64_t i = 0; i < s.vecsPerThread; ++i) {
    auto [col, ok] = rowVector(i);
    inRow.push_back(ok);
    column.push_back(col);
    x.push_back(ragged() ? loadIf(ok, input, add(loadBase, col))
                         : load(input, add(loadBase, col), s.vec));
    if (weight && s.output)
      w.push_back(loadIf(ok, weight, col));
    if (bias && s.output)
      bv.push_back(loadIf(ok, bias, col));
  }
  Value nF = cstF32(static_cast<double>(s.n));
  Value mean;
  if (layerNorm) {
    Value partial = cstF32(0.0);
    for (Value v : x)
      partial = arith::AddFOp::create(b, partial, horizontalSum(v));
    mean = arith::DivFOp::create(b, groupSum(partial, 0), nF);
    // Centered values; the lanes past the row stay 0.
    for (int64_t i = 0; i < s.vecsPerThread; ++i) {
      Value d = arith::SubFOp::create(b, x[i], splat(mean));
      x[i] = ragged() ? arith::SelectOp::create(b, inRow[i], d, zeros()).getResult()
                      : d;
    }
  }
  Value sq = cstF32(0.0);
  for (Value v : x)
    sq = arith::AddFOp::create(
        b, sq, horizontalSum(arith::MulFOp::create(b, v, v)));
  Value total = groupSum(sq, layerNorm ? 1 : 0);
  Value rstd = rsqrt(arith::AddFOp::create(
      b, arith::DivFOp::create(b, total, nF), cstF32(s.epsilon)));

  for (int64_t i = 0; i < s.vecsPerThread && s.output; ++i) {
    ifThen(both(inRow[i], rowValid), [&] {
      Value y = arith::MulFOp::create(b, x[i], splat(rstd));
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
  Value units = mul(gpu::GridDimOp::create(b, gpu::Dimension::x),
                    idx(s.rowsPerBlock));
  Value unit = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                       idx(s.rowsPerBlock)),
                   rowInBlock);
  SmallVector<Value> inRow, column, w;
  for (int64_t i = 0; i < s.vecsPerThread; ++i) {
    auto [col, ok] = rowVector(i);
    inRow.push_back(ok);
    column.push_back(col);
    if (weight)
      w.push_back(loadIf(inRow[i], weight, column[i]));
  }
  Value nF = cstF32(static_cast<double>(s.n));
  // A scalar of `mem` at `at` when `cond`, else 0.
  auto scalarIf = [&](Value cond, Value mem, Value at) -> Value {
    auto ifOp = scf::IfOp::create(
        b, cond,
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, memref::LoadOp::create(b, mem, ValueRange{at})
                                      .getResult());
        },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, cstF32(0.0)); });
    return ifOp.getResult(0);
  };

  int64_t params = s.paramGrads();
  SmallVector<Value> inits(params * s.vecsPerThread, zeros());
  Value steps = arith::CeilDivUIOp::create(b, rows, units);
  ValueRange sums = forLoop(
      idx(0), steps, idx(1), inits, [&](Value step, ValueRange acc) {
        Value row = add(unit, mul(step, units));
        Value rowValid = ult(row, rows);
        Value rowBase = mul(row, idx(s.n));
        Value rstd = scalarIf(rowValid, rstdMem, row);
        Value mean = layerNorm ? scalarIf(rowValid, meanMem, row) : Value();
        SmallVector<Value> dy, xHat, g, residual;
        Value sumGX = cstF32(0.0), sumG = cstF32(0.0);
        for (int64_t i = 0; i < s.vecsPerThread; ++i) {
          Value ok = both(inRow[i], rowValid);
          Value x = loadIf(ok, xMem, add(rowBase, column[i]));
          dy.push_back(loadIf(ok, dyMem, add(rowBase, column[i])));
          // Issued with dy and x, before the group sums' shuffles and
          // barriers.
          if (residualMem)
            residual.push_back(
                loadIf(ok, residualMem, add(rowBase, column[i])));
          Value centered = x;
          if (layerNorm) {
            // Lanes past the row stay 0 (x - mean would not).
            centered = arith::SubFOp::create(b, x, splat(mean));
            if (ragged())
              centered = arith::SelectOp::create(b, inRow[i], centered, zeros());
          }
          xHat.push_back(arith::MulFOp::create(b, centered, splat(rstd)));
          g.push_back(weight ? arith::MulFOp::create(b, dy[i], w[i]).getResult()
                             : dy[i]);
          sumGX = arith::AddFOp::create(
              b, sumGX, horizontalSum(arith::MulFOp::create(b, g[i], xHat[i])));
          if (layerNorm)
            sumG = arith::AddFOp::create(b, sumG, horizontalSum(g[i]));
        }
        Value c2 = arith::DivFOp::create(b, groupSum(sumGX, 0), nF);
        Value c1 = layerNorm ? arith::DivFOp::create(b, groupSum(sumG, 1), nF)
                                   .getResult()
                             : Value();
        SmallVector<Value> next;
        for (int64_t i = 0; i < s.vecsPerThread; ++i) {
          ifThen(both(inRow[i], rowValid), [&] {
            Value t = arith::SubFOp::create(
                b, g[i], arith::MulFOp::create(b, xHat[i], splat(c2)));
            if (c1)
              t = arith::SubFOp::create(b, t, splat(c1));
            Value dx = arith::MulFOp::create(b, t, splat(rstd));
            if (residualMem)
              dx = arith::AddFOp::create(b, dx, residual[i]);
            store(dx, dxMem, add(rowBase, column[i]));
          });
        }
        // dweight += dy x_hat, dbias += dy (0 past the rows).
        int64_t p = 0;
        if (s.weightGrad) {
          for (int64_t i = 0; i < s.vecsPerThread; ++i)
            next.push_back(math::FmaOp::create(b, dy[i], xHat[i],
                                               acc[p * s.vecsPerThread + i]));
          ++p;
        }
        if (s.biasGrad)
          for (int64_t i = 0; i < s.vecsPerThread; ++i)
            next.push_back(
                arith::AddFOp::create(b, acc[p * s.vecsPerThread + i], dy[i]));
        // The next step's group sums reuse the shared-memory slots.
        if (s.sharedMemoryBytes())
          gpu::BarrierOp::create(b);
        return next;
      });
  // Partial row `unit` of each parameter gradient: [params][units][n].
  for (int64_t p = 0; p < params; ++p) {
    Value base = mul(add(mul(idx(p), units), unit), idx(s.n));
    for (int64_t i = 0; i < s.vecsPerThread; ++i)
      ifThen(inRow[i], [&] {
        vector::StoreOp::create(b, sums[p * s.vecsPerThread + i], partials,
                                ValueRange{add(base, column[i])});
      });
  }
}

void RowKernelEmitter::emitParamGradReduce() {
  constexpr int64_t kCols = RowKernelSpec::kReduceColumns,
                    kWarps = RowKernelSpec::kReduceWarps, kUnroll = 4;
  Value partials = args[0];
  SmallVector<Value> outs{args[1]};
  if (s.paramGrads() == 2)
    outs.push_back(args[2]);
  Value units = args[outs.size() + 1];
  initSharedMemory(16);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = div(tid, 32), lane32 = rem(tid, 32);
  Value col = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kCols)),
                  lane32);
  Value param = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value colValid = ult(col, idx(s.n));
  Value base = mul(param, mul(units, idx(s.n)));
  // Warp w sums partial rows w, w + 8, ... into kUnroll accumulators (row
  // w + 8 (kUnroll q + a) into accumulator a), in order.
  SmallVector<Value> inits(kUnroll, cstF32(0.0));
  ValueRange acc = forLoop(
      warp, units, idx(kWarps * kUnroll), inits, [&](Value r, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t a = 0; a < kUnroll; ++a) {
          Value pr = add(r, idx(a * kWarps));
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
  Value sum = arith::AddFOp::create(b, arith::AddFOp::create(b, acc[0], acc[1]),
                                    arith::AddFOp::create(b, acc[2], acc[3]));
  Value slots = smemView(idx(0), {kWarps, kCols}, b.getF32Type());
  memref::StoreOp::create(b, sum, slots, ValueRange{warp, lane32});
  gpu::BarrierOp::create(b);
  ifThen(both(eq(warp, 0), colValid), [&] {
    Value total = cstF32(0.0);
    for (int64_t w = 0; w < kWarps; ++w)
      total = arith::AddFOp::create(
          b, total, memref::LoadOp::create(b, slots, ValueRange{idx(w), lane32}));
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

void RowKernelEmitter::emitElementwise() {
  Value lhs = args[0], rhs = args[1], output = args[2], rows = args[3];
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
  } else {
    types = {flat(s.elem), flat(s.rhsElem), flat(s.elem)};
  }
  types.push_back(builder.getIndexType());
  gpu::GPUFuncOp func =
      createKernelFunc(builder, loc, module, name, types, s.blockThreads());
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
