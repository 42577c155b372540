#!/usr/bin/env python3
"""How well gossip learns against exact all-reduce (issue 19), on loopback.

Usage: bench/quality_bench.py [build/murmur] [--nodes 4,8,16] [--seeds 1,2,3] [--epochs 3]
                              [--lr 0.05] [--schedule cosine] [--warmup 0.2] [--nesterov on]

For each N and seed, the same model (784-256-128-10 MLP), batch 64 per node, learning rate,
schedule, optimizer (SGD momentum 0.9, Nesterov unless --nesterov off: the cluster modes'
default) and sample budget (EPOCHS passes over the training set, all nodes together):
  gossip top-1 %   murmur local --nodes N (CHOCO-SGD, top-1 % with fp16 values, ring topology)
  gossip dense     the same with --compress none (exact gossip averaging)
  ring             murmur local --mode ring --n N --L 1: synchronous ring all-reduce, the DDP
                   equivalent, EPOCHS × 60000 / (64 N) iterations of global batch 64 N
and once, single-node `murmur train` at the global batch 64 N of the largest N.
Prints per row the mean over seeds of the accuracy (± half the range over seeds), the spread
between the nodes of a run (max - min, mean over seeds), bytes sent per node (gossip: measured,
the consensus finish included; ring: 2 (N-1)/N of the fp32 model per iteration, what a ring
all-reduce moves) and the ratios against ring. A gossip run's accuracy is its cluster model's:
the average every node adopts at the consensus finish; the node spread is of the nodes' own
models just before it.
"""
import argparse
import json
import math
import subprocess
import sys
import time

TRAIN_ROWS = 60000
PARAMS = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10


def run(cmd):
    t0 = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit(f"failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1]), time.monotonic() - t0


def summary(values):
    mean = sum(values) / len(values)
    return mean, (max(values) - min(values)) / 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--nodes", default="4,8,16")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--schedule", default="cosine")
    p.add_argument("--warmup", type=float, default=0.2)
    p.add_argument("--nesterov", choices=["on", "off"], default="on")
    a = p.parse_args()
    m = a.murmur
    sizes = [int(x) for x in a.nodes.split(",")]
    seeds = [int(x) for x in a.seeds.split(",")]
    common = ["--lr", str(a.lr), "--lr-schedule", a.schedule, "--warmup-epochs", str(a.warmup),
              "--nesterov=" + ("true" if a.nesterov == "on" else "false"),
              "--progress", "none", "--json"]
    print(f"quality bench: {a.epochs:g} epochs, batch 64 per node, lr {a.lr:g} {a.schedule} "
          f"(warm-up {a.warmup:g} epochs), Nesterov {a.nesterov}, seeds {a.seeds}; "
          f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
          flush=True)
    command = " ".join(sys.argv)
    rows = []
    for n in sizes:
        iterations = math.ceil(a.epochs * TRAIN_ROWS / (64 * n))
        ring_bytes = iterations * 2 * (n - 1) / n * 4 * PARAMS
        result = {"gossip top-1 %": [], "gossip dense": [], "ring": []}
        for seed in seeds:
            local = [m, "local", "--nodes", str(n), "--seed", str(seed),
                     "--epochs", str(a.epochs)] + common
            for name, extra in (("gossip top-1 %", []), ("gossip dense", ["--compress", "none"])):
                g, wall = run(local + extra)
                acc = g["cluster_accuracy"] if g.get("cluster_accuracy") is not None else g["mean_accuracy"]
                own = g.get("own_accuracy") or g["accuracy"]
                result[name].append((acc, max(own) - min(own), g["bytes_sent_total"] / n))
                print(f"  N={n} seed {seed} {name}: {acc:.4f} (own models before the finish "
                      f"{min(own):.4f}-{max(own):.4f}, finish {sorted(set(g.get('finish', [])))}), "
                      f"{g['bytes_sent_total'] / n / 1e6:.2f} MB/node, {wall:.0f} s", flush=True)
            r, wall = run([m, "local", "--mode", "ring", "--n", str(n), "--L", "1", "--seed", str(seed),
                           "--iterations", str(iterations), "--global-batch", str(64 * n),
                           "--eval-every", "0"] + common)
            result["ring"].append((r["accuracy"], 0.0, ring_bytes))
            print(f"  N={n} seed {seed} ring: {r['accuracy']:.4f}, {wall:.0f} s", flush=True)
        ring_acc = summary([x[0] for x in result["ring"]])[0]
        for name, runs in result.items():
            acc, half = summary([x[0] for x in runs])
            spread = sum(x[1] for x in runs) / len(runs)
            mb = sum(x[2] for x in runs) / len(runs)
            rows.append((n, name, acc, half, spread, mb, acc - ring_acc, ring_bytes / mb))
    t, _ = run([m, "train", "--epochs", str(int(math.ceil(a.epochs))), "--batch-size",
                str(64 * max(sizes))] + common)
    print(f"\n{command}\n")
    print("| N | mode | accuracy (mean ± half range over seeds) | node spread | MB sent per node "
          "| vs ring: accuracy | vs ring: fewer bytes |")
    print("|---|---|---|---|---|---|---|")
    for n, name, acc, half, spread, mb, gap, ratio in rows:
        print(f"| {n} | {name} | {acc:.4f} ± {half:.4f} | {spread:.4f} | {mb / 1e6:.2f} "
              f"| {100 * gap:+.2f} pt | {ratio:.1f}× |")
    print(f"| 1 | murmur train, batch {64 * max(sizes)} | {t['test_accuracy']:.4f} | - | 0 | - | - |")


if __name__ == "__main__":
    main()
