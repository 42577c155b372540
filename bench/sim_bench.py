#!/usr/bin/env python3
"""What the simulator claims to show, measured in virtual time with `murmur sim` (the real machines, their
real wire bytes, a modeled network and compute). Deterministic: one seed gives the same figures
on any machine; only the wall times vary.

Usage: bench/sim_bench.py [build/murmur] [--only membership,consensus,coded,gossip,accuracy,real,links,finish,overlap]
                          [--seed 1]

  membership  SWIM at N = 16, 64, 256, 1024 (ops/scenarios/sim/membership.toml): when every view
              is complete, when a crash (after that) is declared dead by every member, and the
              membership messages per node per protocol period, against log2 N
  consensus   CHOCO averaging alone (ops/scenarios/sim/consensus.toml) at N = 16 ... 1024: rounds
              to the exact average on the one-peer exponential graph without compression, rounds
              per decade of consensus error with top-1 %, and the ring and random graphs
  coded       the CodedReduce paper's shape (ops/scenarios/sim/coded_paper.toml): coded-tree,
              tree, gc and ring, with and without one 5x straggler per parent, mean iteration time;
              then the communication-bound regime (coded_wan.toml) at L = 2 and 3, with 5x
              compute stragglers and with stragglers 5x slower to compute and to send
  gossip      the main job's gossip settings against ring all-reduce at N = 16 and 64
              (ops/scenarios/sim/gossip_straggler.toml), the same 3-epoch budget: virtual time to
              spend it without stragglers, with one node at 4x, and with every node's compute
              followed by an exponential delay of its own mean (exp_slowdown=1); from launch and
              from the first computation; ring's median iteration
  accuracy    training fidelity at N = 16 and 64 (the real Trainer on Fashion-MNIST): gossip and
              ring, final accuracy and virtual time to 80 % (70 % at 64) mean periodic test
              accuracy (each node's latest), without and with node 3 at 4x, from launch and from
              the first computation
  real        the simulator against real processes: murmur local --nodes 4 with node 3 at 4x, and
              murmur sim with the same settings on the same cores, its cost per step (a) the real
              nodes' training-thread CPU per step, (b) one process's cost alone: samples per node
              and bytes sent
  links       the simulator against real shaped links (root): murmur local --network
              netns:rate=100mbit and 10mbit, gossip and ring all-reduce at 8 nodes, one epoch,
              against murmur sim with the same link rate: time to 75 % and bytes per node
  finish      the consensus finish on thin links: 8 nodes of gossip training (the outer
              optimizer, 3 epochs, 200 us a sample) at 1 Gbit/s down to 2 Mbit/s per node, with
              the default finish wait and with 10 s: training time, the finish's time after it,
              how many different models the members end on, their accuracy, MB per node
  overlap     outer rounds that wait for the neighbours' updates against overlap=40 (steps on
              while they are in flight), 8 nodes, 3 epochs, 1 Gbit/s down to 2 Mbit/s, 3 seeds:
              training time, accuracy, steps overlapped, MB per node
"""
import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCEN = os.path.join(ROOT, "ops", "scenarios", "sim")


def sim(murmur, *args):
    cmd = [murmur, "sim", "--progress", "none", "--json", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        sys.exit(f"failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def membership(murmur, seed, seeds=3):
    print(f"## Membership (T = 500 ms, 1GbE, joined through 3 seed nodes; one node crashes once every view "
          f"is complete; {seeds} runs per N, seeds {seed}..{seed + seeds - 1})\n")
    print("SWIM's suspicion timeout here is 4 x log10 N x T (2.4 s at 16, 6.0 s at 1024): detection = the "
          "first probe of the dead node + that timeout + the spread of the verdict.\n")
    print("| N | log2 N | every view complete | declared dead by | first | median | last | "
          "suspicion timeout | membership msgs / node / period | wall s per run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    mean = lambda xs: sum(xs) / len(xs)
    span = lambda xs: f"{mean(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"
    for n in (16, 64, 256, 1024):
        at = {16: 10, 64: 12, 256: 20, 1024: 50}[n]
        full, first, median, last, msgs, wall, by = [], [], [], [], [], [], []
        for k in range(seeds):
            r = sim(murmur, os.path.join(SCEN, "membership.toml"), "--nodes", n, "--crash", f"node=5,at={at}s",
                    "--duration", at + 15, "--seed", seed + k)
            c = r["crashes"][0]
            full.append(r["full_view_s"])
            first.append(c["first_s"])
            median.append(c["median_s"])
            last.append(c["last_s"])
            msgs.append(r["membership_messages_per_node_per_period"])
            wall.append(r["wall_s"])
            by.append(f"{c['observers']}/{c['expected']}")
        complete = f"{mean(full):.1f} s (max {max(full):.1f})" if min(full) >= 0 else "not always"
        print(f"| {n} | {math.log2(n):.0f} | {complete} | {', '.join(by)} | {span(first)} | {span(median)} | "
              f"{span(last)} | {4 * math.log10(n) * 0.5:.1f} s | {mean(msgs):.1f} | {mean(wall):.1f} |")
    print()


def consensus(murmur, seed):
    toml = os.path.join(SCEN, "consensus.toml")
    print("## CHOCO consensus, exponential graph, no compression (1000 values, 235,146 on 1GbE links)\n")
    print("| N | log2 N | rounds to error 1e-6 | error then | virtual time | messages / node / round | "
          "MB / node / round | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (16, 64, 256, 1024):
        r = sim(murmur, toml, "--nodes", n, "--seed", seed)
        rounds = max(1, len(r["rounds"]))
        print(f"| {n} | {math.log2(n):.0f} | {r['rounds_to_tolerance']} | {r['final_error']:.1e} | "
              f"{r['virtual_s']:.3f} s | {r['messages'] / rounds / n:.0f} | "
              f"{r['bytes'] / rounds / n / 1e6:.2f} | {r['wall_s']:.1f} |")
    print("\n## CHOCO consensus, exponential graph, top-1 % (gamma 0.03), to error 1e-4\n")
    print("| N | log2 N | rounds to 1e-1 | to 1e-2 | to 1e-3 | to 1e-4 | rounds per decade (1e-1 to 1e-4) | "
          "per decade / log2 N | virtual time | KB / node / round | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (16, 64, 256, 1024):
        r = sim(murmur, toml, "--nodes", n, "--compress", "topk:0.01", "--gamma", 0.03,
                "--consensus-tolerance", "1e-4", "--consensus-rounds", 6000, "--seed", seed)
        to = r["rounds_to"]
        rounds = max(1, len(r["rounds"]))
        decade = (to["1e-4"] - to["1e-1"]) / 3 if to["1e-4"] > 0 else float("nan")
        print(f"| {n} | {math.log2(n):.0f} | {to['1e-1']} | {to['1e-2']} | {to['1e-3']} | {to['1e-4']} | "
              f"{decade:.0f} | {decade / math.log2(n):.0f} | {r['virtual_s']:.2f} s | "
              f"{r['bytes'] / rounds / n / 1e3:.1f} | {r['wall_s']:.1f} |")
    print("\n## CHOCO consensus with top-k: the default gamma (5 x the kept fraction) and smaller ones "
          "(N = 16, exponential graph, 3000 rounds)\n")
    print("| kept | gamma | rounds to 1e-2 | to 1e-4 | lowest error |")
    print("|---|---|---|---|---|")
    for ratio in (0.01, 0.02, 0.05, 0.1):
        for gamma in (5 * ratio, 3 * ratio, 2 * ratio):
            r = sim(murmur, toml, "--nodes", 16, "--compress", f"topk:{ratio}", "--gamma", gamma,
                    "--consensus-tolerance", "1e-6", "--consensus-rounds", 3000, "--seed", seed)
            low = min(x["error"] for x in r["rounds"])
            to = r["rounds_to"]
            print(f"| {ratio:.0%} | {gamma:g}{' (default)' if gamma == 5 * ratio else ''} | "
                  f"{to['1e-2']} | {to['1e-4']} | {low:.1e} |")
    print("\n## CHOCO consensus by topology, no compression, to error 1e-3\n")
    print("| N | topology | rounds to 1e-1 | to 1e-3 | messages / node / round |")
    print("|---|---|---|---|---|")
    for n in (16, 64):
        for topo, extra in (("exponential", []), ("ring", []), ("random", ["--random-peers", 2]),
                            ("random", ["--random-peers", 4])):
            r = sim(murmur, toml, "--nodes", n, "--topology", topo, *extra, "--consensus-tolerance", "1e-3",
                    "--consensus-rounds", 20000, "--seed", seed)
            rounds = max(1, len(r["rounds"]))
            name = topo + (f" (k = {extra[1]})" if extra else "")
            print(f"| {n} | {name} | {r['rounds_to']['1e-1']} | {r['rounds_to']['1e-3']} | "
                  f"{r['messages'] / rounds / n:.1f} |")
    print()


def coded(murmur, seed):
    print("## CodedReduce's shape (N = 12, n = 3, L = 2, s = 1; 1,000,000 values on 1GbE)\n")
    print("| mode | iteration, no straggler | one 5x straggler per parent | ratio | loss (exact decode) |")
    print("|---|---|---|---|---|")
    for mode in ("coded-tree", "tree", "gc", "ring"):
        base = sim(murmur, os.path.join(SCEN, "coded_paper.toml"), "--mode", mode, "--straggle", "", "--seed", seed)
        slow = sim(murmur, os.path.join(SCEN, "coded_paper.toml"), "--mode", mode, "--seed", seed)
        b, s = base["iteration_ms_mean"], slow["iteration_ms_mean"]
        print(f"| {mode} | {b:.1f} ms | {s:.1f} ms | {s / b:.2f}x | {base['per_node'][0]['loss']:.6g} |")
    print("\n## CodedReduce, communication-bound (100,000 values, links of 20 ms and 1 Gbit/s; "
          "ops/scenarios/sim/coded_wan.toml)\n")
    # A worker sends one 400 KB vector up per iteration: 20 ms + 3.2 ms on these links. A worker
    # 5x slower in what dominates here also takes 5x as long to get it to its parent: the real
    # node's send_delay holds each message 4 x 23.2 ms.
    send = 20e-3 + 100000 * 4 * 8 / 1e9
    hold = f"{round(4 * send * 1e3)}ms"
    print(f"One straggler per parent (workers 3, 6, 9, ...): 5x compute (`slowdown=5`), or 5x compute "
          f"and 5x the time to send (`slowdown=5,send_delay={hold}`). Mean iteration time over 20 "
          f"iterations; x: the mode's own no-straggler time; coded: coded-tree's speed-up.\n")
    print("| L | workers | mode | no straggler | 5x compute | x | coded | 5x compute and send | x | coded |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for layers in (2, 3):
        workers = sum(3 ** k for k in range(1, layers + 1))
        stragglers = range(1, workers // 3 + 1)
        compute = ";".join(f"worker={3 * k},slowdown=5" for k in stragglers)
        both = ";".join(f"worker={3 * k},slowdown=5,send_delay={hold}" for k in stragglers)
        rows = {}
        for mode in ("coded-tree", "tree", "ring"):
            common = [os.path.join(SCEN, "coded_wan.toml"), "--mode", mode, "--L", layers, "--seed", seed]
            rows[mode] = [sim(murmur, *common, "--straggle", spec)["iteration_ms_mean"]
                          for spec in ("", compute, both)]
        for mode, (b, c, a) in rows.items():
            coded_c, coded_a = rows["coded-tree"][1], rows["coded-tree"][2]
            print(f"| {layers} | {workers} | {mode} | {b:.1f} ms | {c:.1f} ms | {c / b:.2f}x | {c / coded_c:.2f}x | "
                  f"{a:.1f} ms | {a / b:.2f}x | {a / coded_a:.2f}x |")
    print()


def training_s(r):
    """Virtual seconds from the first computation to the last node's finish (no joining, no
    leaving)."""
    return max(n["finished_s"] for n in r["per_node"]) - r["first_step_s"]


def gossip(murmur, seed):
    print("## Gossip against ring all-reduce (3 epochs of 60,000 rows, batch 64 per node, 10GbE)\n")
    print("Virtual time from launch until every node's run is over (joining and leaving included), "
          "and in brackets from the first computation to the last node's finish.\n")
    print("| N | mode | no straggler | node 3 at 4x | ratio | every node exp_slowdown=1 | ratio | "
          "iteration (ring), no straggler / node 3 at 4x |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (16, 64):
        for mode in ("gossip", "ring"):
            common = [os.path.join(SCEN, "gossip_straggler.toml"), "--mode", mode, "--seed", seed]
            if mode == "ring":
                # The same samples: N ranks of batch 64 per iteration, 3 epochs.
                iterations = math.ceil(3 * 60000 / (64 * n))
                common += ["--n", n, "--L", 1, "--global-batch", 64 * n, "--iterations", iterations,
                           "--eval-every", 0]
            else:
                common += ["--nodes", n]
            exp = ";".join(f"node={i},exp_slowdown=1,seed={i}" for i in range(1, n + 1))
            base = sim(murmur, *common, "--straggle", "")
            slow = sim(murmur, *common)
            expo = sim(murmur, *common, "--straggle", exp)
            cell = lambda r: f"{r['virtual_s']:.2f} s ({training_s(r):.2f} s)"
            ratio = lambda r: (f"{r['virtual_s'] / base['virtual_s']:.2f}x "
                               f"({training_s(r) / training_s(base):.2f}x)")
            iteration = (f"{base['iteration_ms_p50']:.1f} / {slow['iteration_ms_p50']:.1f} ms "
                         f"({slow['iteration_ms_p50'] / base['iteration_ms_p50']:.2f}x)"
                         if mode == "ring" else "-")
            print(f"| {n} | {mode} | {cell(base)} | {cell(slow)} | {ratio(slow)} | {cell(expo)} | "
                  f"{ratio(expo)} | {iteration} |")
    print()


def time_to(csv_path, target, nodes):
    """First sample time at which the mean over `nodes` (ids) of each one's latest periodic test
    accuracy reaches target (every node must have evaluated once)."""
    import csv
    at = {}
    for r in csv.DictReader(open(csv_path)):
        if r["accuracy"] and int(r["node"]) in nodes:
            at.setdefault(float(r["t_s"]), []).append(float(r["accuracy"]))
    for t in sorted(at):
        if len(at[t]) == len(nodes) and sum(at[t]) / len(at[t]) >= target:
            return t
    return None


def accuracy(murmur, seed):
    import tempfile
    print("## Time to a test accuracy, training fidelity (the MLP on Fashion-MNIST, 3 epochs, batch 64 "
          "per node)\n")
    print("At 64 nodes the global batch is 4096 and 3 epochs are 44 iterations: neither mode reaches "
          "80 %, so the target there is 70 %. Time from launch, and in brackets from the first "
          "computation (joining excluded).\n")
    print("| N | target | mode | final accuracy | time to target | with node 3 at 4x | ratio |")
    print("|---|---|---|---|---|---|---|")
    for n, target in ((16, 0.80), (64, 0.70)):
        # Evaluations every few steps: at 64 nodes a 4x straggler computes only 11-13 steps. Ring's
        # rank 0 evaluates every iteration (an evaluation costs no virtual time).
        every = 20 if n == 16 else 5
        for mode in ("gossip", "ring"):
            common = [os.path.join(SCEN, "gossip_straggler.toml"), "--fidelity", "training", "--mode", mode,
                      "--seed", seed, "--eval-every", every if mode == "gossip" else 1]
            if mode == "ring":
                common += ["--n", n, "--L", 1, "--global-batch", 64 * n,
                           "--iterations", math.ceil(3 * 60000 / (64 * n))]
                nodes = {1}  # rank 0 evaluates the model every rank holds
            else:
                common += ["--nodes", n]
                nodes = set(range(1, n + 1))
            times, starts, final = [], [], None
            for straggle in ("", None):
                with tempfile.NamedTemporaryFile(suffix=".csv") as f:
                    r = sim(murmur, *common, "--csv", f.name, *(["--straggle", ""] if straggle == "" else []))
                    times.append(time_to(f.name, target, nodes))
                    starts.append(r["first_step_s"])
                    if final is None:
                        final = r["per_node"][0]["accuracy"]
            fmt = lambda k: (f"{times[k]:.2f} s ({times[k] - starts[k]:.2f} s)" if times[k] is not None
                             else "never")
            ratio = (f"{times[1] / times[0]:.2f}x ({(times[1] - starts[1]) / (times[0] - starts[0]):.2f}x)"
                     if None not in times else "-")
            print(f"| {n} | {target:.0%} | {mode} | {final:.4f} | {fmt(0)} | {fmt(1)} | {ratio} |")
    print()


def real(murmur, seed):
    print("## The simulator against real processes (4 gossip nodes, node 3 at 4x, 3 epochs)\n")
    p = subprocess.run([murmur, "train", "--epochs", "1", "--json", "--progress", "none"],
                       capture_output=True, text=True, check=True)
    rate = json.loads(p.stdout.strip().splitlines()[-1])["samples_per_second"]
    cores = os.cpu_count() or 1
    cost_us = 1e6 / rate
    flags = ["--nodes", "4", "--epochs", "3", "--straggle", "node=3,slowdown=4", "--seed", str(seed)]
    runs = []
    for _ in range(3):  # real runs vary: three, their mean and range
        p = subprocess.run([murmur, "local", *flags, "--json", "--progress", "none"], capture_output=True,
                           text=True)
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            sys.exit(f"murmur local failed: {p.stderr[-2000:]}")
        runs.append(json.loads(lines[-1]))
    common = [*flags, "--probe-interval-ms", 200, "--probe-timeout-ms", 80, "--network", "loopback",
              "--cores", cores]
    phases = [p for r in runs for p in r["phases"]]
    # (a) What a step really costs a node here: its training thread's CPU time per step in the real
    # runs (4 processes on these cores: contended caches and hyperthreads make a sample cost more
    # than in one process alone), split between the batch and the rest of the step by the node's
    # own phase times. An input measured on the real nodes, not fitted to the samples compared.
    steps = sum(p["samples"] / 64 for p in phases)
    cpu_step = sum(p["thread_cpu_s"] for p in phases) / steps
    busy = sum(p["compute_s"] + p["mix_s"] + p["compress_s"] + p["apply_s"] + p["other_s"] + p["evaluate_s"]
               for p in phases)
    batch = sum(p["compute_s"] for p in phases) / busy
    measured_sample_us, measured_step_us = 1e6 * cpu_step * batch / 64, 1e6 * cpu_step * (1 - batch)
    measured = sim(murmur, *common, "--sample-cost", f"{measured_sample_us:.2f}us", "--step-cost",
                   f"{measured_step_us:.1f}us")
    # (b) One process's cost per sample alone (murmur train) and the real runs' named per-step
    # phases (mix + compress + apply).
    over = [(p["mix_s"] + p["compress_s"] + p["apply_s"]) / max(1, p["samples"] / 64) for p in phases]
    step_us = 1e6 * sum(over) / len(over)
    isolated = sim(murmur, *common, "--sample-cost", f"{cost_us:.2f}us", "--step-cost", f"{step_us:.1f}us")
    print(f"4 processes on {cores} cores (`--cores {cores}`). (a) the real nodes' training-thread CPU per "
          f"step, {1e3 * cpu_step:.2f} ms: {measured_sample_us:.2f} us per sample and {measured_step_us:.0f} us "
          f"per step beyond the batch ({batch:.0%} of a step's busy time is its batch); (b) one process "
          f"alone: {cost_us:.2f} us per sample (murmur train: {rate:,.0f} samples/s) and {step_us:.0f} us per "
          f"step (the real runs' mix + compress + apply)\n")
    print("| node | real samples trained (3 runs) | simulated, (a) real CPU per step | ratio to the mean | "
          "simulated, (b) one process's cost | ratio |")
    print("|---|---|---|---|---|---|")
    for i in range(4):
        real_samples = [r["phases"][i]["samples"] for r in runs]
        m = sum(real_samples) / len(real_samples)
        a, b = measured["per_node"][i]["samples"], isolated["per_node"][i]["samples"]
        print(f"| {i + 1} | {m:.0f} ({min(real_samples)}-{max(real_samples)}) | {a} | {a / max(m, 1):.2f} | "
              f"{b} | {b / max(m, 1):.2f} |")
    real_bytes = [r["bytes_sent_total"] / 1e6 for r in runs]
    real_wall = [r["wall_s"] for r in runs]
    rb = sum(real_bytes) / len(real_bytes)
    print(f"\nreal: bytes sent {rb:.2f} MB ({min(real_bytes):.2f}-{max(real_bytes):.2f}), wall "
          f"{sum(real_wall) / 3:.2f} s ({min(real_wall):.2f}-{max(real_wall):.2f}, start-up included)")
    for name, s in (("(a)", measured), ("(b)", isolated)):
        sb = s["bytes"] / 1e6
        print(f"simulated ({name}): bytes sent {sb:.2f} MB ({sb / max(rb, 1e-9):.2f}x the real mean), "
              f"{s['virtual_s']:.2f} s virtual")
    print()


def links(murmur, seed, reps=3, only_modes=("gossip", "ring")):
    """Real runs on shaped links (murmur local --network netns:..., root) against murmur sim on
    the same link rates: time to 75 % and bytes per node, 8 nodes, one epoch."""
    import tempfile
    if os.geteuid() != 0:
        print("## Real links against simulated ones: not run (a network of namespaces needs root)\n")
        return
    cores = os.cpu_count() or 1
    # A target the one-epoch runs cross on their way up, not one they end near (gossip ends at
    # about 0.81 here, where a hundredth of accuracy is twenty steps).
    target = 0.75
    cal = calibrate(murmur, seed)
    print(f"## Real links against simulated ones (8 nodes, one epoch, time to {target:.0%} from "
          "launch, and in brackets from the first step)\n")
    print(f"Real: `murmur local --network netns:rate=R` (tc tbf each way per node). Simulated: `murmur sim "
          f"--fidelity training --network 1GbE,bandwidth=R --cores {cores}` with its costs calibrated on "
          f"loopback, never on the shaped runs: {cal['sample']:.2f} us per sample, {cal['step']:.0f} us per "
          f"gossip step beyond it (mix, compress, apply, send) and {cal['eval']:.2f} us per evaluated row, "
          f"from 2 gossip nodes on {cores} cores (a core each); {1e3 * cal['start']:.0f} ms from launch to "
          "the first step, from 8 gossip nodes. Bytes: every message, per node.\n")
    print(f"Real: {reps} runs per cell, their mean (and range); the simulator is deterministic.\n")
    print("| mode | link | real time to target | simulated | ratio | real MB per node | simulated | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    # Gossip as thin_links.toml runs it: CHOCO every step (a one-epoch budget is two rounds of the
    # outer optimizer).
    modes = {"gossip": ["--nodes", 8, "--epochs", 1, "--eval-every", 6, "--finish-wait-s", 0, "--outer", "none"],
             "ring": ["--mode", "ring", "--global-batch", 512, "--iterations", 117, "--lr", 0.2,
                      "--lr-schedule", "cosine", "--eval-every", 10]}
    mean = lambda v: sum(v) / len(v)
    for rate in ("100mbit", "10mbit"):
        for mode, flags in modes.items():
            if mode not in only_modes:
                continue
            reals = [real_link_run(murmur, mode, flags, rate, seed, target) for _ in range(reps)]
            with tempfile.TemporaryDirectory() as tmp:
                sim_flags = [*flags, "--seed", seed] + (["--n", 8, "--L", 1] if mode == "ring" else [])
                s = sim(murmur, *sim_flags, "--fidelity", "training", "--network",
                        f"1GbE,bandwidth={rate[:-4]}Mbit", "--cores", cores, "--sample-cost",
                        f"{cal['sample']:.2f}us", "--step-cost",
                        f"{cal['step'] if mode == 'gossip' else 0:.1f}us", "--eval-cost",
                        f"{cal['eval']:.2f}us", "--start-cost", f"{1e3 * cal['start']:.1f}ms",
                        "--csv", f"{tmp}/sim.csv", "--probe-interval-ms", 200, "--probe-timeout-ms", 80)
                nodes = {1} if mode == "ring" else set(range(1, 9))
                sim_t = time_to(f"{tmp}/sim.csv", target, nodes)
                sim_mb = sum(n["bytes_sent"] for n in s["per_node"]) / len(s["per_node"]) / 1e6
            sim_first = s["first_step_s"]
            times = [r[0] for r in reals if r[0] is not None]
            firsts = [r[1] for r in reals if r[0] is not None]
            mbs = [r[2] for r in reals]
            real_t = mean(times) if len(times) == reps else None
            real_first = mean(firsts) if firsts else 0.0
            real_mb = mean(mbs)
            t = lambda v, first: f"{v:.2f} s ({v - first:.2f} s)" if v is not None else "never"
            spread = (f" [{min(times):.2f}-{max(times):.2f}]" if real_t is not None and reps > 1 else "")
            ratio = (f"{sim_t / real_t:.2f} ({(sim_t - sim_first) / (real_t - real_first):.2f})"
                     if real_t and sim_t else "-")
            mb_spread = f" [{min(mbs):.2f}-{max(mbs):.2f}]" if reps > 1 else ""
            print(f"| {mode} | {rate} | {t(real_t, real_first)}{spread} | {t(sim_t, sim_first)} | {ratio} | "
                  f"{real_mb:.2f}{mb_spread} | {sim_mb:.2f} | {sim_mb / real_mb:.2f} |", flush=True)
    print()


def calibrate(murmur, seed):
    """The simulator's costs, measured on loopback: per sample, per gossip step beyond its batch,
    per evaluated row (2 gossip nodes on 2+ cores: no core shared, so CPU time as the simulator's
    shared cores take it), and from launch to the first step (8 gossip nodes: the start of the
    cluster the comparison runs)."""
    import tempfile
    sys.path.insert(0, os.path.join(ROOT, "experiment"))
    import runs as R
    eval_every = 6
    flags = ["--epochs", "1", "--outer", "none", "--eval-every", str(eval_every), "--seed", str(seed),
             "--json", "--progress", "none"]
    p = subprocess.run([murmur, "local", "--nodes", "2", *flags], capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit(f"murmur local failed: {p.stderr[-2000:]}")
    phases = json.loads(lines[-1])["phases"]
    samples = sum(ph["samples"] for ph in phases)
    steps = samples / 64
    evaluated_rows = sum(ph["samples"] / 64 // eval_every for ph in phases) * 1000
    beyond = sum(ph["apply_s"] + ph["compress_s"] + ph["mix_s"] + ph["other_s"] + ph["send_s"] for ph in phases)
    out = {"sample": 1e6 * sum(ph["compute_s"] for ph in phases) / samples,
           "step": 1e6 * beyond / steps,
           "eval": 1e6 * sum(ph["evaluate_s"] for ph in phases) / evaluated_rows}
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([murmur, "local", "--nodes", "8", *flags, "--finish-wait-s", "0", "--run-dir",
                            f"{tmp}/run"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"murmur local failed: {p.stderr[-2000:]}")
        run = R.load_run(f"{tmp}/run")
        out["start"] = min(line["time"] for lines in run["series"].values() for line in lines
                           if (line.get("step") or 0) > 0) - run["t0"]
    return out


def real_link_run(murmur, mode, flags, rate, seed, target):
    """One real run on shaped links: (time to target from launch or None, first step, MB per node)."""
    import tempfile
    sys.path.insert(0, os.path.join(ROOT, "experiment"))
    import runs as R
    with tempfile.TemporaryDirectory() as tmp:
        real_flags = [*map(str, flags), "--seed", str(seed)] + (["--nodes", "8"] if mode == "ring" else [])
        r = subprocess.run([murmur, "local", *real_flags, "--network", f"netns:rate={rate}",
                            "--run-dir", f"{tmp}/run", "--json", "--progress", "none"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"murmur local failed: {r.stderr[-2000:]}")
        run = R.load_run(f"{tmp}/run")
        real_t = R.time_to(run["accuracy"] + ([run["final"]] if run.get("final") else []), target)
        steps = [line["time"] for lines in run["series"].values() for line in lines
                 if (line.get("step") or line.get("iteration") or 0) > 0]
        first = min(steps) - run["t0"] if steps else 0.0
        return real_t, first, R.run_row(run, target)["bytes_per_node"] / 1e6


def thin_link_run(murmur, rate, seed, *extra):
    """8 nodes of gossip training for 3 epochs, 200 us a sample, every node behind `rate`."""
    return sim(murmur, "--fidelity", "training", "--mode", "gossip", "--nodes", 8, "--epochs", 3,
               "--sample-cost", "200us", "--step-cost", "89us", "--network", f"1GbE,bandwidth={rate}",
               "--seed", seed, *extra)


def finish(murmur, seed):
    print(f"## The consensus finish on thin links (8 nodes, 3 epochs, outer optimizer, 200 us a sample, "
          f"89 us a step, seed {seed})\n")
    print("Training: until the last member's budget is spent; finish: from then until the last member is "
          "over. Models: how many different final models the members hold (1: the finish agreed).\n")
    print("| link | finish wait | training s | finish s | models | accuracy | MB per node |")
    print("|---|---|---|---|---|---|---|")
    for rate in ("1Gbit", "100Mbit", "10Mbit", "5Mbit", "2Mbit"):
        for wait in (None, 10):
            r = thin_link_run(murmur, rate, seed, *(["--finish-wait-s", wait] if wait else []))
            nodes = r["per_node"]
            trained = max(n["finished_s"] for n in nodes)
            over = max(n["over_s"] for n in nodes)
            acc = sorted({n["accuracy"] for n in nodes})
            accuracy = f"{acc[0]:.4f}" if len(acc) == 1 else f"{acc[0]:.4f}-{acc[-1]:.4f}"
            print(f"| {rate}/s | {'default' if wait is None else f'{wait} s'} | {trained:.2f} | "
                  f"{over - trained:.2f} | {len(acc)} | {accuracy} | {r['bytes'] / len(nodes) / 1e6:.2f} |",
                  flush=True)
    print()


def overlap(murmur, seed, seeds=3, k=40):
    # The default outer optimizer, waiting at each round and with overlap=K.
    outer = "nesterov:every=80,lr=0.9,momentum=0.8,rounds=4"
    print(f"## An outer round's exchange overlapped with inner steps (8 nodes, 3 epochs, 200 us a sample, "
          f"89 us a step, seeds {seed}-{seed + seeds - 1})\n")
    print("Training: from the first computation until the last member's budget is spent (the finish "
          "after it not counted); the cluster model's accuracy after the finish; means over the seeds.\n")
    print("| link | outer round | training s | accuracy | overlapped steps per node | MB per node |")
    print("|---|---|---|---|---|---|")
    for rate in ("1Gbit", "100Mbit", "10Mbit", "5Mbit", "2Mbit"):
        for spec in (outer, f"{outer},overlap={k}"):
            rows = []
            for s in range(seed, seed + seeds):
                r = thin_link_run(murmur, rate, s, "--outer", spec)
                nodes = r["per_node"]
                rows.append((training_s(r), sum(n["accuracy"] for n in nodes) / len(nodes),
                             sum(n["overlapped_steps"] for n in nodes) / len(nodes),
                             r["bytes"] / len(nodes) / 1e6))
            mean = [sum(col) / len(col) for col in zip(*rows)]
            print(f"| {rate}/s | {'overlap=' + str(k) if 'overlap' in spec else 'waits'} | {mean[0]:.2f} | "
                  f"{mean[1]:.4f} | {mean[2]:.0f} | {mean[3]:.2f} |", flush=True)
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("murmur", nargs="?", default=os.path.join(ROOT, "build", "murmur"))
    ap.add_argument("--only", default="membership,consensus,coded,gossip,accuracy,real,links,finish,overlap")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for part in a.only.split(","):
        {"membership": membership, "consensus": consensus, "coded": coded, "gossip": gossip, "accuracy": accuracy, "real": real, "links": links,
         "finish": finish, "overlap": overlap}[part](a.murmur, a.seed)


if __name__ == "__main__":
    main()
