//===- KernelBuilder.h - building device code, arch-neutral -----*- C++ -*-===//
//
// The small vocabulary every kernel generator of convert-fusion-to-gpu
// speaks: index and f32 arithmetic, scf loops and conditionals, mbarrier
// waits and arrivals, named barriers, and views of the kernel's dynamic
// shared memory. Nothing here knows an MMA instruction or a kernel family;
// the pieces in Common/ (TMA ring, tile scheduler, row exchange, staged
// epilogue), the MMA engines in Mma/ and the families (Gemm/) build on it.
//
// A KernelBuilder is a cheap handle (a builder reference and a few Values):
// the pieces copy it once the kernel's shared memory exists.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_KERNELBUILDER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_KERNELBUILDER_H

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

namespace mlir::fusion {

inline Attribute sharedSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

/// tanh(u) as tanh.approx.f32 (llvm.tanh with afn): one MUFU instruction,
/// relative error about 2^-11 of the tanh (ActivationMath.h's `tanh`
/// argument; the attention kernels' activation of every score takes it).
/// Where tanh is near -1 that is an absolute error of about 2^-11, which
/// silu and gelu_tanh (h + h tanh) turn into |x| 2^-12 absolute in their
/// negative tail: many ulps of a 16-bit result from x = -4 on
/// (fastActivation avoids it).
inline Value fastTanh(OpBuilder &builder, Location loc, Value u) {
  return LLVM::TanhOp::create(
      builder, loc, u,
      LLVM::FastmathFlagsAttr::get(builder.getContext(),
                                   LLVM::FastmathFlags::afn));
}

/// sigmoid(z) = 1 / (1 + 2^(-z log2 e)) by libdevice's exp2f (ex2.approx.f32
/// with its range handling) and rcp.approx.ftz.f32: relative error about
/// 2^-21 for every z (1 + 2^(...) overflowing to infinity gives 0).
inline Value fastSigmoid(OpBuilder &builder, Location loc, Value z) {
  Type f32 = builder.getF32Type();
  auto cst = [&](double v) {
    return arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(v));
  };
  Value scaled = arith::MulFOp::create(builder, loc, z, cst(-M_LOG2E));
  Value e = math::Exp2Op::create(builder, loc, scaled);
  Value d = arith::AddFOp::create(builder, loc, e, cst(1.0));
  return NVVM::RcpApproxFtzF32Op::create(builder, loc, f32, d);
}

/// act(x) of an f32 value for a kernel's 16-bit result: silu as
/// x sigmoid(x) and gelu_tanh as x sigmoid(2 u), u = sqrt(2/pi) (x +
/// 0.044715 x^3) (= 0.5 x (1 + tanh u)), by fastSigmoid; the others as
/// ActivationMath.h builds them (gelu: `gelu` when given, else math.erf).
inline Value fastActivation(OpBuilder &builder, Location loc, Activation act,
                            Value x,
                            function_ref<Value(Value)> gelu = nullptr) {
  auto cst = [&](double v) {
    return arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(v));
  };
  switch (act) {
  case Activation::silu:
    return arith::MulFOp::create(builder, loc, x, fastSigmoid(builder, loc, x));
  case Activation::gelu_tanh: {
    // 2u = x (2 sqrt(2/pi) + 2 sqrt(2/pi) 0.044715 x^2).
    double k = 2.0 * std::sqrt(2.0 / M_PI);
    Value x2 = arith::MulFOp::create(builder, loc, x, x);
    Value poly =
        math::FmaOp::create(builder, loc, x2, cst(k * 0.044715), cst(k));
    Value twoU = arith::MulFOp::create(builder, loc, x, poly);
    return arith::MulFOp::create(builder, loc, x,
                                 fastSigmoid(builder, loc, twoU));
  }
  case Activation::gelu:
    if (gelu)
      return gelu(x);
    return buildActivation(builder, loc, act, x);
  default:
    return buildActivation(builder, loc, act, x);
  }
}

/// act of an f32 value, or of each element of an f32 vector (the formulas
/// are scalar), as a kernel applies it to a result of `resultType`'s
/// element type: fastActivation for 16-bit results, ActivationMath's exact
/// formulas for f32 ones.
inline Value kernelActivation(OpBuilder &builder, Location loc, Activation act,
                              Value x, Type resultType,
                              function_ref<Value(Value)> gelu = nullptr) {
  bool fast = getElementTypeOrSelf(resultType).getIntOrFloatBitWidth() == 16;
  auto one = [&](Value y) -> Value {
    return fast ? fastActivation(builder, loc, act, y, gelu)
                : buildActivation(builder, loc, act, y);
  };
  auto vec = dyn_cast<VectorType>(x.getType());
  if (!vec)
    return one(x);
  SmallVector<Value> out;
  for (int64_t i = 0; i < vec.getNumElements(); ++i)
    out.push_back(one(vector::ExtractOp::create(builder, loc, x, i)));
  return vector::FromElementsOp::create(builder, loc, vec, out);
}

/// A kernel `name` taking `argTypes`, at the end of `module`, launched with
/// `threads` threads per CTA (its known block size and .maxntid) and, when
/// given, at most `maxRegisters` registers per thread (.maxnreg: with
/// .maxntid what setmaxnreg needs, docs/MLIR22-NOTES.md section 5.7).
/// `builder` is left in its body.
inline gpu::GPUFuncOp createKernelFunc(OpBuilder &builder, Location loc,
                                       gpu::GPUModuleOp module, StringRef name,
                                       TypeRange argTypes, int64_t threads,
                                       std::optional<int64_t> maxRegisters = {}) {
  builder.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     builder.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  auto block = builder.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1});
  func.setKnownBlockSizeAttr(block);
  func->setAttr("nvvm.maxntid", block);
  if (maxRegisters)
    func->setAttr("nvvm.maxnreg",
                  builder.getI32IntegerAttr(static_cast<int32_t>(*maxRegisters)));
  builder.setInsertionPointToStart(&func.getBody().front());
  return func;
}

class KernelBuilder {
public:
  explicit KernelBuilder(ImplicitLocOpBuilder &b) : b(b), ctx(b.getContext()) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value cstF32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, idx(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, idx(y)); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  Value eq(Value x, int64_t y) { return eq(x, idx(y)); }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value flip(Value parity) {
    return arith::XOrIOp::create(
        b, parity, arith::ConstantOp::create(b, b.getBoolAttr(true)));
  }
  /// How widenToF32 moves a bf16's bits into the high half of its f32: a
  /// shift (the pair's low half) and a mask (its high half) of the 32-bit
  /// pair, or one byte permute each (nvvm.prmt, bytes {0, 0, b0, b1} and
  /// {0, 0, b2, b3}). Both take one instruction an element; LLVM does not
  /// merge one form with the other, so a kernel that widens the same packed
  /// value twice keeps the packed value, not the f32 one, alive between the
  /// two uses.
  enum class Bf16Widening { ShiftMask, BytePermute };

  /// A vector of 16-bit floats (or f32, returned as it is) in f32. bf16
  /// pairs widen by one integer op an element (`form`), where arith.extf's
  /// cvt.f32.bf16 costs a byte permute and a shift for a pair's high half
  /// (ptxas 13); the same values, exactly. Other types and odd lengths:
  /// arith.extf.
  Value widenToF32(Value v, Bf16Widening form = Bf16Widening::ShiftMask) {
    auto type = cast<VectorType>(v.getType());
    Type elem = type.getElementType();
    if (elem.isF32())
      return v;
    int64_t count = type.getNumElements();
    auto f32s = VectorType::get({count}, b.getF32Type());
    if (!elem.isBF16() || count % 2 != 0 || type.getRank() != 1)
      return arith::ExtFOp::create(b, f32s, v);
    int64_t pairs = count / 2;
    auto wordsType = VectorType::get({pairs}, b.getI32Type());
    Value words = vector::BitCastOp::create(b, wordsType, v);
    if (form == Bf16Widening::BytePermute) {
      SmallVector<Value> halves;
      for (int64_t j = 0; j < pairs; ++j) {
        Value word = vector::ExtractOp::create(b, words, j);
        for (int64_t selector : {0x1044, 0x3244})
          halves.push_back(arith::BitcastOp::create(
              b, b.getF32Type(),
              NVVM::PermuteOp::create(b, b.getI32Type(), word, i32(0),
                                      i32(selector),
                                      NVVM::PermuteMode::DEFAULT)));
      }
      return vector::FromElementsOp::create(b, f32s, halves);
    }
    auto halfType = VectorType::get({pairs}, b.getF32Type());
    auto splat = [&](uint32_t c) -> Value {
      return arith::ConstantOp::create(
          b, DenseElementsAttr::get(
                 wordsType, b.getI32IntegerAttr(static_cast<int32_t>(c))));
    };
    Value low = vector::BitCastOp::create(
        b, halfType, arith::ShLIOp::create(b, words, splat(16)));
    Value high = vector::BitCastOp::create(
        b, halfType, arith::AndIOp::create(b, words, splat(0xffff0000u)));
    SmallVector<int64_t> interleave;
    for (int64_t j = 0; j < pairs; ++j) {
      interleave.push_back(j);
      interleave.push_back(pairs + j);
    }
    return vector::ShuffleOp::create(b, low, high, interleave);
  }

  /// 1 / sqrt(x). math.rsqrt lowers to libdevice's __nv_rsqrtf, which the
  /// NVVM serializer links from the CUDA toolkit ($CUDA_HOME, or ptxas on
  /// PATH); fusion-compile and the lit configuration point it there.
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, x); }

  void ifThen(Value cond, function_ref<void()> body) {
    scf::IfOp::create(b, cond, [&](OpBuilder &, Location) {
      body();
      scf::YieldOp::create(b);
    });
  }
  /// scf.for whose body builder is `b` itself, positioned in the body.
  ValueRange forLoop(Value lb, Value ub, Value step, ValueRange inits,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, lb, ub, step, inits,
        [&](OpBuilder &, Location, Value iv, ValueRange iters) {
          scf::YieldOp::create(b, body(iv, iters));
        });
    return loop.getResults();
  }

  /// mbarrier `id` of `group`: wait for phase `parity`; arrive.
  void wait(Value group, Value id, Value parity) {
    nvgpu::MBarrierTryWaitParityOp::create(b, group, parity, idx(10000000), id);
  }
  void arrive(Value group, Value id) {
    nvgpu::MBarrierArriveOp::create(b, nvgpu::MBarrierTokenType::get(ctx),
                                    group, id);
  }
  /// Tile `tileCount`'s phase parity of a barrier completed once per tile.
  Value tileParity(Value tileCount) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, rem(tileCount, 2),
                                 idx(0));
  }
  /// `x` (an index the same in every thread of the warp) as lane 0's, by
  /// shfl.sync: ptxas then knows it is warp-uniform (as CUTLASS's
  /// canonical_warp_group_idx does), and addresses built from it (a
  /// group's mbarriers) stay uniform, where a value from %tid.x makes a
  /// wait on them a divergent path (with wgmma in the loop, ptxas then
  /// serializes the wgmmas: C7520).
  Value warpUniform(Value x) {
    Value v = arith::IndexCastUIOp::create(b, b.getI32Type(), x);
    auto shfl = gpu::ShuffleOp::create(b, v, i32(0), i32(32), gpu::ShuffleMode::IDX);
    return arith::IndexCastUIOp::create(b, b.getIndexType(), shfl.getShuffleResult());
  }
  /// 0, opaque to LLVM (an inline-asm move with side effects). Added to a
  /// loop-invariant value once per iteration, it keeps LLVM from hoisting
  /// what is computed from that value (MMA descriptors, swizzled addresses)
  /// out of the loop, where it would hold registers across the whole loop;
  /// rebuilt per iteration, each lives from its use's start (the attention
  /// backward's K and V descriptors spilled when hoisted).
  Value opaqueZero() {
    Value zero = LLVM::InlineAsmOp::create(
                     b, b.getI32Type(), ValueRange{}, "mov.u32 $0, 0;", "=r",
                     /*has_side_effects=*/true, /*is_align_stack=*/false,
                     LLVM::tailcallkind::TailCallKind::None,
                     LLVM::AsmDialectAttr(), ArrayAttr())
                     .getRes();
    return arith::IndexCastUIOp::create(b, b.getIndexType(), zero);
  }
  /// (lo, hi) rounded to the 16-bit `elem` (bf16 or f16) by one
  /// cvt.rn.{bf16,f16}x2.f32 (a truncf of vector<2xf32> becomes two scalar
  /// conversions and a byte permute where LLVM also sees the elements used
  /// one by one).
  Value packPair(Type elem, Value lo, Value hi) {
    auto rn = NVVM::FPRoundingModeAttr::get(ctx, NVVM::FPRoundingMode::RN);
    auto type = VectorType::get({2}, elem);
    if (elem.isBF16())
      return NVVM::ConvertF32x2ToBF16x2Op::create(b, type, hi, lo, Value(), rn,
                                                  NVVM::SaturationModeAttr(),
                                                  BoolAttr());
    return NVVM::ConvertF32x2ToF16x2Op::create(b, type, hi, lo, Value(), rn,
                                               NVVM::SaturationModeAttr(),
                                               BoolAttr());
  }
  /// Four rounded pairs (vector<2xelem>) as one 16-byte chunk of 8 (the
  /// tensor-memory epilogues' row chunks).
  Value chunkOfPairs(ArrayRef<Value> pairs) {
    Value lo = vector::ShuffleOp::create(b, pairs[0], pairs[1],
                                         ArrayRef<int64_t>{0, 1, 2, 3});
    Value hi = vector::ShuffleOp::create(b, pairs[2], pairs[3],
                                         ArrayRef<int64_t>{0, 1, 2, 3});
    return vector::ShuffleOp::create(b, lo, hi,
                                     ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  }
  /// Writes the 16-byte `chunk` as chunk j (of 8) of row `row` of `block`
  /// (a view [rows, 64] of 16-bit elements in 128-byte swizzled rows): at
  /// position j ^ (row % 8).
  void storeSwizzledChunk(Value block, Value row, int64_t j, Value chunk) {
    Value position = idx(j);
    Value phys = arith::XOrIOp::create(b, position, rem(row, 8));
    vector::StoreOp::create(b, chunk, block, ValueRange{row, mul(phys, idx(8))},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  /// Warp specialization by warpgroup: warpgroup 0 (`warpgroup` is the
  /// thread's) gives registers back (setmaxnreg down to `producerRegs`) and
  /// its thread 0 (`tid`, the thread in its warpgroup) runs `produce`; the
  /// other warpgroups take `consumerRegs` and run `consume`. setmaxnreg is
  /// warpgroup-wide, so it comes before the producer warpgroup's split; that
  /// warpgroup's other threads exit, or, given `others`, its warps 1-3
  /// run it (gdpa_grad's RMSNorm-gradient prologue).
  void warpgroupRoles(Value warpgroup, Value tid, int64_t producerRegs,
                      int64_t consumerRegs, function_ref<void()> produce,
                      function_ref<void()> consume,
                      function_ref<void()> others = {}) {
    auto setMaxRegisters = [&](int64_t count, NVVM::SetMaxRegisterAction a) {
      NVVM::SetMaxRegisterOp::create(b, b.getI32IntegerAttr(count),
                                     NVVM::SetMaxRegisterActionAttr::get(ctx, a));
    };
    scf::IfOp::create(
        b, eq(warpgroup, 0),
        [&](OpBuilder &, Location) {
          setMaxRegisters(producerRegs, NVVM::SetMaxRegisterAction::decrease);
          ifThen(eq(tid, 0), produce);
          if (others)
            ifThen(ult(idx(31), tid), others);
          scf::YieldOp::create(b);
        },
        [&](OpBuilder &, Location) {
          setMaxRegisters(consumerRegs, NVVM::SetMaxRegisterAction::increase);
          consume();
          scf::YieldOp::create(b);
        });
  }
  /// A counter in global memory handing data between CTAs: the threads'
  /// earlier global writes are fenced at GPU scope, then after `barrier`
  /// `leader` adds 1 to counters[index()] (publishCount); `poller` spins
  /// until counters[index()] >= `atLeast` (an i32), then after `barrier`
  /// every thread acquires at GPU scope what the publishers wrote
  /// (awaitCount). `index` is built where the atomic is (inside the
  /// leader's branch, the poller's loop), as the row exchange always had it.
  void publishCount(Value counters, function_ref<Value()> index, Value leader,
                    function_ref<void()> barrier) {
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
    barrier();
    ifThen(leader, [&] {
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi, i32(1), counters,
                                  ValueRange{index()});
    });
  }
  void awaitCount(Value counters, function_ref<Value()> index, Value atLeast,
                  Value poller, function_ref<void()> barrier) {
    ifThen(poller, [&] {
      scf::WhileOp::create(
          b, TypeRange{}, ValueRange{},
          [&](OpBuilder &, Location, ValueRange) {
            Value seen = memref::AtomicRMWOp::create(
                b, arith::AtomicRMWKind::addi, i32(0), counters, ValueRange{index()});
            scf::ConditionOp::create(
                b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, seen, atLeast),
                ValueRange{});
          },
          [&](OpBuilder &, Location, ValueRange) { scf::YieldOp::create(b); });
    });
    barrier();
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
  }
  /// `leader` (the thread that issued them) waits until its bulk (TMA)
  /// stores have read their shared memory; a barrier after this lets the
  /// other threads overwrite it.
  void waitBulkStoresRead(Value leader) {
    ifThen(leader, [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr()); });
  }
  /// Named barrier `id` over `threads` threads.
  void namedBarrier(int64_t id, int64_t threads) {
    // Operands built in a fixed order (host compilers evaluate call
    // arguments in different orders).
    Value barrierId = i32(id);
    Value count = i32(threads);
    NVVM::BarrierOp::create(b, Type(), barrierId, count,
                            NVVM::BarrierReductionAttr(), Value());
  }
  /// Arrival, without waiting, on named barrier `first + index` over
  /// `threads` threads (the others wait there with namedBarrier).
  void namedBarrierArrive(int64_t first, Value index, int64_t threads) {
    Value barrierId = namedBarrierId(first, index);
    NVVM::BarrierArriveOp::create(b, barrierId, i32(threads));
  }
  /// Named barrier `first + index` (index: a Value, a group's number) over
  /// `threads` threads.
  void namedBarrier(int64_t first, Value index, int64_t threads) {
    Value barrierId = namedBarrierId(first, index);
    NVVM::BarrierOp::create(b, Type(), barrierId, i32(threads),
                            NVVM::BarrierReductionAttr(), Value());
  }
  /// The i32 id `first + index` of a group's named barrier.
  Value namedBarrierId(int64_t first, Value index) {
    Value firstId = i32(first);
    Value offset = arith::IndexCastOp::create(b, b.getI32Type(), index);
    return arith::AddIOp::create(b, firstId, offset);
  }

  /// Sets up the kernel's dynamic shared memory: `smem` as bytes, and the
  /// padding that aligns its base to `alignment`. The 128-byte swizzle (TMA
  /// destinations, MMA operands) needs 1024-byte aligned tiles, but the
  /// dynamic shared memory base only follows the static mbarriers at 16-byte
  /// alignment: it is padded up at run time (the launch asks for
  /// `alignment` more bytes).
  void initSharedMemory(int64_t alignment) {
    smem = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface{}, sharedSpace(ctx)));
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, smem);
    Value misalign = rem(base, alignment);
    smemPad = rem(sub(idx(alignment), misalign), alignment);
    smemBase = add(base, smemPad);
  }
  /// A view of dynamic shared memory at `byteOffset` from the aligned base.
  Value smemView(Value byteOffset, ArrayRef<int64_t> shape, Type elem) {
    auto type = MemRefType::get(shape, elem, MemRefLayoutAttrInterface{},
                                sharedSpace(ctx));
    return memref::ViewOp::create(b, type, smem, add(byteOffset, smemPad),
                                  ValueRange{});
  }

  ImplicitLocOpBuilder &b;
  MLIRContext *ctx;
  /// The dynamic shared memory (i8), the padding to its aligned base, and
  /// that base's address (for DSMEM addresses).
  Value smem, smemPad, smemBase;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_KERNELBUILDER_H
