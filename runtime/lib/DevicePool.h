//===- DevicePool.h - stream-ordered, cached device allocations -*- C++ -*-===//
//
// Allocations the compiled code makes on a stream (its workspaces and
// intermediates, `gpu.alloc async`) come from one CUDA memory pool per device
// that keeps what is freed (release threshold: no limit), so a call that
// allocates 33 MB of row statistics pays for the mapping once, not per call.
// The pool is the runtime's own, not the device's default pool, so PyTorch
// or other users of cudaMallocAsync see no change. fusionrtReleaseCachedMemory
// trims it (like torch.cuda.empty_cache). Devices without memory pools, and
// allocations on the null stream, use cuMemAlloc as before.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_DEVICEPOOL_H
#define FUSION_RUNTIME_DEVICEPOOL_H

#include <cuda.h>

#include <cstdint>

namespace fusionrt {

/// Allocates `bytes` on `stream` from the current device's pool (creating it
/// on first use). Sets `*pooled` to false and returns CUDA_SUCCESS without
/// allocating when the device has no memory pools: the caller falls back to
/// cuMemAlloc. `*failedCall` names the failing driver call.
CUresult poolAllocate(CUdevice device, CUstream stream, uint64_t bytes, CUdeviceptr *ptr,
                      bool *pooled, const char **failedCall);

/// True if `ptr` came from poolAllocate and was not yet freed; forgets it.
bool takePooledAllocation(CUdeviceptr ptr);

/// Returns every pool's unused memory to the driver.
CUresult trimPools();

} // namespace fusionrt

#endif // FUSION_RUNTIME_DEVICEPOOL_H
