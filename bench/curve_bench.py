#!/usr/bin/env python3
"""What CURVE costs the main job (at most 10 % in time and bytes).

    bench/curve_bench.py [--murmur build/murmur] [--repeats 3] [--nodes 4] [--epochs 3]

Runs the main job, `murmur local --nodes 4` (gossip, Fashion-MNIST, its defaults), alternately in
plaintext and with `--secure` (CURVE on every peer link: a fresh cluster key to serve with, and
each node's own key, bound to its id by the allowlist, to dial with), `--repeats`
times each, and prints the medians of:
- time per step: the nodes' training time (each node's elapsed_s, from its start of training to
  its end) summed, over the local steps of all nodes;
- bytes on the wire: what the loopback interface carried during the run (/proc/net/dev, TCP/IP
  headers included), the nodes' own count of the bytes they sent (bytes_sent_total, the
  messages before ZeroMQ frames and encrypts them), and the first over the second: what the
  wire carries per byte sent, the part CURVE changes (how much gossip sends varies from run to
  run by more than CURVE adds);
then the ratios CURVE / plaintext and whether the goal (<= 1.10) is met for time per step and
for wire bytes per byte sent. Other traffic on
loopback during the run counts too: run it on a quiet machine. ~1 min per run.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def loopback_bytes():
    for line in open("/proc/net/dev"):
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])  # bytes received on lo = bytes sent to it
    raise RuntimeError("no loopback interface in /proc/net/dev")


def run(murmur, secure, nodes, epochs):
    before = loopback_bytes()
    t0 = time.monotonic()
    out = subprocess.run([murmur, "local", "--nodes", str(nodes), "--epochs", str(epochs), "--json",
                          "--progress", "none"] + (["--secure"] if secure else []),
                         capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    wire = loopback_bytes() - before
    if out.returncode != 0:
        sys.exit(f"murmur local exited {out.returncode}: {out.stderr[-2000:]}")
    j = json.loads(out.stdout.strip().splitlines()[-1])
    return {"step_ms": 1000 * sum(j["train_s"]) / j["local_steps_total"], "wire": wire,
            "app": j["bytes_sent_total"], "overhead": wire / j["bytes_sent_total"],
            "accuracy": j["mean_accuracy"], "wall": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--murmur", default="build/murmur")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--epochs", type=float, default=3)
    args = ap.parse_args()
    results = {False: [], True: []}
    for r in range(args.repeats):
        for secure in (False, True):
            x = run(args.murmur, secure, args.nodes, args.epochs)
            results[secure].append(x)
            print(f"round {r + 1} {'curve    ' if secure else 'plaintext'}: {x['step_ms']:.3f} ms/step, "
                  f"wire {x['wire'] / 1e6:.2f} MB, sent {x['app'] / 1e6:.2f} MB, accuracy "
                  f"{x['accuracy']:.4f}, {x['wall']:.1f} s", flush=True)
    med = {s: {k: statistics.median(x[k] for x in results[s])
               for k in ("step_ms", "wire", "app", "overhead")} for s in results}
    print(f"\n| {args.nodes} nodes, {args.epochs:g} epochs, medians of {args.repeats} | plaintext | CURVE | ratio |")
    print("|---|---|---|---|")
    rows = [("time per step (ms, node-seconds / local steps)", "step_ms", 1, "{:.3f}"),
            ("bytes on loopback (MB)", "wire", 1e6, "{:.2f}"),
            ("bytes the nodes sent (MB)", "app", 1e6, "{:.2f}"),
            ("loopback bytes per byte sent", "overhead", 1, "{:.4f}")]
    ratios = {}
    for label, key, scale, fmt in rows:
        a, b = med[False][key] / scale, med[True][key] / scale
        ratios[key] = b / a if a else float("nan")
        print(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {ratios[key]:.3f} |")
    # How much gossip sends varies from run to run by more than CURVE adds (snapshots, catch-ups),
    # so the bytes goal is judged on what the wire carries per byte the nodes send.
    for key, what in (("step_ms", "time"), ("overhead", "bytes")):
        verdict = "met" if ratios[key] <= 1.10 else "MISSED"
        print(f"goal: CURVE costs at most 10 % {what}: {ratios[key]:.3f} -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
