#!/usr/bin/env bash
# Copies the shared libraries a binary needs, except the C runtime the base image already has,
# into DIR (the runtime stage then needs no -dev packages and no package names that differ
# between Debian and the CUDA images' Ubuntu).  Usage: collect-libs.sh BINARY DIR
set -euo pipefail
bin=$1 dir=$2
mkdir -p "$dir"
ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libstdc++.so.*) ;;
    # The NVIDIA driver library comes from the host through the container toolkit.
    libcuda.so.*) ;;
    *) cp -L "$lib" "$dir/" ;;
  esac
done
