//===- InitAll.h - register every fusion dialect, pass, pipeline -*- C++ -*-===//
//
// The entry points an integrator calls to make the fusion dialect and passes
// available in another MLIR tool.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_INITALL_H
#define FUSION_INITALL_H

namespace mlir {
class DialectRegistry;
namespace fusion {

/// Adds the fusion dialect to `registry`.
void registerFusionDialects(DialectRegistry &registry);

/// Registers every fusion pass and pipeline with the global pass registry.
void registerFusionPasses();

} // namespace fusion
} // namespace mlir

#endif // FUSION_INITALL_H
