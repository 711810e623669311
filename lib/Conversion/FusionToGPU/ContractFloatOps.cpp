//===- ContractFloatOps.cpp - allow FMA contraction in device code --------===//
//
// fusion-contract-float-ops: every arith float operation inside a gpu.module
// gets the `contract` fast-math flag, so that the NVPTX backend fuses a
// multiply feeding an add or subtract into one fma.rn (nvcc's default
// --fmad=true, Triton's enable_fp_fusion). Without the flag NVPTX emits
// mul.rn / add.rn, which ptxas may not fuse. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_FUSIONCONTRACTFLOATOPSPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;

namespace {
struct FusionContractFloatOpsPass
    : fusion::impl::FusionContractFloatOpsPassBase<FusionContractFloatOpsPass> {
  void runOnOperation() override {
    getOperation().walk([](arith::ArithFastMathInterface op) {
      arith::FastMathFlagsAttr flags = op.getFastMathFlagsAttr();
      arith::FastMathFlags set =
          flags ? flags.getValue() : arith::FastMathFlags::none;
      if (arith::bitEnumContainsAll(set, arith::FastMathFlags::contract))
        return;
      op->setAttr(op.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), set | arith::FastMathFlags::contract));
    });
  }
};
} // namespace
