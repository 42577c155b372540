#!/usr/bin/env bash
# Offline checks of everything under ops/ and docker/ (no engine, no cluster needed):
#   promtool check config / check rules / test rules on the shipped Prometheus files;
#   docker-compose config (not -q: -q passes files that config rejects) on every compose file
#   and override, plus a check that every service's network is declared;
#   the Kubernetes manifests rendered with kubectl kustomize and checked against the schemas in
#   kubernetes-models (npm, pinned by package-lock.json);
#   the ConfigMap's node.toml and the compose environment accepted by `murmur node` itself.
# Usage: ops_test.sh MURMUR_BINARY
set -euo pipefail
MURMUR=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/murmur-ops-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

command -v promtool >/dev/null || fail "promtool is missing (ops/install-deps.sh installs prometheus)"
cd "$ROOT/ops/prometheus"
for f in prometheus-compose.yml prometheus-file-sd.yml prometheus-k8s-dns.yml; do
  promtool check config "$f" > "$WORK/promtool.out" 2>&1 || { cat "$WORK/promtool.out"; fail "promtool check config $f"; }
done
echo "ok: promtool check config: 3 configurations"
promtool check rules rules.yml > "$WORK/check-rules.out" 2>&1 || { cat "$WORK/check-rules.out"; fail "promtool check rules"; }
grep -q "SUCCESS: 6 rules found" "$WORK/check-rules.out" || fail "promtool check rules: expected 6 rules"
promtool test rules rules_test.yml > "$WORK/rules.out" 2>&1 || { cat "$WORK/rules.out"; fail "promtool test rules"; }
echo "ok: promtool check rules (6 rules) and test rules (straggler, node down, marked straggler, non-finite loss)"
# The rules test must catch a broken rule: a straggler threshold that never fires.
sed 's/< on (job) group_left/> on (job) group_left/' rules.yml > "$WORK/rules.yml"
sed "s#- rules.yml#- $WORK/rules.yml#" rules_test.yml > "$WORK/rules_test.yml"
if promtool test rules "$WORK/rules_test.yml" > /dev/null 2>&1; then
  fail "promtool test rules passed a broken straggler rule"
fi
echo "ok: promtool test rules fails on a broken straggler rule"

command -v docker-compose >/dev/null || fail "docker-compose is missing (ops/install-deps.sh installs it)"
cd "$ROOT"
NETWORKS='([.services[] | (.networks // {} | keys[])] | unique) - (.networks // {} | keys)
  | if length == 0 then "networks ok" else error("undeclared networks: \(.)") end'
for files in "docker/docker-compose.yml" \
             "docker/docker-compose.yml -f docker/docker-compose.gpu.yml" \
             "docker/docker-compose.yml -f docker/docker-compose.experiment.yml"; do
  # shellcheck disable=SC2086
  docker-compose -f ${files} config > "$WORK/compose.yml" 2> "$WORK/compose.err" || {
    cat "$WORK/compose.err"; fail "docker-compose config -f $files"; }
  python3 - "$WORK/compose.yml" <<'PY' || fail "compose file $files"
import json, subprocess, sys
resolved = subprocess.run(["python3", "-c", "import yaml,json,sys; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", sys.argv[1]],
                          capture_output=True, text=True, check=True).stdout
c = json.loads(resolved)
declared = set(c.get("networks") or {})
for name, s in c["services"].items():
    for n in (s.get("networks") or {}):
        assert n in declared, f"service {name} uses undeclared network {n}"
nodes = [n for n in c["services"] if n.startswith("node")]
assert len(nodes) == 3, nodes
for n in nodes:
    env = c["services"][n]["environment"]
    assert env["MURMUR_SEEDS"] and env["MURMUR_ADVERTISE"] == f"tcp://{n}:7070", env
    assert "MURMUR_STRAGGLE" in env, f"{n}: straggler injection not configurable by environment"
PY
  echo "ok: docker-compose config -f $files"
done
# (to a file: grep -q closing the pipe early would fail the pipeline under pipefail)
NODE2_STRAGGLE=slowdown=3 docker-compose -f docker/docker-compose.yml config > "$WORK/straggle.yml"
grep -q "MURMUR_STRAGGLE: slowdown=3" "$WORK/straggle.yml" \
  || fail "NODE2_STRAGGLE does not reach node2's environment"
echo "ok: per-service straggler injection by environment (NODE2_STRAGGLE)"
# A compose file with an error must fail the check.
sed 's/^    hostname: node0/    hostnam: node0/' docker/docker-compose.yml > docker/.broken-compose.yml
if docker-compose -f docker/.broken-compose.yml config > /dev/null 2>&1; then
  rm -f docker/.broken-compose.yml; fail "docker-compose config accepted an unknown key"
fi
rm -f docker/.broken-compose.yml
echo "ok: docker-compose config rejects an unknown key"

# The node accepts the compose environment and the ConfigMap's node.toml (membership mode and
# loopback addresses so it runs here for a moment).
# The secrets the compose file and the StatefulSet point at (docker/make-secrets.sh makes them).
"$MURMUR" keygen --out "$WORK/cluster.key" > /dev/null || fail "murmur keygen failed"
(umask 077; echo "0123456789abcdef0123" > "$WORK/admin.token")
for f in docker/docker-compose.yml ops/k8s/base/statefulset.yaml; do
  grep -q "MURMUR_CLUSTER_KEY_FILE" "$ROOT/$f" && grep -q "MURMUR_ADMIN_TOKEN_FILE" "$ROOT/$f" \
    || fail "$f does not give the nodes the cluster key and the admin token"
done
echo "ok: the compose file and the StatefulSet give every node the cluster key and the admin token"
env MURMUR_CLUSTER_KEY_FILE="$WORK/cluster.key" MURMUR_ADMIN_TOKEN_FILE="$WORK/admin.token" \
    MURMUR_MODE=membership MURMUR_CLUSTER=compose MURMUR_SEEDS= MURMUR_EXPECT_MEMBERS=3 \
    MURMUR_SHARD_COUNT=3 MURMUR_SHARD_INDEX=2 MURMUR_EPOCHS=3 MURMUR_EVAL_EVERY=200 \
    MURMUR_REPORT=none MURMUR_STRAGGLE= MURMUR_ID=3 MURMUR_ADMIN=127.0.0.1:0 \
    MURMUR_LISTEN=tcp://127.0.0.1:0 "$MURMUR" node --duration 0.3 --log-level warn \
  || fail "murmur node rejects the compose environment"
python3 - "$ROOT/ops/k8s/base/configmap.yaml" "$WORK/node.toml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
open(sys.argv[2], "w").write(doc["data"]["node.toml"])
PY
MURMUR_CLUSTER_KEY_FILE="$WORK/cluster.key" MURMUR_ADMIN_TOKEN_FILE="$WORK/admin.token" \
  MURMUR_CONFIG="$WORK/node.toml" MURMUR_MODE=membership MURMUR_LISTEN=tcp://127.0.0.1:0 \
  MURMUR_ADMIN=127.0.0.1:0 MURMUR_ADVERTISE= "$MURMUR" node --duration 0.3 --log-level warn \
  || fail "murmur node rejects the ConfigMap's node.toml"
echo "ok: murmur node accepts the compose environment and the ConfigMap's node.toml"
# The node-keys overlay's pod: its own key (copied by the init container), the allowlist Secret
# as a directory, no MURMUR_ID: the node is the member its key is bound to.
MURMUR="$MURMUR" "$ROOT/ops/k8s/make-node-keys.sh" 3 "$WORK/node-keys" > /dev/null || fail "make-node-keys.sh"
MURMUR_CLUSTER_KEY_FILE="$WORK/cluster.key" MURMUR_ADMIN_TOKEN_FILE="$WORK/admin.token" \
  MURMUR_CONFIG="$WORK/node.toml" MURMUR_MODE=membership MURMUR_LISTEN=tcp://127.0.0.1:0 \
  MURMUR_ADMIN=127.0.0.1:0 MURMUR_ADVERTISE= MURMUR_NODE_KEY_FILE="$WORK/node-keys/keys/node-2.key" \
  MURMUR_ALLOWED_KEYS_FILE="$WORK/node-keys/allowlist" "$MURMUR" node --duration 0.3 --log-level info \
  2> "$WORK/node-keys.log" || { cat "$WORK/node-keys.log"; fail "murmur node rejects the node-keys overlay's environment"; }
grep -q "member 3, the id the allowlist binds its key to" "$WORK/node-keys.log" \
  || { cat "$WORK/node-keys.log"; fail "pod 2's node did not take member id 3 from its key"; }
echo "ok: the node-keys overlay's pod 2 runs as member 3, from its key alone"

cd "$ROOT/ops/k8s"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed for the schema check"
cp validate/package.json validate/package-lock.json validate/validate-k8s.mjs "$WORK/"
# The npm cache keeps repeated runs offline-friendly; the lock file pins every version.
(cd "$WORK" && npm ci --no-audit --no-fund --loglevel=error > npm.log 2>&1) || { cat "$WORK/npm.log"; fail "npm ci"; }
if command -v kubectl >/dev/null; then
  for d in base overlays/gpu overlays/node-keys; do
    kubectl kustomize "$d" > "$WORK/$(basename "$d").yaml" || fail "kubectl kustomize $d"
    (cd "$WORK" && node validate-k8s.mjs "$(basename "$d").yaml") || fail "schema check of $d"
  done
  grep -q "nvidia.com/gpu: 1" "$WORK/gpu.yaml" || fail "the GPU overlay does not request nvidia.com/gpu"
  grep -q "podManagementPolicy: Parallel" "$WORK/base.yaml" || fail "StatefulSet is not Parallel"
  grep -q "publishNotReadyAddresses: true" "$WORK/base.yaml" || fail "Service does not publish not-ready pods"
  # The node's container mounts its own key only; the init container all of them.
  python3 - "$WORK/node-keys.yaml" <<'PY' || fail "node-keys overlay: the node container must mount its own key only"
import sys, yaml
sts = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "StatefulSet")
spec = sts["spec"]["template"]["spec"]
node = next(c for c in spec["containers"] if c["name"] == "node")
mounts = {m["name"] for m in node["volumeMounts"]}
assert "node-keys" not in mounts and {"own-key", "allowlist"} <= mounts, mounts
env = {e["name"]: e.get("value") for e in node["env"]}
assert env["MURMUR_NODE_KEY_FILE"] == "/etc/murmur-own-key/node.key" and "MURMUR_ID" not in env, env
init = spec["initContainers"][0]
assert "node-keys" in {m["name"] for m in init["volumeMounts"]}
PY
else
  echo "note: no kubectl here; checking the base manifests one by one (overlays not rendered)"
  (cd "$WORK" && node validate-k8s.mjs "$ROOT"/ops/k8s/base/[a-jl-z]*.yaml) || fail "schema check"
fi
# The check must catch an invalid manifest.
sed 's/replicas: 4/replicas: four/' base/statefulset.yaml > "$WORK/bad.yaml"
if (cd "$WORK" && node validate-k8s.mjs bad.yaml > /dev/null); then fail "the schema check passed replicas: four"; fi
echo "ok: Kubernetes manifests (base, GPU and node-keys overlays) valid; an invalid one is caught"

# The dashboard parses and every panel has a query (the queries are run against a real
# Prometheus by prometheus_test.py).
python3 - "$ROOT/ops/grafana/dashboards/murmur.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"] and all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in d["panels"])
print(f"ok: Grafana dashboard parses: {len(d['panels'])} panels")
PY
echo PASS
