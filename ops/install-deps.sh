#!/usr/bin/env bash
# Installs every Debian package murmur needs to build, test, train and be operated.
# Idempotent: when all packages are present it only runs dpkg-query (well under a second).
# Quiet: apt's chatter goes to a log file that is printed only if something fails.
#   ops/install-deps.sh           everything: build, tests, benchmarks, fuzzing, ops tools
#   ops/install-deps.sh --image   only what building the `murmur` binary and its data need
#                                 (the images' build stage: docker/Dockerfile, Dockerfile.cuda)
#   ops/install-deps.sh --containers  everything, and podman to build and run the images here
#                                 (docker/podman/, ctest `containers`)
set -euo pipefail

profile=all
case "${1:-}" in
  "") ;;
  --image) profile=image ;;
  --containers) profile=containers ;;
  *) echo "usage: ops/install-deps.sh [--image | --containers]" >&2; exit 2 ;;
esac

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config
  # transport and wire
  libzmq3-dev cppzmq-dev libsodium-dev capnproto libcapnp-dev
  # numerics
  libeigen3-dev
  # metrics, config, logging, CLI, HTTP
  prometheus-cpp-dev libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libcpp-httplib-dev zlib1g-dev libxxhash-dev
  # data: Fashion-MNIST under /usr/share/datasets/fashion-mnist/
  dataset-fashion-mnist
)
[ "$profile" = image ] || packages+=(
  # tests and benchmarks; clang and libFuzzer for fuzz/run.sh
  clang libfuzzer-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-yaml
  # operations: a real Prometheus (and promtool) for the metrics tests, docker-compose for
  # offline compose validation
  prometheus docker-compose
  # murmur experiment / murmur report: figures with matplotlib (for Debian's /usr/bin/python3),
  # and a real browser to check the HTML report in the tests
  python3-matplotlib chromium
  # the Python module (python/: pybind11 for Debian's python3) and its tests with PyTorch
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-torch
  # the package (python/: pip install --no-build-isolation ./python into a venv, offline) and
  # the language-model example's text (the fortunes' 2.5 MB under /usr/share/games/fortunes)
  python3-venv python3-pip python3-setuptools python3-wheel fortunes
  # Slurm with a real controller for ops/slurm's test (slurmctld, slurmd and munge started by
  # the test itself on loopback, with a configuration of its own; nothing is enabled here)
  slurmctld slurmd slurm-client munge
)

# podman with runc and netavark (docker/podman/containers.conf says why), podman-compose, and
# debootstrap for the local base image (no image registry is reachable from the build machine).
# netavark sets up a container's network with iptables: without it every `podman run` fails
# with "netavark: No such file or directory" (a fresh Debian 12 has no iptables).
[ "$profile" != containers ] || packages+=(
  podman runc netavark aardvark-dns podman-compose debootstrap uidmap iptables
)

# The Kubernetes schema check runs on Node.js with npm; images that already have them (e.g. from
# NodeSource) keep theirs, a fresh Debian gets Debian's. kubectl is not installed here: Debian's
# kubernetes-client (1.20) conflicts with the kubectl many images carry; without kubectl the
# check validates the base manifests file by file.
if [ "$profile" != image ]; then
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
log=$(mktemp /tmp/murmur-install-deps.XXXXXX.log)
echo "murmur: installing ${#missing[@]} Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "murmur: apt-get failed; its output follows" >&2
  cat "$log" >&2
  exit 1
fi
rm -f "$log"
echo "murmur: dependencies installed"
