#!/usr/bin/env bash
# Runs bench/gpu_bench.cc and bench/torch_gpu.py on one GPU and prints the issue's three ratios.
# Usage: bench/gpu_bench.sh [DIR with murmur_gpu_bench and lib/] (default: build/bench)
set -euo pipefail
dir=${1:-build/bench}
here=$(cd "$(dirname "$0")" && pwd)
data=$(mktemp /tmp/murmur-topk-XXXXXX.f32)
trap 'rm -f "$data"' EXIT
export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# Printed after capture: `tee /dev/stderr` reopens stderr's file and truncates it when the caller
# appends this script's output to a log.
ours=$("$dir/murmur_gpu_bench" --dump "$data") && echo "$ours"
theirs=$(python3 "$here/torch_gpu.py" --data "$data") && echo "$theirs"
python3 - "$ours" "$theirs" <<'PY'
import sys
def get(text, key):
    for line in text.splitlines():
        if line.startswith(key + " "):
            return float(line.split()[1])
    raise SystemExit(f"{key} missing")
ours, theirs = sys.argv[1], sys.argv[2]
topk = get(theirs, "topk_ms") / get(ours, "topk_ms")
step = get(ours, "step_us") / get(theirs, "step_us")
print(f"\ntop-k 1% of 10^8: {topk:.1f}x faster than torch.topk (goal >= 5: {'met' if topk >= 5 else 'MISSED'})")
print(f"training step: {step:.2f}x PyTorch's time (goal <= 1.2: {'met' if step <= 1.2 else 'MISSED'})")
PY
