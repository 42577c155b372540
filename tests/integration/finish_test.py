#!/usr/bin/env python3
"""The consensus finish across real processes over real ZeroMQ on loopback, on Fashion-MNIST.

Five `murmur node --mode gossip` processes, top-1 % compression, a one-epoch budget. Node 4 is a
4x straggler (--straggle slowdown=4) and node 3 is SIGKILLed a few dozen steps in and not
restarted. When the budget is spent the four survivors must all end on one model: each reports
finish outcome "averaged" over 4 models, their saved models are within 1e-3 relative distance of
each other (they are bit-identical by construction), and the cluster model's test accuracy is
far above chance.
"""
import math
import os
import sys

from harness import NodeProcess, clean_up, loopback, read_checkpoint, stop_nodes, wait_until

MURMUR = sys.argv[1]
N = 5
KILLED = 3
STRAGGLER = 4


class Node(NodeProcess):
    def __init__(self, index, endpoint, seeds, logdir):
        args = [
            "--mode", "gossip", "--id", str(index + 1), "--listen", endpoint, "--seeds", seeds,
            "--cluster", "finish", "--shard-index", str(index), "--shard-count", str(N),
            "--expect-members", str(N), "--epochs", "1", "--time-limit-s", "120",
            "--compress", "topk:0.01,values=fp16", "--lr", "0.05", "--lr-schedule", "cosine",
            "--warmup-epochs", "0.2", "--max-wait-ms", "500", "--probe-interval-ms", "200",
            "--probe-timeout-ms", "80", "--finish-wait-s", "20", "--report", "json",
            "--report-interval-ms", "100",
            "--save-model", os.path.join(logdir, f"node-{index}.model")]
        if index == STRAGGLER:
            args += ["--straggle", "slowdown=4"]
        super().__init__(MURMUR, index, args, logdir)

    def step(self):
        latest = self.latest()
        return latest["step"] if latest else 0


def main():
    logdir, endpoints = loopback(N, "murmur-finish-test-")
    seeds = ",".join(e[len("tcp://"):] for e in endpoints[:2])
    nodes = [Node(i, endpoints[i], seeds, logdir) for i in range(N)]
    ok = False
    try:
        for n in nodes:
            n.start()
        wait_until("every node trains", lambda: all(n.step() > 5 for n in nodes), 60)
        wait_until(f"node {KILLED} reaches step 30", lambda: nodes[KILLED].step() >= 30, 30)
        nodes[KILLED].proc.kill()
        nodes[KILLED].proc.wait()
        print(f"node {KILLED} killed at step {nodes[KILLED].step()}", flush=True)
        survivors = [n for n in nodes if n.index != KILLED]
        for n in survivors:
            n.proc.wait(timeout=150)
        models = []
        for n in survivors:
            f = n.final
            assert f is not None and n.proc.returncode == 0, \
                f"node {n.index} did not finish: exit {n.proc.returncode}"
            finish = f.get("finish") or {}
            print(f"node {n.index}: step {f['step']}, end {f['end']}, finish {finish}, "
                  f"accuracy {f['accuracy']}", flush=True)
            assert finish.get("outcome") == "averaged", f"node {n.index}: finish {finish}"
            assert finish.get("contributors") == N - 1, \
                f"node {n.index}: {finish.get('contributors')} models averaged, want {N - 1}"
            assert f["accuracy"] is not None and f["accuracy"] > 0.6, f"node {n.index}: {f['accuracy']}"
            saved = read_checkpoint(os.path.join(logdir, f"node-{n.index}.model"))
            models.append(saved["params"])
        accuracies = {n.final["accuracy"] for n in survivors}
        assert len(accuracies) == 1, f"one model must give one accuracy: {accuracies}"
        reference = models[0]
        norm = math.sqrt(sum(v * v for v in reference))
        for n, m in zip(survivors, models):
            distance = math.sqrt(sum((a - b) ** 2 for a, b in zip(m, reference))) / norm
            print(f"node {n.index}: relative distance to node {survivors[0].index}'s model "
                  f"{distance:.3g}")
            assert distance < 1e-3, f"node {n.index}: {distance:.3g} from the others"
        straggler = nodes[STRAGGLER].final
        fastest = max(n.final["local_steps"] for n in survivors)
        print(f"straggler computed {straggler['local_steps']} steps, the fastest {fastest}")
        ok = True
        print("ok: the survivors of a killed node and a 4x straggler end on one model")
    finally:
        stop_nodes(nodes)
        clean_up(logdir, ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
