#!/usr/bin/env bash
# Whether a change left murmur's behaviour alone: runs the same virtual-time scenarios (seed 7)
# with two builds and compares each run's trace hash and bytes. Prints one line per scenario,
# "same" or "DIFFERENT", and exits 1 when any differs.
# Usage: bench/same_traces.sh BEFORE/murmur AFTER/murmur   (from the repository root)
set -u
before=${1:?usage: same_traces.sh BEFORE/murmur AFTER/murmur}
after=${2:?usage: same_traces.sh BEFORE/murmur AFTER/murmur}
scenarios=(
  "sim --nodes 64 --epochs 3 --straggle node=3,slowdown=4"
  "sim --nodes 16 --epochs 2 --outer none"
  "sim --mode ring --n 64 --L 1 --global-batch 4096 --iterations 44"
  "sim ops/scenarios/sim/membership.toml"
  "sim ops/scenarios/sim/consensus.toml"
  "sim ops/scenarios/sim/coded_wan.toml"
  "sim --mode ps --nodes 64 --servers 2 --global-batch 4096 --iterations 5"
  "sim --fidelity training --nodes 4 --epochs 0.5"
)
fingerprint() {  # binary, scenario -> "trace_hash bytes"
  # shellcheck disable=SC2086
  "$1" $2 --seed 7 --json --progress none 2>/dev/null | python3 -c \
    "import json,sys; d=json.load(sys.stdin); print(d.get('trace_hash'), d.get('bytes'))"
}
status=0
for s in "${scenarios[@]}"; do
  a=$(fingerprint "$before" "$s")
  b=$(fingerprint "$after" "$s")
  if [ "$a" == "$b" ]; then verdict=same; else verdict=DIFFERENT; status=1; fi
  echo "$verdict  murmur $s --seed 7: before $a, after $b"
done
exit $status
