//===- Module.cpp - module loading and kernel lookup ----------------------===//
//
// MLIR 22 loads the device image from a global constructor and unloads it from
// a global destructor, but older lowerings and hand-written hosts call
// mgpuModuleLoad around every launch. Loading is therefore cached: the same
// image in the same context yields the same module, reference counted, so a
// kernel is loaded (and JIT-compiled, for PTX) once per process.
//
// Kernels handed out by mgpuModuleGetFunction are remembered with their name,
// so that launch failures can name the kernel, and with the attributes the
// runtime has already set on them.
//
//===----------------------------------------------------------------------===//

#include "Module.h"

#include "Context.h"
#include "Status.h"
#include "fusion_runtime_mgpu.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fusionrt {
namespace {

struct ModuleKey {
  CUcontext context;
  const void *image;
  int jitOptLevel; // -1 for cubin/fatbin images
  bool operator<(const ModuleKey &other) const {
    return std::tie(context, image, jitOptLevel) <
           std::tie(other.context, other.image, other.jitOptLevel);
  }
};

struct LoadedModule {
  CUmodule module;
  int references;
  /// The module's kernel names, when the driver enumerates them (CUDA 12.4
  /// and later): a name lookup across modules then asks only the modules that
  /// hold it, so no lookup fails inside the driver (which compute-sanitizer
  /// reports as an error).
  bool enumerated = false;
  std::unordered_set<std::string> names;
};

/// Fills `loaded.names` from the driver, or leaves it unenumerated.
void enumerateKernels(LoadedModule &loaded) {
  unsigned count = 0;
  if (cuModuleGetFunctionCount(&count, loaded.module) != CUDA_SUCCESS)
    return;
  std::vector<CUfunction> functions(count);
  if (count && cuModuleEnumerateFunctions(functions.data(), count, loaded.module) != CUDA_SUCCESS)
    return;
  for (CUfunction f : functions) {
    const char *name = nullptr;
    if (cuFuncGetName(&name, f) != CUDA_SUCCESS || !name)
      return;
    loaded.names.insert(name);
  }
  loaded.enumerated = true;
}

struct KernelInfo {
  std::string name;
  CUmodule module;
  int dynamicSharedMemoryLimit = 48 * 1024;
  bool nonPortableClusters = false;
  bool cooperative = false;
};

/// mgpuModuleGetFunction's answers by module and name pointer (the lowered
/// code passes the same string global every call); the name is compared too.
struct LookupKey {
  CUmodule module;
  const char *name;
  bool operator==(const LookupKey &other) const {
    return module == other.module && name == other.name;
  }
};
struct LookupKeyHash {
  size_t operator()(const LookupKey &key) const {
    return std::hash<const void *>()(key.module) * 31 + std::hash<const void *>()(key.name);
  }
};

struct Registry {
  std::mutex mutex;
  std::map<ModuleKey, LoadedModule> modules;
  std::unordered_map<CUmodule, ModuleKey> keys;
  std::unordered_map<CUfunction, KernelInfo> kernels;
  std::unordered_map<LookupKey, CUfunction, LookupKeyHash> lookups;
  /// Bumped whenever a module is loaded into or unloaded from the driver.
  std::atomic<uint64_t> generation{1};
};

Registry &registry() {
  // Never destroyed: mgpuModuleUnload runs from global destructors.
  static Registry *instance = new Registry;
  return *instance;
}

void *loadModule(const char *entryPoint, const void *image, int jitOptLevel) {
  if (hasPendingFailure())
    return nullptr;
  if (!image) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) + ": expected a device image, but got a null pointer");
    return nullptr;
  }
  if (jitOptLevel != -1 && (jitOptLevel < 0 || jitOptLevel > 4)) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) + ": expected JIT optimization level in 0..4, but got " +
                      std::to_string(jitOptLevel));
    return nullptr;
  }
  CUcontext context = nullptr;
  if (!activateContextOrRecord(entryPoint, &context))
    return nullptr;

  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  ModuleKey key{context, image, jitOptLevel};
  auto it = reg.modules.find(key);
  if (it != reg.modules.end()) {
    ++it->second.references;
    return it->second.module;
  }

  CUmodule module = nullptr;
  if (jitOptLevel < 0) {
    if (recordIfFailed(cuModuleLoadData(&module, image), entryPoint, "cuModuleLoadData"))
      return nullptr;
  } else {
    // PTX: keep the JIT's error log, it is the only explanation of a failure.
    char errorLog[4096] = {0};
    CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(jitOptLevel)), errorLog,
                      reinterpret_cast<void *>(static_cast<intptr_t>(sizeof(errorLog) - 1))};
    CUresult result = cuModuleLoadDataEx(&module, image, 3, options, values);
    if (recordIfFailed(result, entryPoint, "cuModuleLoadDataEx",
                       errorLog[0] ? std::string("JIT log: ") + errorLog : std::string()))
      return nullptr;
  }
  LoadedModule loaded{module, 1};
  enumerateKernels(loaded);
  reg.modules.emplace(key, std::move(loaded));
  reg.keys.emplace(module, key);
  reg.generation.fetch_add(1);
  return module;
}

} // namespace

std::string kernelName(CUfunction function) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.kernels.find(function);
  return it == reg.kernels.end() ? std::string("<unknown>") : it->second.name;
}

CUresult ensureDynamicSharedMemory(CUfunction function, int bytes) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.kernels.find(function);
  if (it != reg.kernels.end() && it->second.dynamicSharedMemoryLimit >= bytes)
    return CUDA_SUCCESS;
  CUresult result =
      cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (result == CUDA_SUCCESS && it != reg.kernels.end())
    it->second.dynamicSharedMemoryLimit = bytes;
  return result;
}

KernelState kernelState(CUfunction function) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.kernels.find(function);
  if (it == reg.kernels.end())
    return KernelState();
  return {it->second.dynamicSharedMemoryLimit, it->second.nonPortableClusters,
          it->second.cooperative};
}

uint64_t moduleGeneration() { return registry().generation.load(std::memory_order_acquire); }

std::vector<CUfunction> findLoadedKernels(CUcontext context, const std::string &name) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  std::vector<CUfunction> found;
  for (const auto &[key, loaded] : reg.modules) {
    if (key.context != context || (loaded.enumerated && !loaded.names.count(name)))
      continue;
    CUfunction function = nullptr;
    if (cuModuleGetFunction(&function, loaded.module, name.c_str()) != CUDA_SUCCESS)
      continue;
    KernelInfo &info = reg.kernels[function];
    info.name = name;
    info.module = loaded.module;
    found.push_back(function);
  }
  return found;
}

void markCooperative(CUfunction function) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.kernels[function].cooperative = true;
}

bool isCooperative(CUfunction function) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.kernels.find(function);
  return it != reg.kernels.end() && it->second.cooperative;
}

CUresult allowNonPortableClusters(CUfunction function) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.kernels.find(function);
  if (it != reg.kernels.end() && it->second.nonPortableClusters)
    return CUDA_SUCCESS;
  CUresult result =
      cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  if (result == CUDA_SUCCESS && it != reg.kernels.end())
    it->second.nonPortableClusters = true;
  return result;
}

} // namespace fusionrt

using namespace fusionrt;

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return loadModule("mgpuModuleLoad", data, /*jitOptLevel=*/-1);
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  return loadModule("mgpuModuleLoadJIT", data, optLevel);
}

// A release call: runs even while a failure is pending.
void mgpuModuleUnload(void *module) {
  if (!module)
    return;
  CUmodule handle = static_cast<CUmodule>(module);
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto key = reg.keys.find(handle);
  if (key != reg.keys.end()) {
    auto loaded = reg.modules.find(key->second);
    if (--loaded->second.references > 0)
      return;
    reg.modules.erase(loaded);
    reg.keys.erase(key);
  }
  for (auto it = reg.kernels.begin(); it != reg.kernels.end();)
    it = it->second.module == handle ? reg.kernels.erase(it) : std::next(it);
  for (auto it = reg.lookups.begin(); it != reg.lookups.end();)
    it = it->first.module == handle ? reg.lookups.erase(it) : std::next(it);
  reg.generation.fetch_add(1);
  CUresult result = cuModuleUnload(handle);
  // At exit the driver may shut down before the global destructor that
  // unloads runs; the module is gone with it.
  if (!isShutdownResult(result))
    recordIfFailed(result, "mgpuModuleUnload", "cuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (hasPendingFailure())
    return nullptr;
  if (!name || !module) {
    std::string kernel = name ? name : "";
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string("mgpuModuleGetFunction: expected a module and a kernel name, but "
                              "got ") +
                      (module ? "a module" : "a null module (was the image loaded?)") +
                      " and " + (name ? "kernel '" + kernel + "'" : "a null name"));
    return nullptr;
  }
  CUmodule handle = static_cast<CUmodule>(module);
  Registry &reg = registry();
  {
    // Lowered code asks for the kernel before every launch: answer repeated
    // questions without the driver.
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto hit = reg.lookups.find(LookupKey{handle, name});
    if (hit != reg.lookups.end()) {
      auto info = reg.kernels.find(hit->second);
      if (info != reg.kernels.end() && info->second.name == name)
        return hit->second;
    }
  }
  CUfunction function = nullptr;
  if (recordIfFailed(cuModuleGetFunction(&function, handle, name), "mgpuModuleGetFunction",
                     "cuModuleGetFunction", "kernel '" + std::string(name) + "'"))
    return nullptr;
  std::lock_guard<std::mutex> lock(reg.mutex);
  KernelInfo &info = reg.kernels[function];
  info.name = name;
  info.module = handle;
  reg.lookups[LookupKey{handle, name}] = function;
  return function;
}

} // extern "C"
