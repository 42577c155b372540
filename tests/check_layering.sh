#!/usr/bin/env bash
# Fails when a header is included outside the folder allowed to include it, or when a layer
# includes a higher one (DESIGN.md "Layers and folders"). Usage: check_layering.sh REPO_ROOT
set -u
root="${1:-.}"
cd "$root" || exit 2
status=0
report() { echo "layering: $1"; status=1; }

# Third-party headers with exactly one home.
scan() {  # regex, allowed-prefix, library name
  local hits
  hits=$(grep -rnE "^\s*#\s*include\s*[<\"]($1)" base kernels coding gossip proto node 2>/dev/null \
         | grep -v "^$2" || true)
  [ -z "$hits" ] || report "$3 included outside $2:"$'\n'"$hits"
}
scan 'zmq|zmq\.hpp|zmq_addon\.hpp' 'gossip/transport/' 'ZeroMQ'
scan 'capnp/|kj/' 'proto/' "Cap'n Proto"
scan 'cuda|cublas|cub/|thrust/|curand' 'kernels/cuda/' 'CUDA'

# Our own folders: each may include only the folders listed for it.
declare -A allowed=(
  [base]="base"
  [kernels]="base kernels"
  [coding]="base kernels coding"
  [gossip]="base kernels coding gossip"
  [proto]="base kernels coding gossip proto"
  [node]="base kernels coding gossip proto node"
)
for layer in "${!allowed[@]}"; do
  [ -d "$layer" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -nE 's/.*#\s*include\s*"([a-z_]+)\/.*/\1/p' <<<"$line")
    [ -n "$target" ] || continue
    case " ${allowed[$layer]} " in
      *" $target "*) ;;
      *) [ -d "$target" ] && report "$file includes $target/ (allowed for $layer/: ${allowed[$layer]})" ;;
    esac
  done < <(grep -rnE '^\s*#\s*include\s*"' "$layer" 2>/dev/null)
done
[ $status -eq 0 ] && echo "layering: ok"
exit $status
