//===- FusionPlugin.cpp - the fusion dialect and passes as mlir-opt plugins ===//
//
// FusionPlugin.so makes another MLIR tool parse the fusion dialect and run its
// passes and pipelines, with no rebuild of that tool. Debian's upstream
// `mlir-opt` 22 loads it with either flag (or both):
//
//   mlir-opt --load-dialect-plugin=FusionPlugin.so in.mlir
//   mlir-opt --load-pass-plugin=FusionPlugin.so \
//       --pass-pipeline='builtin.module(fusion-fuse)' in.mlir
//
// The dialect entry point registers the passes too, so that one flag is
// enough for parsing and running. Passes are named in --pass-pipeline:
// mlir-opt creates its per-pass flags (--fusion-fuse) before it loads any
// plugin. The plugin links the same shared libMLIR as the
// tool; it holds only the fusion dialect, passes and lowerings.
//
//===----------------------------------------------------------------------===//

#include "fusion/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

namespace {
void registerPassesOnce() {
  static bool registered = [] {
    fusion::registerFusionPasses();
    return true;
  }();
  (void)registered;
}
} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Fusion", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            fusion::registerFusionDialects(*registry);
            registerPassesOnce();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FusionPasses", LLVM_VERSION_STRING,
          []() { registerPassesOnce(); }};
}
