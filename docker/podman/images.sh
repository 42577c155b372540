#!/usr/bin/env bash
# Builds murmur's images with podman on a machine that has no Docker engine and reaches no image
# registry (only Debian's archive), from the same Dockerfiles a Docker user builds:
#   docker/podman/images.sh            base images if missing, then murmur:cpu and
#                                      murmur-prometheus:debian
#   docker/podman/images.sh base       only the base images
#   docker/podman/images.sh cuda       docker/Dockerfile.cuda on stand-ins for NVIDIA's bases
#                                      (make_cuda_standins says what they are)
# Base images: debian:12 is `debootstrap --variant=minbase bookworm` imported into podman, with
# the host's apt sources (/etc/apt/sources.list.d/debian.sources) so that apt-get inside a build
# reaches the same archive; debian:12-slim is the same tree with documentation, manual pages and
# locales removed and excluded from later installs, as Docker Hub's slim image does. Both carry
# the tags a Dockerfile names (docker.io/library/debian:12...), so `FROM debian:12` resolves
# locally and nothing is pulled (--pull=never).
# Prints each step's time and the images' sizes. Needs root (rootful podman), and the packages
# `ops/install-deps.sh --containers` installs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CONTAINERS_CONF="$here/containers.conf"
what="${1:-all}"
case "$what" in all|base|cuda) ;; *) echo "usage: images.sh [all|base|cuda]" >&2; exit 2 ;; esac

scratch=()  # temporary trees, removed at exit
trap 'rm -rf "${scratch[@]}"' EXIT

step() { printf 'images: %s\n' "$*" >&2; }
timed() {  # timed LABEL CMD...: runs CMD, logs to a file, prints the time; the log on failure
  local label=$1; shift
  local log; log=$(mktemp /tmp/murmur-images.XXXXXX.log)
  local t0=$SECONDS
  if ! "$@" >"$log" 2>&1; then
    echo "images: $label failed; its output follows" >&2; tail -n 60 "$log" >&2; exit 1
  fi
  step "$label: $((SECONDS - t0)) s"
  rm -f "$log"
}
have_image() { podman image exists "$1"; }

make_base() {
  if have_image docker.io/library/debian:12 && have_image docker.io/library/debian:12-slim; then
    step "base images present (debian:12, debian:12-slim)"
    return
  fi
  local root; root=$(mktemp -d /tmp/murmur-rootfs.XXXXXX)
  scratch+=("$root")
  timed "debootstrap bookworm (minbase)" \
    debootstrap --variant=minbase bookworm "$root/fs" http://deb.debian.org/debian
  rm -f "$root/fs/etc/apt/sources.list"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/fs/etc/apt/sources.list.d/"
  else
    echo "deb http://deb.debian.org/debian bookworm main" >"$root/fs/etc/apt/sources.list"
  fi
  rm -rf "$root/fs/var/lib/apt/lists/"* "$root/fs/var/cache/apt/"*.bin
  tar -C "$root/fs" -c . | podman import --quiet --change 'CMD ["bash"]' - \
    docker.io/library/debian:12 >/dev/null
  # The slim variant: what Docker Hub's debian:12-slim leaves out.
  cat >"$root/fs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  find "$root/fs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$root/fs/usr/share/man/"* "$root/fs/usr/share/info/"*
  find "$root/fs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
    -exec rm -rf {} +
  tar -C "$root/fs" -c . | podman import --quiet --change 'CMD ["bash"]' - \
    docker.io/library/debian:12-slim >/dev/null
  step "base images made: $(size_of docker.io/library/debian:12) and" \
    "$(size_of docker.io/library/debian:12-slim) (slim)"
}

# NVIDIA's CUDA images cannot be pulled here, and Debian 12's nvidia-cuda-toolkit is CUDA 11.8,
# whose nvcc has no -std=c++20 (the kernels need it). The stand-ins carry this host's CUDA
# toolkit (CUDA_HOME, default /usr/local/cuda) on the local Debian bases, laid out as NVIDIA's
# images are: devel = debian:12 + nvcc, headers, cudart, cuBLAS under /usr/local/cuda, on PATH;
# runtime = debian:12-slim + cudart and cuBLAS under /usr/local/cuda/lib64. Only the base images
# differ from a Docker build of docker/Dockerfile.cuda (docker/README.md says what that leaves).
make_cuda_standins() {
  if have_image localhost/murmur-standin/cuda:devel &&
     have_image localhost/murmur-standin/cuda:runtime; then
    step "CUDA stand-in bases present"
    return
  fi
  local cuda; cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
  [ -x "$cuda/bin/nvcc" ] || { echo "images: no CUDA toolkit at $cuda (set CUDA_HOME)" >&2; exit 1; }
  local ctx; ctx=$(mktemp -d /tmp/murmur-cuda-ctx.XXXXXX)
  scratch+=("$ctx")
  mkdir -p "$ctx/cuda/lib" "$ctx/rt/lib64"
  cp -a "$cuda/bin" "$cuda/include" "$cuda/nvvm" "$cuda/targets" "$ctx/cuda/"
  (cd "$cuda/lib" && cp -a libcudart.so* libcudart_static.a libcudadevrt.a libculibos.a \
    libcublas.so* libcublasLt.so* stubs "$ctx/cuda/lib/")
  ln -s lib "$ctx/cuda/lib64"
  (cd "$cuda/lib" && cp -a libcudart.so* libcublas.so* libcublasLt.so* "$ctx/rt/lib64/")
  printf '%s\n' "FROM debian:12" "COPY cuda /usr/local/cuda" \
    "ENV PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64 CUDA_HOME=/usr/local/cuda" >"$ctx/Containerfile.devel"
  printf '%s\n' "FROM debian:12-slim" "COPY rt /usr/local/cuda" \
    "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64" >"$ctx/Containerfile.runtime"
  timed "CUDA stand-in devel base ($(du -sh "$ctx/cuda" | cut -f1) of $cuda)" podman build \
    --pull=never -f "$ctx/Containerfile.devel" -t localhost/murmur-standin/cuda:devel "$ctx"
  timed "CUDA stand-in runtime base" podman build \
    --pull=never -f "$ctx/Containerfile.runtime" -t localhost/murmur-standin/cuda:runtime "$ctx"
}

size_of() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

build() {  # build TAG DOCKERFILE
  # --format docker keeps HEALTHCHECK (the OCI format has no such field).
  timed "build $1 from $2" podman build --pull=never --format docker --network host \
    -f "$repo/$2" -t "$1" "$repo"
  step "$1: $(size_of "$1")"
}

make_base
case "$what" in
  all)
    build murmur:cpu docker/Dockerfile
    build murmur-prometheus:debian docker/Dockerfile.prometheus
    ;;
  cuda)
    make_cuda_standins
    timed "build murmur:cuda from docker/Dockerfile.cuda (stand-in bases)" \
      podman build --pull=never --format docker --network host \
      --build-arg CUDA_DEVEL_IMAGE=localhost/murmur-standin/cuda:devel \
      --build-arg CUDA_RUNTIME_IMAGE=localhost/murmur-standin/cuda:runtime \
      -f "$repo/docker/Dockerfile.cuda" -t murmur:cuda "$repo"
    step "murmur:cuda: $(size_of murmur:cuda)"
    ;;
esac
