#!/usr/bin/env bash
# Installs what building and testing the project needs on Debian 12:
# LLVM/MLIR 22 (Debian's packages), CMake, Ninja, a C++ compiler, Python 3.
# Runs apt-get only for the packages that are missing.
set -euo pipefail
pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools ninja-build cmake g++ python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
