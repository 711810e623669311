//===- ExternDynamicSharedMemory.cpp - dynamic shared memory as extern ----===//
//
// fusion-extern-dynamic-shared-memory: the zero-sized shared globals that
// convert-gpu-to-nvvm makes for gpu.dynamic_shared_memory get external
// linkage, so that NVPTX declares them `.extern .shared ... []` (CUDA's
// dynamic shared memory, placed after every static) instead of demoting them
// to 1-byte statics laid out before the kernels' mbarriers. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_FUSIONEXTERNDYNAMICSHAREDMEMORYPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;

namespace {
/// NVVM's shared address space.
constexpr unsigned kSharedAddressSpace = 3;

struct FusionExternDynamicSharedMemoryPass
    : fusion::impl::FusionExternDynamicSharedMemoryPassBase<
          FusionExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kSharedAddressSpace || !array ||
          array.getNumElements() != 0 || !global.getInitializerRegion().empty())
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setDsoLocal(false);
    });
  }
};
} // namespace
