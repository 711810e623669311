//===- Passes.h - fusion conversion passes ----------------------*- C++ -*-===//

#ifndef FUSION_CONVERSION_PASSES_H
#define FUSION_CONVERSION_PASSES_H

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fusion {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "fusion/Conversion/Passes.h.inc"

} // namespace mlir::fusion

#endif // FUSION_CONVERSION_PASSES_H
