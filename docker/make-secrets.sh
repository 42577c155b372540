#!/usr/bin/env bash
# Makes the compose cluster's secrets once: docker/secrets/cluster.key (the CURVE keypair every
# node is given) and docker/secrets/admin.token (the admin ports' bearer token), both mode 0600.
# Uses a local murmur when there is one, else the image. Existing files are kept.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
mkdir -p "$dir"
chmod 700 "$dir"
murmur="${MURMUR:-$(command -v murmur || true)}"
if [ ! -f "$dir/cluster.key" ]; then
  if [ -n "$murmur" ]; then
    "$murmur" keygen --out "$dir/cluster.key" >/dev/null
  else
    docker run --rm -v "$dir:/out" murmur:cpu murmur keygen --out /out/cluster.key >/dev/null
  fi
fi
if [ ! -f "$dir/admin.token" ]; then
  (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/admin.token"; echo >> "$dir/admin.token")
fi
echo "secrets in $dir: cluster.key, admin.token"
