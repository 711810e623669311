"""runtime/ on a real GPU (the H200): driver initialization, device queries,
tensor maps over real allocations, memory and streams, JIT module loading,
launches with more than 48 KiB of dynamic shared memory and with 16-CTA
(non-portable) clusters, and failures turned into exceptions.

Skipped, with the reason, where the runtime library is not built or no CUDA
GPU is present. The runtime library is $FUSION_RUNTIME_LIBRARY or the first
build*/lib/libfusion_runtime.so of this checkout.

    python3 -m pytest -v runtime/test/gpu/test_runtime_gpu.py
"""

import ctypes
import glob
import os
import sys

import pytest

# The checkout: this file is runtime/test/gpu/test_runtime_gpu.py.
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))

import fusion_runtime as fr  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def _find(env, pattern):
    path = os.environ.get(env)
    if path:
        return path
    found = sorted(glob.glob(os.path.join(REPO, "build*", "lib", pattern)))
    return found[0] if found else None


RUNTIME_PATH = _find("FUSION_RUNTIME_LIBRARY", "libfusion_runtime.so")
ECHO_PATH = _find("FUSION_ABI_ECHO_LIBRARY", "libfusion_runtime_abi_echo.so")

if RUNTIME_PATH is None:
    pytest.skip("libfusion_runtime.so is not built (build runtime/ or set "
                "FUSION_RUNTIME_LIBRARY)", allow_module_level=True)
try:
    RUNTIME = fr.Runtime.find(RUNTIME_PATH)
except OSError as error:  # no driver: the runtime's libcuda.so.1 is missing
    pytest.skip(f"no CUDA driver: {error}", allow_module_level=True)
try:
    _DEVICES = RUNTIME.device_count()
except fr.FusionRuntimeError as error:
    pytest.skip(f"no CUDA GPU: {error}", allow_module_level=True)
if _DEVICES == 0:
    pytest.skip("no CUDA GPU: the driver reports 0 devices", allow_module_level=True)

LIB = RUNTIME.cdll
P = ctypes.c_void_p
I64 = ctypes.c_int64
for _name, _args, _res in [
        ("mgpuModuleLoadJIT", [P, ctypes.c_int], P),
        ("mgpuModuleUnload", [P], None),
        ("mgpuModuleGetFunction", [P, ctypes.c_char_p], P),
        ("mgpuLaunchKernel", [P] + [ctypes.c_ssize_t] * 6 + [ctypes.c_int32, P, P, P,
                                                              ctypes.c_size_t], None),
        ("mgpuLaunchClusterKernel", [P] + [ctypes.c_ssize_t] * 9 + [ctypes.c_int32, P, P, P],
         None),
        ("mgpuStreamCreate", [], P),
        ("mgpuStreamSynchronize", [P], None),
        ("mgpuStreamDestroy", [P], None),
        ("mgpuEventCreate", [], P),
        ("mgpuEventRecord", [P, P], None),
        ("mgpuEventSynchronize", [P], None),
        ("mgpuEventDestroy", [P], None),
        ("mgpuMemAlloc", [ctypes.c_uint64, P, ctypes.c_bool], P),
        ("mgpuMemFree", [P, P], None),
        ("mgpuMemcpy", [P, P, ctypes.c_size_t, P], None),
        ("mgpuMemset32", [P, ctypes.c_uint, ctypes.c_size_t, P], None),
        ("mgpuTensorMapEncodeTiledMemref", [I64, P, I64, I64, I64, I64, I64,
                                            ctypes.POINTER(I64)], P),
        ("fusionrtMultiprocessorCount", [], ctypes.c_int32),
        ("fusionrtMaxActiveClusters", [ctypes.c_char_p] + [ctypes.c_int32] * 3,
         ctypes.c_int32),
        ("fusionrtCooperativeGridLimit", [ctypes.c_char_p] + [ctypes.c_int32] * 3,
         ctypes.c_int32)]:
    getattr(LIB, _name).argtypes = _args
    getattr(LIB, _name).restype = _res

# Two kernels, JIT-compiled by the driver (checked with ptxas -arch=sm_90):
#   fill(out, value):    out[blockIdx.x * blockDim.x + threadIdx.x] = value
#   cluster_size(out):   out[blockIdx.x] = number of CTAs in the CTA's cluster
PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry fill(.param .u64 out, .param .u32 value)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [value];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd3, %rd2, %rd3;
  st.global.u32 [%rd3], %r1;
  ret;
}
.visible .entry cluster_size(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %cluster_nctarank;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd3, %rd2, %rd3;
  st.global.u32 [%rd3], %r1;
  ret;
}
"""
# The module cache is keyed by the image's address: keep one buffer alive.
PTX_IMAGE = ctypes.create_string_buffer(PTX)


@pytest.fixture(autouse=True)
def clean_status():
    RUNTIME.init(0)
    RUNTIME.check("left pending before the test")
    yield
    RUNTIME.check("left pending by the test")


@pytest.fixture
def stream():
    handle = LIB.mgpuStreamCreate()
    RUNTIME.check("mgpuStreamCreate")
    yield handle
    LIB.mgpuStreamSynchronize(handle)
    LIB.mgpuStreamDestroy(handle)


@pytest.fixture
def module():
    handle = LIB.mgpuModuleLoadJIT(ctypes.addressof(PTX_IMAGE), 2)
    RUNTIME.check("mgpuModuleLoadJIT")
    yield handle
    LIB.mgpuModuleUnload(handle)


class DeviceBuffer:
    """Device memory through the runtime's own entry points (no torch needed)."""

    def __init__(self, words, stream):
        self.words, self.stream = words, stream
        self.pointer = LIB.mgpuMemAlloc(4 * words, stream, False)
        RUNTIME.check("mgpuMemAlloc")

    def read(self):
        host = (ctypes.c_uint32 * self.words)()
        LIB.mgpuMemcpy(ctypes.addressof(host), self.pointer, 4 * self.words, self.stream)
        LIB.mgpuStreamSynchronize(self.stream)
        RUNTIME.check("reading back")
        return list(host)

    def free(self):
        LIB.mgpuMemFree(self.pointer, self.stream)


def kernel_params(*values):
    keep = list(values)
    array = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(v) for v in keep])
    return array, keep


def test_device_info():
    info = RUNTIME.device_info(0)
    assert info["name"]
    assert info["computeCapabilityMajor"] >= 9, info
    assert info["multiprocessorCount"] > 0
    assert info["clusterLaunch"] == 1
    assert info["tensorMapSupported"] == 1
    assert info["maxSharedMemoryPerBlock"] == 48 * 1024
    # Hopper: 227 KiB per block with opt-in.
    assert info["maxSharedMemoryPerBlockOptin"] >= 227 * 1024
    assert info["totalGlobalMemoryBytes"] > 0
    if torch is not None and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        assert info["multiprocessorCount"] == props.multi_processor_count
        assert info["name"] == props.name
        assert (info["computeCapabilityMajor"], info["computeCapabilityMinor"]) == (
            props.major, props.minor)


def test_multiprocessor_count_sizes_persistent_grids():
    # The grid size of every persistent kernel: the SM count, cached.
    count = LIB.fusionrtMultiprocessorCount()
    assert count == RUNTIME.device_info(0)["multiprocessorCount"]
    assert LIB.fusionrtMultiprocessorCount() == count


def test_encode_tensor_map_for_a_real_allocation(stream):
    buffer = DeviceBuffer(4096 * 512 // 2, stream)  # 4096 x 512 bf16
    try:
        class View:  # a row-major bf16 view of the allocation
            shape, dtype = (4096, 512), "torch.bfloat16"

            def stride(self):
                return (512, 1)

            def data_ptr(self):
                return buffer.pointer

        encoded = RUNTIME.encode_tensor_map(View(), box=(64, 64), swizzle=128)
        assert len(encoded) == 128 and any(encoded)

        # The memref form MLIR's lowering calls: a device copy, shared by identical maps.
        descriptor = (I64 * 7)(buffer.pointer, buffer.pointer, 0, 4096, 512, 512, 1)
        box = (I64 * 2)(64, 64)
        first = LIB.mgpuTensorMapEncodeTiledMemref(2, descriptor, 9, 0, 3, 0, 0, box)
        second = LIB.mgpuTensorMapEncodeTiledMemref(2, descriptor, 9, 0, 3, 0, 0, box)
        RUNTIME.check("mgpuTensorMapEncodeTiledMemref")
        assert first and first == second

        # An offset of 4 elements (8 bytes) misaligns the view: named before the driver sees it.
        descriptor[2] = 4
        assert LIB.mgpuTensorMapEncodeTiledMemref(2, descriptor, 9, 0, 3, 0, 0, box) is None
        with pytest.raises(fr.FusionRuntimeError, match="expected global address aligned to 16 "
                                                        "bytes"):
            RUNTIME.check()
    finally:
        buffer.free()


@pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs torch on CUDA")
def test_encode_tensor_map_for_a_torch_tensor():
    x = torch.empty(8192, 512, dtype=torch.bfloat16, device="cuda")
    assert any(RUNTIME.encode_tensor_map(x, box=(128, 64), swizzle=128))
    with pytest.raises(fr.FusionRuntimeError, match="expected global address aligned"):
        RUNTIME.encode_tensor_map(x[:, 4:], box=(128, 64), swizzle=128)


def test_memory_streams_and_events(stream):
    buffer = DeviceBuffer(1 << 16, stream)
    try:
        LIB.mgpuMemset32(buffer.pointer, 0xDEADBEEF, buffer.words, stream)
        event = LIB.mgpuEventCreate()
        LIB.mgpuEventRecord(event, stream)
        LIB.mgpuEventSynchronize(event)
        LIB.mgpuEventDestroy(event)
        assert set(buffer.read()) == {0xDEADBEEF}
    finally:
        buffer.free()


def test_stream_allocations_are_cached_and_released(stream):
    # On a stream, allocations come from the runtime's pool: freed memory is
    # reused by the next allocation of that size instead of being unmapped.
    first = DeviceBuffer(1 << 20, stream)
    LIB.mgpuMemset32(first.pointer, 7, first.words, stream)
    assert set(first.read()) == {7}
    address = first.pointer
    first.free()
    LIB.mgpuStreamSynchronize(stream)
    second = DeviceBuffer(1 << 20, stream)
    try:
        assert second.pointer == address
        LIB.mgpuMemset32(second.pointer, 9, second.words, stream)
        assert set(second.read()) == {9}
    finally:
        second.free()
    LIB.mgpuStreamSynchronize(stream)
    RUNTIME.release_cached_memory()
    # On the null stream, allocation is cuMemAlloc as before, and works.
    plain = DeviceBuffer(256, None)
    try:
        LIB.mgpuMemset32(plain.pointer, 3, plain.words, None)
        assert set(plain.read()) == {3}
    finally:
        plain.free()


def test_module_is_loaded_once(module):
    again = LIB.mgpuModuleLoadJIT(ctypes.addressof(PTX_IMAGE), 2)
    RUNTIME.check("mgpuModuleLoadJIT")
    assert again == module
    LIB.mgpuModuleUnload(again)  # one reference left: the fixture's


def test_launch_with_more_than_48_kib_of_dynamic_shared_memory(module, stream):
    fill = LIB.mgpuModuleGetFunction(module, b"fill")
    RUNTIME.check("mgpuModuleGetFunction")
    buffer = DeviceBuffer(4 * 128, stream)
    try:
        params, _keep = kernel_params(ctypes.c_uint64(buffer.pointer), ctypes.c_uint32(42))
        LIB.mgpuLaunchKernel(fill, 4, 1, 1, 128, 1, 1, 100 * 1024, stream, params, None, 2)
        RUNTIME.check("mgpuLaunchKernel")
        assert set(buffer.read()) == {42}

        optin = RUNTIME.device_info(0)["maxSharedMemoryPerBlockOptin"]
        LIB.mgpuLaunchKernel(fill, 4, 1, 1, 128, 1, 1, optin + 1024, stream, params, None, 2)
        with pytest.raises(fr.FusionRuntimeError, match=f"expected dynamic shared memory <= "
                                                        f"{optin} bytes .*kernel 'fill'") as e:
            RUNTIME.check()
        assert e.value.status == 3  # FUSIONRT_ERROR_LIMIT_EXCEEDED
    finally:
        buffer.free()


@pytest.mark.parametrize("cluster", [2, 3, 5, 6, 8, 12, 16])
def test_cluster_launch(module, stream, cluster):
    kernel = LIB.mgpuModuleGetFunction(module, b"cluster_size")
    RUNTIME.check("mgpuModuleGetFunction")
    grid = 2 * cluster
    buffer = DeviceBuffer(grid, stream)
    try:
        params, _keep = kernel_params(ctypes.c_uint64(buffer.pointer))
        # 16 CTAs is non-portable: the runtime sets the attribute MLIR 22 never passes.
        LIB.mgpuLaunchClusterKernel(kernel, cluster, 1, 1, grid, 1, 1, 32, 1, 1, 0, stream,
                                    params, None)
        RUNTIME.check("mgpuLaunchClusterKernel")
        assert buffer.read() == [cluster] * grid
    finally:
        buffer.free()


def test_max_active_clusters_sizes_persistent_cluster_grids(module):
    # The grid of persistent cluster kernels: clusters the device holds at
    # once, looked up by kernel name among the loaded modules. GPCs hold whole
    # clusters, so at most SMs / C; a kernel that takes a whole SM (our GEMMs:
    # 384 threads and ~220 KiB of shared memory) gets fewer for large C.
    sms = LIB.fusionrtMultiprocessorCount()
    counts = {}
    for cluster in [1, 2, 3, 4, 5, 6, 8, 12, 16]:
        small = LIB.fusionrtMaxActiveClusters(b"cluster_size", cluster, 32, 0)
        RUNTIME.check("fusionrtMaxActiveClusters")
        whole_sm = LIB.fusionrtMaxActiveClusters(b"cluster_size", cluster, 384, 220 * 1024)
        RUNTIME.check("fusionrtMaxActiveClusters")
        assert 1 <= whole_sm <= sms // cluster
        assert whole_sm <= small
        counts[cluster] = whole_sm
    print(f"co-resident clusters of whole-SM CTAs on {sms} SMs: {counts}")
    assert counts[1] == sms


def test_max_active_clusters_reports_an_unknown_kernel(module):
    assert LIB.fusionrtMaxActiveClusters(b"no_such_kernel", 4, 384, 1024) == 1
    with pytest.raises(fr.FusionRuntimeError,
                       match="fusionrtMaxActiveClusters: expected a loaded module with kernel "
                             "'no_such_kernel', but no module loaded in the current context "
                             "has it"):
        RUNTIME.check()


def test_max_active_clusters_reports_a_cluster_that_cannot_be_resident(module):
    assert LIB.fusionrtMaxActiveClusters(b"cluster_size", 4, 384, 1 << 30) == 1
    with pytest.raises(fr.FusionRuntimeError,
                       match="fusionrtMaxActiveClusters: expected dynamic shared memory <= "):
        RUNTIME.check()


def test_cooperative_grid_limit_refuses_a_row_the_device_cannot_hold(module):
    # Rows through global memory need all the tiles of a row running at once.
    limit = LIB.fusionrtCooperativeGridLimit(b"cluster_size", 32, 0, 1)
    RUNTIME.check("fusionrtCooperativeGridLimit")
    assert LIB.fusionrtCooperativeGridLimit(b"cluster_size", 32, 0, limit + 1) == 1
    with pytest.raises(fr.FusionRuntimeError,
                       match=f"fusionrtCooperativeGridLimit: expected room for at least "
                             f"{limit + 1} co-resident CTAs .* but the device holds {limit} "):
        RUNTIME.check()


def test_cooperative_launch_of_a_marked_kernel(module, stream):
    # Kernels whose CTAs wait for one another are marked cooperative: their
    # grid starts only when all of it is resident, and the limit is what the
    # device holds at once.
    sms = LIB.fusionrtMultiprocessorCount()
    limit = LIB.fusionrtCooperativeGridLimit(b"cluster_size", 32, 0, 1)
    RUNTIME.check("fusionrtCooperativeGridLimit")
    assert limit >= sms and limit % sms == 0
    kernel = LIB.mgpuModuleGetFunction(module, b"cluster_size")
    RUNTIME.check("mgpuModuleGetFunction")
    buffer = DeviceBuffer(limit, stream)
    try:
        params, _keep = kernel_params(ctypes.c_uint64(buffer.pointer))
        LIB.mgpuLaunchKernel(kernel, limit, 1, 1, 32, 1, 1, 0, stream, params, None, 0)
        RUNTIME.check("mgpuLaunchKernel")
        assert buffer.read() == [1] * limit
        # One CTA more than fits at once is refused, with the driver's reason.
        LIB.mgpuLaunchKernel(kernel, limit + 1, 1, 1, 32, 1, 1, 0, stream, params, None, 0)
        with pytest.raises(fr.FusionRuntimeError, match="COOPERATIVE"):
            RUNTIME.check()
    finally:
        buffer.free()


def test_failures_are_pending_until_read(module, stream):
    assert LIB.mgpuModuleGetFunction(module, b"no_such_kernel") is None
    # Pending: work is skipped, the first failure is kept.
    assert LIB.mgpuMemAlloc(1024, stream, False) is None
    with pytest.raises(fr.FusionRuntimeError,
                       match="mgpuModuleGetFunction: cuModuleGetFunction failed with "
                             "CUDA_ERROR_NOT_FOUND \\(kernel 'no_such_kernel'\\)") as e:
        RUNTIME.check()
    assert e.value.status == 2
    buffer = DeviceBuffer(16, stream)  # cleared: work resumes
    buffer.free()


@pytest.mark.skipif(torch is None or not torch.cuda.is_available() or ECHO_PATH is None,
                    reason="needs torch on CUDA and libfusion_runtime_abi_echo.so")
def test_loader_passes_cuda_tensors():
    library = fr.Library(ECHO_PATH, runtime=RUNTIME)
    matmul = library.function("echo_matmul")
    a = torch.randn(256, 64, device="cuda").to(torch.bfloat16)
    b = torch.randn(64, 32, device="cuda").to(torch.bfloat16)
    c = torch.empty(256, 32, device="cuda")
    assert matmul(a, b, c) == {"M": 256, "K": 64, "N": 32}
    words = (ctypes.c_int64 * 21).in_dll(library.cdll, "echo_words")
    assert list(words[:7]) == [a.data_ptr(), a.data_ptr(), 0, 256, 64, 64, 1]
    with pytest.raises(fr.ArgumentError, match="expected row-major contiguous strides"):
        matmul(a, b.t().contiguous().t(), c)
    misaligned = torch.empty(256 * 64 + 8, dtype=torch.bfloat16, device="cuda")[4:]
    with pytest.raises(fr.ArgumentError, match="expected a data pointer aligned to 16 bytes"):
        matmul(misaligned[: 256 * 64].view(256, 64), b, c)
