#!/usr/bin/env bash
# Makes a virtual environment with murmur's Python package in it, on Debian's interpreter (the
# one python3-torch, python3-numpy and python3-pybind11 are built for), and checks it sees them.
#   ops/python-venv.sh [DIR]   (default .venv; after ops/install-deps.sh; no package index)
# The package's build reuses the checkout's build/ when it is configured for this Python (the
# README's build: then the install takes seconds), else MURMUR_CMAKE_BUILD_DIR, else a fresh
# build-python/ (python/setup.py says which). The source tree is left as it was.
set -euo pipefail

dir="${1:-.venv}"
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
python=/usr/bin/python3
if [[ ! -x "$python" ]]; then
  echo "ops/python-venv.sh: no $python: run ops/install-deps.sh (Debian's python3)" >&2
  exit 1
fi
onpath="$(command -v python3 || true)"
if [[ -n "$onpath" && "$(readlink -f "$onpath")" != "$(readlink -f "$python")" ]]; then
  echo "ops/python-venv.sh: using $python (Debian's, which has PyTorch), not $onpath (python3 on PATH)"
fi
"$python" -m venv --system-site-packages "$dir"
dir="$(cd "$dir" && pwd)"
if ! "$dir/bin/python" -c "import torch, numpy" 2>/dev/null; then
  echo "ops/python-venv.sh: $dir/bin/python ($("$dir/bin/python" -c 'import sys; print(sys.base_prefix)')) does not see PyTorch and NumPy: run ops/install-deps.sh (python3-torch, python3-numpy)" >&2
  exit 1
fi
env -u PYTHONPATH "$dir/bin/pip" install --quiet --no-build-isolation --no-index "$root/python"
version="$(cd / && env -u PYTHONPATH "$dir/bin/python" -c 'import murmur, murmur.torch, torch; print(murmur.__version__, "with torch", torch.__version__)')"
echo "ops/python-venv.sh: $dir has murmur $version; run programs with $dir/bin/python -m murmur.run"
