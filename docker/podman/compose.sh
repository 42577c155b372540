#!/usr/bin/env bash
# Runs docker/docker-compose.yml with podman-compose and this repository's podman settings
# (containers.conf: runc, cgroupfs, ulimits, netavark), as `docker-compose` would:
#   docker/podman/images.sh                  # once: base images, murmur:cpu, Prometheus
#   docker/make-secrets.sh                   # once: docker/secrets/{cluster.key,admin.token}
#   docker/podman/compose.sh up -d           # three nodes and Prometheus, detached
#   docker/podman/compose.sh ps | logs node1 | down
# Extra compose files come first with -f (they override the main file, as with docker-compose).
# `up` without service names starts every service but grafana: Grafana is not packaged in
# Debian and its image cannot be pulled here (Docker users get it from the same file).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="$here/containers.conf"
files=(-f "$here/../docker-compose.yml")
while [ "${1:-}" = "-f" ]; do files+=(-f "$2"); shift 2; done
project="${MURMUR_COMPOSE_PROJECT:-murmur}"
[ $# -gt 0 ] || { echo "usage: compose.sh [-f OVERRIDE]... COMMAND [ARGS]" >&2; exit 2; }
cmd=$1; shift
if [ "$cmd" = up ]; then
  # Services are the arguments that are not options; none given means all but grafana.
  services=0
  for a in "$@"; do [[ $a == -* ]] || services=1; done
  [ $services -eq 1 ] || set -- "$@" node0 node1 node2 prometheus
fi
exec podman-compose --no-ansi -p "$project" "${files[@]}" "$cmd" "$@"
