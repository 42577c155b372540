"""Reading run directories (cli/run_dir.h) into tidy rows.

A run directory holds config.toml, result.json, logs/ and series/node-K.jsonl; an experiment
directory (experiment.py) holds experiment.json and runs/<id>/ run directories, each with a
done.json once the runner saw it through. Everything here is plain data: lists of dicts whose
keys are the CSV columns.
"""
import csv
import json
import os
import tomllib

# Columns of runs.csv that depend on timing (the machine's load), not on the seeded computation:
# an interrupted and resumed grid reproduces every other column of a seeded run.
TIMING_COLUMNS = {"wall_s", "train_s", "time_to_target_s", "iteration_ms_mean",
                  "iteration_ms_p95", "steps_mean", "bytes_per_node", "fewer_bytes_than_allreduce",
                  "staleness_mean"}


def read_jsonl(path):
    """The whole lines of a series file; a torn last line (a run stopped mid-write) is skipped."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def is_run_dir(path):
    return os.path.isfile(os.path.join(path, "result.json")) or \
        os.path.isdir(os.path.join(path, "series"))


def load_run(path, labels=None, run_id=None):
    """One run directory -> {"id", "labels", "config", "result", "done", "series": {node: [..]},
    "t0": its start (Unix s), "accuracy": the cluster's accuracy curve}."""
    run = {"id": run_id or os.path.basename(os.path.normpath(path)), "dir": path,
           "labels": dict(labels or {}), "config": {}, "result": None, "done": None, "series": {}}
    cfg = os.path.join(path, "config.toml")
    if os.path.isfile(cfg):
        with open(cfg, "rb") as f:
            run["config"] = tomllib.load(f)
    for name, key in (("result.json", "result"), ("done.json", "done")):
        p = os.path.join(path, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                run[key] = json.load(f)
    sdir = os.path.join(path, "series")
    if os.path.isdir(sdir):
        for name in sorted(os.listdir(sdir)):
            if name.startswith("node-") and name.endswith(".jsonl"):
                lines = read_jsonl(os.path.join(sdir, name))
                if lines:
                    run["series"][int(name[5:-6])] = lines
    run["t0"] = start_time(run)
    run["accuracy"] = accuracy_curve(run)  # read by every figure and the row: computed once
    run["final"] = final_point(run)
    return run


def start_time(run):
    """Unix time of the run's start: the runner's record; for a hand-run, when murmur local
    started (result.json written at its end, less its wall time: the clock of its --crash
    times); else the earliest series line."""
    if run["done"] and "started" in run["done"]:
        return run["done"]["started"]
    result_path = os.path.join(run["dir"], "result.json")
    if run["result"] and "wall_s" in run["result"] and os.path.exists(result_path):
        return os.path.getmtime(result_path) - run["result"]["wall_s"]
    firsts = [lines[0]["time"] for lines in run["series"].values() if lines]
    return min(firsts) if firsts else 0.0


def mode_of(run):
    return (run["result"] or {}).get("mode") or run["config"].get("mode", "gossip")


def is_sync(run):
    return mode_of(run) in ("coded-tree", "tree", "gc", "ring", "ps")


def accuracy_curve(run):
    """[(t, accuracy)] of the cluster: gossip, the mean of every node's latest evaluation once
    each has one; the synchronous modes, the root's evaluations (node 1 holds rank 0)."""
    t0 = run["t0"]
    if is_sync(run):
        root = run["series"].get(1, [])
        curve, last = [], None
        for line in root:
            a = line.get("accuracy")
            if a is not None and line.get("evaluated_at") != last:
                last = line.get("evaluated_at")
                curve.append((line["time"] - t0, a))
        return curve
    # The periodic evaluations only: the final one is on every test row where these take a
    # sample (final_point draws it apart).
    events = sorted((line["time"], node, line.get("accuracy"))
                    for node, lines in run["series"].items() for line in lines
                    if line.get("kind") != "final")
    latest, curve = {}, []
    for t, node, a in events:
        if a is None:
            continue
        if latest.get(node) != a:
            latest[node] = a
            if len(latest) == len(run["series"]):
                curve.append((t - t0, sum(latest.values()) / len(latest)))
    return curve


def final_point(run):
    """(t, accuracy) of the nodes' final evaluations (every test row; the mean over the nodes
    that reported one), or None."""
    if is_sync(run):
        return None
    finals = [line for lines in run["series"].values() for line in lines
              if line.get("kind") == "final" and line.get("accuracy") is not None]
    if not finals:
        return None
    return (max(l["time"] for l in finals) - run["t0"],
            sum(l["accuracy"] for l in finals) / len(finals))


def bytes_curve(run):
    """[(t, mean bytes sent per node so far)] from the series."""
    t0 = run["t0"]
    events = sorted((line["time"], node, line.get("bytes_sent", 0))
                    for node, lines in run["series"].items() for line in lines)
    sent, out = {}, []
    for t, node, b in events:
        sent[node] = b
        out.append((t - t0, sum(sent.values()) / max(1, len(run["series"]))))
    return out


def time_to(curve, target):
    for t, a in curve:
        if a >= target:
            return t
    return None


def final_accuracy(run):
    r = run["result"] or {}
    if is_sync(run):
        return r.get("accuracy")
    if r.get("cluster_accuracy") is not None:
        return r["cluster_accuracy"]
    return r.get("mean_accuracy")


def run_row(run, target):
    """One row of runs.csv."""
    r = run["result"] or {}
    cfg = run["config"]
    row = {"run": run["id"]}
    row.update(run["labels"])
    acc = r.get("accuracy") if isinstance(r.get("accuracy"), list) else []
    own = r.get("own_accuracy") or acc
    nodes = len(run["series"]) or r.get("nodes") or r.get("processes")
    bytes_total = sum(lines[-1].get("bytes_sent", 0) for lines in run["series"].values())
    row.update({
        "mode": mode_of(run),
        "nodes": nodes,
        "seed": cfg.get("seed"),
        "straggle": cfg.get("straggle", ""),
        "ok": bool(r.get("ok", False)) and (run["done"] or {}).get("exit", 0) == 0,
        "final_accuracy": round_or_none(final_accuracy(run), 6),
        "node_accuracy_min": round_or_none(min(own), 6) if own else None,
        "node_accuracy_max": round_or_none(max(own), 6) if own else None,
        "loss": round_or_none(r.get("loss"), 6) if is_sync(run) else None,
        "iterations": r.get("iterations") if is_sync(run) else None,
        "steps_mean": round_or_none(sum(r["steps"]) / len(r["steps"]), 1) if r.get("steps") else None,
        "bytes_per_node": int(bytes_total / nodes) if nodes else None,
        "fewer_bytes_than_allreduce": round_or_none(r.get("fewer_bytes_than_allreduce"), 2),
        "stragglers_flagged": ";".join(str(x) for x in r.get("stragglers_flagged", [])),
        "crashes": sum(r.get("crashes", [])),
        "time_to_target_s": round_or_none(
            time_to(run["accuracy"] + ([run["final"]] if run["final"] else []), target), 3),
        "wall_s": round_or_none(r.get("wall_s"), 3),
        "train_s": round_or_none(max(r["train_s"]), 3) if r.get("train_s") else None,
        "iteration_ms_mean": round_or_none(r.get("iteration_ms_mean"), 3),
        "iteration_ms_p95": round_or_none(r.get("iteration_ms_p95"), 3),
        # The parameter server: the mean staleness of the gradients server 0 applied (the price
        # async and SSP pay for not waiting; arrival order, hence timing).
        "staleness_mean": round_or_none(r.get("staleness_mean"), 3),
    })
    return row


SERIES_KEYS = [("step", "step"), ("iteration", "iteration"), ("samples", "samples"),
               ("loss", "loss"), ("accuracy", "accuracy"), ("bytes_sent", "bytes_sent"),
               ("bytes_received", "bytes_received"), ("lag", "staleness"), ("wait_s", "wait_s"),
               ("iteration_ms_mean", "iteration_ms_mean"), ("activity", "activity")]


def series_rows(run):
    """The long table: one row per node report line."""
    out = []
    for node, lines in sorted(run["series"].items()):
        for line in lines:
            row = {"run": run["id"]}
            row.update(run["labels"])
            row.update({"node": node, "t": round(line["time"] - run["t0"], 3),
                        "kind": line.get("kind", "membership")})
            for key, col in SERIES_KEYS:
                row[col] = line.get(key)
            marked = line.get("stragglers") or []
            row["stragglers_marked"] = ";".join(str(x) for x in marked)
            row["injection"] = line.get("injection", "")
            for name, value in (line.get("scalars") or {}).items():
                row[f"scalar:{name}"] = value
            out.append(row)
    return out


def round_or_none(v, digits):
    return None if v is None else round(float(v), digits)


def write_csv(path, rows):
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
