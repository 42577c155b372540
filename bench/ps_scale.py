#!/usr/bin/env python3
"""Where the parameter server's link saturates: time per iteration against workers, in murmur sim.

Usage: bench/ps_scale.py [build/murmur] [--workers 16,64,256] [--servers 1,4,16]
                         [--network 1GbE] [--iterations 8] [--no-gossip] [--out FILE]

Every row is one `murmur sim` run (protocol fidelity: the real machines and wire bytes of the
784-256-128-10 MLP, 235,146 values, on modeled links; 10 us per sample, 64 samples per worker per
iteration, a machine per node):
  ps K=k   --mode ps --servers k: k servers, each sending its slice of the model to every worker
           and receiving every worker's gradient slice each iteration (bulk synchronous)
  gossip   --mode gossip with murmur's defaults: the marginal time of a step (the median node's
           end of training at about 40 and at 120 steps per node, the difference per step)
Time per iteration is the median of the run's iterations in virtual time (gossip: per step); the
busiest node's bytes per iteration say which link carries the load.
"""
import argparse
import json
import subprocess
import sys


def sim(m, args):
    cmd = [m, "sim", "--progress", "none", "--json"] + args
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("murmur", nargs="?", default="build/murmur")
    p.add_argument("--workers", default="16,64,256")
    p.add_argument("--servers", default="1,4,16", help="server counts (empty: none)")
    p.add_argument("--network", default="1GbE")
    p.add_argument("--iterations", type=int, default=8)
    p.add_argument("--gossip", action=argparse.BooleanOptionalAction, default=True,
                   help="also the gossip rows (--no-gossip: the servers only)")
    p.add_argument("--out")
    a = p.parse_args()
    rows = []
    for n in [int(x) for x in a.workers.split(",")]:
        common = ["--network", a.network, "--sample-cost", "10us"]
        # A thousand members' views take about 30 virtual seconds to fill (joins are admitted
        # a bounded number at a time): the default join timeout would end the first nodes.
        sync = ["--n", str(n), "--L", "1", "--iterations", str(a.iterations), "--global-batch",
                str(64 * n), "--eval-every", "0", "--join-timeout-s", "300"]
        systems = [(f"ps K={k}", ["--mode", "ps", "--servers", str(k)] + sync)
                   for k in [int(x) for x in a.servers.split(",") if x]]
        for name, args in systems:
            r = sim(a.murmur, common + args)
            nodes = r["per_node"]
            ms = r["iteration_ms_p50"]
            per = max(1, r["iterations"])
            busiest = max(x["bytes_sent"] + x["bytes_received"] for x in nodes) / per / 1e6
            rows.append(f"| {n} | {name} | {ms:.1f} | {busiest:.2f} |")
            print(rows[-1], flush=True)
        if not a.gossip:
            continue
        # Gossip: the marginal time of a step, from two budgets (about 40 and 120 steps per node),
        # so that joining and the end of the run cancel out.
        runs = []
        for steps in (40, 120):
            r = sim(a.murmur, common + ["--mode", "gossip", "--nodes", str(n), "--epochs",
                                        f"{steps * 64 * n / 60000:.6f}", "--finish-wait-s", "0"])
            nodes = [x for x in r["per_node"] if x["steps"] > 0 and x["finished_s"] > 0]
            ends = sorted(x["finished_s"] for x in nodes)
            runs.append((ends[len(ends) // 2], sum(x["steps"] for x in nodes) / len(nodes),
                         max(x["bytes_sent"] + x["bytes_received"] for x in nodes)))
        (t0, s0, b0), (t1, s1, b1) = runs
        ms = 1e3 * (t1 - t0) / (s1 - s0)
        busiest = (b1 - b0) / (s1 - s0) / 1e6
        rows.append(f"| {n} | gossip | {ms:.1f} | {busiest:.2f} |")
        print(rows[-1], flush=True)
    command = " ".join(sys.argv)
    table = ["| workers | system | ms per iteration | busiest node's MB per iteration (in + out) |",
             "|---|---|---|---|"] + rows
    print(f"\n{command}\n")
    print("\n".join(table))
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"`{command}`\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
