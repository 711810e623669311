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

namespace {

/// This thread's last activation: the selected ordinal, its device handle and
/// primary context. `pinned` while a compiled function runs under
/// fusionrtInvoke and the context was made current during it: nothing but
/// the runtime's own entry points runs in between, so the context is still
/// current and the driver need not be asked again.
struct ThreadActivation {
  int ordinal = -1;
  CUdevice device = 0;
  CUcontext primary = nullptr;
  bool invoking = false;
  bool pinned = false;
};
thread_local ThreadActivation activation;

} // namespace

void beginInvocation() {
  activation.invoking = true;
  activation.pinned = false;
}

void endInvocation() {
  activation.invoking = false;
  activation.pinned = false;
}

CUresult activateContext(CUcontext *context, CUdevice *device, const char **failedCall) {
  int ordinal = threadDevice;
  ThreadActivation &last = activation;
  if (last.ordinal != ordinal) {
    // First use of this ordinal on this thread: the device and its primary
    // context (retained once per process).
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
    last.ordinal = ordinal;
    last.device = handle;
    last.primary = primary;
    last.pinned = false;
  }
  if (!last.pinned) {
    // Someone else (PyTorch, another library) may have made another context
    // current since this thread's last entry point.
    CUcontext current = nullptr;
    CUresult result = cuCtxGetCurrent(&current);
    if (result != CUDA_SUCCESS) {
      *failedCall = "cuCtxGetCurrent";
      return result;
    }
    if (current != last.primary && (result = cuCtxSetCurrent(last.primary)) != CUDA_SUCCESS) {
      *failedCall = "cuCtxSetCurrent";
      return result;
    }
    last.pinned = last.invoking;
  }
  if (context)
    *context = last.primary;
  if (device)
    *device = last.device;
  return CUDA_SUCCESS;
}

bool activateContextOrRecord(const char *entryPoint, CUcontext *context, CUdevice *device) {
  const char *failedCall = nullptr;
  CUresult result = activateContext(context, device, &failedCall);
  if (result == CUDA_SUCCESS)
    return true;
  recordIfFailed(result, entryPoint, failedCall, "device " + std::to_string(threadDevice));
  return false;
}

CUresult maxSharedMemoryPerBlockOptin(CUdevice device, int *bytes) {
  // Asked once per device; each thread keeps the answer for its last device.
  thread_local CUdevice lastDevice = -1;
  thread_local int lastBytes = 0;
  if (lastDevice == device) {
    *bytes = lastBytes;
    return CUDA_SUCCESS;
  }
  DeviceContexts &contexts = deviceContexts();
  std::lock_guard<std::mutex> lock(contexts.mutex);
  auto it = contexts.sharedMemoryOptin.find(device);
  CUresult result = CUDA_SUCCESS;
  if (it != contexts.sharedMemoryOptin.end()) {
    *bytes = it->second;
  } else {
    result = cuDeviceGetAttribute(bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                  device);
    if (result != CUDA_SUCCESS)
      return result;
    contexts.sharedMemoryOptin.emplace(device, *bytes);
  }
  lastDevice = device;
  lastBytes = *bytes;
  return result;
}

bool isShutdownResult(CUresult result) {
  return result == CUDA_ERROR_DEINITIALIZED || result == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

} // namespace fusionrt
