#!/usr/bin/env python3
"""CodedReduce across real processes over real ZeroMQ on loopback.

1. `murmur local --mode coded-tree` (n = 3, L = 2, s = 1: 13 processes) and `--mode ring`
   (12 processes) train the same full-batch logistic regression for the same iterations: the
   final training losses must agree (the root decodes the exact full gradient), and so must
   `tree` and `gc`.
2. Thirteen `murmur node --mode coded-tree` processes started here; one leaf per parent (ranks
   4, 7, 10) is SIGSTOPped for 3 s: the root's iterations must keep completing while they are
   stopped, the stopped leaves' late answers must be dropped and counted after SIGCONT, and every
   node must exit cleanly at the end.
"""
import json
import math
import signal
import subprocess
import sys
import time

from harness import NodeProcess, clean_up, loopback, stop_nodes, wait_until

MURMUR = sys.argv[1]
TASK = ["--task", "logistic", "--samples", "3000", "--features", "200", "--lr", "0.5",
        "--n", "3", "--L", "2", "--s", "1"]


def local(mode, iterations):
    cmd = [MURMUR, "local", "--mode", mode, "--iterations", str(iterations), "--eval-every", "0",
           "--progress", "none", "--json"] + TASK
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90)
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}: {out.stderr[-2000:]}"
    j = json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
    assert j["ok"] and j["iterations"] == iterations, j
    print(f"ok: {mode}: {j['processes']} processes, {iterations} iterations, loss {j['loss']:.6f}, "
          f"{j['iteration_ms_mean']:.1f} ms per iteration", flush=True)
    return j


class Node(NodeProcess):
    def __init__(self, rank, endpoint, seeds, logdir):
        super().__init__(MURMUR, rank, [
            "--mode", "coded-tree", "--id", str(rank + 1), "--listen", endpoint, "--seeds", seeds,
            "--cluster", "codedtest", "--iterations", "1000000", "--time-limit-s", "9",
            "--eval-every", "50", "--report-after-s", "1", "--probe-interval-ms", "200",
            "--probe-timeout-ms", "80", "--report", "json", "--report-interval-ms", "100"] + TASK,
            logdir)
        self.rank = rank
        self.start()

    def iteration(self):
        latest = self.latest()
        return latest["iteration"] if latest else 0



def main():
    # 1. Same loss as ring.
    ring = local("ring", 40)
    coded = local("coded-tree", 40)
    tree = local("tree", 40)
    gc = local("gc", 40)
    for other in (coded, tree, gc):
        assert math.isfinite(other["loss"])
        assert abs(other["loss"] - ring["loss"]) <= 1e-4 * abs(ring["loss"]), (other["mode"], other["loss"], ring["loss"])
    assert ring["loss"] < 0.6, f"logistic regression did not learn: loss {ring['loss']}"
    print(f"ok: coded-tree, tree, gc and ring end at the same loss ({ring['loss']:.6f})", flush=True)

    # 2. SIGSTOP one leaf per parent.
    logdir, endpoints = loopback(13, "murmur-coded-test-")
    seeds = ",".join(endpoints[:2])
    nodes = [Node(r, endpoints[r], seeds, logdir) for r in range(13)]
    ok = False
    try:
        root = nodes[0]
        wait_until("the root completes 20 iterations", lambda: root.iteration() >= 20, 30)
        # Stop leaves that run, not ones still settling (SyncNodeTest covers those).
        wait_until("every rank is assembled",
                   lambda: all((n.latest() or {}).get("rank", -1) >= 0 for n in nodes), 30)
        stopped = [nodes[4], nodes[7], nodes[10]]
        for n in stopped:
            n.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        before = root.iteration()
        time.sleep(3)
        during = root.iteration() - before
        for n in stopped:
            n.proc.send_signal(signal.SIGCONT)
        print(f"ok: with leaves 4, 7, 10 stopped the root completed {during} iterations in 3 s", flush=True)
        assert during >= 30, f"iterations stalled while one leaf per parent was stopped: {during}"
        for n in nodes:
            n.proc.wait(timeout=30)
            assert n.proc.returncode == 0, f"rank {n.rank} exited {n.proc.returncode}"
        # The reader threads may still be parsing the last lines once the processes have exited.
        try:
            wait_until("every rank's final report is read",
                       lambda: all(n.final is not None for n in nodes), 10)
        except AssertionError:
            missing = [n.rank for n in nodes if n.final is None]
            raise AssertionError(f"ranks {missing} printed no final report") from None
        f = root.final
        assert f["loss"] is not None and math.isfinite(f["loss"]) and f["loss"] < 0.6, f
        late = sum(nodes[p].final["late_dropped"] for p in (1, 2, 3))
        print(f"ok: every node exited cleanly; root {f['iteration']} iterations, loss {f['loss']:.5f}; "
              f"parents 1-3 dropped {late} late answers", flush=True)
        assert late >= 3, "the stopped leaves' answers should have arrived late after SIGCONT"
        assert all(nodes[r].final["rejected"] == 0 for r in range(13))
        ok = True
    finally:
        stop_nodes(nodes)
        clean_up(logdir, ok)


if __name__ == "__main__":
    main()
