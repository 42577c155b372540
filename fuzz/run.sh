#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan, UBSan) in build-fuzz/ and runs each for SECONDS on
# its corpus (a scratch copy: the repository's corpus is only read). Prints the inputs each
# target ran and the total. A finding stops with exit 1 and names the input: add it under
# fuzz/regressions/TARGET/ (the normal build replays those on every test run) and fix the code.
#   fuzz/run.sh [SECONDS] [TARGET...]     (default 20 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(envelope update membership admin_json config seeds checkpoint)
command -v clang++ >/dev/null || { echo "fuzz/run.sh: clang++ is missing (ops/install-deps.sh installs it)"; exit 2; }

# -O1 with line tables: what libFuzzer's documentation suggests, and quick to compile.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DMURMUR_FUZZ=ON -DMURMUR_BUILD_TESTS=OFF -DMURMUR_BUILD_BENCH=OFF \
  -DMURMUR_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz --target fuzzers

work=$(mktemp -d /tmp/murmur-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
total=0
status=0
for t in "${targets[@]}"; do
  mkdir -p "$work/$t" "$work/findings"
  log="$work/$t.log"
  dirs=("$work/$t" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
  if build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
       -rss_limit_mb=2048 -artifact_prefix="$work/findings/$t-" "${dirs[@]}" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    total=$((total + ${runs:-0}))
    printf '%-12s %10s inputs in %s s, corpus %s\n' "$t" "$runs" "$seconds" "$(ls "$work/$t" | wc -l)"
  else
    status=1
    echo "FINDING in $t:"; grep -E "ERROR|SUMMARY|check failed|runtime error|==.*==" "$log" | head -10 || true
    for f in "$work"/findings/"$t"-*; do
      [ -e "$f" ] || continue
      mkdir -p "fuzz/regressions/$t" && cp "$f" "fuzz/regressions/$t/" && echo "  input saved as fuzz/regressions/$t/$(basename "$f")"
    done
  fi
done
echo "total: $total inputs"
exit $status
