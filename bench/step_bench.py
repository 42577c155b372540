#!/usr/bin/env python3
"""Where a gossip step's time goes, and the cluster's throughput against the machine's.

Usage: bench/step_bench.py [build/murmur] [--nodes 2,4] [--rounds 3] [--epochs 3]
                           [--model "FLAGS"] [-- FLAGS]

Each round runs, back to back so that they share the machine's state of the moment:
  single   murmur train --epochs E: one process, one training thread, no gossip; its
           samples_per_second excludes evaluation
  N nodes  murmur local --nodes N --epochs E (the main job's shape: CHOCO-SGD top-1 % fp16 on a
           ring, same model, batch 64; up to 4 nodes a round every 2nd step at top-2 %, the
           default --local-steps 0): each node's training phase (its first step to its last;
           start-up, joining and the consensus finish excluded), by phase
and the rounds alternate, so a slow moment of the machine hits every row alike. FLAGS after
`--` go to every murmur local; --model's (one string, e.g. "--hidden 1024,512 --batch-size 128")
go to every run, the single and apart trainings too, so that all train the same model.

Prints per N the median over rounds of the cluster's training-phase samples/s (the nodes' sum),
counted as murmur train counts its own (the periodic evaluations' time excluded; the ratio with
it is printed beside), the ratio to min(N, cores) x single (what the cores could do training
alone) with the goals set for the step's cost (2 nodes on 2 cores >= 0.8, 4 nodes >= 0.7), the same ratio
for N independent `murmur train` processes run at once on 1/N of the rows each (the machine's
ceiling for N processes, without gossip), and the nodes' mean share of each phase.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

PHASES = ["compute", "compress", "mix", "apply", "send", "waiting", "evaluate", "injected", "other"]
GOALS = {2: 0.8, 4: 0.7}


def parse(cmd, code, stdout, stderr):
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if code != 0 or not lines:
        sys.exit(f"failed (exit {code}): {' '.join(cmd)}\n{stderr[-2000:]}")
    return json.loads(lines[-1])


def run(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return parse(cmd, out.returncode, out.stdout, out.stderr)


def run_together(cmd, n):
    """n copies of cmd at once; their results."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    outs = [p.communicate() for p in procs]
    return [parse(cmd, p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--nodes", default="2,4")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--model", default="",
                   help="flags for every run (murmur train and murmur local), e.g. --hidden")
    a = p.parse_args(argv)
    sizes = [int(x) for x in a.nodes.split(",")]
    cores = os.cpu_count() or 1
    common = ["--epochs", str(a.epochs), "--progress", "none", "--json"] + shlex.split(a.model)
    single, cluster, shares, accuracy = [], {n: [] for n in sizes}, {n: [] for n in sizes}, {n: [] for n in sizes}
    with_evaluation = {n: [] for n in sizes}
    # The machine's own ceiling for N processes: N independent `murmur train` runs at once, each
    # on 1/N of the rows (a node's shard and share of the samples), no gossip; their summed
    # samples/s.
    apart = {n: [] for n in sizes}
    for r in range(a.rounds):
        s = run([a.murmur, "train"] + common)
        single.append(s["samples_per_second"])
        line = f"round {r + 1}: single {s['samples_per_second']:.0f}"
        for n in sizes:
            d = run([a.murmur, "local", "--nodes", str(n)] + common + extra)
            cluster[n].append(d["samples_per_training_s"])
            with_evaluation[n].append(d["train_phase_samples_per_s"])
            accuracy[n].append(d["cluster_accuracy"] if d.get("cluster_accuracy") is not None
                               else d["mean_accuracy"])
            nodes = d["phases"]
            shares[n].append({ph: statistics.mean(x[ph + "_s"] / x["wall_s"] for x in nodes)
                              for ph in PHASES + ["thread_cpu", "process_cpu"]})
            line += (f", {n} nodes {d['samples_per_training_s']:.0f} "
                     f"({d['train_phase_samples_per_s']:.0f} with evaluations)")
            together = run_together([a.murmur, "train", "--max-train-samples",
                                     str(s["train_rows"] // n)] + common, n)
            apart[n].append(sum(t["samples_per_second"] for t in together))
            line += f", {n} apart {apart[n][-1]:.0f}"
        print(line, file=sys.stderr, flush=True)

    base = statistics.median(single)
    print(f"murmur train, one process: {base:.0f} samples/s (median of {a.rounds}); "
          f"{cores} cores\n")
    print("| nodes | cluster samples/s while training | x min(N, cores) x single | goal | "
          "with the evaluations' time, x single | "
          "N trains apart, x min(N, cores) x single | accuracy | " + " | ".join(PHASES)
          + " | thread CPU | process CPU |")
    print("|---" * (7 + len(PHASES) + 2) + "|")
    missed = False
    for n in sizes:
        rate = statistics.median(cluster[n])
        ratio = rate / (min(n, cores) * base)
        goal = GOALS.get(n)
        verdict = "-" if goal is None else f">= {goal} {'met' if ratio >= goal else 'MISSED'}"
        missed |= goal is not None and ratio < goal
        share = {k: statistics.median(x[k] for x in shares[n]) for k in shares[n][0]}
        ceiling = statistics.median(apart[n]) / (min(n, cores) * base)
        evaluated = statistics.median(with_evaluation[n]) / (min(n, cores) * base)
        print(f"| {n} | {rate:.0f} | {ratio:.2f} | {verdict} | {evaluated:.2f} | {ceiling:.2f} | "
              f"{statistics.mean(accuracy[n]):.4f} | "
              + " | ".join(f"{100 * share[ph]:.1f} %" for ph in PHASES)
              + f" | {100 * share['thread_cpu']:.0f} % | {100 * share['process_cpu']:.0f} % |")
    print("\nPhases: each node's share of its training-phase wall time, the nodes' mean, median "
          "over rounds. 'N trains apart': N independent murmur train processes at once, each "
          "on 1/N of the rows and no gossip: what these cores give N processes at all.")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
