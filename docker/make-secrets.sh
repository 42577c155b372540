#!/usr/bin/env bash
# Makes the compose cluster's secrets once: docker/secrets/cluster.key (the CURVE keypair every
# node is given) and docker/secrets/admin.token (the admin ports' bearer token). Uses a local
# murmur when there is one (MURMUR, or murmur on PATH), else the image murmur:cpu through
# ${DOCKER:-docker} (DOCKER=podman works). Existing files are kept.
#   docker/make-secrets.sh [DIR]     (default docker/secrets)
# Compose mounts file secrets as they are on the host (uid, gid and mode are not applied outside
# swarm), and the nodes run as uid 10001: as root (sudo docker, rootful podman) the files are
# given to 10001 with mode 0400; otherwise they are mode 0644 inside a mode-0700 directory, so no
# other host user can reach them while the container's user can read them (murmur then warns
# that the file is readable by others: inside the container only murmur runs).
set -euo pipefail
dir="${1:-$(cd "$(dirname "$0")" && pwd)/secrets}"
mkdir -p "$dir"
chmod 700 "$dir"
murmur="${MURMUR:-$(command -v murmur || true)}"
if [ ! -f "$dir/cluster.key" ]; then
  if [ -n "$murmur" ]; then
    "$murmur" keygen --out "$dir/cluster.key" >/dev/null
  else
    # As the calling user, who owns $dir (the image's own user could not write there).
    ${DOCKER:-docker} run --rm --user "$(id -u):$(id -g)" -v "$dir:/out" murmur:cpu \
      murmur keygen --out /out/cluster.key >/dev/null
  fi
fi
if [ ! -f "$dir/admin.token" ]; then
  (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/admin.token"; echo >> "$dir/admin.token")
fi
if [ "$(id -u)" -eq 0 ]; then
  chown 10001:10001 "$dir/cluster.key" "$dir/admin.token"
  chmod 0400 "$dir/cluster.key" "$dir/admin.token"
else
  chmod 0644 "$dir/cluster.key" "$dir/admin.token"
fi
echo "secrets in $dir: cluster.key, admin.token"
