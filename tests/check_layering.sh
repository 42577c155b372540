#!/usr/bin/env bash
# Fails when a header is included outside the folder allowed to include it, or when a layer
# includes a higher one (docs/design.md "Layers and folders"). Usage: check_layering.sh REPO_ROOT
set -u
root="${1:-.}"
cd "$root" || exit 2
status=0
report() { echo "layering: $1"; status=1; }

# The folders are the ones CMakeLists.txt adds (no list here to keep): each must have a layer
# below, or be one of the consumers that may include every layer.
mapfile -t folders < <(sed -nE 's/^\s*add_subdirectory\(([A-Za-z0-9_]+)\).*/\1/p' CMakeLists.txt)
consumers=" tests bench "
[ ${#folders[@]} -gt 0 ] || report "CMakeLists.txt adds no folder (add_subdirectory)"
layered=()
for f in "${folders[@]}"; do [[ $consumers == *" $f "* ]] || layered+=("$f"); done

# Third-party headers with exactly one home.
scan() {  # regex, allowed-prefix, library name
  local hits
  hits=$(grep -rnE "^\s*#\s*include\s*[<\"]($1)" "${layered[@]}" 2>/dev/null \
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
  [api]="base kernels coding gossip proto node api"
  [cli]="base kernels coding gossip proto node api cli"
  [python]="base api"
  [fuzz]="base kernels coding gossip proto node fuzz"
)
for f in "${layered[@]}"; do
  [ -n "${allowed[$f]+x}" ] || report "$f/ is added by CMakeLists.txt but has no layer in tests/check_layering.sh (allowed) nor is a consumer ($consumers)"
done
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
# Finer rules inside a layer: a folder and the include prefixes it may use (own folders only).
ruled=()
check_folder() {  # folder, allowed prefixes...
  local folder=$1 line inc top ok p
  shift
  ruled+=("$folder")
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
check_folder node/net base/ node/peer/straggler.h node/net/
check_folder node/sim base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/sim/
check_folder node/config base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/observe/ node/driver/ node/config/
# The library sits on node/'s layers, below the program (cli/), which uses it (`murmur node --mode
# gossip`).
check_folder api base/ kernels/ coding/ gossip/ proto/ node/train/ node/peer/ node/observe/ node/driver/ node/config/ api/

# node/'s sub-folders are the ones node/CMakeLists.txt adds: each needs its rule above, or it
# could include anything in node/ unnoticed.
while IFS= read -r sub; do
  [[ " ${ruled[*]} " == *" node/$sub "* ]] ||
    report "node/$sub/ is added by node/CMakeLists.txt but has no rule in tests/check_layering.sh (check_folder)"
done < <(sed -nE 's/^\s*add_subdirectory\(([A-Za-z0-9_]+)\).*/\1/p' node/CMakeLists.txt 2>/dev/null)

[ $status -eq 0 ] && echo "layering: ok"
exit $status
