#!/usr/bin/env bash
# Shows check_layering.sh can fail: plants each kind of violation in a copy of the tree.
set -u
root="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect_violation() {  # name, file, line
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree"
  cp "$root/CMakeLists.txt" "$tmp/tree/"
  # The folders CMakeLists.txt adds, as the check reads them.
  for d in $(sed -nE 's/^\s*add_subdirectory\(([A-Za-z0-9_]+)\).*/\1/p' "$root/CMakeLists.txt"); do
    [ -d "$root/$d" ] && cp -r "$root/$d" "$tmp/tree/"
  done
  mkdir -p "$(dirname "$tmp/tree/$2")" && echo "$3" >> "$tmp/tree/$2"
  if bash "$root/tests/check_layering.sh" "$tmp/tree" >/dev/null; then
    echo "FAIL: $1 was not detected"; fail=1
  else
    echo "ok   $1 detected"
  fi
}
expect_violation "zmq in node" node/planted.cc '#include <zmq.hpp>'
expect_violation "capnp in gossip" gossip/planted.h '#include <capnp/message.h>'
expect_violation "cuda in kernels/cpu" kernels/cpu/planted.cc '#include <cuda_runtime.h>'
expect_violation "base includes node" base/planted.h '#include "node/train/model.h"'
expect_violation "coding includes gossip" coding/planted.cc '#include "gossip/envelope.h"'
expect_violation "transport includes gossip" gossip/transport/planted.cc '#include "gossip/envelope.h"'
expect_violation "node/train includes node/peer" node/train/planted.h '#include "node/peer/peer_node.h"'
expect_violation "node/driver includes node/config" node/driver/planted.cc '#include "node/config/config_schema.h"'
expect_violation "node/config includes cli" node/config/planted.cc '#include "cli/run_dir.h"'
expect_violation "node/driver includes api" node/driver/planted.cc '#include "api/peer.h"'
expect_violation "node/config includes api" node/config/planted.cc '#include "api/peer.h"'
expect_violation "api includes cli" api/planted.cc '#include "cli/node_command.h"'
expect_violation "python includes cli" python/planted.cc '#include "cli/local_cluster.h"'
expect_violation "gossip includes node" gossip/planted.cc '#include "node/peer/peer_node.h"'
expect_violation "zmq in fuzz" fuzz/planted.cc '#include <zmq.hpp>'
expect_violation "python includes node" python/planted.cc '#include "node/config/node_config.h"'
expect_violation "a folder CMakeLists.txt adds without a layer" CMakeLists.txt 'add_subdirectory(planted)'
expect_violation "a node/ folder without a rule" node/CMakeLists.txt 'add_subdirectory(planted)'
if bash "$root/tests/check_layering.sh" "$root" >/dev/null; then echo "ok   real tree is clean"; else echo "FAIL: real tree"; fail=1; fi
exit $fail
