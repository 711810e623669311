//===- Sm100Tcgen05.cpp - the sm_100a MMA engine: tcgen05 -----------------===//
//
// Blackwell's fifth-generation tensor core, cta_group::1. One thread issues
// tcgen05.mma kind::f16 with M = 128 and N = tile_n (a multiple of 16 up to
// 256) from the 128-byte swizzled tiles TMA wrote, into an f32 accumulator
// in tensor memory: 128 lanes (row i in lane i) x tile_n columns. A wider
// tile (a norm row of up to 512 columns, one accumulator stage) takes two
// MMAs per k16, split at a 64-column box of B: columns [0, n0) and
// [n0, tile_n), n0 = 64 x ceil(boxes / 2), the second one's B operand
// n0 x 128 bytes further (n0 / 64 boxes of an N-major B, n0 rows of a
// K-major one) and its accumulator n0 columns further. Per K step (64) the
// k16 MMAs of the step go out back to back; tcgen05.commit
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
// row per thread. A TMEM address is lane << 16 | column. tcgen05.st
// 32x32b.x32 writes such a row back (the norm epilogue keeps its
// element-wise result there between its passes).
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
    for (auto [column0, columns] : mmaParts(shape.tileN)) {
      f.n = columns;
      parts.push_back({column0, tcgen05InstrDescriptor(f)});
    }
  }

  /// The MMAs of one k16 over a tile of `tileN` columns: (first column,
  /// columns) each; one where tcgen05 takes the whole tile (N <= 256), else
  /// two split at a 64-column box.
  static SmallVector<std::pair<int64_t, int64_t>, 2> mmaParts(int64_t tileN) {
    if (tileN <= kMaxMmaN)
      return {{0, tileN}};
    int64_t boxes = (tileN + kBoxColumns - 1) / kBoxColumns;
    int64_t first = kBoxColumns * ((boxes + 1) / 2);
    return {{0, first}, {first, tileN - first}};
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
    fa.leadingBytes = shape.transposeA
                          ? (shape.aBoxBytes ? shape.aBoxBytes : kBoxBytes)
                          : kRows * kRowBytes;
    fb.leadingBytes = kBoxBytes;
    fa.strideBytes = fb.strideBytes = 8 * kRowBytes;
    Value descA = descriptor(kb, aAddr, tcgen05SmemDescriptor(fa));
    Value descB = descriptor(kb, bAddr, tcgen05SmemDescriptor(fb));
    const int64_t kMajorStep = 2, mnMajorStep = 128;
    int64_t stepA = shape.transposeA ? mnMajorStep : kMajorStep;
    int64_t stepB = shape.transposeB ? kMajorStep : mnMajorStep;
    SmallVector<Value, 2> instr, partB, partAcc;
    for (auto [i, part] : llvm::enumerate(parts)) {
      instr.push_back(LLVM::ConstantOp::create(
          b, b.getI32Type(),
          b.getI32IntegerAttr(static_cast<int32_t>(part.second))));
      // The part's B columns start column0 x 128 bytes further (both
      // majors), its accumulator column0 columns further.
      partB.push_back(i ? LLVM::AddOp::create(
                              b, descB, i64(kb, part.first * kRowBytes / 16))
                              .getResult()
                        : descB);
      partAcc.push_back(i ? columnOffset(kb, acc, kb.idx(part.first)) : acc);
    }
    Value yes = LLVM::ConstantOp::create(b, b.getI1Type(), b.getBoolAttr(true));
    for (int64_t k = 0; k < shape.tileK / 16; ++k) {
      for (size_t p = 0; p < parts.size(); ++p) {
        Value dA = descA, dB = partB[p];
        if (k) {
          dA = LLVM::AddOp::create(b, descA, i64(kb, k * stepA));
          dB = LLVM::AddOp::create(b, partB[p], i64(kb, k * stepB));
        }
        // Only the step's first k16 may start the accumulator afresh.
        NVVM::Tcgen05MMAOp::create(
            b, NVVM::Tcgen05MMAKind::F16, NVVM::CTAGroupKind::CTA_1,
            NVVM::Tcgen05MMACollectorOp::DISCARD, /*aShift=*/false, partAcc[p],
            dA, dB, instr[p], k ? yes : accumulate, /*scaleInputD=*/Value(),
            /*disableOutputLane=*/Value());
      }
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
    return loadColumns(kb, acc, warp, column0, kColumnsPerLoad);
  }

  Value loadColumns(KernelBuilder &kb, Value acc, Value warp, int64_t column0,
                    int64_t columns) override {
    ImplicitLocOpBuilder &b = kb.b;
    Value address = rowAddress(kb, acc, warp, column0);
    auto words = VectorType::get({columns}, b.getI32Type());
    Value v = NVVM::Tcgen05LdOp::create(b, words, /*pack=*/false,
                                        NVVM::Tcgen05LdStShape::SHAPE_32X32B,
                                        address, /*offset=*/Value());
    return vector::BitCastOp::create(
        b, VectorType::get({columns}, b.getF32Type()), v);
  }

  void waitLoads(KernelBuilder &kb) override {
    NVVM::Tcgen05WaitOp::create(kb.b, NVVM::Tcgen05WaitKind::LOAD);
  }

  void store(KernelBuilder &kb, Value acc, Value warp, int64_t column0,
             Value values) override {
    ImplicitLocOpBuilder &b = kb.b;
    Value words = vector::BitCastOp::create(
        b, VectorType::get({kColumnsPerLoad}, b.getI32Type()), values);
    NVVM::Tcgen05StOp::create(b, /*unpack=*/false,
                              NVVM::Tcgen05LdStShape::SHAPE_32X32B,
                              rowAddress(kb, acc, warp, column0), words,
                              /*offset=*/Value());
  }

  void waitStores(KernelBuilder &kb) override {
    NVVM::Tcgen05WaitOp::create(kb.b, NVVM::Tcgen05WaitKind::STORE);
  }

  uint32_t instrDescriptor() const override { return parts.front().second; }

private:
  static constexpr int64_t kRows = 128, kRowBytes = 128,
                           kBoxBytes = 64 * kRowBytes, kColumnsPerLoad = 32,
                           kBoxColumns = 64, kMaxMmaN = 256;

  /// This warp's 32 lanes of the accumulator at `acc`, from column
  /// `column0`: lane 32 (warp % 4) in the high half, the column in the low
  /// one.
  static Value rowAddress(KernelBuilder &kb, Value acc, Value warp,
                          int64_t column0) {
    Value lanes = kb.mul(kb.rem(warp, 4), kb.idx(32 << 16));
    Value offset = kb.add(lanes, kb.idx(column0));
    return addToAddress(
        kb, acc, arith::IndexCastOp::create(kb.b, kb.b.getI32Type(), offset));
  }

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
  /// The MMAs of a k16: (first column, instruction descriptor).
  SmallVector<std::pair<int64_t, uint32_t>, 2> parts;
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
  for (auto part : Sm100Tcgen05Engine::mmaParts(shape.tileN)) {
    f.n = part.second;
    if (std::optional<std::string> why = checkTcgen05Instr(f)) {
      whyNot = *why;
      return nullptr;
    }
  }
  return std::make_unique<Sm100Tcgen05Engine>(shape);
}
