#!/usr/bin/env python3
"""Gossip training on this machine: 8 nodes on loopback against a single-node dense run.

Usage: bench/gossip_bench.py [build/murmur] [--nodes 8] [--target 0.85]

Prints, in one run (every figure against a baseline measured in the same run):
  1. mean test accuracy of 8 gossip nodes (default MLP, batch 64, top-1 %, the same total
     samples as a single-node 3-epoch run: a cluster-wide budget of 3 epochs) against a
     single-node dense `murmur train --epochs 3`;
  2. bytes sent per node against what dense ring all-reduce sends for the same steps;
  3. time until the nodes' mean test accuracy (latest evaluation of each, 2000 test rows every
     50 steps) reaches the target, with no straggler and with node 3 at 4x compute slowdown;
  4. the same with lock-step synchronization (S = 0), to show what soft synchronization buys.
Runs 3 and 4 use a budget of up to 12 epochs and stop early once any node reaches target + 2 pt.
"""
import argparse
import json
import subprocess
import sys
import time


def run(cmd):
    t0 = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit(f"no JSON from: {' '.join(cmd)} (exit {out.returncode})")
    return json.loads(lines[-1]), time.monotonic() - t0


def time_to(summary, target):
    for t, acc in summary.get("accuracy_timeline", []):
        if acc >= target:
            return t
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--straggler", type=int, default=3)
    a = p.parse_args()
    m, n = a.murmur, a.nodes

    print(f"gossip bench: {n} nodes on loopback, 784-256-128-10 MLP, batch 64, CHOCO-SGD top-1 % "
          f"(fp16 values), ring; {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores")
    base, _ = run([m, "train", "--epochs", "3", "--progress", "none", "--json"])
    print(f"  single-node dense baseline: test accuracy {base['test_accuracy']:.4f} in "
          f"{base['wall_seconds']:.1f} s ({base['steps']} steps)")

    local = [m, "local", "--nodes", str(n), "--progress", "none", "--json"]
    g, _ = run(local + ["--epochs", "3"])
    steps = g["local_steps_total"] / n
    print(f"\n1. accuracy: gossip mean {g['mean_accuracy']:.4f} (per node "
          f"{', '.join(f'{x:.3f}' for x in g['accuracy'])}) vs single node "
          f"{base['test_accuracy']:.4f}: {100 * (g['mean_accuracy'] - base['test_accuracy']):+.2f} pt "
          f"(goal: within 0.5 pt); relative consensus distance {g['relative_consensus_distance']:.4f}")
    print(f"2. bytes: {g['bytes_sent_total'] / n / 1e6:.2f} MB sent per node over {steps:.0f} steps; "
          f"dense ring all-reduce {g['allreduce_bytes'] / n / 1e6:.1f} MB per node: "
          f"{g['fewer_bytes_than_allreduce']:.0f}x fewer (goal: >= 100x)")

    h2, _ = run(local + ["--epochs", "3", "--local-steps", "2"])
    print(f"   with local SGD H = 2: mean accuracy {h2['mean_accuracy']:.4f} "
          f"({100 * (h2['mean_accuracy'] - base['test_accuracy']):+.2f} pt), "
          f"{h2['fewer_bytes_than_allreduce']:.0f}x fewer bytes than ring all-reduce")

    tt = {}
    budget = ["--epochs", "12", "--eval-every", "50", "--target-accuracy", f"{a.target + 0.02:.3f}"]
    slow = ["--straggle", f"node={a.straggler},slowdown=4"]
    for name, extra in [("soft sync S=32", []), ("lock-step S=0", ["--max-lead", "0"])]:
        for straggle in (False, True):
            s, _ = run(local + budget + extra + (slow if straggle else []))
            tt[(name, straggle)] = (time_to(s, a.target), s)
    print(f"\n3./4. time to {100 * a.target:.0f} % mean test accuracy (s), node {a.straggler} at 4x "
          f"compute slowdown:")
    print(f"  {'mode':<16} {'no straggler':>13} {'straggler':>10} {'cost':>7}   wall (s) without / with")
    for name in ("soft sync S=32", "lock-step S=0"):
        t0, s0 = tt[(name, False)]
        t1, s1 = tt[(name, True)]
        cost = f"{100 * (t1 / t0 - 1):+.0f}%" if t0 and t1 else "n/a"
        fmt = lambda t: f"{t:.1f}" if t is not None else "never"
        print(f"  {name:<16} {fmt(t0):>13} {fmt(t1):>10} {cost:>7}   {s0['wall_s']:.1f} / {s1['wall_s']:.1f}"
              f"   (final mean accuracy {s0['mean_accuracy']:.4f} / {s1['mean_accuracy']:.4f})")
    print("  goal: the straggler costs <= 25 % with soft synchronization")


if __name__ == "__main__":
    main()
