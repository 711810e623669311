import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "FUSION"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fusion_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.fusion_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["fusion-opt", "fusion-runner", "fusion-compile", "mlir-opt", "mlir-runner", "llvm-nm", "llvm-readelf"],
    tool_dirs)

# The compiler that built the tools. The PTX golden digests were recorded from
# a GCC build: the generators create ops inside C++ argument lists, whose
# evaluation order GCC and clang differ on, so a clang build (the sanitizer
# build) emits the same instructions in another order.
if getattr(config, "host_cxx_compiler_id", "") == "GNU":
    config.available_features.add("gcc-host")

# ptxas from the CUDA toolkit, for tests that assemble PTX.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
    # The NVVM serializer finds ptxas and libdevice (math functions in the
    # kernels) through the toolkit root.
    config.environment["CUDA_HOME"] = os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))

# cuobjdump (SASS and ELF attributes of a cubin, for the sm_100a SASS test):
# on PATH, in the CUDA toolkit, or from PyPI's nvidia-cuda-cuobjdump in the
# checkout's virtual environment (scripts/install-deps.sh; $FUSION_VENV,
# default <source>/.venv).
def find_cuobjdump():
    import glob
    found = shutil.which("cuobjdump")
    if found:
        return found
    candidates = []
    if ptxas:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(ptxas)), "cuobjdump"))
    for venv in (os.environ.get("FUSION_VENV"),
                 os.path.join(os.path.dirname(config.test_source_root), ".venv")):
        if venv:
            candidates += sorted(glob.glob(os.path.join(
                venv, "lib", "python3*", "site-packages", "nvidia", "cu*", "bin", "cuobjdump")))
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


cuobjdump = find_cuobjdump()
if cuobjdump:
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", cuobjdump))

# runtime/'s unit-test binary (runtime/test/cpp/, built only when cuda.h was
# found), for test/Runtime/.
fusion_runtime_tests = os.path.join(config.fusion_tools_dir, "fusion-runtime-tests")
if os.path.exists(fusion_runtime_tests):
    config.available_features.add("fusion-runtime")
    config.substitutions.append(("%fusion_runtime_tests", fusion_runtime_tests))

# fusion-compile links against the runtime, which is built only where the
# CUDA driver API headers and stub library are found.
if os.path.exists(os.path.join(config.fusion_obj_root, "lib", "libfusion_runtime.so")):
    config.available_features.add("fusion-runtime")

# The libFuzzer targets (tools/fusion-fuzz, runtime/test/fuzz), built only
# with -DFUSION_BUILD_FUZZERS=ON (scripts/sanitize.sh).
fusion_fuzz = os.path.join(config.fusion_tools_dir, "fusion-fuzz")
fusion_runtime_fuzz = os.path.join(config.fusion_tools_dir, "fusion-runtime-fuzz")
if os.path.exists(fusion_fuzz) and os.path.exists(fusion_runtime_fuzz):
    config.available_features.add("fuzzer")
    config.substitutions.append(("%fusion_fuzz", fusion_fuzz))
    config.substitutions.append(("%fusion_runtime_fuzz", fusion_runtime_fuzz))
    config.substitutions.append(
        ("%cuda_home", config.environment.get("CUDA_HOME", "/usr/local/cuda")))

# FusionPlugin.so (lib/Plugin): the dialect and passes for upstream mlir-opt.
fusion_plugin = os.path.join(config.fusion_obj_root, "lib", "FusionPlugin.so")
if os.path.exists(fusion_plugin):
    config.available_features.add("fusion-plugin")
    config.substitutions.append(("%fusion_plugin", fusion_plugin))
