#!/usr/bin/env python3
"""The end of a murmur Slurm job (ops/slurm/murmur.sbatch): a table of its tasks and summary.json.

  python3 ops/slurm/summarize.py JOB_DIR

Reads JOB_DIR/tasks.tsv (where each task ran), JOB_DIR/exits.tsv (each step's exit status, as
srun returned it; a cancelled step is 'cancelled'), JOB_DIR/wall_s and each node's report lines
in JOB_DIR/reports/node-K.jsonl (the last "final" line). Exit 1 when a task that was not
cancelled ended without its final report or with a non-zero status, or when the finished nodes
do not hold one model.
"""

import json
import os
import sys


def last_final(path):
    """The node's final report line, or None (a torn last line is skipped)."""
    final = None
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if obj.get("kind") == "final":
                    final = obj
    except OSError:
        pass
    return final


def read_tsv(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError:
        return []


def summarize(job_dir):
    exits = {row[0]: row[1] for row in read_tsv(os.path.join(job_dir, "exits.tsv"))}
    tasks = []
    for task, node_id, _, host, peer, admin, *_ in read_tsv(os.path.join(job_dir, "tasks.tsv")):
        final = last_final(os.path.join(job_dir, "reports", f"node-{node_id}.jsonl"))
        finish = (final or {}).get("finish") or {}
        tasks.append({
            "task": int(task), "node": int(node_id), "host": host, "peer": peer, "admin": admin,
            "exit": exits.get(task, "running"),
            "finished": bool(final and final.get("finished")),
            "end": (final or {}).get("end"),
            "step": (final or {}).get("step"),
            "accuracy": (final or {}).get("accuracy"),
            "own_accuracy": finish.get("own_accuracy"),
            "finish": finish.get("outcome"),
            "contributors": finish.get("contributors"),
            "bytes_sent": (final or {}).get("bytes_sent", 0),
            "stragglers_detected": (final or {}).get("stragglers_detected", 0),
            "elapsed_s": (final or {}).get("elapsed_s"),
        })
    finished = [t for t in tasks if t["finished"]]
    cancelled = [t for t in tasks if t["exit"] == "cancelled"]
    # --one-step: the exit is the whole step's ("step:RC"); a task's own end is its final report.
    failed = [t for t in tasks if t not in cancelled and
              (not t["finished"] or (t["exit"] != "0" and not t["exit"].startswith("step:")))]
    accuracies = {t["accuracy"] for t in finished}
    one_model = bool(finished) and len(accuracies) == 1 and all(
        t["finish"] == "averaged" for t in finished)
    try:
        wall_s = float(open(os.path.join(job_dir, "wall_s")).read())
    except (OSError, ValueError):
        wall_s = None
    summary = {
        "job": os.environ.get("SLURM_JOB_ID"), "tasks": len(tasks), "finished": len(finished),
        "cancelled": [t["task"] for t in cancelled], "failed": [t["task"] for t in failed],
        "one_model": one_model,
        "cluster_accuracy": next(iter(accuracies)) if one_model else None,
        "bytes_sent_total": sum(t["bytes_sent"] or 0 for t in tasks),
        "wall_s": wall_s, "per_task": tasks,
    }
    return summary


def table(summary):
    rows = [("task", "node", "host", "exit", "end", "step", "accuracy", "own model", "sent MB",
             "finish")]
    for t in summary["per_task"]:
        fmt = lambda v, f="{:.4f}": "-" if v is None else f.format(v)  # noqa: E731
        rows.append((str(t["task"]), str(t["node"]), t["host"], t["exit"], t["end"] or "-",
                     fmt(t["step"], "{}"), fmt(t["accuracy"]), fmt(t["own_accuracy"]),
                     f"{t['bytes_sent'] / 1e6:.2f}",
                     f"{t['finish']} ({t['contributors']})" if t["finish"] else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    s = summary
    wall = "" if s["wall_s"] is None else f", {s['wall_s']:.1f} s wall"
    if s["one_model"]:
        lines.append(f"murmur slurm: {s['finished']} of {s['tasks']} tasks ended on one model, "
                     f"test accuracy {s['cluster_accuracy']:.4f}, "
                     f"{s['bytes_sent_total'] / 1e6:.1f} MB sent{wall}")
    else:
        lines.append(f"murmur slurm: {s['finished']} of {s['tasks']} tasks finished, not on one "
                     f"model{wall}")
    if s["cancelled"]:
        lines.append(f"murmur slurm: cancelled: task {', '.join(map(str, s['cancelled']))}")
    if s["failed"]:
        lines.append(f"murmur slurm: failed (no final report or a non-zero exit): task "
                     f"{', '.join(map(str, s['failed']))}; see logs/task-K.log")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    job_dir = sys.argv[1]
    summary = summarize(job_dir)
    tmp = os.path.join(job_dir, "summary.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(job_dir, "summary.json"))
    print(table(summary), flush=True)
    return 0 if summary["one_model"] and not summary["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
