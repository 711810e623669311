//===- DevicePool.cpp - stream-ordered, cached device allocations ---------===//

#include "DevicePool.h"

#include <limits>
#include <map>
#include <mutex>
#include <unordered_set>

namespace fusionrt {
namespace {

struct Pools {
  std::mutex mutex;
  /// Per device: its pool, or null if the device has no memory pools.
  std::map<CUdevice, CUmemoryPool> byDevice;
  std::unordered_set<CUdeviceptr> live;
};

Pools &pools() {
  // Never destroyed: frees from static destructors may still look here.
  static Pools *state = new Pools;
  return *state;
}

/// The device's pool, created on first use; null if the device has none.
CUresult devicePool(Pools &state, CUdevice device, CUmemoryPool *pool,
                    const char **failedCall) {
  auto it = state.byDevice.find(device);
  if (it != state.byDevice.end()) {
    *pool = it->second;
    return CUDA_SUCCESS;
  }
  int supported = 0;
  CUresult result =
      cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
  if (result != CUDA_SUCCESS) {
    *failedCall = "cuDeviceGetAttribute";
    return result;
  }
  *pool = nullptr;
  if (supported) {
    CUmemPoolProps props = {};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    if ((result = cuMemPoolCreate(pool, &props)) != CUDA_SUCCESS) {
      *failedCall = "cuMemPoolCreate";
      return result;
    }
    cuuint64_t keepAll = std::numeric_limits<cuuint64_t>::max();
    if ((result = cuMemPoolSetAttribute(*pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepAll)) !=
        CUDA_SUCCESS) {
      cuMemPoolDestroy(*pool);
      *failedCall = "cuMemPoolSetAttribute";
      return result;
    }
  }
  state.byDevice.emplace(device, *pool);
  return CUDA_SUCCESS;
}

} // namespace

CUresult poolAllocate(CUdevice device, CUstream stream, uint64_t bytes, CUdeviceptr *ptr,
                      bool *pooled, const char **failedCall) {
  Pools &state = pools();
  std::lock_guard<std::mutex> lock(state.mutex);
  CUmemoryPool pool = nullptr;
  CUresult result = devicePool(state, device, &pool, failedCall);
  *pooled = false;
  if (result != CUDA_SUCCESS || !pool)
    return result;
  if ((result = cuMemAllocFromPoolAsync(ptr, bytes, pool, stream)) != CUDA_SUCCESS) {
    *failedCall = "cuMemAllocFromPoolAsync";
    return result;
  }
  state.live.insert(*ptr);
  *pooled = true;
  return CUDA_SUCCESS;
}

bool takePooledAllocation(CUdeviceptr ptr) {
  Pools &state = pools();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.live.erase(ptr) != 0;
}

CUresult trimPools() {
  Pools &state = pools();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (auto &[device, pool] : state.byDevice)
    if (pool)
      if (CUresult result = cuMemPoolTrimTo(pool, 0); result != CUDA_SUCCESS)
        return result;
  return CUDA_SUCCESS;
}

} // namespace fusionrt
