#!/usr/bin/env python3
"""The parameter server (`--mode ps`) across real processes over real ZeroMQ on loopback.

1. `murmur local --mode ps` with one server and with the model sharded over three, and `--mode
   ring`, train the same logistic regression for the same iterations: bulk-synchronous servers
   compute ring all-reduce's step, so the final training losses agree. Async finishes its budget
   (N gradients per iteration) with stale gradients, and says how stale, with DANA's momentum
   (its default) and with the server's one velocity over two servers.
2. One server and three workers started here as `murmur node --mode ps`; once they train, the
   server is killed (SIGKILL): every worker's run fails within seconds, saying that the server
   was the run's single point of failure.
"""
import json
import math
import os
import signal
import subprocess
import sys

from harness import NodeProcess, clean_up, loopback, stop_nodes, wait_until

MURMUR = sys.argv[1]
TASK = ["--task", "logistic", "--samples", "3000", "--features", "200", "--nodes", "4",
        "--global-batch", "256"]


def local(mode, iterations, extra=(), lr="0.5"):
    cmd = [MURMUR, "local", "--mode", mode, "--iterations", str(iterations), "--eval-every", "0",
           "--progress", "none", "--json", "--lr", lr] + TASK + list(extra)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90)
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}: {out.stderr[-2000:]}"
    j = json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
    assert j["ok"], j
    print(f"ok: {mode} {' '.join(extra)}: {j['processes']} processes, {j['iterations']} updates, "
          f"loss {j['loss']:.6f}", flush=True)
    return j


def main():
    # 1. The synchronous server's step is the ring's.
    ring = local("ring", 40)
    for servers in ("1", "3"):
        ps = local("ps", 40, ["--servers", servers])
        assert ps["iterations"] == 40 and ps["servers"] == int(servers), ps
        assert abs(ps["loss"] - ring["loss"]) <= 1e-4 * abs(ring["loss"]), (ps["loss"], ring["loss"])
    assert ring["loss"] < 0.6, f"logistic regression did not learn: loss {ring['loss']}"
    async_run = local("ps", 40, ["--ps-sync", "async"], lr="0.2")
    assert async_run["iterations"] == 160 and async_run["applied"] == 160, async_run
    assert async_run["staleness_mean"] > 0 and math.isfinite(async_run["loss"]), async_run
    assert "DANA momentum" in async_run["ps_sync"], async_run["ps_sync"]  # async's default
    textbook = local("ps", 40, ["--ps-sync", "async", "--ps-momentum", "server", "--servers", "2"],
                     lr="0.2")
    assert textbook["applied"] == 160 and "server momentum" in textbook["ps_sync"], textbook
    print(f"ok: ps (1 and 3 servers) ends at ring's loss ({ring['loss']:.6f}); async applied 160 "
          f"gradients, staleness {async_run['staleness_mean']:.2f} mean", flush=True)

    # 2. The server is the single point of failure.
    logdir, endpoints = loopback(4, "murmur-ps-test-")
    seeds = ",".join(endpoints[:2])
    args = ["--mode", "ps", "--cluster", "pstest", "--iterations", "1000000", "--time-limit-s",
            "60", "--eval-every", "0", "--probe-interval-ms", "200", "--probe-timeout-ms", "80",
            "--report", "json", "--report-interval-ms", "100", "--task", "logistic",
            "--samples", "3000", "--features", "200", "--lr", "0.5", "--n", "3", "--L", "1",
            "--global-batch", "192"]
    nodes = [NodeProcess(MURMUR, r, args + ["--id", str(r + 1), "--listen", endpoints[r],
                                            "--seeds", seeds], logdir) for r in range(4)]
    ok = False
    try:
        for n in nodes:
            n.start()
        workers = nodes[1:]
        wait_until("every worker has pushed 20 gradients",
                   lambda: all(((w.latest() or {}).get("iteration") or 0) >= 20 for w in workers),
                   30)
        nodes[0].proc.send_signal(signal.SIGKILL)
        for w in workers:
            w.proc.wait(timeout=20)
            assert w.proc.returncode != 0, f"worker {w.index} exited 0 after its server died"
        for w in workers:
            with open(os.path.join(logdir, f"node-{w.index}.log")) as f:
                log = f.read()
            assert "single point of failure" in log, log[-2000:]
        print("ok: the server killed, every worker's run failed naming the single point of failure",
              flush=True)
        ok = True
    finally:
        stop_nodes(nodes)
        clean_up(logdir, ok)


if __name__ == "__main__":
    main()
