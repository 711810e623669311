//===- Module.h - loaded modules and their kernels --------------*- C++ -*-===//

#ifndef FUSION_RUNTIME_MODULE_H
#define FUSION_RUNTIME_MODULE_H

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fusionrt {

/// The name a kernel was looked up by (mgpuModuleGetFunction), for messages;
/// "<unknown>" for functions the runtime did not hand out.
std::string kernelName(CUfunction function);

/// What the runtime has set on a kernel so far (all defaults for functions it
/// did not hand out), in one lookup for the launch path.
struct KernelState {
  int dynamicSharedMemoryLimit = 48 * 1024;
  bool nonPortableClusters = false;
  bool cooperative = false;
};
KernelState kernelState(CUfunction function);

/// A counter that changes whenever a module is loaded into or unloaded from
/// the driver: answers cached per kernel name hold while it stays the same.
uint64_t moduleGeneration();

/// Raises `function`'s dynamic shared-memory limit to at least `bytes`
/// (once per function and size).
CUresult ensureDynamicSharedMemory(CUfunction function, int bytes);

/// The kernels named `name` in the modules loaded into `context` (MLIR 22
/// loads a library's device image from a global constructor, before its host
/// code runs), registered as if handed out by mgpuModuleGetFunction. Empty if
/// no loaded module has one.
std::vector<CUfunction> findLoadedKernels(CUcontext context, const std::string &name);

/// Kernels whose CTAs wait for one another (fusionrtCooperativeGridLimit)
/// are launched cooperatively: the driver starts the grid only when all of
/// it is resident, so a CTA never waits on one that cannot run.
void markCooperative(CUfunction function);
bool isCooperative(CUfunction function);

/// Allows non-portable cluster sizes (more than 8 CTAs) for `function` (once).
CUresult allowNonPortableClusters(CUfunction function);

} // namespace fusionrt

#endif // FUSION_RUNTIME_MODULE_H
