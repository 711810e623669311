//===- Memory.cpp - device memory, copies, fills, host registration -------===//
//
// Allocation, copies, fills and host registration start work and are skipped
// while a failure is pending; freeing and unregistering always run.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "DevicePool.h"
#include "MemRef.h"
#include "Status.h"
#include "fusion_runtime_mgpu.h"

#include <string>

using namespace fusionrt;

namespace {

CUdeviceptr devicePointer(void *ptr) { return reinterpret_cast<CUdeviceptr>(ptr); }

/// The bytes a strided memref spans, from its first element to its last.
/// Returns false (and records why) for descriptors that cannot be spanned.
bool memrefSpan(const char *entryPoint, int64_t rank, void *descriptor, int64_t elementSizeBytes,
                char **begin, uint64_t *bytes) {
  std::string prefix = std::string(entryPoint) + ": ";
  if (!descriptor || rank < 0 || elementSizeBytes <= 0) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  prefix + "expected a memref descriptor, rank >= 0 and element size >= 1, but "
                           "got " + (descriptor ? "a descriptor" : "a null descriptor") +
                      ", rank " + std::to_string(rank) + " and element size " +
                      std::to_string(elementSizeBytes));
    return false;
  }
  MemRefView view = MemRefView::read(descriptor, rank);
  int64_t lastElement = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (view.sizes[i] <= 0) {
      *begin = view.begin(elementSizeBytes);
      *bytes = 0;
      return true;
    }
    if (view.strides[i] < 0) {
      recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                    prefix + "expected stride >= 0 in dimension " + std::to_string(i) +
                        ", but got " + std::to_string(view.strides[i]));
      return false;
    }
    lastElement += (view.sizes[i] - 1) * view.strides[i];
  }
  *begin = view.begin(elementSizeBytes);
  *bytes = static_cast<uint64_t>(lastElement + 1) * static_cast<uint64_t>(elementSizeBytes);
  return true;
}

} // namespace

extern "C" {

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  CUdevice device = 0;
  if (hasPendingFailure() || sizeBytes == 0 ||
      !activateContextOrRecord("mgpuMemAlloc", /*context=*/nullptr, &device))
    return nullptr;
  CUdeviceptr ptr = 0;
  // The message's detail, built only on failure.
  auto failed = [&](CUresult result, const char *driverCall) {
    return recordIfFailed(result, "mgpuMemAlloc", driverCall,
                          result == CUDA_SUCCESS ? std::string()
                                                 : std::to_string(sizeBytes) + " bytes");
  };
  if (isHostShared) {
    if (failed(cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged"))
      return nullptr;
    return reinterpret_cast<void *>(ptr);
  }
  if (stream) {
    // Stream-ordered from the runtime's caching pool (DevicePool.h).
    bool pooled = false;
    const char *failedCall = nullptr;
    if (failed(poolAllocate(device, static_cast<CUstream>(stream), sizeBytes, &ptr, &pooled,
                            &failedCall),
               failedCall))
      return nullptr;
    if (pooled)
      return reinterpret_cast<void *>(ptr);
  }
  if (failed(cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc"))
    return nullptr;
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  if (takePooledAllocation(devicePointer(ptr))) {
    // Back to the pool after the stream's earlier work. On the null stream
    // the free is synchronous, as cuMemFree is: work on other streams may
    // still use the memory.
    if (!stream) {
      CUresult synced = cuCtxSynchronize();
      if (!isShutdownResult(synced))
        recordIfFailed(synced, "mgpuMemFree", "cuCtxSynchronize");
    }
    CUresult result = cuMemFreeAsync(devicePointer(ptr), static_cast<CUstream>(stream));
    if (!isShutdownResult(result))
      recordIfFailed(result, "mgpuMemFree", "cuMemFreeAsync");
    return;
  }
  CUresult result = cuMemFree(devicePointer(ptr));
  if (!isShutdownResult(result))
    recordIfFailed(result, "mgpuMemFree", "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (hasPendingFailure() || sizeBytes == 0)
    return;
  CUresult result = cuMemcpyAsync(devicePointer(dst), devicePointer(src), sizeBytes,
                                  static_cast<CUstream>(stream));
  if (result != CUDA_SUCCESS)
    recordIfFailed(result, "mgpuMemcpy", "cuMemcpyAsync", std::to_string(sizeBytes) + " bytes");
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  if (hasPendingFailure() || count == 0)
    return;
  CUresult result =
      cuMemsetD32Async(devicePointer(dst), value, count, static_cast<CUstream>(stream));
  if (result != CUDA_SUCCESS)
    recordIfFailed(result, "mgpuMemset32", "cuMemsetD32Async", std::to_string(count) + " words");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  if (hasPendingFailure() || count == 0)
    return;
  CUresult result =
      cuMemsetD16Async(devicePointer(dst), value, count, static_cast<CUstream>(stream));
  if (result != CUDA_SUCCESS)
    recordIfFailed(result, "mgpuMemset16", "cuMemsetD16Async",
                   std::to_string(count) + " half-words");
}

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  if (hasPendingFailure() || !ptr || sizeBytes == 0 ||
      !activateContextOrRecord("mgpuMemHostRegister"))
    return;
  CUresult result = cuMemHostRegister(ptr, sizeBytes, /*Flags=*/0);
  if (result != CUDA_SUCCESS)
    recordIfFailed(result, "mgpuMemHostRegister", "cuMemHostRegister",
                   std::to_string(sizeBytes) + " bytes");
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elementSizeBytes) {
  if (hasPendingFailure())
    return;
  char *begin = nullptr;
  uint64_t bytes = 0;
  if (memrefSpan("mgpuMemHostRegisterMemRef", rank, descriptor, elementSizeBytes, &begin, &bytes))
    mgpuMemHostRegister(begin, bytes);
}

void mgpuMemHostUnregister(void *ptr) {
  if (!ptr)
    return;
  CUresult result = cuMemHostUnregister(ptr);
  if (!isShutdownResult(result))
    recordIfFailed(result, "mgpuMemHostUnregister", "cuMemHostUnregister");
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor, int64_t elementSizeBytes) {
  if (!descriptor || rank < 0 || elementSizeBytes <= 0)
    return;
  MemRefView view = MemRefView::read(descriptor, rank);
  mgpuMemHostUnregister(view.begin(elementSizeBytes));
}

void mgpuSetDefaultDevice(int32_t device) { selectDevice(device); }

} // extern "C"
