//===- DeviceInfo.cpp - device properties for the planner and the loader --===//

#include "Context.h"
#include "Status.h"

#include "fusion_runtime_mgpu.h"

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

using namespace fusionrt;

extern "C" {

fusionrtStatus fusionrtGetDeviceCount(int *count) {
  if (!count)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtGetDeviceCount: expected a pointer for the count, but got null");
  *count = 0;
  CUresult result = cuInit(/*Flags=*/0);
  if (result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA, driverFailure("fusionrtGetDeviceCount", "cuInit", result));
  if ((result = cuDeviceGetCount(count)) != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure("fusionrtGetDeviceCount", "cuDeviceGetCount", result));
  return FUSIONRT_SUCCESS;
}

fusionrtStatus fusionrtGetDeviceInfo(int device, fusionrtDeviceInfo *info) {
  const char *entryPoint = "fusionrtGetDeviceInfo";
  if (!info)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       std::string(entryPoint) +
                           ": expected a fusionrtDeviceInfo to fill, but got a null pointer");
  if (device < 0)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       std::string(entryPoint) + ": expected device ordinal >= 0, but got " +
                           std::to_string(device));
  std::memset(info, 0, sizeof(*info));
  info->ordinal = device;

  CUresult result = cuInit(/*Flags=*/0);
  if (result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA, driverFailure(entryPoint, "cuInit", result));
  CUdevice handle = 0;
  if ((result = cuDeviceGet(&handle, device)) != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure(entryPoint, "cuDeviceGet", result,
                                     "device " + std::to_string(device)));
  if ((result = cuDeviceGetName(info->name, sizeof(info->name), handle)) != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA, driverFailure(entryPoint, "cuDeviceGetName", result));
  size_t totalMemory = 0;
  if ((result = cuDeviceTotalMem(&totalMemory, handle)) != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA, driverFailure(entryPoint, "cuDeviceTotalMem", result));
  info->totalGlobalMemoryBytes = totalMemory;

  const struct {
    CUdevice_attribute attribute;
    const char *name;
    int *field;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
       &info->computeCapabilityMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
       &info->computeCapabilityMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT",
       &info->multiprocessorCount},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       &info->maxThreadsPerBlock},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE", &info->warpSize},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK",
       &info->maxSharedMemoryPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", &info->maxSharedMemoryPerBlockOptin},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", &info->maxSharedMemoryPerMultiprocessor},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE", &info->l2CacheBytes},
      {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, "CLUSTER_LAUNCH", &info->clusterLaunch},
  };
  for (const auto &entry : attributes)
    if ((result = cuDeviceGetAttribute(entry.field, entry.attribute, handle)) != CUDA_SUCCESS)
      return reportError(FUSIONRT_ERROR_CUDA,
                         driverFailure(entryPoint, "cuDeviceGetAttribute", result, entry.name));
  // The tensor memory accelerator arrived with sm_90; no attribute names it.
  info->tensorMapSupported = info->computeCapabilityMajor >= 9;
  return FUSIONRT_SUCCESS;
}

int32_t fusionrtMultiprocessorCount(void) {
  const char *entryPoint = "fusionrtMultiprocessorCount";
  CUdevice device = 0;
  if (!activateContextOrRecord(entryPoint, nullptr, &device))
    return 1;
  static std::mutex mutex;
  static std::unordered_map<CUdevice, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(device);
  if (it != cache.end())
    return it->second;
  int count = 0;
  CUresult result =
      cuDeviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (recordIfFailed(result, entryPoint, "cuDeviceGetAttribute", "MULTIPROCESSOR_COUNT") ||
      count < 1)
    return 1;
  cache.emplace(device, count);
  return count;
}

} // extern "C"
