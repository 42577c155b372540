#!/usr/bin/env bash
# One task of ops/slurm/murmur.sbatch, run by its srun step on the task's host: reads the task's
# line of tasks.tsv (id, address, ports) and runs `murmur node` with them, or the job's --exec
# program with the same keys in the document MURMUR_PEER_CONFIG names (as `murmur local --exec`
# hands them).
#   murmur-task.sh TASK DIR MURMUR_BIN KEY_FILE TOKEN_FILE EXEC_CMD -- NODE_FLAGS...
# TASK "procid": the task of SLURM_PROCID (murmur.sbatch --one-step).
set -euo pipefail
task=$1 dir=$2 murmur_bin=$3 key_file=$4 token_file=$5 exec_cmd=$6
shift 6
[ "$task" != procid ] || task=${SLURM_PROCID:?procid: SLURM_PROCID is not set (not under srun)}
[ "${1:-}" = "--" ] && shift

line=$(awk -F'\t' -v t="$task" '$1 == t' "$dir/tasks.tsv")
[ -n "$line" ] || { echo "murmur-task: task $task is not in $dir/tasks.tsv" >&2; exit 2; }
IFS=$'\t' read -r _ id _ host peer admin straggle <<<"$line"
[ "$straggle" != - ] || straggle=""
ntasks=$(wc -l <"$dir/tasks.tsv")
# The first two tasks are every node's seeds (a node that finds one finds the rest by gossip).
seeds=$(awk -F'\t' 'NR <= 2 {print $5}' "$dir/tasks.tsv" | paste -sd, -)

args=(--id "$id" --cluster "slurm-${SLURM_JOB_ID:-0}"
      --listen "tcp://0.0.0.0:${peer##*:}" --advertise "tcp://$peer" --seeds "$seeds"
      --expect-members "$ntasks" --admin "0.0.0.0:${admin##*:}")
if [ -n "$key_file" ]; then args+=(--cluster-key-file "$key_file"); else args+=(--plaintext); fi
[ -z "$token_file" ] || args+=(--admin-token-file "$token_file")
[ -z "$straggle" ] || args+=(--straggle "$straggle")
args+=("$@")

echo "murmur-task: task $task = node $id on $host ($(hostname)), peer $peer, admin $admin, seeds $seeds${straggle:+, straggle $straggle}" >&2
# The node's report lines (one JSON object each, the last one "final") go to reports/node-K.jsonl,
# which summarize.py reads; its log and the program's own output to the step's log.
mkdir -p "$dir/reports"
report="$dir/reports/node-$id.jsonl"
if [ -z "$exec_cmd" ]; then
  # Its shard of the data, and its time series in the job's folder (a murmur run directory).
  exec "$murmur_bin" node --report json --shard-index "$task" --shard-count "$ntasks" \
    --run-dir "$dir" "${args[@]}" >"$report"
fi
# A library program: its keys as one document (checked and written by `murmur node
# --print-config`, read by the library from MURMUR_PEER_CONFIG), its rank and the job's size; the
# Python module of this build when there is one (build/python beside build/murmur).
MURMUR_PEER_CONFIG="$dir/node-$id.toml"
"$murmur_bin" node "${args[@]}" --print-config >"$MURMUR_PEER_CONFIG"
export MURMUR_PEER_CONFIG MURMUR_RANK=$task MURMUR_WORLD_SIZE=$ntasks MURMUR_NODE_ID=$id \
  MURMUR_REPORT_FD=3
exec 3>"$report"
python_dir=$(dirname "$murmur_bin")/python
[ ! -d "$python_dir/murmur" ] || export PYTHONPATH=$python_dir${PYTHONPATH:+:$PYTHONPATH}
exec /bin/bash -c "$exec_cmd"
