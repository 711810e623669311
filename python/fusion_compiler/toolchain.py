"""Finds the compiler's tools, compiles dialect programs, caches the libraries.

The tools (`fusion-opt`, `fusion-compile`) are found through
$FUSION_TOOLS_DIR, then the PATH, then the `build/bin` of the checkout this
package sits in. A library is cached on disk under $FUSION_CACHE_DIR
(default ~/.cache/fusion_compiler), keyed by the program's text, the target,
the compile flags and the compiler's identity (the contents of fusion-opt,
fusion-compile and, for GPU targets, the runtime library), so a rebuilt
compiler never reuses a stale library. Next to each library lies the program
it was compiled from (`program.mlir`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

TOOLS_ENV = "FUSION_TOOLS_DIR"
CACHE_ENV = "FUSION_CACHE_DIR"
# Extra fusion-compile options for GPU libraries (e.g. "--no-small-m"), part of
# the cache key: a library built with them is another library.
FLAGS_ENV = "FUSION_COMPILE_FLAGS"


class FusionCompileError(RuntimeError):
    """A tool of the compiler failed; the message holds its diagnostics."""


@dataclass(frozen=True)
class Tools:
    bindir: str

    @property
    def fusion_opt(self) -> str:
        return os.path.join(self.bindir, "fusion-opt")

    @property
    def fusion_compile(self) -> str:
        return os.path.join(self.bindir, "fusion-compile")

    @property
    def runtime_library(self) -> Optional[str]:
        path = os.path.join(self.bindir, "..", "lib", "libfusion_runtime.so")
        return os.path.normpath(path) if os.path.exists(path) else None


def find_tools() -> Tools:
    candidates: List[str] = []
    if os.environ.get(TOOLS_ENV):
        candidates.append(os.environ[TOOLS_ENV])
    on_path = shutil.which("fusion-compile")
    if on_path:
        candidates.append(os.path.dirname(os.path.realpath(on_path)))
    here = os.path.dirname(os.path.realpath(__file__))
    candidates.append(os.path.join(here, "..", "..", "build", "bin"))
    for bindir in candidates:
        if os.access(os.path.join(bindir, "fusion-compile"), os.X_OK) and \
                os.access(os.path.join(bindir, "fusion-opt"), os.X_OK):
            return Tools(os.path.abspath(bindir))
    raise FusionCompileError(
        "cannot find the fusion compiler's tools (fusion-opt, fusion-compile): set "
        f"${TOOLS_ENV} to the directory holding them (a build's bin/ or an install's), "
        f"or put them on the PATH; looked in {candidates}")


_IDENTITY: Dict[Tuple[str, bool], str] = {}


def compiler_identity(tools: Tools, gpu: bool) -> str:
    """A digest of what decides the compiled code: the tools' contents (and
    the runtime's, which GPU libraries link)."""
    key = (tools.bindir, gpu)
    files = [tools.fusion_opt, tools.fusion_compile]
    if gpu and tools.runtime_library:
        files.append(tools.runtime_library)
    stamp = tuple((f, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files)
    cached = _IDENTITY.get(key)
    if cached and cached.startswith(repr(stamp)):
        return cached[len(repr(stamp)):]
    digest = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            digest.update(hashlib.sha256(fh.read()).digest())
    _IDENTITY[key] = repr(stamp) + digest.hexdigest()
    return digest.hexdigest()


def cache_dir() -> str:
    return os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fusion_compiler")


def _run(cmd: Sequence[str], what: str) -> str:
    proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise FusionCompileError(f"{what} failed (exit {proc.returncode}): "
                                 f"{' '.join(cmd)}\n{proc.stderr.strip()}")
    return proc.stderr


@dataclass
class CompiledLibrary:
    path: str
    cached: bool  # found in the cache, not compiled now


def compile_library(mlir: str, target: str, fuse: bool = True,
                    tools: Optional[Tools] = None) -> CompiledLibrary:
    """The shared library of `mlir` for `target` ("cpu" or a GPU chip such as
    "sm_90a"), from the cache or compiled now by fusion-compile."""
    tools = tools or find_tools()
    gpu = target != "cpu"
    flags = [] if fuse else ["--no-fuse"]
    if not gpu:
        flags.append("--cpu")
    else:
        flags += os.environ.get(FLAGS_ENV, "").split()
    key = hashlib.sha256("\0".join(
        [mlir, target, " ".join(flags), compiler_identity(tools, gpu)]).encode()).hexdigest()
    directory = os.path.join(cache_dir(), key[:2], key)
    path = os.path.join(directory, "lib.so")
    if os.path.exists(path):
        return CompiledLibrary(path, True)
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        source = os.path.join(tmp, "program.mlir")
        with open(source, "w") as fh:
            fh.write(mlir)
        built = os.path.join(tmp, "lib.so")
        try:
            _run([tools.fusion_compile, source, "-o", built] + flags, "fusion-compile")
        except FusionCompileError as error:
            if "error while loading shared libraries" in str(error) or "exit 127" in str(error):
                raise FusionCompileError(
                    f"the library of this program is not in the cache ({cache_dir()}) and the "
                    f"compiler cannot run on this machine (a library it needs is missing: no "
                    f"MLIR here?). Build the libraries where the compiler runs "
                    f"(fusion_compiler.build, or compile) with the same tools' files and "
                    f"carry the cache; a different compiler, target, flag or model (shapes, "
                    f"dtypes, epsilon) is another program.\n{error}") from None
            raise
        shutil.copy(source, os.path.join(directory, "program.mlir"))
        os.replace(built, path)  # atomic: a concurrent reader sees all or nothing
    return CompiledLibrary(path, False)


def fusion_report(mlir: str, tools: Optional[Tools] = None) -> List[str]:
    """The remarks of `fusion-fuse{report=true}` on `mlir`: what each norm
    was fused into, or why not, each prefixed with its source location (a
    remark on the program itself, such as its weight preparation, with
    `<partition>:LINE`); then fusion-plan-kernels' folds of residual adds
    into the kernels that take them (a GEMM's, `x + linear(a)`), where the
    program has an add and plans for its target."""
    tools = tools or find_tools()
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as fh:
        fh.write(mlir)
        fh.flush()
        stderr = _run([tools.fusion_opt, fh.name, "--fusion-fuse=report=true",
                       "--mlir-print-op-on-diagnostic=false", "-o", os.devnull],
                      "fusion-opt --fusion-fuse=report=true")
        planned = ""
        if "fusion.add" in mlir:
            try:
                planned = _run([tools.fusion_opt, fh.name, "--fusion-fuse",
                                "--fusion-plan-kernels=report=true",
                                "--mlir-print-op-on-diagnostic=false", "-o", os.devnull],
                               "fusion-opt --fusion-plan-kernels=report=true")
            except FusionCompileError:
                pass  # the compile says why; the report stays fusion-fuse's
    remarks = [line for line in stderr.splitlines() if ": remark: " in line]
    remarks += [line for line in planned.splitlines()
                if ": remark: " in line and "folded into the GEMM" in line]
    return [line.replace(fh.name, "<partition>") for line in remarks]
