//===- Context.cpp - device selection and primary contexts ----------------===//

#include "Context.h"

#include "Status.h"

#include <map>
#include <mutex>

namespace fusionrt {
namespace {

thread_local int threadDevice = 0;

struct DeviceContexts {
  std::mutex mutex;
  std::map<int, CUcontext> primary;
  std::map<CUdevice, int> sharedMemoryOptin;
};

DeviceContexts &deviceContexts() {
  // Never destroyed: release calls from static destructors may still use it.
  static DeviceContexts *contexts = new DeviceContexts;
  return *contexts;
}

CUresult initializeDriver() {
  static const CUresult result = cuInit(/*Flags=*/0);
  return result;
}

} // namespace

void selectDevice(int device) { threadDevice = device; }

int selectedDevice() { return threadDevice; }

CUresult activateContext(CUcontext *context, CUdevice *device, const char **failedCall) {
  int ordinal = threadDevice;
  CUresult result = initializeDriver();
  if (result != CUDA_SUCCESS) {
    *failedCall = "cuInit";
    return result;
  }
  CUdevice handle = 0;
  if ((result = cuDeviceGet(&handle, ordinal)) != CUDA_SUCCESS) {
    *failedCall = "cuDeviceGet";
    return result;
  }
  CUcontext primary = nullptr;
  {
    DeviceContexts &contexts = deviceContexts();
    std::lock_guard<std::mutex> lock(contexts.mutex);
    auto it = contexts.primary.find(ordinal);
    if (it != contexts.primary.end()) {
      primary = it->second;
    } else {
      // Retained for the life of the process; released by the driver at exit.
      if ((result = cuDevicePrimaryCtxRetain(&primary, handle)) != CUDA_SUCCESS) {
        *failedCall = "cuDevicePrimaryCtxRetain";
        return result;
      }
      contexts.primary.emplace(ordinal, primary);
    }
  }
  CUcontext current = nullptr;
  if ((result = cuCtxGetCurrent(&current)) != CUDA_SUCCESS) {
    *failedCall = "cuCtxGetCurrent";
    return result;
  }
  if (current != primary && (result = cuCtxSetCurrent(primary)) != CUDA_SUCCESS) {
    *failedCall = "cuCtxSetCurrent";
    return result;
  }
  if (context)
    *context = primary;
  if (device)
    *device = handle;
  return CUDA_SUCCESS;
}

bool activateContextOrRecord(const char *entryPoint, CUcontext *context, CUdevice *device) {
  const char *failedCall = nullptr;
  CUresult result = activateContext(context, device, &failedCall);
  return !recordIfFailed(result, entryPoint, failedCall,
                         "device " + std::to_string(threadDevice));
}

CUresult maxSharedMemoryPerBlockOptin(CUdevice device, int *bytes) {
  DeviceContexts &contexts = deviceContexts();
  std::lock_guard<std::mutex> lock(contexts.mutex);
  auto it = contexts.sharedMemoryOptin.find(device);
  if (it != contexts.sharedMemoryOptin.end()) {
    *bytes = it->second;
    return CUDA_SUCCESS;
  }
  CUresult result = cuDeviceGetAttribute(
      bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
  if (result == CUDA_SUCCESS)
    contexts.sharedMemoryOptin.emplace(device, *bytes);
  return result;
}

bool isShutdownResult(CUresult result) {
  return result == CUDA_ERROR_DEINITIALIZED || result == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

} // namespace fusionrt
