#!/usr/bin/env bash
# Packs murmur_gpu_bench for the lent GPU machine (no package registries there): the binary plus
# every shared library it needs except the C/C++ runtime and CUDA's own (libcudart, libcublas,
# libcublasLt come from the CUDA 13 toolkit installed there). Usage: gpu_bundle.sh BUILD OUT
set -euo pipefail
build=$1 out=$2
mkdir -p "$out/lib"
cp "$build/bench/murmur_gpu_bench" "$out/"
ldd "$build/bench/murmur_gpu_bench" | awk '/=> \//{print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libstdc++.so.*) ;;
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
du -sh "$out"
