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
  [node/app]="base kernels coding gossip proto node api"
  [api]="base kernels coding gossip proto node api"
  [python]="base api"
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
  done < <(if [ "$layer" = node ]; then grep -rnE '^\s*#\s*include\s*"' node --exclude-dir=app; \
           else grep -rnE '^\s*#\s*include\s*"' "$layer"; fi 2>/dev/null)
done
# Finer rules inside a layer: a folder and the include prefixes it may use (own folders only).
check_folder() {  # folder, allowed prefixes...
  local folder=$1 line inc top ok p
  shift
  [ -d "$folder" ] || return 0
  while IFS= read -r line; do
    inc=$(sed -nE 's/.*#\s*include\s*"([^"]+)".*/\1/p' <<<"$line")
    top=${inc%%/*}
    [ -n "$inc" ] && [ -d "$top" ] || continue
    ok=0
    for p in "$@"; do [[ $inc == "$p"* ]] && ok=1; done
    [ $ok -eq 1 ] || report "${line%%:*} includes $inc (allowed for $folder/: $*)"
  done < <(grep -rnE '^\s*#\s*include\s*"' "$folder" 2>/dev/null)
}
check_folder gossip/transport base/ gossip/transport/
check_folder node/train base/ kernels/ coding/ node/train/
check_folder node/peer base/ gossip/ proto/ node/peer/
check_folder node/observe base/ kernels/ coding/ gossip/ proto/ node/peer/ node/observe/
check_folder node/driver base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/observe/ node/driver/
check_folder node/sim base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/sim/
check_folder node/config base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/observe/ node/driver/ node/config/
# The library sits on node/'s layers below the commands, which use it (`murmur node --mode gossip`).
check_folder api base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/observe/ node/driver/ node/config/ api/

[ $status -eq 0 ] && echo "layering: ok"
exit $status
