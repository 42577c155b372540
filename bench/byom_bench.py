#!/usr/bin/env python3
"""Your own model over murmur against PyTorch DDP: an example of examples/ (--program: the
small CNN on Fashion-MNIST by default, resnet_fashion.py, fortune_lm.py), trained by N processes over murmur gossip (`murmur local --exec`) and under
DDP (gloo, CPU), with the same global batch, samples and schedule, without and with one process
slowed down (murmur: --straggle node=2,slowdown=F, applied inside the library; DDP: rank 1 sleeps
(F - 1) x its compute after each step).

    python3 bench/byom_bench.py build [--procs 4] [--epochs 3] [--slowdown 4] [--target 0.85]
    python3 bench/byom_bench.py build --program resnet_fashion.py --murmur-lrs 0.05,0.1 \
        --ddp-lrs 0.1,0.2,0.4
    python3 bench/byom_bench.py build --no-straggler --example "--optimizer adamw --lr 0.002"
    python3 bench/byom_bench.py build --program resnet_fashion.py --epochs 1 --target 0.8 \
        --example "--train-rows 20000"
    python3 bench/byom_bench.py build --program fortune_lm.py --epochs 1 --target 0.4 \
        --example "--train-windows 40000"
    python3 bench/byom_bench.py build --program resnet_fashion.py --epochs 1 --target 0.7 \
        --murmur-lrs 0.4 --ddp-lrs 0.4 --gossip "--outer sgd:every=1,lr=1" --repeats 3

Prints a markdown table: the final model's test accuracy (murmur: the cluster's model after the
consensus finish), bytes sent per process (murmur: measured on the wire; DDP: gloo's ring
all-reduce, 2 (N - 1) / N of the fp32 gradient per step), the training time (first step to
the final model evaluated on the test set, the slowest process; murmur: the consensus finish in
it), and the time until the target accuracy on 1000 test rows
(murmur: when every process's own model has reached it; DDP: its one model; each process copies
its model every 0.25 s and evaluates the copies after training, so the timeline has the same
times for every run and costs no training time); murmur's also until the members' average
(the model a consensus finish at that time would make; harness --members-timeline) reached it,
then the goals:
accuracy within 0.5 point of DDP and test loss (mean cross-entropy on the 10,000 test images)
within 2 % of DDP's, with >= 50x fewer bytes per process; with the straggler, time to target up
<= 25 % for murmur and >= 3x for DDP. Exit 1 when a goal is missed. Run it with
Debian's python3, as root. About 8 minutes on 2 cores for one rate a side.

With --murmur-lrs / --ddp-lrs each side first trains once per rate of its grid without the
straggler (a row each), and the comparison and the straggler runs take each side at its best
rate (--select: the highest accuracy, or the lowest test loss for a language model): a batch 4x
as large wants a higher rate than each murmur process's, so one rate for both is not a fair
baseline.

With --repeats R every row at the chosen rates (without and with the straggler, both sides) is
R runs, and the table shows their means, each run's time to target, and the ratios of the mean
times. A noisy accuracy curve crossing a fixed target makes one run's time a rough figure: a
ratio from single runs can mislead.

Each process runs in a CPU cgroup of its own, capped to cores / N of the CPU time (`--isolate
cgroup`, the default; cgroup v1's cpu controller or v2's cpu.max): N machines of equal speed.
Without it (`--isolate none`) the N processes share the cores, and a straggler's sleep lends
its share to the others: DDP then pays less for a slow rank than on separate machines.
"""

import argparse
import contextlib
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def results(directory):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(directory, "rank-*.json")))]


def checked(cmd):
    """Runs `cmd`; a failure ends the bench with its command and the end of its stderr."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"byom_bench: exit {r.returncode}: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r


def time_to(timeline, target):
    for t, a in timeline:
        if a >= target:
            return t
    return None


@contextlib.contextmanager
def cpu_shares(procs, isolate):
    """Yields a directory holding rank-0 .. rank-(procs-1), each a CPU cgroup capped to
    cores / procs (None for --isolate none); removes them after. Exit 2 when they cannot be made."""
    if isolate == "none":
        yield None
        return
    period = 10000  # µs: a short period keeps a throttled process's stalls short
    quota = period * os.cpu_count() // procs
    v1 = "/sys/fs/cgroup/cpu"
    v2 = "/sys/fs/cgroup"
    root = None

    def remove():
        for r in range(procs):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, f"rank-{r}"))
        with contextlib.suppress(OSError):
            os.rmdir(root)

    try:
        if os.path.exists(os.path.join(v1, "cpu.cfs_quota_us")):
            root = os.path.join(v1, f"murmur-byom-{os.getpid()}")
            os.mkdir(root)
            for r in range(procs):
                os.mkdir(os.path.join(root, f"rank-{r}"))
                open(os.path.join(root, f"rank-{r}", "cpu.cfs_period_us"), "w").write(str(period))
                open(os.path.join(root, f"rank-{r}", "cpu.cfs_quota_us"), "w").write(str(quota))
        elif os.path.exists(os.path.join(v2, "cgroup.subtree_control")):
            root = os.path.join(v2, f"murmur-byom-{os.getpid()}")
            open(os.path.join(v2, "cgroup.subtree_control"), "w").write("+cpu")
            os.mkdir(root)
            open(os.path.join(root, "cgroup.subtree_control"), "w").write("+cpu")
            for r in range(procs):
                os.mkdir(os.path.join(root, f"rank-{r}"))
                open(os.path.join(root, f"rank-{r}", "cpu.max"), "w").write(f"{quota} {period}")
        else:
            raise OSError("no cgroup cpu controller under /sys/fs/cgroup")
    except OSError as e:
        print(f"byom_bench: --isolate cgroup: cannot make a CPU cgroup per process ({e}); run it "
              f"as root, or pass --isolate none to let the processes share the cores",
              file=sys.stderr)
        if root:
            remove()
        sys.exit(2)
    print(f"each process in a CPU cgroup of its own: {quota / period:.2f} of a core "
          f"({root})", flush=True)
    try:
        yield root
    finally:
        remove()


def gossip(build, a, slowdown):
    d = tempfile.mkdtemp(prefix="byom-")
    example = a.example + (f" --lr {a.lr}" if a.lr else "")
    cmd = [os.path.join(build, "murmur"), "local", "--nodes", str(a.procs), "--epochs",
           str(a.epochs), "--json", "--progress", "none", "--exec",
           f"{sys.executable} {a.program} --seed {a.seed} --result-dir {d} --members-timeline"
           f" --members-target {a.target}"
           + (f" --cpu-cgroup {a.cgroup}" if a.cgroup else "") + (f" {example}" if example else "")]
    cmd += a.gossip.split()
    if slowdown > 1:
        cmd += ["--straggle", f"node=2,slowdown={slowdown}"]
    out = checked(cmd).stdout
    report = json.loads(out.strip().splitlines()[-1])
    ranks = results(d)
    reach = [time_to(r["timeline"], a.target) for r in ranks]
    members = next((r["members_timeline"] for r in ranks if r.get("members_timeline")), None)
    return {"accuracy": report["cluster_accuracy"],
            "loss": ranks[0]["test_loss"],
            "bytes": report["bytes_sent_total"] / a.procs,
            "train_s": max(r["train_seconds"] for r in ranks),
            "to_target": None if None in reach else max(reach),
            "to_average": time_to(members, a.target) if members else None,
            "samples": sum(r["samples"] for r in ranks),
            "startup_s": max(r["startup_s"] for r in ranks)}


def ddp(a, slowdown):
    d = tempfile.mkdtemp(prefix="byom-")
    cmd = [sys.executable, a.program, "--backend", "ddp", "--procs", str(a.procs), "--epochs",
           str(a.epochs), "--seed", str(a.seed), "--result-dir", d]
    if a.cgroup:
        cmd += ["--cpu-cgroup", a.cgroup]
    cmd += a.example.split() + (["--lr", str(a.lr)] if a.lr else [])
    if slowdown > 1:
        cmd += ["--slowdown", str(slowdown), "--slow-rank", "1"]
    checked(cmd)
    ranks = results(d)
    r0 = ranks[0]
    reach = time_to(r0["timeline"], a.target)
    return {"accuracy": r0["accuracy"], "loss": r0["test_loss"], "bytes": r0["bytes_sent"],
            "train_s": max(r["train_seconds"] for r in ranks),
            "to_target": reach, "to_average": reach,
            "samples": sum(r["samples"] for r in ranks),
            "startup_s": max(r["startup_s"] for r in ranks)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--slowdown", type=float, default=4)
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--program", default="fashion_cnn.py", help="the example, under examples/")
    p.add_argument("--example", default="", help="more flags for the example, every run")
    p.add_argument("--gossip", default="", help="more flags for murmur local, the gossip runs")
    p.add_argument("--no-straggler", action="store_true", help="only the runs without one")
    p.add_argument("--isolate", choices=["cgroup", "none"], default="cgroup",
                   help="cgroup: each process capped to cores / N (N machines); none: shared cores")
    p.add_argument("--murmur-lrs", default="", help="murmur's rate grid, comma-separated "
                   "(default: the example's own rate)")
    p.add_argument("--ddp-lrs", default="", help="DDP's rate grid (default: the example's own)")
    p.add_argument("--select", choices=["accuracy", "loss"], default="accuracy",
                   help="what makes a rate of the grid the best")
    p.add_argument("--repeats", type=int, default=1,
                   help="runs of each row at its side's best rate (the figures are their means, "
                   "each run's time to target too, and the ratios of the means)")
    a = p.parse_args()
    try:
        import torch  # noqa: F401  (the examples' import, checked before any run)
    except ImportError:
        sys.exit(f"byom_bench: {sys.executable} has no torch; run it with Debian's python3 "
                 f"(/usr/bin/python3, with python3-torch from ops/install-deps.sh)")
    try:
        a.murmur_lrs = [float(x) for x in a.murmur_lrs.split(",") if x] or [None]
        a.ddp_lrs = [float(x) for x in a.ddp_lrs.split(",") if x] or [None]
    except ValueError as e:
        p.error(f"--murmur-lrs/--ddp-lrs: comma-separated rates ({e})")
    if any(x is not None and x <= 0 for x in a.murmur_lrs + a.ddp_lrs):
        p.error("--murmur-lrs/--ddp-lrs: rates must be positive")
    if a.repeats < 1:
        p.error(f"--repeats: {a.repeats} is not a count of runs (at least 1)")
    if "--lr " in f" {a.example} " and (a.murmur_lrs != [None] or a.ddp_lrs != [None]):
        p.error("--example sets --lr and a grid is given: give the rates in one place")
    a.lr = None
    a.program = os.path.join(ROOT, "examples", a.program)
    print(f"seed {a.seed}, {a.procs} processes, {a.epochs} epochs, target {a.target}, "
          f"straggler slowdown {a.slowdown}", flush=True)
    with cpu_shares(a.procs, a.isolate) as a.cgroup:
        return measure(a)


def best_rate(a, side, lrs, run, grid):
    """Trains `side` once per rate of `lrs` (a row each in `grid`) and returns (rate, result) of
    the best by --select; one rate (None: the example's own) is trained once, without a row."""
    results = []
    for lr in lrs:
        a.lr = lr
        r = run()
        results.append((lr, r))
        if len(lrs) > 1:
            grid.append((f"{side}, lr {lr:g}", r))
            print(f"  {side} lr {lr:g}: {r}", file=sys.stderr, flush=True)
    key = (lambda x: -x[1]["accuracy"]) if a.select == "accuracy" else (lambda x: x[1]["loss"])
    return min(results, key=key)


def mean_of(runs):
    """One row from repeated runs: each figure's mean; the times to target also as their lists
    (None when some run did not reach the target)."""
    timed = ("to_target", "to_average")
    row = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0] if k not in timed}
    for k in timed:
        times = [r[k] for r in runs]
        row[k + "_runs"] = times
        row[k] = None if None in times else sum(times) / len(times)
    return row


def repeated(a, name, lr, run, first=None):
    """`run` at rate `lr` until there are --repeats runs (`first`, when given, is one of them)."""
    a.lr = lr
    runs = [first] if first is not None else []
    while len(runs) < a.repeats:
        runs.append(run())
        print(f"  {name} ({len(runs)}/{a.repeats}): {runs[-1]}", file=sys.stderr, flush=True)
    return mean_of(runs)


def measure(a):
    rows, grid = {}, []
    g_lr, first = best_rate(a, "murmur gossip", a.murmur_lrs, lambda: gossip(a.build, a, 1), grid)
    rows["murmur gossip"] = repeated(a, "murmur gossip", g_lr, lambda: gossip(a.build, a, 1), first)
    d_lr, first = best_rate(a, "DDP", a.ddp_lrs, lambda: ddp(a, 1), grid)
    rows["DDP"] = repeated(a, "DDP", d_lr, lambda: ddp(a, 1), first)
    if not a.no_straggler:
        for name, lr, run in [
                (f"murmur gossip, node 2 at {a.slowdown:g}x", g_lr,
                 lambda: gossip(a.build, a, a.slowdown)),
                (f"DDP, rank 1 at {a.slowdown:g}x", d_lr, lambda: ddp(a, a.slowdown))]:
            rows[name] = repeated(a, name, lr, run)
    rate = lambda lr: "the example's" if lr is None else f"{lr:g}"
    fmt = lambda v, f: "-" if v is None else f.format(v)
    print(f"{os.path.basename(a.program)} {a.example}".strip() +
          f"; murmur at lr {rate(g_lr)}, DDP at lr {rate(d_lr)}" +
          (f"; each row the mean of {a.repeats} runs" if a.repeats > 1 else ""))
    print("| run | accuracy | test loss | MB sent per process | samples | start-up s | training s "
          "| s to target | s to target, members' average |")
    print("|---|---|---|---|---|---|---|---|---|")

    def to_target(r, key):
        times = r.get(key + "_runs", [])
        spread = (" (" + ", ".join(fmt(t, "{:.1f}") for t in times) + ")") if len(times) > 1 else ""
        return fmt(r[key], "{:.1f}") + spread

    for name, r in grid + list(rows.items()):
        print(f"| {name} | {r['accuracy']:.4f} | {r['loss']:.4f} | {r['bytes'] / 1e6:.2f} | "
              f"{r['samples']:.0f} | {r['startup_s']:.2f} | {r['train_s']:.1f} | "
              f"{to_target(r, 'to_target')} | {to_target(r, 'to_average')} |")
    g, d = rows["murmur gossip"], rows["DDP"]
    ok = True
    gap = (g["accuracy"] - d["accuracy"]) * 100
    fewer = d["bytes"] / g["bytes"]
    loss_gap = (g["loss"] - d["loss"]) / d["loss"] * 100
    ok &= gap >= -0.5 and loss_gap <= 2 and fewer >= 50
    print(f"accuracy vs DDP: {gap:+.2f} pt (goal >= -0.5); test loss {loss_gap:+.1f} % relative "
          f"(goal <= +2 %); {fewer:.0f}x fewer bytes per process (goal >= 50)")
    if a.no_straggler:
        return 0 if ok else 1
    gs, ds = list(rows.values())[2], list(rows.values())[3]
    for name, base, slow, goal, better in [("murmur", g, gs, 1.25, True), ("DDP", d, ds, 3.0, False)]:
        if base["to_target"] is None or slow["to_target"] is None:
            print(f"{name}: the target was not reached in some run")
            ok &= not better
            continue
        ratio = slow["to_target"] / base["to_target"]
        met = ratio <= goal if better else ratio >= goal
        ok &= met
        print(f"{name}: time to target with the straggler {ratio:.2f}x "
              f"(goal {'<=' if better else '>='} {goal}: {'met' if met else 'MISSED'})")
        if better and base["to_average"] and slow["to_average"]:
            print(f"{name}: time until the members' average reaches the target, with the straggler "
                  f"{slow['to_average'] / base['to_average']:.2f}x (not the goal's measure)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
