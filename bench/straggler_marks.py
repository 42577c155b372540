#!/usr/bin/env python3
"""Who gets marked a straggler in short real runs: `murmur local`, repeated.

Usage: bench/straggler_marks.py [build/murmur] [--runs 12] [--nodes 4] [--epochs 4]
                                [--slowdown 4] [--busy 1] [--max-wait-steps N]

Each run is `murmur local --nodes N --epochs E --straggle node=3,slowdown=F` on a ring: node 3
is the straggler, its ring neighbours (2 and 4) wait for it, and every other node waits for them.
A mark is right when it names node 3, false when it names anyone else (a node that only waited
for node 3, marked by a node that waited for it). `--busy K` keeps K processes spinning on the
CPU beside the runs, as the test suite's parallel jobs do (0: an idle machine). Reported: the
runs that flagged node 3, the runs with a false mark and whom they named, and the share of their
time node 3's neighbours waited (the same figures as tests/integration/cli_test.sh's straggler
check, over many runs instead of one).
"""
import argparse
import collections
import json
import os
import subprocess
import sys


def one_run(murmur, a):
    cmd = [murmur, "local", "--nodes", str(a.nodes), "--epochs", str(a.epochs),
           "--straggle", f"node=3,slowdown={a.slowdown}", "--json", "--progress", "none"]
    if a.max_wait_steps is not None:
        cmd += ["--max-wait-steps", str(a.max_wait_steps)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-400:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    waiting = [p["waiting_s"] / p["wall_s"] for p in d["phases"]]
    return d["stragglers_flagged"], (waiting[1] + waiting[3]) / 2, d["wall_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--runs", type=int, default=12)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--slowdown", type=float, default=4)
    p.add_argument("--busy", type=int, default=1)
    p.add_argument("--max-wait-steps", type=float, default=None,
                   help="passed on to murmur local (default: murmur's own)")
    a = p.parse_args()
    if a.nodes < 4 or a.runs < 1 or a.busy < 0:
        p.error("--nodes must be at least 4 (node 3 needs two neighbours and a node beyond them), "
                "--runs at least 1, --busy at least 0")
    print(f"{a.runs} runs of {a.nodes} nodes, {a.epochs} epochs, node 3 at {a.slowdown:g}x, "
          f"{a.busy} busy process(es) beside them", flush=True)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    try:
        rows = []
        for i in range(a.runs):
            flagged, waited, wall = one_run(a.murmur, a)
            rows.append((flagged, waited))
            print(f"run {i + 1}: flagged {flagged}, node 3's neighbours waited {waited:.0%} "
                  f"of {wall:.1f} s", flush=True)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    right = sum(3 in f for f, _ in rows)
    false = collections.Counter(n for f, _ in rows for n in f if n != 3)
    false_runs = sum(any(n != 3 for n in f) for f, _ in rows)
    mean_wait = sum(w for _, w in rows) / len(rows)
    print(f"node 3 flagged in {right}/{len(rows)} runs; a false mark in {false_runs}/{len(rows)} "
          f"(named: {dict(sorted(false.items())) or 'none'}); its neighbours waited "
          f"{mean_wait:.0%} of their time on average")


if __name__ == "__main__":
    main()
