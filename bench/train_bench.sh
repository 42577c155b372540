#!/usr/bin/env bash
# Prints murmur's training throughput and, when PyTorch is importable (Debian: python3-torch),
# the same model in PyTorch measured in the same run, alternating the two three times so machine
# noise hits both, and the ratio of medians. Goal of the foundation issue: ratio >= 1.2.
# Usage: bench/train_bench.sh [build-dir]
set -euo pipefail
build="${1:-build}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="$build/bench/murmur_train_throughput"
[ -x "$bin" ] || { echo "build $bin first (cmake --build $build)" >&2; exit 1; }
py=/usr/bin/python3
have_torch=0
"$py" -c 'import torch' 2>/dev/null && have_torch=1
if [ $have_torch = 1 ]; then
  # Debian's torch calls the system BLAS; with the reference libblas3 it is ~10x slower than with
  # OpenBLAS, so say which one this run compares against.
  blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)
  echo "pytorch BLAS: $blas" >&2
  case "$blas" in *openblas*) ;; *) echo "note: install libopenblas0-pthread for a fair PyTorch baseline" >&2 ;; esac
fi
ours=(); theirs=()
for round in 1 2 3; do
  ours+=("$("$bin" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])')")
  if [ $have_torch = 1 ]; then
    theirs+=("$(OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" "$here/torch_mlp.py" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])')")
  fi
  echo "round $round: murmur ${ours[-1]} samples/s${theirs:+, pytorch ${theirs[-1]} samples/s}" >&2
done
"$py" - "${ours[*]}" "${theirs[*]:-}" <<'PY'
import statistics, sys
ours = [float(v) for v in sys.argv[1].split()]
theirs = [float(v) for v in sys.argv[2].split()] if sys.argv[2].strip() else []
print(f"murmur  MLP 784-256-128-10 batch 64, 1 thread: {statistics.median(ours):9.0f} samples/s")
if theirs:
    print(f"pytorch same model, batch, threads:            {statistics.median(theirs):9.0f} samples/s")
    print(f"ratio murmur / pytorch: {statistics.median(ours) / statistics.median(theirs):.2f}x (goal >= 1.2x)")
else:
    print("pytorch not importable (apt-get install python3-torch to compare); no ratio")
PY
