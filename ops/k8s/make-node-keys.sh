#!/usr/bin/env bash
# Makes the per-node keys of ops/k8s/overlays/node-keys: for pods 0..N-1, DIR/keys/node-K.key
# (the key of member K + 1, mode 0600) and DIR/allowlist/node-K (its "ID KEY" line). Uses a
# local murmur (MURMUR, or murmur on PATH). Existing keys are kept. Then:
#   kubectl -n murmur create secret generic murmur-node-keys --from-file=DIR/keys
#   kubectl -n murmur create secret generic murmur-allowlist --from-file=DIR/allowlist
#   ops/k8s/make-node-keys.sh N [DIR]     (default DIR: ops/k8s/node-keys; N = replicas)
set -euo pipefail
n="${1:?usage: make-node-keys.sh N [DIR] (N: replicas)}"
dir="${2:-$(cd "$(dirname "$0")" && pwd)/node-keys}"
murmur="${MURMUR:-$(command -v murmur || true)}"
[ -n "$murmur" ] || { echo "make-node-keys.sh: no murmur (set MURMUR=build/murmur)" >&2; exit 2; }
case "$n" in ''|*[!0-9]*|0) echo "make-node-keys.sh: N must be a positive count, not '$n'" >&2; exit 2 ;; esac
mkdir -p "$dir/keys" "$dir/allowlist"
chmod 700 "$dir" "$dir/keys"
for ((k = 0; k < n; k++)); do
  key="$dir/keys/node-$k.key"
  if [ ! -f "$key" ]; then
    "$murmur" keygen --node "$((k + 1))" --out "$key" > "$dir/allowlist/node-$k" 2>/dev/null
  fi
  [ -s "$dir/allowlist/node-$k" ] || { echo "make-node-keys.sh: $key has no allowlist line in $dir/allowlist/node-$k (remove the key to make both again)" >&2; exit 1; }
done
echo "keys of members 1..$n in $dir/keys, their allowlist in $dir/allowlist"
