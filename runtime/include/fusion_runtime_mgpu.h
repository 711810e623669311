/*===- fusion_runtime_mgpu.h - the mgpu* host ABI of MLIR 22 ------*- C -*-===//
 *
 * The entry points that code lowered by MLIR 22.1.8 (gpu-to-llvm, the
 * SelectObject translation of gpu.launch_func / gpu.binary, and the nvgpu
 * TMA descriptor lowering) calls. The parameter lists match the LLVM IR
 * `declare`s MLIR 22 emits (docs: MLIR22-NOTES.md section 7.2); they differ
 * from older LLVM releases, so recheck them when MLIR is upgraded.
 *
 * CUDA handles appear as `void *` so that this header needs no cuda.h; the
 * implementation includes this header and checks it against the driver types.
 * Integers follow MLIR: `index` is intptr_t, i64 is int64_t, i8 is bool.
 *
 * None of these return an error; see fusion_runtime.h for how failures are
 * recorded and read.
 *===----------------------------------------------------------------------===*/

#ifndef FUSION_RUNTIME_MGPU_H
#define FUSION_RUNTIME_MGPU_H

#include "fusion_runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Modules. Loading the same image twice in one context returns the cached
 * module (reference counted); unload releases it at the last reference. */
FUSIONRT_EXPORT void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
FUSIONRT_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel);
FUSIONRT_EXPORT void mgpuModuleUnload(void *module);
FUSIONRT_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);

/* Launches. `smem` is the dynamic shared memory in bytes; the runtime raises
 * the kernel's limit above 48 KiB, and allows non-portable cluster sizes
 * (more than 8 CTAs) itself, since MLIR 22 does not pass that flag. */
FUSIONRT_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                                      intptr_t blockZ, int32_t smem, void *stream,
                                      void **params, void **extra, size_t paramsCount);
FUSIONRT_EXPORT void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                                             intptr_t clusterY, intptr_t clusterZ,
                                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                                             int32_t smem, void *stream, void **params,
                                             void **extra);

/* Streams and events. */
FUSIONRT_EXPORT void *mgpuStreamCreate(void);
FUSIONRT_EXPORT void mgpuStreamDestroy(void *stream);
FUSIONRT_EXPORT void mgpuStreamSynchronize(void *stream);
FUSIONRT_EXPORT void mgpuStreamWaitEvent(void *stream, void *event);
FUSIONRT_EXPORT void *mgpuEventCreate(void);
FUSIONRT_EXPORT void mgpuEventDestroy(void *event);
FUSIONRT_EXPORT void mgpuEventSynchronize(void *event);
FUSIONRT_EXPORT void mgpuEventRecord(void *event, void *stream);

/* Memory. `isHostShared` allocates managed memory. */
FUSIONRT_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
FUSIONRT_EXPORT void mgpuMemFree(void *ptr, void *stream);
FUSIONRT_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
FUSIONRT_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
FUSIONRT_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
FUSIONRT_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
FUSIONRT_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                               int64_t elementSizeBytes);
FUSIONRT_EXPORT void mgpuMemHostUnregister(void *ptr);
FUSIONRT_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                                 int64_t elementSizeBytes);

/* Selects this thread's device (as fusionrtSetDevice). */
FUSIONRT_EXPORT void mgpuSetDefaultDevice(int32_t device);

/* Tensor maps. The memref form reads a ranked memref descriptor
 * {allocated, aligned, offset, sizes[rank], strides[rank]} and row-major box
 * sizes, and returns a device pointer to the encoded CUtensorMap (descriptors
 * with identical contents share one allocation). The plain form takes CUDA's
 * own argument order (dimension 0 innermost, byte strides of dimensions
 * 1..rank-1) and encodes into host memory. */
FUSIONRT_EXPORT void *mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *descriptor,
                                                     int64_t tensorDataType,
                                                     int64_t interleave, int64_t swizzle,
                                                     int64_t l2Promotion, int64_t oobFill,
                                                     int64_t *inputBoxDims);
FUSIONRT_EXPORT void mgpuTensorMapEncodeTiled(void *tensorMap, int tensorDataType,
                                              uint32_t tensorRank, void *globalAddress,
                                              const uint64_t *globalDim,
                                              const uint64_t *globalStrides,
                                              const uint32_t *boxDim,
                                              const uint32_t *elementStrides, int interleave,
                                              int swizzle, int l2Promotion, int oobFill);

/* Persistent kernels. The number of SMs of the selected device (cached per
 * device), which the lowered host code uses as the grid size of persistent
 * kernels (at most one CTA per SM, each looping over tiles). On failure it
 * records the error like the other mgpu* calls and returns 1, a grid that
 * is still correct, only slow. Not part of MLIR's ABI: convert-fusion-to-gpu
 * declares and calls it. */
FUSIONRT_EXPORT int32_t fusionrtMultiprocessorCount(void);

/* Persistent cluster kernels. How many clusters of `clusterSize` CTAs (along
 * x) of kernel `kernel`, `blockThreads` threads and `sharedMemoryBytes` of
 * dynamic shared memory each, the selected device holds at once
 * (cuOccupancyMaxActiveClusters, cached). GPCs hold whole clusters, so this is
 * usually below SMs / clusterSize; a persistent grid of more clusters runs the
 * extra clusters' share in a second wave. The kernel is looked up by name in
 * the modules loaded in the current context (MLIR 22 loads them from a global
 * constructor); where several have it, the smallest count is returned. On
 * failure (no such kernel, a shape that cannot be resident, no driver) it
 * records the error like the mgpu* calls and returns 1, a grid that is still
 * correct. Not part of MLIR's ABI: convert-fusion-to-gpu declares and calls
 * it. */
/* Persistent kernels whose CTAs wait for one another (the norm epilogue whose
 * statistics go through global memory). Marks kernel `kernel` (looked up as
 * for fusionrtMaxActiveClusters) for cooperative launch, so that
 * mgpuLaunchKernel starts its grid only when all of it is resident (a CTA
 * never spins on one that cannot run, whatever else shares the GPU), and
 * returns how many of its CTAs (`blockThreads` threads, `sharedMemoryBytes`
 * of dynamic shared memory) the device holds at once: the largest grid a
 * cooperative launch accepts. Fewer than `minimumBlocks` (the CTAs that must
 * run at once for the kernel to finish: the tiles of one row) is a
 * FUSIONRT_ERROR_LIMIT_EXCEEDED failure. On failure it records the error and
 * returns 1. Not part of MLIR's ABI: convert-fusion-to-gpu declares and
 * calls it. */
FUSIONRT_EXPORT int32_t fusionrtCooperativeGridLimit(const char *kernel,
                                                     int32_t blockThreads,
                                                     int32_t sharedMemoryBytes,
                                                     int32_t minimumBlocks);

FUSIONRT_EXPORT int32_t fusionrtMaxActiveClusters(const char *kernel, int32_t clusterSize,
                                                  int32_t blockThreads,
                                                  int32_t sharedMemoryBytes);

/* Side streams (a GEMM and a kernel beside it). The next side stream this
 * thread forks (mgpuStreamCreate while the host function's first stream is
 * live) gets the greatest priority if `greatest` is nonzero, else the least;
 * without a request, the greatest. Not part of MLIR's ABI:
 * convert-fusion-to-gpu calls it before each side chain's `gpu.wait async`. */
FUSIONRT_EXPORT void fusionrtNextSideStreamPriority(int32_t greatest);

#ifdef __cplusplus
}
#endif

#endif /* FUSION_RUNTIME_MGPU_H */
