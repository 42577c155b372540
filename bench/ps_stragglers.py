#!/usr/bin/env python3
"""What one slow worker costs each aggregation, on 8 machines of their own: `murmur sim`.

Usage: bench/ps_stragglers.py [build/murmur] [--sample-cost 200us] [--network 100GbE]
                              [--seeds 1] [--out FILE]

On this machine's 2 cores, 8 workers share the CPU and a slowed worker frees it for the others
(ops/scenarios/ps_stragglers.toml runs the real processes): a straggler barely shows. Here every
node has a machine of its own (`murmur sim --fidelity training`: the real Trainer on Fashion-MNIST
in virtual time, the real machines and wire bytes), compute-bound: `--sample-cost` per sample
(200 us: a model of about 15x this MLP's work per sample) over `--network` links (100 Gbit/s:
the links cost little beside the compute; at 10 Gbit/s one server's link adds about 12 ms to
every synchronous iteration, straggler or not). Every system
trains the same samples (2 epochs, 64 per worker per step, 8 workers), each at its best learning
rate from bench/quality_bench.py, with node 2 (a worker in every system) at 4x compute time and
without. Reported per system: the virtual time the budget takes, its ratio with / without the
straggler, and the final test accuracy (the root's or server 0's; gossip: the mean over the
nodes): what each pays for not waiting.
"""
import argparse
import json
import subprocess
import sys

SYNC = ["--nodes", "8", "--iterations", "235", "--global-batch", "512", "--lr-schedule",
        "cosine", "--warmup-epochs", "0.2", "--eval-every", "0"]
SYSTEMS = [
    ("gossip", ["--mode", "gossip", "--nodes", "8", "--epochs", "2", "--lr", "0.05",
                "--finish-wait-s", "0"]),
    ("ring all-reduce", ["--mode", "ring", "--lr", "0.2"] + SYNC),
    ("ps sync", ["--mode", "ps", "--lr", "0.2"] + SYNC),
    ("ps sync with 1 backup", ["--mode", "ps", "--backup", "1", "--lr", "0.2"] + SYNC),
    ("ps async", ["--mode", "ps", "--ps-sync", "async", "--lr", "0.1"] + SYNC),
    ("ps async with server momentum",
     ["--mode", "ps", "--ps-sync", "async", "--ps-momentum", "server", "--lr", "0.05"] + SYNC),
    ("ps ssp:2", ["--mode", "ps", "--ps-sync", "ssp:2", "--lr", "0.1"] + SYNC),
]


def sim(m, args):
    cmd = [m, "sim", "--fidelity", "training", "--progress", "none", "--json"] + args
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def measure(r):
    """(virtual seconds of the budget, accuracy) of one run."""
    nodes = r["per_node"]
    scored = [x["accuracy"] for x in nodes if x["accuracy"] is not None and x["accuracy"] >= 0]
    end = max(x["finished_s"] for x in nodes)
    return end - r["first_step_s"], sum(scored) / len(scored) if scored else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--sample-cost", default="200us")
    p.add_argument("--network", default="100GbE")
    p.add_argument("--seeds", default="1")
    p.add_argument("--out")
    a = p.parse_args()
    common = ["--sample-cost", a.sample_cost, "--network", a.network]
    rows = []
    for name, args in SYSTEMS:
        per = {}
        for straggle in ("", "node=2,slowdown=4"):
            times, accs = [], []
            for seed in a.seeds.split(","):
                extra = ["--straggle", straggle] if straggle else []
                t, acc = measure(sim(a.murmur, common + args + ["--seed", seed] + extra))
                times.append(t)
                accs.append(acc)
                print(f"  {name}, {'4x' if straggle else 'none'}, seed {seed}: {t:.2f} s, "
                      f"accuracy {acc:.4f}", flush=True)
            per[straggle] = (sum(times) / len(times), sum(accs) / len(accs))
        (t0, a0), (t1, a1) = per[""], per["node=2,slowdown=4"]
        rows.append(f"| {name} | {t0:.2f} | {t1:.2f} | {t1 / t0:.2f}× | {a0:.4f} | {a1:.4f} |")
        print(rows[-1], flush=True)
    command = " ".join(sys.argv)
    table = ["| 8 workers, 2 epochs | budget's time, no straggler (s) | node 2 at 4× (s) | ratio "
             "| accuracy | accuracy, node 2 at 4× |", "|---|---|---|---|---|---|"] + rows
    print(f"\n{command}\n")
    print("\n".join(table))
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"`{command}`\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
