#!/usr/bin/env bash
# Packs this machine's CUDA build for a GPU machine that has CUDA, cuBLAS and NCCL but none of the
# Debian libraries megascale links (SimGrid, Boost, Protobuf, OpenMPI, ...): the stripped binary,
# the CUDA plugin and the CUDA test suite, with every shared library they need that is not part of
# the C runtime, into DIR (default .devpack, to be ignored by git). bench/gpu_check.sh runs them.
#   bench/gpu_pack.sh [BUILD_DIR] [DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
dir="${2:-$root/.devpack}"
for f in megascale libmegascale_cuda.so tests/exec_cuda_tests; do
  [ -e "$build/$f" ] || { echo "gpu_pack: $build/$f is missing: build with CUDA first" >&2; exit 1; }
done
rm -rf "$dir"
mkdir -p "$dir/lib" "$dir/fallback"
strip -o "$dir/megascale" "$build/megascale"
strip -o "$dir/exec_cuda_tests" "$build/tests/exec_cuda_tests"
cp "$build/libmegascale_cuda.so" "$dir/"
# The GPU machine brings the C runtime and CUDA's own libraries; the C++ runtime goes to fallback/,
# used only where that machine's is older than this build needs.
ldd "$build/megascale" "$build/tests/exec_cuda_tests" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so|libcuda|libcublas|libnccl|libcudart|libmegascale_cuda' |
  while read -r lib; do
    case "$lib" in
      */libstdc++.so*|*/libgcc_s.so*) cp -L "$lib" "$dir/fallback/" ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
du -sh "$dir"
