#!/usr/bin/env bash
# End-to-end checks of the murmur binary: exit codes, messages and output formats.
# Usage: cli_test.sh path/to/murmur
set -u
murmur="$1"
# Nodes started here run plaintext on loopback; the key checks below unset it.
export MURMUR_PLAINTEXT=true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # name, expected exit code, command...
  local name="$1" want="$2"; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, want $want"; sed 's/^/  stderr: /' "$tmp/err" | head -5; fail=1
  else
    echo "ok   $name"
  fi
}
contains() {  # name, file, text
  if grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' not in $2:"; head -5 "$2"; fail=1; fi
}
# Waits until FILE has a line matching PATTERN (grep), at most SECONDS; 1 when it never does.
wait_for() {  # file, pattern, seconds
  local end=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.1
  done
}

check "help exits 0" 0 "$murmur" train --help
contains "help lists keys with env names" "$tmp/out" "MURMUR_BATCH_SIZE"
for sub in train node local plan; do
  "$murmur" "$sub" --help >"$tmp/help" 2>&1
  if grep -q "{true}" "$tmp/help"; then echo "FAIL $sub --help shows CLI11's {true}"; fail=1; fi
done
"$murmur" local --help >"$tmp/help" 2>&1
contains "--help shows integer options as INT" "$tmp/help" "--nodes INT"
contains "--help shows real options as NUMBER" "$tmp/help" "--lr NUMBER"
contains "--help shows choices as CHOICE" "$tmp/help" "--mode CHOICE"
contains "--help shows a boolean as taking true or false" "$tmp/help" "--nesterov [true|false]"
check "no subcommand is a usage error" 2 "$murmur"
check "unknown flag is a usage error" 2 "$murmur" train --no-such-flag
check "a mistyped flag is a usage error" 2 "$murmur" local --nodse 4
contains "a mistyped flag gets a suggestion" "$tmp/err" "--nodse: did you mean --nodes?"
check "bad value exits 2" 2 "$murmur" train --epochs abc
contains "bad value names key, value and range" "$tmp/err" "invalid value 'abc' for epochs (from flag --epochs): expected an integer in [1, 100000]"
check "bad env exits 2" 2 env MURMUR_BATCH_SIZE=0 "$murmur" train
contains "bad env is attributed" "$tmp/err" "environment variable MURMUR_BATCH_SIZE"
check "bad compression spec exits 2" 2 "$murmur" train --compress zip:3
contains "bad compression spec says why" "$tmp/err" "invalid value 'zip:3' for compress (from flag --compress): expected none or an operator spec (compression spec 'zip:3': unknown operator 'zip'"
check "compression that cannot fit exits 2" 2 "$murmur" train --compress topk:2 --max-train-samples 100
contains "compression misfit says why" "$tmp/err" "ratio 2 must be in (0, 1]"
check "unknown device exits 2" 2 "$murmur" train --device tpu
contains "unknown device lists the choices" "$tmp/err" "device 'tpu' is not one of auto, cpu, cuda, cuda:N"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  check "cuda without a GPU exits 2" 2 "$murmur" train --device cuda --epochs 1 --max-train-samples 100
  contains "cuda without a GPU says why" "$tmp/err" "use --device cpu or auto"
  check "auto without a GPU trains on the CPU" 0 "$murmur" train --device auto --epochs 1 --max-train-samples 500 --progress none
  check "a local cluster on cuda without a GPU exits 2" 2 "$murmur" local --nodes 4 --device cuda
  contains "the local refusal says why" "$tmp/err" "no CUDA device is visible"
  check "a gossip node on cuda without a GPU exits 2" 2 "$murmur" node --mode gossip --listen tcp://127.0.0.1:0 --device cuda:0
  contains "the node refusal says why" "$tmp/err" "use --device cpu or auto"
fi
# cuBLAS is opened on the first GPU context (kernels/cuda/cublas_loader.h), never linked: a CPU
# process does not map its ~140 MB or pay its half second of loading.
if ldd "$murmur" | grep -q libcublas; then
  echo "FAIL the binary links cuBLAS:"; ldd "$murmur" | grep cublas; fail=1
else
  echo "ok   the binary does not link cuBLAS"
fi
check "membership on a GPU exits 2" 2 "$murmur" local --mode membership --device cuda
contains "the refusal says membership trains nothing" "$tmp/err" "trains nothing"
check "a local cluster on the CPU says where it trains" 0 "$murmur" local --nodes 2 --device cpu \
  --epochs 1 --max-train-samples 2000 --finish-wait-s 2 --json --progress none \
  --outer nesterov:every=4
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["devices"] == ["cpu", "cpu"], d["devices"]
print("ok   local devices:", d["devices"])
# Where each node's training phase went: the phases add up to its wall time, compute
# is most of it on an idle cluster, and the cluster's rate is the nodes' sum.
phases = d["phases"]
assert len(phases) == 2, phases
for p in phases:
    parts = sum(v for k, v in p.items() if k.endswith("_s") and k not in
                ("wall_s", "thread_cpu_s", "process_cpu_s", "samples_per_s",
                 "samples_per_training_s"))
    assert abs(parts - p["wall_s"]) <= 1e-6 * p["wall_s"], p
    assert p["compute_s"] > 0 and p["compress_s"] > 0 and p["mix_s"] > 0 and p["send_s"] > 0, p
    assert p["communication_s"] == 0 and p["injected_s"] == 0, p
    assert p["samples"] > 0, p
    assert abs(p["samples_per_s"] - p["samples"] / p["wall_s"]) < 1e-6 * p["samples_per_s"], p
    training_s = p["wall_s"] - p["evaluate_s"]
    assert abs(p["samples_per_training_s"] - p["samples"] / training_s) < 1e-6 * p["samples_per_training_s"], p
    assert 0 < p["thread_cpu_s"] <= p["process_cpu_s"], p
assert abs(d["train_phase_samples_per_s"] - sum(p["samples_per_s"] for p in phases)) < 1e-6, d
assert abs(d["samples_per_training_s"] - sum(p["samples_per_training_s"] for p in phases)) < 1e-6, d
print("ok   local phases:", [round(p["compute_s"] / p["wall_s"], 2) for p in phases], "compute share")
# Gossip rounds per node: at least one, and at most one per step.
assert len(d["rounds"]) == len(d["steps"]) == 2, d
assert all(0 < r <= s for r, s in zip(d["rounds"], d["steps"])), (d["rounds"], d["steps"])
print("ok   local rounds:", d["rounds"], "in", d["steps"], "steps")
PY
check "compressed run reports its bytes" 0 "$murmur" train --compress topk:0.05,values=fp16 --epochs 1 --max-train-samples 2000 --json --progress none
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))["compression"]
assert d["spec"].startswith("topk:0.05,values=fp16"), d
assert abs(d["mean_density"] - 0.05) < 1e-3, d
assert d["bytes_per_step"] < d["dense_bytes_per_step"] / 10, d
assert d["bytes_per_nonzero"] < 3.5, d
print("ok   compression summary:", d)
PY
printf 'epochs = 1\nmax_train_samples = 3000\nlr = 0.05\n' > "$tmp/run.toml"
check "config file run with --json" 0 "$murmur" train --config "$tmp/run.toml" --json --progress plain
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["epochs"] == 1 and d["train_rows"] == 3000 and d["samples"] == 3000, d
assert 0.5 < d["test_accuracy"] <= 1.0, d
assert d["samples_per_second"] > 0, d
print("ok   json summary parses:", {k: d[k] for k in ("test_accuracy", "samples_per_second")})
PY
contains "plain progress logs epoch end" "$tmp/err" "epoch 1/1 done"
check "missing data exits 2" 2 "$murmur" train --data-dir "$tmp/none"
contains "missing data names the package" "$tmp/err" "dataset-fashion-mnist"
# A peer port another process holds is the user's to change: exit 2 with the reason.
if python3 - "$murmur" <<'PY'
import socket, subprocess, sys
held = socket.socket()
held.bind(("127.0.0.1", 0))
held.listen()
port = held.getsockname()[1]
r = subprocess.run([sys.argv[1], "node", "--epochs", "1", "--listen", f"tcp://127.0.0.1:{port}"],
                   capture_output=True, text=True, timeout=60)
ok = r.returncode == 2 and "Address already in use" in r.stderr
print(f"{'ok  ' if ok else 'FAIL'} a peer port in use exits 2 (exit {r.returncode}: {r.stderr.strip()[-200:]})")
sys.exit(0 if ok else 1)
PY
then :; else fail=1; fi
# A 4x straggler in a 4-epoch run (about 4 s): its neighbours mark it (by default W scales with
# their step time, max_wait_steps 50) and stop waiting for it, so they wait less than with W
# fixed at 2 s (--max-wait-steps 0). 4 epochs, not 2: beside other tests the cores are shared, a
# sleeping straggler is then less than 4x slower than the others, and its catch-ups (it adopts
# its neighbours' average once S behind) leave them waiting only a tenth to a quarter of their
# time, so a mark takes several W of the run.
for w in default 0; do
  flag=(); [ "$w" = default ] || flag=(--max-wait-steps "$w")
  "$murmur" local --nodes 4 --epochs 4 --straggle node=3,slowdown=4 "${flag[@]}" --json \
    --progress none >"$tmp/straggle-$w.json" 2>"$tmp/straggle.err"
done
if python3 - "$tmp/straggle-default.json" "$tmp/straggle-0.json" <<'PY'
import json, sys
def run(path):
    d = json.loads(open(path).read().strip().splitlines()[-1])
    waiting = [p["waiting_s"] / p["wall_s"] for p in d["phases"]]
    return d, (waiting[1] + waiting[3]) / 2  # nodes 2 and 4, node 3's neighbours on the ring
scaled, w_scaled = run(sys.argv[1])
fixed, w_fixed = run(sys.argv[2])
ok = scaled["ok"] and 3 in scaled["stragglers_flagged"] and w_scaled < w_fixed
print(f"{'ok  ' if ok else 'FAIL'} a 4x straggler is marked in a 4-epoch run: flagged "
      f"{scaled['stragglers_flagged']}, its neighbours waited {w_scaled:.0%} of their time "
      f"(W fixed at 2 s: flagged {fixed['stragglers_flagged']}, waited {w_fixed:.0%})")
sys.exit(0 if ok else 1)
PY
then :; else fail=1; fi
# An injected crash and restart: the summary gives the downtime and the restarted node's own
# steps, and a node that never trained is named, not shown as an accuracy.
check "local: a crash with restart" 0 "$murmur" local --nodes 4 --crash node=3,at=1s,down=1s --progress none
contains "local: the crash's downtime and the restart's steps" "$tmp/out" "node 3 crashed at 1.0 s (injected), restarted at 2.0 s (down 1.0 s), then trained"
contains "local: the end is said with the budget's share" "$tmp/out" "the nodes' final reports count"
# A node restarted after the run ended finds nobody to join: murmur local stops it once every other
# node finished, rather than let it wait out expect_wait (30 s) and then train alone.
check "local: a restart after the end does not outlive the run" 0 timeout 25 "$murmur" local --nodes 4 --epochs 1 --crash node=3,at=0.5s,down=6s --progress none
contains "local: the late joiner is stopped with the reason" "$tmp/err" "nothing left to join"
# A short run's report has a curve: about 20 evaluations per node over the epoch budget.
"$murmur" local --nodes 2 --epochs 1 --json --progress none >"$tmp/evals.json" 2>/dev/null
if python3 - "$tmp/evals.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
points = len(d["accuracy_timeline"])
ok = d["ok"] and points >= 20
print(f"{'ok  ' if ok else 'FAIL'} a 1-epoch run's accuracy curve has {points} points (at least 20)")
sys.exit(0 if ok else 1)
PY
then :; else fail=1; fi
# A boolean takes a bare flag, --flag=false and --flag false, as its help says: --momentum 0
# needs Nesterov off, so each spelling is seen to reach the key (--dry-run: nothing starts).
check "bool: --nesterov false" 0 "$murmur" local --nesterov false --momentum 0 --dry-run
check "bool: --nesterov=false" 0 "$murmur" local --nesterov=false --momentum 0 --dry-run
check "bool: a bare --nesterov is true" 2 "$murmur" local --nesterov --momentum 0 --dry-run
check "bool: --nesterov maybe is refused" 2 "$murmur" local --nesterov maybe --dry-run
check "bool: a bare flag before a positional leaves it alone" 0 "$murmur" sim --json "$(cd "$(dirname "$0")/../.." && pwd)/ops/scenarios/sim/consensus.toml"
check "local --dry-run starts nothing and says what would run" 0 "$murmur" local --nodes 3 --dry-run
contains "local --dry-run names the processes" "$tmp/out" "would run 3 gossip processes"
check "local --dry-run refuses what a run would" 2 "$murmur" local --nodes 4 --dry-run --straggle node=9,slowdown=4
# murmur local: a user error is refused before any node starts, or shown as it happens.
check "local: missing data exits 2 before any node" 2 "$murmur" local --nodes 2 --data-dir "$tmp/none"
contains "local: missing data says what is missing" "$tmp/err" "$tmp/none is not a directory"
if grep -q "admin ports" "$tmp/err"; then echo "FAIL local: nodes started without their data"; fail=1; fi
check "local: an --exec command that does not exist exits 2" 2 "$murmur" local --nodes 2 --epochs 1 --progress none --exec "no-such-program-here --x"
contains "local: the failed node is named with its exit code" "$tmp/err" "node 1 exited with code 127"
contains "local: its log's last line is shown" "$tmp/err" "no-such-program-here: command not found"
contains "local: the summary names the failure" "$tmp/out" "ended by a failure"
if grep -q "0x more" "$tmp/out"; then echo "FAIL local: a run with no step compares bytes"; fail=1; fi
check "local: a program that fails exits 1" 1 "$murmur" local --nodes 2 --epochs 1 --progress none --exec "/usr/bin/python3 -c 'import no_such_module_here'"
contains "local: the program's error is shown where it happens" "$tmp/err" "ModuleNotFoundError: No module named 'no_such_module_here'"
if [ -d "$(dirname "$murmur")/python/murmur" ]; then
  tiny="$(cd "$(dirname "$0")/../python" && pwd)/tiny_program.py"
  check "local: a program's own output is relayed by node" 0 "$murmur" local --nodes 2 --epochs 2 --progress none --exec "/usr/bin/python3 $tiny"
  contains "local: node 1's result line" "$tmp/err" 'node 1 | {"rank": 0'
  contains "local: node 2's result line" "$tmp/err" 'node 2 | {"rank": 1'
else
  echo "SKIP local: a program's output relayed (no Python module in $(dirname "$murmur")/python)"
fi
check "synthetic logistic run" 0 "$murmur" train --task logistic --samples 2000 --features 10 --epochs 2 --progress none
contains "text summary has accuracy" "$tmp/out" "test accuracy"
check "version" 0 "$murmur" --version

# Saved models (node/train/checkpoint.h): murmur train writes one; --init-from starts from it, so
# one more epoch ends below a fresh first epoch's loss; another model's file is refused.
small=(--task logistic --samples 2000 --features 10 --progress none --json)
check "train saves its model" 0 "$murmur" train "${small[@]}" --epochs 3 --save-model "$tmp/m.mck"
check "a fresh epoch" 0 "$murmur" train "${small[@]}" --epochs 1
fresh=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["train_loss"])' <"$tmp/out")
check "train starts from a saved model" 0 "$murmur" train "${small[@]}" --epochs 1 --init-from "$tmp/m.mck"
resumed=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["train_loss"])' <"$tmp/out")
python3 -c "import sys; sys.exit(0 if $resumed < 0.9 * $fresh else 1)" &&
  echo "ok   init-from continues training ($fresh -> $resumed)" ||
  { echo "FAIL init-from: loss $resumed after a saved model, $fresh fresh"; fail=1; }
check "init-from another model exits 2" 2 "$murmur" train "${small[@]/10/12}" --epochs 1 --init-from "$tmp/m.mck"
contains "the refusal names both models" "$tmp/err" "holds a 10-1 logistic model, not 12-1 logistic"
check "init-from a missing file exits 2" 2 "$murmur" train "${small[@]}" --init-from "$tmp/none.mck"
# A model that could not be saved is refused before the run, not lost after it.
check "save-model into a missing directory exits 2" 2 "$murmur" train "${small[@]}" --epochs 1 --save-model "$tmp/none/m.mck"
contains "the refusal names the key and the directory" "$tmp/err" "save_model '$tmp/none/m.mck': no directory '$tmp/none'"
[ ! -s "$tmp/out" ] && echo "ok   nothing was trained" || { echo "FAIL a refused save-model still trained: $(head -c 200 "$tmp/out")"; fail=1; }
check "save-model naming a directory exits 2" 2 "$murmur" train "${small[@]}" --epochs 1 --save-model "$tmp"
check "a gossip node's save-model into a missing directory exits 2" 2 "$murmur" node --plaintext --save-model "$tmp/none/m.mck"
contains "the node's refusal names the key" "$tmp/err" "save_model '$tmp/none/m.mck'"
check "checkpoints outside gossip mode exit 2" 2 "$murmur" node --mode ring --listen tcp://127.0.0.1:0 --checkpoint-dir "$tmp/ck"
contains "the refusal says why" "$tmp/err" "checkpoint_dir and save_model are for --mode gossip"
# A key the mode would ignore is refused, whichever way round (an accepted flag must act).
check "a gossip key in a synchronous mode exits 2" 2 "$murmur" local --mode ring --n 2 --L 1 --topology exponential
contains "the refusal names the flag and the mode" "$tmp/err" "--topology=exponential: a gossip key; --mode ring does not use it"
check "a synchronous mode's key in gossip exits 2" 2 "$murmur" node --plaintext --listen tcp://127.0.0.1:0 --iterations 50
contains "the refusal names the flag" "$tmp/err" "--iterations=50: a key of the synchronous modes"
# The parameter server's keys are its own, and a shape that cannot run says why.
check "a parameter-server key in ring mode exits 2" 2 "$murmur" local --mode ring --servers 2
contains "the refusal names the flag and the mode" "$tmp/err" "--servers=2: a key of --mode ps"
check "the gradient code's s in ps mode exits 2" 2 "$murmur" local --mode ps --s 2
contains "the refusal points to backup workers" "$tmp/err" "--mode ps codes nothing (see --backup"
check "a bad ps_sync exits 2" 2 "$murmur" local --mode ps --ps-sync ssp:-1
contains "the refusal says what the bound must be" "$tmp/err" "must be an integer >= 0"
check "backup workers in async ps exit 2" 2 "$murmur" local --mode ps --ps-sync async --backup 1
contains "the refusal says backup is for full" "$tmp/err" "backup workers are for ps_sync full"
check "as many backup workers as workers exits 2" 2 "$murmur" local --mode ps --nodes 4 --backup 4
contains "the refusal gives the range" "$tmp/err" "must be in [0, N) = [0, 4)"
check "a staleness-scaled rate in synchronous ps exits 2" 2 "$murmur" local --mode ps --staleness-lr
contains "the refusal says why" "$tmp/err" "a synchronous server's gradients are never stale"
check "DANA momentum in synchronous ps exits 2" 2 "$murmur" local --mode ps --ps-momentum dana
contains "the refusal says DANA is for async" "$tmp/err" "ps_momentum dana is for ps_sync async or ssp:S"
check "an unknown ps momentum exits 2" 2 "$murmur" local --mode ps --ps-sync async --ps-momentum worker
check "one random peer each exits 2" 2 "$murmur" local --topology random --random-peers 1
check "--tf32 on the CPU exits 2" 2 "$murmur" train --device cpu --tf32 --epochs 1
contains "the refusal says where the run trains" "$tmp/err" "tf32: TF32 is a mode of a GPU's tensor cores, and this run trains on the CPU"
check "--tf32 for nodes on the CPU exits 2" 2 "$murmur" local --device cpu --tf32
check "a checkpoint period without a checkpoint directory exits 2" 2 "$murmur" node --plaintext \
  --listen tcp://127.0.0.1:0 --checkpoint-every 50
check "a duration for a training node exits 2" 2 "$murmur" node --plaintext --listen tcp://127.0.0.1:0 \
  --duration 2
contains "the refusal names the budget keys" "$tmp/err" "--mode gossip ends on its budget (epochs, target_accuracy or time_limit_s)"
# A lone node (--expect-members 1 starts training at its first step) resumes from its checkpoint:
# the resume comes before the machine's first step.
for epochs in 1 2; do
  check "lone node with a checkpoint, $epochs epochs, exits 0" 0 "$murmur" node --id 5 \
    --listen tcp://127.0.0.1:0 --expect-members 1 --checkpoint-dir "$tmp/lone" --task logistic \
    --samples 2000 --features 10 --epochs "$epochs"
done
contains "the restarted lone node resumed at its own step" "$tmp/err" "node 5: resumed from"
check "a warm-up longer than a ring run exits 2" 2 "$murmur" node --plaintext --mode ring \
  --listen tcp://127.0.0.1:0 --n 2 --L 1 --iterations 5 --global-batch 64 --lr-schedule cosine --warmup-epochs 1
contains "the refusal gives both lengths" "$tmp/err" "the warm-up (60000 samples) must be shorter than the budget (320 samples)"
check "--momentum 0 in a ring keeps Nesterov's default and exits 2" 2 "$murmur" node --plaintext --mode ring \
  --listen tcp://127.0.0.1:0 --n 2 --L 1 --iterations 5 --global-batch 64 --momentum 0
contains "the refusal says how" "$tmp/err" "with --momentum 0 pass --nesterov=false"
check "--momentum 0 in gossip exits 2" 2 "$murmur" local --nodes 2 --momentum 0
contains "the refusal says how" "$tmp/err" "with --momentum 0 pass --nesterov=false"
"$murmur" node --help >"$tmp/help" 2>&1
contains "the cluster modes default to Nesterov" "$tmp/help" "--momentum 0 needs --nesterov=false) [true;"
"$murmur" train --help >"$tmp/help" 2>&1
contains "murmur train keeps heavy ball (PyTorch's default)" "$tmp/help" "Nesterov momentum [false;"
check "the linear scaling rule without a cluster size exits 2" 2 "$murmur" node --plaintext \
  --listen tcp://127.0.0.1:0 --lr-reference-batch 64
contains "the refusal names what is missing" "$tmp/err" "needs expect_members"

# The peer layer: a local cluster converges, and bad node flags say what is wrong. It converges in
# well under a second on a quiet machine; 2 s was once not enough beside another multi-process
# test in ctest -j2, hence 8.
check "local cluster converges" 0 "$murmur" local --mode membership --nodes 3 --duration 8 --json --progress plain
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["converged"] and d["full_view_at_end"] and d["killed_at_stop"] == 0, d
print("ok   local cluster summary:", d)
PY
contains "local progress says when the view is full" "$tmp/err" "full view after"
# Ctrl-C stops every node cleanly (each leaves; none has to be killed): sent once every node
# sees every other (the progress line says so), never after a guessed delay.
"$murmur" local --mode membership --nodes 3 --duration 60 --progress plain >"$tmp/out" 2>"$tmp/err" &
local_pid=$!
wait_for "$tmp/err" "full view after" 30 || echo "FAIL no full view within 30 s: $(tail -3 "$tmp/err")"
kill -INT "$local_pid"
wait "$local_pid"; got=$?
if [ "$got" = 0 ] && grep -q "stopped cleanly" "$tmp/out"; then
  echo "ok   Ctrl-C stops a local cluster cleanly"
else
  echo "FAIL Ctrl-C stops a local cluster cleanly: exit $got: $(cat "$tmp/out")"; fail=1
fi
# Peer-link keys: a node never starts unauthenticated unless told to.
check "node without a key or --plaintext exits 2" 2 env -u MURMUR_PLAINTEXT "$murmur" node --listen tcp://127.0.0.1:0
contains "no key says what to do" "$tmp/err" "peer links need the cluster key: --cluster-key-file FILE"
check "keygen writes a key" 0 "$murmur" keygen --out "$tmp/cluster.key"
[ "$(stat -c %a "$tmp/cluster.key")" = 600 ] && echo "ok   the key file is mode 600" || { echo "FAIL key file mode $(stat -c %a "$tmp/cluster.key")"; fail=1; }
[ "$(head -1 "$tmp/out")" = "$(sed -n 's/^public-key = //p' "$tmp/cluster.key")" ] && echo "ok   keygen prints the public key" || { echo "FAIL keygen output"; fail=1; }
check "keygen does not replace a key" 2 "$murmur" keygen --out "$tmp/cluster.key"
echo "secret-key = tooshort" > "$tmp/bad.key"
check "node with a malformed key exits 2" 2 env -u MURMUR_PLAINTEXT "$murmur" node --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/bad.key"
contains "malformed key says why" "$tmp/err" "must be 40 Z85 characters"
check "node with a key and --plaintext exits 2" 2 "$murmur" node --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key"
contains "key and plaintext says why" "$tmp/err" "cannot be combined with a key file"
# Node keys bound to ids: keygen --node prints the allowlist line; a node whose key is bound to
# another id, or not on the allowlist, exits 2 with the reason.
check "keygen --node writes a node key" 0 "$murmur" keygen --node 2 --out "$tmp/node2.key"
grep -qE "^2 .{40}$" "$tmp/out" && echo "ok   keygen --node prints its allowlist line" || { echo "FAIL keygen --node output: $(cat "$tmp/out")"; fail=1; }
cp "$tmp/out" "$tmp/allowed.keys"
check "a node key bound to another id exits 2" 2 env -u MURMUR_PLAINTEXT "$murmur" node --id 3 --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key" --node-key-file "$tmp/node2.key" --allowed-keys-file "$tmp/allowed.keys"
contains "bound to another id says why" "$tmp/err" "binds its key to member 2, not to this node's id 3"
check "a node key not on the allowlist exits 2" 2 env -u MURMUR_PLAINTEXT "$murmur" node --id 3 --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key" --node-key-file "$tmp/cluster.key" --allowed-keys-file "$tmp/allowed.keys"
contains "not on the allowlist says why" "$tmp/err" "is not on the allowlist"
# A directory (a mounted Kubernetes Secret): its files, dot-files left out.
mkdir -p "$tmp/allowed.d" && cp "$tmp/allowed.keys" "$tmp/allowed.d/node-2" && echo "not a key" > "$tmp/allowed.d/..data"
check "an allowlist directory admits its node" 0 env -u MURMUR_PLAINTEXT "$murmur" node --mode membership --id 2 --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key" --node-key-file "$tmp/node2.key" --allowed-keys-file "$tmp/allowed.d" --duration 0.3
# No --id: the node is the member its key is bound to (a pod given its own key).
check "a node key without --id takes the id it is bound to" 0 env -u MURMUR_PLAINTEXT "$murmur" node --mode membership --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key" --node-key-file "$tmp/node2.key" --allowed-keys-file "$tmp/allowed.d" --duration 0.3 --log-level info
contains "the bound id is said" "$tmp/err" "node: member 2, the id the allowlist binds its key to"
cp "$tmp/allowed.keys" "$tmp/allowed.d/node-2-again"
check "an allowlist listing a key twice exits 2" 2 env -u MURMUR_PLAINTEXT "$murmur" node --mode membership --id 2 --listen tcp://127.0.0.1:0 --cluster-key-file "$tmp/cluster.key" --node-key-file "$tmp/node2.key" --allowed-keys-file "$tmp/allowed.d" --duration 0.3
contains "a key listed twice says why" "$tmp/err" "is listed twice (a key speaks for one member)"
check "node with a missing token file exits 2" 2 "$murmur" node --mode membership --listen tcp://127.0.0.1:0 --admin 127.0.0.1:0 --admin-token-file "$tmp/none"
contains "missing token says why" "$tmp/err" "admin_token_file: cannot read"
check "node with a bad seed exits 2" 2 "$murmur" node --seeds "host-without-port"
contains "bad seed says why" "$tmp/err" "seeds: seed 'host-without-port' needs HOST:PORT"
check "node with a timeout above the interval exits 2" 2 "$murmur" node --probe-interval-ms 100 --probe-timeout-ms 100
contains "bad timeout says why" "$tmp/err" "probe_timeout_ms (100) must be below probe_interval_ms (100)"
check "node runs for its duration and leaves" 0 "$murmur" node --mode membership --listen tcp://127.0.0.1:0 --duration 0.5 --report json --report-interval-ms 100
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(lines) >= 3 and lines[-1]["alive"] == 1, lines[-1]
print("ok   node reports", len(lines), "views")
PY

# Gossip training: bad flags are refused with the reason, before anything starts.
check "gossip node without a budget exits 2" 2 "$murmur" node --epochs 0
contains "no budget says why" "$tmp/err" "no budget"
check "bad straggle spec exits 2" 2 "$murmur" local --nodes 2 --straggle node=1,slowdown=0.5
contains "bad straggle says why" "$tmp/err" "slowdown must be in [1, 1000]"
check "straggle for a node that does not exist exits 2" 2 "$murmur" local --nodes 2 --straggle node=5,slowdown=2
contains "straggle node out of range says why" "$tmp/err" "node '5' is not in [1, 2] (nodes are numbered from 1"
check "straggle node=0 exits 2 (nodes count from 1)" 2 "$murmur" local --nodes 2 --straggle node=0,slowdown=2
check "straggle by rank in gossip exits 2" 2 "$murmur" local --nodes 2 --straggle rank=1,slowdown=2
contains "rank in gossip says why" "$tmp/err" "rank=R is for the synchronous modes"
check "worker beyond a tree's workers exits 2" 2 "$murmur" local --mode tree --n 2 --L 1 --straggle worker=3,slowdown=2
contains "worker out of range names the range" "$tmp/err" "worker '3' is not in [1, 2]"
check "bad compressor exits 2" 2 "$murmur" local --nodes 2 --compress topk:2
contains "bad compressor says why" "$tmp/err" "for compress (from flag --compress)"
# Ctrl-C stops a gossip cluster cleanly too: every node ends, reports and leaves.
"$murmur" local --nodes 2 --epochs 1000 --progress plain >"$tmp/out" 2>"$tmp/err" &
local_pid=$!
# Once node 1 has taken steps (its row of plain progress, "  2.1 s    1     48 ...", has a step).
wait_for "$tmp/err" "^ *[0-9.]* s *1 *[0-9][0-9]* " 60 || echo "FAIL no steps within 60 s: $(tail -3 "$tmp/err")"
kill -INT "$local_pid"
wait "$local_pid"; got=$?
if grep -q "ended by stopped" "$tmp/out" && grep -q "mean test accuracy" "$tmp/out"; then
  echo "ok   Ctrl-C ends a gossip cluster with a report (exit $got)"
else
  echo "FAIL Ctrl-C ends a gossip cluster with a report: exit $got: $(cat "$tmp/out")"; fail=1
fi
# Synchronous modes: the plan, and bad shapes or injections refused before anything starts.
check "plan prints the CodedReduce allocation" 0 "$murmur" plan --n 3 --L 2 --s 1 --samples 15 --json
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))
assert p["workers"] == 12 and p["processes"] == 13, p
assert p["load"] == 4 and abs(p["load_formula"] - 4) < 1e-12, p  # m / (1.5 + 2.25)
assert all(n["computes"] == 4 for n in p["nodes"][1:]) and p["nodes"][0]["computes"] == 0
assert len(p["B"]) == 3 and all(len(r) == 3 for r in p["B"])
print("ok   plan: 12 workers, 4 samples each for m = 15 (uncoded 1.25)")
PY
check "plan for ring" 0 "$murmur" plan --mode ring --n 3 --L 2
contains "ring plan says what it waits for" "$tmp/out" "waits for every rank"
check "s >= n exits 2" 2 "$murmur" local --mode coded-tree --n 3 --s 3
contains "s >= n says why" "$tmp/err" "s = 3"
check "gc beyond 64 workers exits 2" 2 "$murmur" plan --mode gc --n 9 --L 2
contains "gc limit says why" "$tmp/err" "up to 64"
check "ill-conditioned code exits 2" 2 "$murmur" plan --n 12 --L 1 --s 4
contains "ill-conditioned code says why" "$tmp/err" "ill-conditioned (worst cond(B_F)"
check "pause in a coded mode exits 2" 2 "$murmur" local --mode coded-tree --straggle node=4,pause=1..5
contains "pause says where it belongs" "$tmp/err" "pause=A..B is for gossip mode"
check "drop in ring exits 2" 2 "$murmur" local --mode ring --straggle node=1,drop=0.1
contains "drop in ring says why" "$tmp/err" "would stall the run"
check "coded node needing more members times out cleanly" 1 "$murmur" node --mode coded-tree --n 2 --L 1 --listen tcp://127.0.0.1:0 --task logistic --samples 100 --features 4 --join-timeout-s 1
contains "the timeout says how many joined" "$tmp/err" "needs 3 nodes; only 1 joined"
# A gossip node whose seeds never answer trains alone, but says so loudly in its log and its
# /healthz answers 503 with the reason (port 9 on loopback refuses every connection). The time
# limit is its only budget: it trains until it is stopped below.
"$murmur" node --listen tcp://127.0.0.1:0 --seeds 127.0.0.1:9 --admin 127.0.0.1:0 --task logistic \
  --samples 2000 --features 10 --epochs 0 --time-limit-s 120 >/dev/null 2>"$tmp/alone" &
alone_pid=$!
if wait_for "$tmp/alone" "TRAINING ALONE" 30; then
  echo "ok   a node whose seeds never answer says TRAINING ALONE in its log"
  port=$(grep -o "admin port: http://127.0.0.1:[0-9]*" "$tmp/alone" | grep -o "[0-9]*$")
  exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && cat <&3 >"$tmp/healthz"
  exec 3<&-
  contains "its /healthz is 503" "$tmp/healthz" "503"
  contains "its /healthz says why" "$tmp/healthz" "training alone: no other member has answered (seeds: tcp://127.0.0.1:9)"
else
  echo "FAIL no TRAINING ALONE within 30 s: $(tail -3 "$tmp/alone")"; fail=1
fi
kill -TERM "$alone_pid"; wait "$alone_pid"
# A run that trained alone says so at its end (TRAINED ALONE), however short (3 epochs of 2000
# samples end before or after the periodic warning, as the machine's load decides).
"$murmur" node --listen tcp://127.0.0.1:0 --seeds 127.0.0.1:9 --task logistic --samples 2000 \
  --features 10 >/dev/null 2>"$tmp/alone"
contains "a short run with unreachable seeds says it trained alone" "$tmp/alone" "TRAINED ALONE"
# murmur ctl tries a request once more when the connection fails before any answer: an admin
# port that resets the first connection (SO_LINGER 0) and answers the second with 401.
python3 - "$murmur" <<'PY' || fail=1
import json, socket, struct, subprocess, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
port = srv.getsockname()[1]
def serve():
    first, _ = srv.accept()
    first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    first.close()  # a reset, before any answer
    conn, _ = srv.accept()
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(4096)
    body = json.dumps({"error": "changes need a token"}).encode()
    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    conn.close()
t = threading.Thread(target=serve, daemon=True)
t.start()
r = subprocess.run([sys.argv[1], "ctl", "straggle", "--target", f"127.0.0.1:{port}", "--slowdown", "2"],
                   capture_output=True, text=True, timeout=30)
out = r.stdout + r.stderr
assert r.returncode == 1 and "answered 401" in out, (r.returncode, out)
print("ok   murmur ctl retries once after a reset connection")
PY
exit $fail
