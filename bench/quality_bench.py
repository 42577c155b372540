#!/usr/bin/env python3
"""How well each aggregation learns against exact all-reduce at its best learning rate, on loopback.

Usage: bench/quality_bench.py [build/murmur] [--nodes 4,8] [--epochs 3,10] [--seeds 1,2,3]
                              [--modes ring,outer,choco] [--lrs MODE=LR,LR,...]... [--out FILE]
                              [--backend local|sim]

For each N and epoch budget, every mode runs at every rate of its grid with every seed: the same
model (784-256-128-10 MLP), batch 64 per node, schedule (cosine, warm-up 0.2 epochs), optimizer
(SGD, Nesterov momentum 0.9) and sample budget (EPOCHS passes over the training set, all nodes
together). A mode's row is its best rate: the highest mean accuracy over the seeds.
  ring    murmur local --mode ring --n N --L 1: synchronous ring all-reduce, the DDP equivalent,
          EPOCHS x 60000 / (64 N) iterations of global batch 64 N
  outer   murmur local --nodes N with murmur's outer optimizer (--outer), its default settings
  choco   murmur local --nodes N --outer none: CHOCO-SGD, top-1 % with fp16 values every step
  ps, ps-backup, ps-async, ps-ssp, ps-async-server, ps-ssp-server
          murmur local --mode ps --n N --L 1: one parameter server and N workers, the ring's
          iterations and global batch; bulk synchronous (ps), with one backup worker
          (--backup 1), asynchronous (--ps-sync async: the budget's N x iterations gradients
          applied one by one) and stale-synchronous (--ps-sync ssp:2), these two with DANA's
          per-worker momentum (the default) and with the textbook server momentum (-server)
A gossip run's accuracy is its cluster model's: the average every node adopts at the consensus
finish. Bytes per node: gossip's as measured (the finish included); ring's 2 (N - 1) / N of the
fp32 model per iteration, what a ring all-reduce moves. Wall time is the run's, on this machine
(loopback, shared cores: read time across rows of one N only).
Prints every run as it ends and the table at the end (also to --out, with the command).

--backend sim runs the same modes in `murmur sim --fidelity training` (every node's real Trainer
in virtual time, one process, 1 Gbit/s links): clusters larger than the machine (16), the members
in step as on N machines of equal speed; its wall time is the simulator's, not the cluster's.
"""
import argparse
import json
import math
import subprocess
import sys
import time

TRAIN_ROWS = 60000
PARAMS = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10
DEFAULT_LRS = {"ring": [0.05, 0.1, 0.2], "outer": [0.03, 0.05, 0.1], "choco": [0.05, 0.1, 0.2],
               "ps": [0.05, 0.1, 0.2], "ps-backup": [0.05, 0.1, 0.2],
               "ps-async": [0.05, 0.1, 0.2], "ps-ssp": [0.05, 0.1, 0.2],
               "ps-async-server": [0.02, 0.05, 0.1], "ps-ssp-server": [0.02, 0.05, 0.1]}
PS_FORMS = {"ps": [], "ps-backup": ["--backup", "1"], "ps-async": ["--ps-sync", "async"],
            "ps-ssp": ["--ps-sync", "ssp:2"],
            "ps-async-server": ["--ps-sync", "async", "--ps-momentum", "server"],
            "ps-ssp-server": ["--ps-sync", "ssp:2", "--ps-momentum", "server"]}
COMMON = ["--lr-schedule", "cosine", "--warmup-epochs", "0.2", "--nesterov=true",
          "--progress", "none", "--json"]


def run(cmd):
    t0 = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit(f"failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1]), time.monotonic() - t0


def one_sim(m, mode, n, epochs, lr, seed):
    """(accuracy, MB per node, wall seconds) of one simulated run."""
    base = ["sim", "--fidelity", "training", "--seed", str(seed), "--lr", str(lr),
            "--lr-schedule", "cosine", "--warmup-epochs", "0.2", "--nesterov=true", "--json"]
    if mode == "ring":
        iterations = math.ceil(epochs * TRAIN_ROWS / (64 * n))
        r, wall = run([m] + base + ["--mode", "ring", "--n", str(n), "--L", "1", "--iterations",
                                    str(iterations), "--global-batch", str(64 * n)])
    else:
        extra = ["--outer", "none"] if mode == "choco" else []
        r, wall = run([m] + base + ["--nodes", str(n), "--epochs", str(epochs)] + extra)
    nodes = r["per_node"]
    if not r.get("succeeded", False):
        sys.exit(f"simulated {mode} run failed: {r.get('description')}")
    # Every node that evaluates (a synchronous mode's root does not) holds the final model.
    scored = [x["accuracy"] for x in nodes if x["accuracy"] is not None]
    workers = [x for x in nodes if x["accuracy"] is not None]
    return (sum(scored) / len(scored), sum(x["bytes_sent"] for x in workers) / len(workers) / 1e6,
            wall)


def one(m, mode, n, epochs, lr, seed, backend="local"):
    """(accuracy, MB per node, wall seconds) of one run."""
    if backend == "sim":
        return one_sim(m, mode, n, epochs, lr, seed)
    base = ["--seed", str(seed), "--lr", str(lr)] + COMMON
    if mode == "ring":
        iterations = math.ceil(epochs * TRAIN_ROWS / (64 * n))
        r, wall = run([m, "local", "--mode", "ring", "--n", str(n), "--L", "1", "--iterations",
                       str(iterations), "--global-batch", str(64 * n), "--eval-every", "0"] + base)
        return r["accuracy"], iterations * 2 * (n - 1) / n * 4 * PARAMS / 1e6, wall
    if mode in PS_FORMS:
        # A diverged run (asynchrony adds momentum of its own) scores 0 rather than ending the grid.
        iterations = math.ceil(epochs * TRAIN_ROWS / (64 * n))
        cmd = [m, "local", "--mode", "ps", "--n", str(n), "--L", "1", "--iterations",
               str(iterations), "--global-batch", str(64 * n), "--eval-every", "0"] + base
        t0 = time.monotonic()
        out = subprocess.run(cmd + PS_FORMS[mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        r = json.loads(lines[-1]) if lines else {}
        # Bytes per worker: everything sent (the server's models and the workers' gradients) / N.
        mb = r.get("bytes_sent_total", 0) / n / 1e6
        return (r.get("accuracy") or 0.0) if r.get("ok") else 0.0, mb, time.monotonic() - t0
    extra = ["--outer", "none"] if mode == "choco" else []
    g, wall = run([m, "local", "--nodes", str(n), "--epochs", str(epochs)] + base + extra)
    acc = g["cluster_accuracy"] if g.get("cluster_accuracy") is not None else g["mean_accuracy"]
    return acc, g["bytes_sent_total"] / n / 1e6, wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--nodes", default="4,8")
    p.add_argument("--epochs", default="3,10")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--modes", default="ring,outer,choco")
    p.add_argument("--lrs", action="append", default=[],
                   help="MODE=LR,LR,... (the mode's learning-rate grid)")
    p.add_argument("--out", help="also write the table here (markdown)")
    p.add_argument("--backend", choices=["local", "sim"], default="local",
                   help="local: murmur local on this machine; sim: murmur sim --fidelity training")
    a = p.parse_args()
    grids = dict(DEFAULT_LRS)
    for spec in a.lrs:
        mode, _, rates = spec.partition("=")
        if mode not in grids or not rates:
            sys.exit(f"--lrs {spec}: MODE=LR,... with MODE one of {', '.join(grids)}")
        grids[mode] = [float(x) for x in rates.split(",")]
    modes = a.modes.split(",")
    for mode in modes:
        if mode not in grids:
            sys.exit(f"--modes: unknown mode {mode} (one of {', '.join(grids)})")
    seeds = [int(x) for x in a.seeds.split(",")]
    cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    command = " ".join(sys.argv)
    print(f"quality bench ({a.backend}): batch 64 per node, cosine (warm-up 0.2 epochs), Nesterov 0.9, "
          f"seeds {a.seeds}, {cores} cores; grids {', '.join(f'{m} {grids[m]}' for m in modes)}",
          flush=True)
    rows = []
    for n in [int(x) for x in a.nodes.split(",")]:
        for epochs in [float(x) for x in a.epochs.split(",")]:
            best = {}
            for mode in modes:
                for lr in grids[mode]:
                    runs = []
                    for seed in seeds:
                        acc, mb, wall = one(a.murmur, mode, n, epochs, lr, seed, a.backend)
                        runs.append((acc, mb, wall))
                        print(f"  N={n} {epochs:g} epochs {mode} lr {lr:g} seed {seed}: {acc:.4f}, "
                              f"{mb:.2f} MB/node, {wall:.1f} s", flush=True)
                    mean = sum(r[0] for r in runs) / len(runs)
                    if mode not in best or mean > best[mode][1]:
                        best[mode] = (lr, mean, runs)
            ring = best.get("ring")
            for mode in modes:
                lr, mean, runs = best[mode]
                half = (max(r[0] for r in runs) - min(r[0] for r in runs)) / 2
                mb = sum(r[1] for r in runs) / len(runs)
                wall = sum(r[2] for r in runs) / len(runs)
                gap = f"{100 * (mean - ring[1]):+.2f} pt" if ring else "-"
                ratio = sum(r[1] for r in ring[2]) / len(ring[2]) / mb if ring else None
                # Under 10x with two significant digits: a form that sends more reads below 1x.
                fewer = "-" if ratio is None else f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"
                rows.append(f"| {n} | {epochs:g} | {mode} | {lr:g} | {mean:.4f} ± {half:.4f} "
                            f"| {gap} | {mb:.2f} | {fewer} | {wall:.1f} |")
    table = ["| N | epochs | mode | best lr | accuracy (mean ± half range) | vs best ring "
             "| MB sent per node | fewer bytes than ring | wall s |",
             "|---|---|---|---|---|---|---|---|---|"] + rows
    print(f"\n{command}\n")
    print("\n".join(table))
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"`{command}` ({cores} cores)\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
