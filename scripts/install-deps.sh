#!/usr/bin/env bash
# Installs what building and testing the project needs on Debian 12:
# LLVM/MLIR 22 (Debian's packages), CMake, Ninja, a C++ compiler, Python 3
# (with its headers: Inductor, in the front end's torch.compile test, builds C++),
# and clang-22 with its sanitizer and libFuzzer runtimes (scripts/sanitize.sh).
# Runs apt-get only for the packages that are missing.
#
# Then cuobjdump and nvdisasm from PyPI (nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm, a few MB), into the same virtual environment, for the
# SASS test of the sm_100a kernels (test/lit.cfg.py finds them there; the
# test is skipped without them).
#
# Then torch and transformers, for the Python loader's tests
# (runtime/test/python) and the front end's (python/test: Hugging Face
# modules), from PyPI into a virtual environment of the checkout, .venv, which
# scripts/test.sh hands to those tests; pip runs only where .venv cannot
# import them yet.
# PyPI's Linux torch is its CUDA build: about 3 GB to download and 5.3 GB
# installed (its nvidia-* libraries load at `import torch`, so they are
# needed on a machine without a GPU too); about 3 minutes here.
#   FUSION_VENV=DIR        the virtual environment (default: .venv)
#   FUSION_TORCH=0         no virtual environment, no torch: those tests skip
#   FUSION_TORCH_SPEC=...  what pip installs (default: the versions CI tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools ninja-build cmake g++ python3
  python3-venv python3-dev clang-22 libclang-rt-22-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

if [ "${FUSION_TORCH:-1}" = 0 ]; then
  echo "install-deps: FUSION_TORCH=0: no torch (the loader's tests that need it skip)"
  exit 0
fi
venv=${FUSION_VENV:-"$root/.venv"}
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
sass_spec="nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37"
if compgen -G "$venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump" >/dev/null; then
  echo "install-deps: cuobjdump present in $venv"
else
  echo "install-deps: installing $sass_spec from PyPI into $venv"
  "$venv/bin/python3" -m pip install -q --no-cache-dir --disable-pip-version-check \
    --progress-bar off $sass_spec
fi
spec=${FUSION_TORCH_SPEC:-torch==2.15.0 transformers==5.24.0}
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import torch, transformers" >/dev/null 2>&1; then
  echo "install-deps: torch and transformers present in $venv"
  exit 0
fi
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
# pip holds the downloaded wheels (about 3 GB, in $TMPDIR) and the installed
# tree (about 5.3 GB) at once: say so up front instead of pip's bare ENOSPC.
need_kb=$((9 * 1024 * 1024))
for dir in "$venv" "${TMPDIR:-/tmp}"; do
  free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
  if [ "${free_kb:-0}" -lt "$need_kb" ]; then
    echo "install-deps: error: installing $spec needs about 9 GB free on the file system of" \
      "$dir, which has $((free_kb / 1024)) MB free; free some space (an old build or" \
      "clone), point TMPDIR or FUSION_VENV elsewhere, or set FUSION_TORCH=0 to skip torch" >&2
    exit 1
  fi
done
echo "install-deps: installing $spec from PyPI into $venv"
start=$SECONDS
"$venv/bin/python3" -m pip install -q --no-cache-dir --disable-pip-version-check \
  --progress-bar off $spec
"$venv/bin/python3" -W ignore -c "import torch, transformers; print('install-deps: torch', torch.__version__, 'transformers', transformers.__version__)"
echo "install-deps: torch installed in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
