//===- fusion-fuzz.cpp - libFuzzer target over the compiler ---------------===//
//
// Every input is a .mlir file; each one goes through what `fusion-opt`,
// `fusion-compile` and `fusion-runner` do with a user's file, in process:
// parse and verify (every op's verifier), then one of four stages, picked by
// a hash of the input (so that a reproducer replays the same stage, and the
// campaign's inputs spread over the stages at a quarter of the cost each):
//   0. fusion-fuse, fusion-plan-kernels and convert-fusion-to-gpu (the
//      planner, the cost model and the kernel generators), on a copy; one
//      input in eight of these (one in 32 overall) instead goes through the
//      whole fusion-to-gpu pipeline with format=isa, through NVPTX to PTX;
//   1. fusion-runner's CPU path: its entry checks, the f32 entry wrappers and
//      the reference lowering (convert-fusion-to-linalg and the upstream
//      passes down to the LLVM dialect), without the JIT;
//   2. convert-fusion-to-gpu alone, as `fusion-opt --convert-fusion-to-gpu`
//      runs it on the user's own #fusion.kernel_config (no planner);
//   3. fusion-fuse alone, then verify.
// With FUSION_FUZZ_ALL_STAGES=1 (scripts/fuzz.sh's replay of the saved
// reproducers, test/fuzz/replay-regressions.test) every input runs every stage.
//
// Diagnostics are swallowed: a diagnostic is a correct answer. A crash, an
// abort (`LLVM ERROR`, exit), a sanitizer report, a timeout (libFuzzer's
// -timeout, 30 s in scripts/fuzz.sh) or running out of memory
// (-rss_limit_mb) is a bug, and libFuzzer saves the input that caused it.
//
// Mutations: Mutator.cpp edits the text where the compiler's decisions live
// (shapes, element types, integer and float attributes, enum keywords,
// operands, whole lines) and otherwise falls back on libFuzzer's byte
// mutations. The seed corpus is the lit suite, split at `// -----`
// (scripts/fuzz.sh builds it). See test/fuzz/README.md.
//
//===----------------------------------------------------------------------===//

#include "Mutator.h"

#include "../fusion-runner/Runner.h"
#include "fusion/InitAll.h"
#include "fusion/Pipelines/Pipelines.h"

#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/Transforms/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "fusion/Tools/UpstreamParserGuard.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;

namespace {

DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *r = new DialectRegistry();
    registerAllDialects(*r);
    registerAllExtensions(*r);
    registerAllToLLVMIRTranslations(*r);
    fusion::registerFusionDialects(*r);
    return r;
  }();
  return *r;
}

/// Runs `build`'s passes on a copy of `module`; the result is ignored (a
/// failure with a diagnostic is an answer), only what happens on the way counts.
template <typename Build>
void runOnCopy(ModuleOp module, Build build) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  PassManager pm(module->getContext());
  build(pm);
  if (succeeded(pm.run(*copy)))
    (void)verify(*copy);
}

void runnerPath(ModuleOp module) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  std::vector<std::string> entries;
  std::vector<func::FuncOp> funcs(copy->getOps<func::FuncOp>().begin(),
                                  copy->getOps<func::FuncOp>().end());
  for (func::FuncOp f : funcs) {
    if (f.isExternal())
      continue;
    llvm::Expected<func::FuncOp> entry =
        fusion_runner::lookupEntry(*copy, f.getSymName(), "@f");
    if (!entry) {
      llvm::consumeError(entry.takeError());
      continue;
    }
    fusion_runner::addEntryWrapper(*entry);
    entries.push_back(f.getSymName().str());
  }
  if (!entries.empty())
    (void)fusion_runner::lowerToLLVM(*copy, entries);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllPasses();
  fusion::registerFusionPasses();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  (void)registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler swallow(&context, [](Diagnostic &) { return success(); });

  // What our tools refuse before parsing, as libMLIR's parser would crash
  // on it (fusion/Tools/UpstreamParserGuard.h).
  StringRef text(reinterpret_cast<const char *>(data), size);
  if (fusion::findUpstreamParserHazard(text))
    return 0;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          StringRef(reinterpret_cast<const char *>(data), size), "input.mlir"),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return 0;

  auto planAndConvert = [](PassManager &pm) {
    fusion::buildFusionFusePipeline(pm, fusion::FusionFuseOptions());
    pm.addPass(fusion::createFusionPlanKernelsPass());
    pm.addPass(fusion::createConvertFusionToGPUPass());
  };
  auto toPtx = [](PassManager &pm) {
    fusion::buildFusionFusePipeline(pm, fusion::FusionFuseOptions());
    fusion::FusionToGPUOptions options;
    options.format = "isa";
    fusion::buildFusionToGPUPipeline(pm, options);
  };
  auto convertOnly = [](PassManager &pm) {
    pm.addPass(fusion::createConvertFusionToGPUPass());
  };
  auto fuseOnly = [](PassManager &pm) {
    fusion::buildFusionFusePipeline(pm, fusion::FusionFuseOptions());
  };
  // FUSION_FUZZ_ALL_STAGES=1 (the regression replay): every stage.
  static const bool allStages = [] {
    const char *v = std::getenv("FUSION_FUZZ_ALL_STAGES");
    return v && *v && *v != '0';
  }();
  if (allStages) {
    runOnCopy(*module, planAndConvert);
    runOnCopy(*module, toPtx);
    runnerPath(*module);
    runOnCopy(*module, convertOnly);
    runOnCopy(*module, fuseOnly);
    return 0;
  }
  size_t hash =
      llvm::hash_value(StringRef(reinterpret_cast<const char *>(data), size));
  switch (hash % 4) {
  case 0:
    if ((hash / 4) % 8 == 0)
      runOnCopy(*module, toPtx);
    else
      runOnCopy(*module, planAndConvert);
    break;
  case 1:
    runnerPath(*module);
    break;
  case 2:
    runOnCopy(*module, convertOnly);
    break;
  default:
    runOnCopy(*module, fuseOnly);
    break;
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return fusion_fuzz::mutate(data, size, maxSize, seed);
}
