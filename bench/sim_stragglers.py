#!/usr/bin/env python3
"""What one slow worker costs each aggregation, on 8 machines of their own: `murmur sim`.

Usage: bench/sim_stragglers.py [build/murmur] [--systems outer|ps] [--sample-cost 200us]
                               [--network 100GbE] [--target ACC] [--seeds 1] [--out FILE]

On this machine's 2 cores, 8 workers share the CPU and a slowed worker frees it for the others
(ops/scenarios/*stragglers.toml run the real processes): a straggler barely shows. Here every
node has a machine of its own (`murmur sim --fidelity training`: the real Trainer on Fashion-MNIST
in virtual time, the real machines and wire bytes), compute-bound: `--sample-cost` per sample
(200 us: a model of about 15x this MLP's work per sample) over `--network` links (100 Gbit/s:
the links cost little beside the compute; at 10 Gbit/s one server's link adds about 12 ms to
every synchronous iteration, straggler or not). Every system trains the same samples (64 per
worker per step, 8 workers), each at its best learning rate from bench/quality_bench.py, with
node 2 (a worker in every system) at 4x compute time and without.

  outer  10 epochs: gossip with the outer optimizer (the default), CHOCO gossip alone, ring
         all-reduce; target 0.86 (every system passes it well before its end)
  ps     2 epochs: the parameter server's forms beside ring and gossip; target 0.82

Every system evaluates its model every 1/40 of the run on the whole test set, at no virtual cost
(an observer's measurement: on 1000 rows the noise, about 1 point, moved the time to a target on
the flat end of the curve by seconds). Gossip: every node its own model; the synchronous modes:
the root or server 0. Reported per system: the virtual time to the target (gossip: the nodes' mean
accuracy, the straggler's own model included, as murmur experiment draws it), its ratio with /
without the straggler, the budget's virtual time and its ratio, and the final accuracy (gossip:
the cluster model after the finish).
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

WORKERS = 8


def sync(epochs, lr, *extra):
    iterations = math.ceil(epochs * 60000 / (64 * WORKERS))
    return ["--nodes", str(WORKERS), "--iterations", str(iterations), "--global-batch",
            str(64 * WORKERS), "--lr-schedule", "cosine", "--warmup-epochs", "0.2",
            "--eval-every", str(iterations // 40), "--lr", str(lr)] + list(extra)


def gossip(epochs, lr, *extra):
    steps = math.ceil(epochs * 60000 / (64 * WORKERS))
    return ["--mode", "gossip", "--nodes", str(WORKERS), "--epochs", str(epochs), "--lr", str(lr),
            "--eval-every", str(steps // 40)] + list(extra)


SETS = {
    "outer": (10, 0.86, [
        ("gossip, outer optimizer", gossip(10, 0.05)),
        ("gossip, CHOCO only", gossip(10, 0.1, "--outer", "none")),
        ("ring all-reduce", ["--mode", "ring"] + sync(10, 0.1)),
    ]),
    "ps": (2, 0.82, [
        ("gossip", gossip(2, 0.05)),
        ("ring all-reduce", ["--mode", "ring"] + sync(2, 0.2)),
        ("ps sync", ["--mode", "ps"] + sync(2, 0.2)),
        ("ps sync with 1 backup", ["--mode", "ps", "--backup", "1"] + sync(2, 0.2)),
        ("ps async", ["--mode", "ps", "--ps-sync", "async"] + sync(2, 0.1)),
        ("ps async with server momentum",
         ["--mode", "ps", "--ps-sync", "async", "--ps-momentum", "server"] + sync(2, 0.05)),
        ("ps ssp:2", ["--mode", "ps", "--ps-sync", "ssp:2"] + sync(2, 0.1)),
    ]),
}


def sim(m, args, series):
    cmd = [m, "sim", "--fidelity", "training", "--progress", "none", "--json", "--csv",
           series] + args
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def time_to(series, target, start):
    """Virtual seconds from `start` until the evaluating nodes' mean accuracy reaches `target`."""
    by_time, evaluating = {}, set()
    with open(series) as f:
        for row in csv.DictReader(f):
            accuracy = float(row["accuracy"]) if row["accuracy"] else -1.0  # none evaluated yet
            by_time.setdefault(float(row["t_s"]), {})[row["node"]] = accuracy
            if accuracy >= 0:
                evaluating.add(row["node"])
    # As murmur experiment's curves: the mean of every evaluating node's latest evaluation, once
    # each has one (a gossip cluster: every node's own model, the straggler's included).
    for t in sorted(by_time):
        latest = [by_time[t].get(node, -1.0) for node in evaluating]
        if latest and min(latest) >= 0 and sum(latest) / len(latest) >= target:
            return t - start
    return float("nan")


def measure(m, args, target):
    """(seconds to target, seconds of the budget, final accuracy) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        series = os.path.join(tmp, "series.csv")
        r = sim(m, args, series)
        nodes = r["per_node"]
        scored = [x["accuracy"] for x in nodes if x["accuracy"] is not None and x["accuracy"] >= 0]
        end = max(x["finished_s"] for x in nodes) - r["first_step_s"]
        final = sum(scored) / len(scored) if scored else float("nan")
        return time_to(series, target, r["first_step_s"]), end, final


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--systems", choices=sorted(SETS), default="outer")
    p.add_argument("--sample-cost", default="200us")
    p.add_argument("--network", default="100GbE")
    p.add_argument("--target", type=float, help="accuracy to time (default: the set's)")
    p.add_argument("--seeds", default="1")
    p.add_argument("--out")
    a = p.parse_args()
    epochs, target, systems = SETS[a.systems]
    target = a.target or target
    common = ["--sample-cost", a.sample_cost, "--network", a.network, "--eval-cost", "0s",
              "--eval-samples", "10000"]
    rows = []
    for name, args in systems:
        per = {}
        for straggle in ("", "node=2,slowdown=4"):
            runs = []
            for seed in a.seeds.split(","):
                extra = ["--straggle", straggle] if straggle else []
                runs.append(measure(a.murmur, common + args + ["--seed", seed] + extra, target))
                t, end, acc = runs[-1]
                print(f"  {name}, {'4x' if straggle else 'none'}, seed {seed}: {t:.2f} s to "
                      f"{target}, budget {end:.2f} s, accuracy {acc:.4f}", flush=True)
            per[straggle] = [sum(x) / len(x) for x in zip(*runs)]
        (t0, e0, a0), (t1, e1, a1) = per[""], per["node=2,slowdown=4"]
        rows.append(f"| {name} | {t0:.2f} | {t1:.2f} | {t1 / t0:.2f}× | {e0:.2f} | {e1:.2f} "
                    f"| {e1 / e0:.2f}× | {a0:.4f} | {a1:.4f} |")
        print(rows[-1], flush=True)
    command = " ".join(sys.argv)
    table = [f"| {WORKERS} workers, {epochs} epochs | s to {target:.0%}, no straggler "
             f"| node 2 at 4× | ratio | budget's s | node 2 at 4× | ratio | accuracy "
             f"| accuracy, node 2 at 4× |", "|---|---|---|---|---|---|---|---|---|"] + rows
    print(f"\n{command}\n")
    print("\n".join(table))
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"`{command}`\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
