//===- Sm100Tcgen05.cpp - the sm_100a MMA engine: tcgen05 -----------------===//
//
// Blackwell's fifth-generation tensor core, cta_group::1. One thread issues
// tcgen05.mma kind::f16 with M = 128 and N = tile_n (a multiple of 16 up to
// 256) from the 128-byte swizzled tiles TMA wrote, into an f32 accumulator
// in tensor memory: 128 lanes (row i in lane i) x tile_n columns. Per K step
// (64) the four k16 MMAs of the step go out back to back; tcgen05.commit
// then makes an mbarrier arrive once they (and every MMA before them) have
// completed, which is how the issuing thread hands a ring slot back to the
// producer and a finished accumulator to the epilogue, without waiting.
//
// Operand descriptors (MmaDescriptors.h, docs/SM100A.md section 2.1): the
// sm_90a wgmma descriptor of the same tile plus the version bit 46. The
// constant high part comes from tcgen05SmemDescriptor with the byte offsets
// the sm_90a kernels run with on the H200 (nvgpu's descriptors of the same
// tensor maps: stride 1024 bytes, 8 rows of 128; leading 8192 bytes, the
// next 64-column box of an MN-major tile, 16384 for a K-major A where it is
// unused); the shared-memory address >> 4 is added at run time. Per k16 a
// K-major descriptor steps 32 bytes (2 units) inside its swizzled rows, an
// MN-major one 16 K rows (2048 bytes, 128 units).
//
// Reading back (tcgen05.ld.sync.aligned.32x32b.x32): warp w may access
// lanes 32 (w % 4) .. + 31 only, and lane l of the warp receives lane
// 32 (w % 4) + l, 32 consecutive columns as 32 registers: one accumulator
// row per thread. A TMEM address is lane << 16 | column.
//
// Everything is an NVVM op of MLIR 22 (nvvm.tcgen05.*); no inline PTX.
//
//===----------------------------------------------------------------------===//

#include "MmaEngine.h"

#include "fusion/Target/NVPTX/MmaDescriptors.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

class Sm100Tcgen05Engine : public TensorMemoryMmaEngine {
public:
  explicit Sm100Tcgen05Engine(const MmaShape &shape) : shape(shape) {
    Tcgen05InstrFields f;
    f.a = f.b = shape.abType.isBF16() ? MmaInputType::BF16 : MmaInputType::F16;
    f.d = MmaAccumulatorType::F32;
    // A [M, K] row-major is K-major, stored [K, M] (transpose_lhs) M-major;
    // B [K, N] row-major is N-major, stored [N, K] (transpose_rhs) K-major.
    f.aMajor = shape.transposeA ? OperandMajor::MN : OperandMajor::K;
    f.bMajor = shape.transposeB ? OperandMajor::K : OperandMajor::MN;
    f.m = kRows;
    f.n = shape.tileN;
    idesc = tcgen05InstrDescriptor(f);
  }

  StringRef name() const override { return "tcgen05"; }

  void allocate(KernelBuilder &kb, Value slot, int64_t columns) override {
    // Operands built in a fixed order (not as call arguments, whose order
    // of evaluation differs between host compilers).
    Value address = sharedPointer(kb, slot);
    Value count = LLVM::ConstantOp::create(kb.b, kb.b.getI32Type(),
                                           kb.b.getI32IntegerAttr(columns));
    NVVM::Tcgen05AllocOp::create(kb.b, address, count);
    NVVM::Tcgen05RelinquishAllocPermitOp::create(kb.b);
  }

  Value loadBase(KernelBuilder &kb, Value slot) override {
    return LLVM::LoadOp::create(kb.b, tmemPointer(kb), sharedPointer(kb, slot));
  }

  void deallocate(KernelBuilder &kb, Value base, int64_t columns) override {
    NVVM::Tcgen05DeallocOp::create(
        kb.b, base,
        LLVM::ConstantOp::create(kb.b, kb.b.getI32Type(),
                                 kb.b.getI32IntegerAttr(columns)));
  }

  void fenceBefore(KernelBuilder &kb) override {
    NVVM::Tcgen05FenceOp::create(kb.b,
                                 NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
  }
  void fenceAfter(KernelBuilder &kb) override {
    NVVM::Tcgen05FenceOp::create(kb.b, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
  }

  Value columnOffset(KernelBuilder &kb, Value base, Value columns) override {
    return addToAddress(kb, base,
                        arith::IndexCastOp::create(kb.b, kb.b.getI32Type(), columns));
  }

  void issue(KernelBuilder &kb, Value aAddr, Value bAddr, Value acc,
             Value accumulate) override {
    ImplicitLocOpBuilder &b = kb.b;
    // Leading byte offsets as the sm_90a kernels' descriptors have them
    // (see the file comment); the stride is 8 rows of 128 bytes.
    SmemDescriptorFields fa, fb;
    fa.leadingBytes = shape.transposeA ? kBoxBytes : kRows * kRowBytes;
    fb.leadingBytes = kBoxBytes;
    fa.strideBytes = fb.strideBytes = 8 * kRowBytes;
    Value descA = descriptor(kb, aAddr, tcgen05SmemDescriptor(fa));
    Value descB = descriptor(kb, bAddr, tcgen05SmemDescriptor(fb));
    const int64_t kMajorStep = 2, mnMajorStep = 128;
    int64_t stepA = shape.transposeA ? mnMajorStep : kMajorStep;
    int64_t stepB = shape.transposeB ? kMajorStep : mnMajorStep;
    Value instr = LLVM::ConstantOp::create(
        b, b.getI32Type(), b.getI32IntegerAttr(static_cast<int32_t>(idesc)));
    Value yes = LLVM::ConstantOp::create(b, b.getI1Type(), b.getBoolAttr(true));
    for (int64_t k = 0; k < shape.tileK / 16; ++k) {
      Value dA = descA, dB = descB;
      if (k) {
        dA = LLVM::AddOp::create(b, descA, i64(kb, k * stepA));
        dB = LLVM::AddOp::create(b, descB, i64(kb, k * stepB));
      }
      // Only the step's first k16 may start the accumulator afresh.
      NVVM::Tcgen05MMAOp::create(
          b, NVVM::Tcgen05MMAKind::F16, NVVM::CTAGroupKind::CTA_1,
          NVVM::Tcgen05MMACollectorOp::DISCARD, /*aShift=*/false, acc, dA, dB,
          instr, k ? yes : accumulate, /*scaleInputD=*/Value(),
          /*disableOutputLane=*/Value());
    }
  }

  void commit(KernelBuilder &kb, Value group, Value id) override {
    Value address =
        nvgpu::MBarrierGetOp::create(kb.b, kb.b.getI32Type(), group, id);
    Value bar = LLVM::IntToPtrOp::create(
        kb.b, LLVM::LLVMPointerType::get(kb.ctx, 3), ValueRange{address});
    NVVM::Tcgen05CommitOp::create(kb.b, bar, /*multicastMask=*/Value(),
                                  NVVM::CTAGroupKind::CTA_1);
  }

  Value load(KernelBuilder &kb, Value acc, Value warp,
             int64_t column0) override {
    ImplicitLocOpBuilder &b = kb.b;
    // Lane 32 (warp % 4) in the high half, the column in the low one.
    Value lanes = kb.mul(kb.rem(warp, 4), kb.idx(32 << 16));
    Value offset = kb.add(lanes, kb.idx(column0));
    Value address = addToAddress(
        kb, acc, arith::IndexCastOp::create(b, b.getI32Type(), offset));
    auto words = VectorType::get({kColumnsPerLoad}, b.getI32Type());
    Value v = NVVM::Tcgen05LdOp::create(b, words, /*pack=*/false,
                                        NVVM::Tcgen05LdStShape::SHAPE_32X32B,
                                        address, /*offset=*/Value());
    return vector::BitCastOp::create(
        b, VectorType::get({kColumnsPerLoad}, b.getF32Type()), v);
  }

  void waitLoads(KernelBuilder &kb) override {
    NVVM::Tcgen05WaitOp::create(kb.b, NVVM::Tcgen05WaitKind::LOAD);
  }

  uint32_t instrDescriptor() const override { return idesc; }

private:
  static constexpr int64_t kRows = 128, kRowBytes = 128,
                           kBoxBytes = 64 * kRowBytes, kColumnsPerLoad = 32;

  static Value i64(KernelBuilder &kb, int64_t v) {
    return LLVM::ConstantOp::create(kb.b, kb.b.getI64Type(),
                                    kb.b.getI64IntegerAttr(v));
  }
  static Type tmemPointer(KernelBuilder &kb) {
    return LLVM::LLVMPointerType::get(kb.ctx, 6);
  }
  /// A shared-memory byte address (index) as a pointer.
  static Value sharedPointer(KernelBuilder &kb, Value address) {
    Value wide = arith::IndexCastOp::create(kb.b, kb.b.getI64Type(), address);
    return LLVM::IntToPtrOp::create(kb.b, LLVM::LLVMPointerType::get(kb.ctx, 3),
                                    ValueRange{wide});
  }
  /// A TMEM address plus `offset` (i32): TMEM pointers are 32 bits, lane in
  /// the high half, column in the low; ptxas folds constant offsets into
  /// the load's address (docs/SM100A.md section 1).
  static Value addToAddress(KernelBuilder &kb, Value tmem, Value offset) {
    Value bits = LLVM::PtrToIntOp::create(kb.b, kb.b.getI32Type(), tmem);
    return LLVM::IntToPtrOp::create(kb.b, tmemPointer(kb),
                                    ValueRange{LLVM::AddOp::create(kb.b, bits, offset)});
  }
  /// The descriptor of the tile at shared-memory byte address `address`:
  /// the constant fields plus the start address >> 4 (14 bits: shared
  /// memory addresses are below 2^18).
  static Value descriptor(KernelBuilder &kb, Value address, uint64_t constant) {
    ImplicitLocOpBuilder &b = kb.b;
    Value wide = arith::IndexCastOp::create(b, b.getI64Type(), address);
    Value start = LLVM::AndOp::create(
        b, LLVM::LShrOp::create(b, wide, i64(kb, 4)),
        i64(kb, static_cast<int64_t>(smem_desc::kFieldMask)));
    return LLVM::OrOp::create(b, start, i64(kb, static_cast<int64_t>(constant)));
  }

  MmaShape shape;
  uint32_t idesc = 0;
};

} // namespace

std::unique_ptr<TensorMemoryMmaEngine>
mlir::fusion::createSm100Tcgen05Engine(const MmaShape &shape,
                                       std::string &whyNot) {
  if (shape.tileK % 16 != 0) {
    whyNot = "expected tile_k a multiple of 16 (tcgen05.mma kind::f16 takes "
             "K = 16), but got " +
             std::to_string(shape.tileK);
    return nullptr;
  }
  Tcgen05InstrFields f;
  f.m = 128;
  f.n = shape.tileN;
  if (std::optional<std::string> why = checkTcgen05Instr(f)) {
    whyNot = *why;
    return nullptr;
  }
  return std::make_unique<Sm100Tcgen05Engine>(shape);
}
