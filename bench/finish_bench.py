#!/usr/bin/env python3
"""Does the consensus finish complete on a loaded machine and after a kill?

    bench/finish_bench.py [--murmur build/murmur] [--runs 20] [--nodes 4] [--epochs 1] [--cases load,kill]

Runs `murmur local --nodes N --epochs E --admin` `--runs` times under load, alternating two
cases, and checks each run's report:
- load: busy loops beside the cluster (one per core) and up to 600 idle connections opened on
  node 1's admin port (the collector of the finish, the lowest id) from the moment it is printed
  (the admin server does not keep them all: each run prints how many were open at its end);
- kill: the same load, and node 1 killed (SIGKILL) at 0.6 s and restarted 1 s later.
A run is counted on one model when the report's finish_models is 1; on several, said, when it is
more and the report accounts for it (finish_groups / finish_missed name which node holds which
model, every node that reached the finish among them; the text report prints "the run ended on
K models"). It prints one line per run and a table; exit 1 if a run's report does not account
for its nodes. About 10 s a run.
"""
import argparse
import json
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import threading
import time


def busy(stop):
    while not stop.is_set():
        pass


def hold_connections(port, count, stop, held):
    """Opens `count` connections to 127.0.0.1:port, each with half a request line, and holds them."""
    socks = []
    for _ in range(count):
        if stop.is_set():
            break
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
            held[0] = len(socks)
        except OSError:
            continue  # the listen backlog is full: try again
    stop.wait()
    for s in socks:
        s.close()


def run(murmur, nodes, epochs, kill, connections):
    args = [murmur, "local", "--nodes", str(nodes), "--epochs", str(epochs), "--admin", "--json",
            "--progress", "none"]
    if kill:
        args += ["--crash", "node=1,at=0.6s,down=1s"]
    stop = multiprocessing.Event()
    loops = [multiprocessing.Process(target=busy, args=(stop,)) for _ in range(os.cpu_count() or 2)]
    for p in loops:
        p.start()
    held, holders = [0], []
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr_lines = []

    def read_stderr():
        for line in proc.stderr:
            stderr_lines.append(line)
            m = re.search(r"admin ports \(node 1\.\.\d+\): 127\.0\.0\.1:(\d+)", line)
            if m and not holders:
                t = threading.Thread(target=hold_connections,
                                     args=(int(m.group(1)), connections, stop, held), daemon=True)
                t.start()
                holders.append(t)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=300)
    stop.set()
    for p in loops:
        p.join()
    reader.join(timeout=5)
    wall = time.monotonic() - t0
    lines = [l for l in out.splitlines() if l.strip().startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"ok": False, "why": f"murmur local exited {proc.returncode}", "wall": wall,
                "held": held[0]}
    j = json.loads(lines[-1])
    # The report accounts for every node that reached the finish: each "averaged" node in the
    # group of the collector it adopted from, each "missed" one among finish_missed.
    models = j.get("finish_models", 0)
    finish = j.get("finish", [])
    named = sorted([n for g in j.get("finish_groups", []) for n in g["nodes"]] + j.get("finish_missed", []))
    reached = sum(1 for f in finish if f in ("averaged", "missed"))
    said = len(named) == reached and models == len(j.get("finish_groups", [])) + len(j.get("finish_missed", []))
    return {"ok": models >= 1 and said, "models": models, "said": said, "groups": j.get("finish_groups"),
            "missed": j.get("finish_missed"), "finish": j.get("finish"), "ends": j.get("ends"),
            "accuracy": j.get("cluster_accuracy"), "wall": wall, "held": held[0],
            "why": "the report does not account for every node"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--murmur", default="build/murmur")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--epochs", type=float, default=1)
    ap.add_argument("--connections", type=int, default=600)
    ap.add_argument("--cases", default="load,kill", help="which cases, alternated: load, kill")
    args = ap.parse_args()
    rows = {"load": [], "kill": []}
    if any(c not in rows for c in args.cases.split(",")):
        ap.error(f"--cases: load, kill or both, not {args.cases}")
    for r in range(args.runs):
        cases = args.cases.split(",")
        case = cases[r % len(cases)]
        x = run(args.murmur, args.nodes, args.epochs, case == "kill", args.connections)
        rows[case].append(x)
        print(f"run {r + 1:2d} {case}: {x.get('models', '?')} model(s), finish {x.get('finish')}, "
              f"groups {x.get('groups')}, missed {x.get('missed')}, ends {x.get('ends')}, cluster "
              f"accuracy {x.get('accuracy')}, {x['held']} admin connections held at the end, {x['wall']:.1f} s"
              + ("" if x["ok"] else f"  FAILED {x.get('why', 'several models, not said')}"), flush=True)
    print(f"\n| {args.nodes} nodes, {args.epochs:g} epoch(s), busy loops on every core, "
          f"up to {args.connections} connections tried on node 1's admin port | runs | on one model | "
          "on several, said | several, not said |")
    print("|---|---|---|---|---|")
    for case, xs in rows.items():
        if not xs:
            continue
        one = sum(1 for x in xs if x.get("models") == 1 and x["ok"])
        said = sum(1 for x in xs if x.get("models", 0) > 1 and x["ok"])
        bad = sum(1 for x in xs if not x["ok"])
        print(f"| {case} | {len(xs)} | {one} | {said} | {bad} |")
    return 0 if all(x["ok"] for xs in rows.values() for x in xs) else 1


if __name__ == "__main__":
    sys.exit(main())
