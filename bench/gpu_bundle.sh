#!/usr/bin/env bash
# Packs murmur's GPU checks for the lent GPU machine (no package registries there, another Linux
# and Python): the GPU test binaries, murmur, murmur_gpu_bench, every shared library they need
# except the C/C++ runtime and CUDA's own (libcudart, libcublas, libcublasLt come from the CUDA 13
# toolkit there), Fashion-MNIST, and the library as one shared object (lib/libmurmur_pyapi.so)
# that bench/gpu_check.sh compiles the Python module against with that machine's Python.
# Build first (a portable -march, the lent machine's CPU is not this one's):
#   cmake -S . -B build -G Ninja -DMURMUR_ARCH=x86-64-v3 && cmake --build build --target murmur \
#     murmur_gpu_bench murmur_cuda_test murmur_api_test murmur_kernels_test murmur_python
# Usage: gpu_bundle.sh BUILD OUT
set -euo pipefail
mkdir -p "$2/lib" "$2/data"
build=$(cd "$1" && pwd) out=$(cd "$2" && pwd)
binaries=(murmur bench/murmur_gpu_bench tests/murmur_cuda_test tests/murmur_api_test
          tests/murmur_kernels_test)

# Debian's libraries a binary or the library object needs, into lib/.
copy_libs() {
  ldd "$1" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*) ;;
      libstdc++.so.*|libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
}
for b in "${binaries[@]}"; do
  strip -o "$out/$(basename "$b")" "$build/$b"
  copy_libs "$build/$b"
done

# The library for the Python module: whole, the archive of every folder whose headers the
# module's source reads (ninja's dependency log of its object: api/ and what api/peer.h brings,
# base/ among them; not a list kept here), the rest as the module's own link line has them.
src=$(cd "$(dirname "$0")/.." && pwd)
whole=()
for folder in $(ninja -C "$build" -t deps python/CMakeFiles/murmur_python.dir/murmur_module.cc.o |
                  sed -nE "s#^ +($src/|\.\./)([a-z_/]+)/[a-z_]+\.h\$#\2#p" | sort -u); do
  archive="$folder/libmurmur_$(tr / _ <<<"$folder").a"
  [ -f "$build/$archive" ] && whole+=("$archive")
done
[[ " ${whole[*]} " == *" api/libmurmur_api.a "* ]] ||
  { echo "gpu_bundle: the module's headers name no api/ archive (build murmur_python first)" >&2; exit 1; }
line() {
  awk -v key="$1" '/^build python\/murmur\/_murmur/{f=1} f&&$1==key{sub(/^ *[A-Z_]+ = /,""); print; exit}' \
    "$build/build.ninja"
}
link="$(line LINK_PATH) $(line LINK_LIBRARIES)"
(cd "$build" && g++ -shared -s -o "$out/lib/libmurmur_pyapi.so" \
  -Wl,--whole-archive "${whole[@]}" -Wl,--no-whole-archive \
  $link)
copy_libs "$out/lib/libmurmur_pyapi.so"
cp /usr/share/datasets/fashion-mnist/*.gz "$out/data/"
# The language-model example's text (Debian's fortunes; 2.5 MB).
mkdir -p "$out/data/fortunes"
find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' \
  -exec cp {} "$out/data/fortunes/" \;
du -sh "$out"
