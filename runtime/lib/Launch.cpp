//===- Launch.cpp - kernel launches, plain and with clusters --------------===//
//
// Before a launch: the launch shape is checked (every dimension >= 1 and
// within the driver's 32-bit fields, the grid a multiple of the cluster), then
// the kernel's attributes are set where MLIR's host lowering does not:
//  - dynamic shared memory above 48 KiB needs an opt-in per kernel, up to the
//    device's CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
//  - clusters of more than 8 CTAs (non-portable, up to 16 on Hopper) need
//    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, which MLIR 22 never
//    passes (MLIR22-NOTES.md section 11).
// A failed cluster launch reports the largest cluster the kernel can run with.
//
// fusionrtMaxActiveClusters answers how many clusters of a kernel the device
// holds at once, which sizes the grid of persistent cluster kernels: GPCs
// hold whole clusters, so fewer than SMs / C fit, and a cluster beyond that
// count would run its whole share in a second wave.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Module.h"
#include "Status.h"
#include "fusion_runtime_mgpu.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <functional>
#include <unordered_map>
#include <vector>

namespace fusionrt {
namespace {

constexpr int kSharedMemoryWithoutOptin = 48 * 1024;
constexpr intptr_t kPortableClusterSize = 8;

struct Dim3 {
  intptr_t x, y, z;
  std::string str() const {
    return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
  }
  bool positive() const { return x >= 1 && y >= 1 && z >= 1; }
  bool fitsDriver() const { return x <= UINT32_MAX && y <= UINT32_MAX && z <= UINT32_MAX; }
  /// x * y * z, saturated at INTPTR_MAX: the sizes come from the caller, and
  /// three of up to 2^32 each overflow 64 bits.
  intptr_t volume() const {
    intptr_t xy = 0, xyz = 0;
    if (__builtin_mul_overflow(x, y, &xy) || __builtin_mul_overflow(xy, z, &xyz))
      return INTPTR_MAX;
    return xyz;
  }
};

struct LaunchShape {
  Dim3 cluster, grid, block;
  int32_t sharedMemoryBytes;
  bool hasCluster;

  /// Every check of checkShape at once, without building any message.
  bool valid() const {
    if (!grid.positive() || !grid.fitsDriver() || !block.positive() || !block.fitsDriver() ||
        sharedMemoryBytes < 0)
      return false;
    if (!hasCluster)
      return true;
    return cluster.positive() && cluster.fitsDriver() && grid.x % cluster.x == 0 &&
           grid.y % cluster.y == 0 && grid.z % cluster.z == 0;
  }

  std::string describe(const std::string &kernel) const {
    std::string text = "kernel '" + kernel + "'";
    if (hasCluster)
      text += ", cluster " + cluster.str();
    return text + ", grid " + grid.str() + ", block " + block.str() + ", dynamic shared memory " +
           std::to_string(sharedMemoryBytes) + " bytes";
  }
};

/// Everything that can go wrong before the driver sees the launch. Records the
/// failure and returns false.
bool checkShape(const char *entryPoint, CUfunction function, const LaunchShape &shape) {
  if (function && shape.valid())
    return true;
  // Something is wrong: find what, and say so (messages are built only here).
  std::string prefix = std::string(entryPoint) + ": ";
  if (!function) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  prefix + "expected a kernel, but got a null function (did the module load or "
                           "the kernel lookup fail?)");
    return false;
  }
  auto fail = [&](const std::string &what) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  prefix + what + " (" + shape.describe(kernelName(function)) + ")");
    return false;
  };
  const struct {
    const char *name;
    const Dim3 &dims;
  } all[] = {{"cluster", shape.cluster}, {"grid", shape.grid}, {"block", shape.block}};
  for (const auto &entry : all) {
    if (!shape.hasCluster && &entry.dims == &shape.cluster)
      continue;
    if (!entry.dims.positive())
      return fail(std::string("expected ") + entry.name + " dimensions >= 1, but got " +
                  entry.dims.str());
    if (!entry.dims.fitsDriver())
      return fail(std::string("expected ") + entry.name + " dimensions < 2^32, but got " +
                  entry.dims.str());
  }
  if (shape.sharedMemoryBytes < 0)
    return fail("expected dynamic shared memory >= 0 bytes, but got " +
                std::to_string(shape.sharedMemoryBytes));
  if (shape.hasCluster) {
    const char *axes[] = {"x", "y", "z"};
    intptr_t grid[] = {shape.grid.x, shape.grid.y, shape.grid.z};
    intptr_t cluster[] = {shape.cluster.x, shape.cluster.y, shape.cluster.z};
    for (int i = 0; i < 3; ++i)
      if (grid[i] % cluster[i] != 0)
        return fail(std::string("expected grid ") + axes[i] + " to be a multiple of cluster " +
                    axes[i] + " = " + std::to_string(cluster[i]) + ", but got " +
                    std::to_string(grid[i]));
  }
  return true;
}

/// Context and kernel attributes. Records the failure and returns false.
/// `state` is what the runtime set on the kernel so far (kernelState).
bool prepareKernel(const char *entryPoint, CUfunction function, const LaunchShape &shape,
                   const KernelState &state) {
  CUdevice device = 0;
  if (!activateContextOrRecord(entryPoint, nullptr, &device))
    return false;
  if (shape.sharedMemoryBytes > kSharedMemoryWithoutOptin) {
    int optin = 0;
    if (recordIfFailed(maxSharedMemoryPerBlockOptin(device, &optin), entryPoint,
                       "cuDeviceGetAttribute", "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"))
      return false;
    if (shape.sharedMemoryBytes > optin) {
      recordFailure(FUSIONRT_ERROR_LIMIT_EXCEEDED,
                    std::string(entryPoint) + ": expected dynamic shared memory <= " +
                        std::to_string(optin) + " bytes (the opt-in limit of device " +
                        std::to_string(selectedDevice()) + "), but got " +
                        std::to_string(shape.sharedMemoryBytes) + " bytes (kernel '" +
                        kernelName(function) + "')");
      return false;
    }
    if (state.dynamicSharedMemoryLimit < shape.sharedMemoryBytes) {
      CUresult result = ensureDynamicSharedMemory(function, shape.sharedMemoryBytes);
      if (result != CUDA_SUCCESS) {
        recordIfFailed(result, entryPoint, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                       shape.describe(kernelName(function)));
        return false;
      }
    }
  }
  if (shape.hasCluster && shape.cluster.volume() > kPortableClusterSize &&
      !state.nonPortableClusters) {
    CUresult result = allowNonPortableClusters(function);
    if (result != CUDA_SUCCESS) {
      recordIfFailed(result, entryPoint, "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
                     shape.describe(kernelName(function)));
      return false;
    }
  }
  return true;
}

bool prepareKernel(const char *entryPoint, CUfunction function, const LaunchShape &shape) {
  return prepareKernel(entryPoint, function, shape, kernelState(function));
}

CUlaunchConfig launchConfig(const LaunchShape &shape, CUstream stream, CUlaunchAttribute *attr) {
  CUlaunchConfig config = {};
  config.gridDimX = static_cast<unsigned>(shape.grid.x);
  config.gridDimY = static_cast<unsigned>(shape.grid.y);
  config.gridDimZ = static_cast<unsigned>(shape.grid.z);
  config.blockDimX = static_cast<unsigned>(shape.block.x);
  config.blockDimY = static_cast<unsigned>(shape.block.y);
  config.blockDimZ = static_cast<unsigned>(shape.block.z);
  config.sharedMemBytes = static_cast<unsigned>(shape.sharedMemoryBytes);
  config.hStream = stream;
  attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr->value.clusterDim.x = static_cast<unsigned>(shape.cluster.x);
  attr->value.clusterDim.y = static_cast<unsigned>(shape.cluster.y);
  attr->value.clusterDim.z = static_cast<unsigned>(shape.cluster.z);
  config.attrs = attr;
  config.numAttrs = 1;
  return config;
}

/// Records a failed launch (only then is the message built).
void recordLaunchFailure(CUresult result, const char *entryPoint, const char *driverCall,
                         CUfunction function, const LaunchShape &shape,
                         const std::string &extra = {}) {
  recordIfFailed(result, entryPoint, driverCall, shape.describe(kernelName(function)) + extra);
}

void launch(const char *entryPoint, CUfunction function, const LaunchShape &shape,
            CUstream stream, void **params, void **extra) {
  if (hasPendingFailure() || !checkShape(entryPoint, function, shape))
    return;
  // One look at what the runtime set on the kernel: attributes and the mark
  // of cooperative kernels.
  KernelState state = kernelState(function);
  if (!prepareKernel(entryPoint, function, shape, state))
    return;
  if (!shape.hasCluster && state.cooperative) {
    // CTAs that wait for one another: all of the grid resident, or no launch.
    CUlaunchAttribute attr;
    CUlaunchConfig config = launchConfig(shape, stream, &attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUresult result = cuLaunchKernelEx(&config, function, params, extra);
    if (result != CUDA_SUCCESS)
      recordLaunchFailure(result, entryPoint, "cuLaunchKernelEx(COOPERATIVE)", function, shape);
    return;
  }
  if (!shape.hasCluster) {
    CUresult result = cuLaunchKernel(
        function, static_cast<unsigned>(shape.grid.x), static_cast<unsigned>(shape.grid.y),
        static_cast<unsigned>(shape.grid.z), static_cast<unsigned>(shape.block.x),
        static_cast<unsigned>(shape.block.y), static_cast<unsigned>(shape.block.z),
        static_cast<unsigned>(shape.sharedMemoryBytes), stream, params, extra);
    if (result != CUDA_SUCCESS)
      recordLaunchFailure(result, entryPoint, "cuLaunchKernel", function, shape);
    return;
  }
  CUlaunchAttribute attr;
  CUlaunchConfig config = launchConfig(shape, stream, &attr);
  CUresult result = cuLaunchKernelEx(&config, function, params, extra);
  if (result == CUDA_SUCCESS)
    return;
  std::string detail;
  int maxCluster = 0;
  if (cuOccupancyMaxPotentialClusterSize(&maxCluster, function, &config) == CUDA_SUCCESS)
    detail = "; the largest cluster this kernel can launch with is " +
             std::to_string(maxCluster) + " CTAs";
  recordLaunchFailure(result, entryPoint, "cuLaunchKernelEx", function, shape, detail);
}

/// The smallest co-resident cluster count over `functions` (kernels of the
/// same name in different loaded libraries), or 0 after recording a failure.
int maxActiveClusters(const char *entryPoint, const std::vector<CUfunction> &functions,
                      const LaunchShape &shape) {
  int smallest = 0;
  for (CUfunction function : functions) {
    if (!checkShape(entryPoint, function, shape) || !prepareKernel(entryPoint, function, shape))
      return 0;
    CUlaunchAttribute attr;
    CUlaunchConfig config = launchConfig(shape, /*stream=*/nullptr, &attr);
    int count = 0;
    std::string detail = shape.describe(kernelName(function));
    if (recordIfFailed(cuOccupancyMaxActiveClusters(&count, function, &config), entryPoint,
                       "cuOccupancyMaxActiveClusters", detail))
      return 0;
    if (count < 1) {
      recordFailure(FUSIONRT_ERROR_LIMIT_EXCEEDED,
                    std::string(entryPoint) +
                        ": expected at least one cluster to fit on the device, but none "
                        "can be resident (" +
                        detail + ")");
      return 0;
    }
    smallest = smallest == 0 ? count : std::min(smallest, count);
  }
  return smallest;
}

/// The start of the grid-size queries by kernel name: nothing while a failure
/// is pending; a null name is a failure; then the selected device's context.
bool activateForKernelQuery(const char *entryPoint, const char *kernel, CUcontext *context,
                            CUdevice *device) {
  if (hasPendingFailure())
    return false;
  if (!kernel) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) + ": expected a kernel name, but got a null pointer");
    return false;
  }
  return activateContextOrRecord(entryPoint, context, device);
}

/// The kernel `kernel` in every module loaded in `context`; records a failure
/// (and returns none) when no module has it.
std::vector<CUfunction> loadedKernelsOrRecord(const char *entryPoint, CUcontext context,
                                              const char *kernel) {
  std::vector<CUfunction> functions = findLoadedKernels(context, kernel);
  if (functions.empty())
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) + ": expected a loaded module with kernel '" + kernel +
                      "', but no module loaded in the current context has it");
  return functions;
}
} // namespace
} // namespace fusionrt

using namespace fusionrt;

namespace fusionrt {
namespace {

/// Answers of the grid-size queries by kernel name, asked before every launch
/// of a persistent kernel. Keyed by the context, the name's pointer (lowered
/// code passes the same string global every call; the text is compared too)
/// and the query's numbers; an answer holds while no module was loaded or
/// unloaded since it was computed (moduleGeneration).
class KernelQueryCache {
public:
  struct Key {
    CUcontext context;
    const char *name;
    int32_t a, b, c;
    bool operator==(const Key &o) const {
      return context == o.context && name == o.name && a == o.a && b == o.b && c == o.c;
    }
  };

  bool find(const Key &key, uint64_t generation, int *value) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = entries.find(key);
    if (it == entries.end() || it->second.generation != generation || it->second.name != key.name)
      return false;
    *value = it->second.value;
    return true;
  }

  void store(const Key &key, uint64_t generation, int value) {
    std::lock_guard<std::mutex> lock(mutex);
    entries[key] = Entry{key.name, generation, value};
  }

private:
  struct Hash {
    size_t operator()(const Key &k) const {
      size_t h = std::hash<const void *>()(k.context);
      h = h * 31 + std::hash<const void *>()(k.name);
      return ((h * 31 + size_t(k.a)) * 31 + size_t(k.b)) * 31 + size_t(k.c);
    }
  };
  struct Entry {
    std::string name;
    uint64_t generation;
    int value;
  };
  std::mutex mutex;
  std::unordered_map<Key, Entry, Hash> entries;
};

/// The most CTAs of `kernel`'s functions (blockThreads threads,
/// sharedMemoryBytes) that can be co-resident on the device, the smallest
/// over its functions; prepares each and marks it cooperative. 0 after
/// recording a failure.
int cooperativeGridLimit(const char *entryPoint, CUdevice device,
                         const std::vector<CUfunction> &functions, int32_t blockThreads,
                         int32_t sharedMemoryBytes) {
  int sms = 0;
  if (recordIfFailed(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                     entryPoint, "cuDeviceGetAttribute", "MULTIPROCESSOR_COUNT"))
    return 0;
  LaunchShape shape{{1, 1, 1}, {1, 1, 1}, {blockThreads, 1, 1}, sharedMemoryBytes,
                    /*hasCluster=*/false};
  int smallest = 0;
  for (CUfunction function : functions) {
    if (!checkShape(entryPoint, function, shape) || !prepareKernel(entryPoint, function, shape))
      return 0;
    int perSM = 0;
    if (recordIfFailed(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                           &perSM, function, blockThreads, static_cast<size_t>(sharedMemoryBytes)),
                       entryPoint, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                       shape.describe(kernelName(function))))
      return 0;
    if (perSM < 1) {
      recordFailure(FUSIONRT_ERROR_LIMIT_EXCEEDED,
                    std::string(entryPoint) +
                        ": expected at least one CTA to fit on an SM, but none can be resident (" +
                        shape.describe(kernelName(function)) + ")");
      return 0;
    }
    markCooperative(function);
    smallest = smallest == 0 ? perSM * sms : std::min(smallest, perSM * sms);
  }
  return smallest;
}

} // namespace
} // namespace fusionrt

extern "C" {

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                      intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
                      void *stream, void **params, void **extra, size_t /*paramsCount*/) {
  LaunchShape shape{{1, 1, 1}, {gridX, gridY, gridZ}, {blockX, blockY, blockZ}, smem,
                    /*hasCluster=*/false};
  launch("mgpuLaunchKernel", static_cast<CUfunction>(function), shape,
         static_cast<CUstream>(stream), params, extra);
}

void mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                             intptr_t clusterZ, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
                             void *stream, void **params, void **extra) {
  LaunchShape shape{{clusterX, clusterY, clusterZ}, {gridX, gridY, gridZ},
                    {blockX, blockY, blockZ}, smem, /*hasCluster=*/true};
  launch("mgpuLaunchClusterKernel", static_cast<CUfunction>(function), shape,
         static_cast<CUstream>(stream), params, extra);
}

int32_t fusionrtCooperativeGridLimit(const char *kernel, int32_t blockThreads,
                                     int32_t sharedMemoryBytes, int32_t minimumBlocks) {
  const char *entryPoint = "fusionrtCooperativeGridLimit";
  CUcontext context = nullptr;
  CUdevice device = 0;
  if (!activateForKernelQuery(entryPoint, kernel, &context, &device))
    return 1;
  // The device's answer for this kernel and shape, once per set of loaded
  // modules (the first query prepared the functions and marked them
  // cooperative; a module loaded again has new functions, and is queried and
  // marked again).
  static KernelQueryCache cache;
  KernelQueryCache::Key key{context, kernel, blockThreads, sharedMemoryBytes, 0};
  uint64_t generation = moduleGeneration();
  int smallest = 0;
  if (!cache.find(key, generation, &smallest)) {
    std::vector<CUfunction> functions = loadedKernelsOrRecord(entryPoint, context, kernel);
    if (functions.empty())
      return 1;
    smallest =
        cooperativeGridLimit(entryPoint, device, functions, blockThreads, sharedMemoryBytes);
    if (smallest == 0)
      return 1;
    cache.store(key, generation, smallest);
  }
  if (smallest < minimumBlocks) {
    LaunchShape shape{{1, 1, 1}, {1, 1, 1}, {blockThreads, 1, 1}, sharedMemoryBytes,
                      /*hasCluster=*/false};
    recordFailure(FUSIONRT_ERROR_LIMIT_EXCEEDED,
                  std::string(entryPoint) + ": expected room for at least " +
                      std::to_string(minimumBlocks) +
                      " co-resident CTAs (the tiles of one row, which wait for one another), "
                      "but the device holds " +
                      std::to_string(smallest) + " (" + shape.describe(kernel) + ")");
    return 1;
  }
  return smallest;
}

int32_t fusionrtMaxActiveClusters(const char *kernel, int32_t clusterSize,
                                  int32_t blockThreads, int32_t sharedMemoryBytes) {
  const char *entryPoint = "fusionrtMaxActiveClusters";
  CUcontext context = nullptr;
  if (!activateForKernelQuery(entryPoint, kernel, &context, /*device=*/nullptr))
    return 1;
  static KernelQueryCache cache;
  KernelQueryCache::Key key{context, kernel, clusterSize, blockThreads, sharedMemoryBytes};
  uint64_t generation = moduleGeneration();
  int count = 0;
  if (cache.find(key, generation, &count))
    return count;
  std::vector<CUfunction> functions = loadedKernelsOrRecord(entryPoint, context, kernel);
  if (functions.empty())
    return 1;
  // The grid only has to be a multiple of the cluster for the query.
  LaunchShape shape{{clusterSize, 1, 1}, {clusterSize, 1, 1}, {blockThreads, 1, 1},
                    sharedMemoryBytes, /*hasCluster=*/true};
  count = maxActiveClusters(entryPoint, functions, shape);
  if (count < 1)
    return 1;
  cache.store(key, generation, count);
  return count;
}

} // extern "C"
