"""Throughput of a PyTorch program under `python -m murmur.run` with the launcher's thread default
(OMP_NUM_THREADS = cores / processes) against PyTorch's own (a pool of every core in each
process), alternated in the same run so the machine's noise falls on both.

    python3 bench/launcher_threads.py build [--nodes 4] [--repeats 3]

The program is examples/port/mnist_murmur.py (a small CNN, Adadelta, StepLR). Prints one line per
run and the ratio of the medians of the training phase's samples/s."""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(build, nodes, threads):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "python"))
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([sys.executable, "-m", "murmur.run", "--nodes", str(nodes), "--progress",
                        "none", "--json", os.path.join(ROOT, "examples", "port", "mnist_murmur.py"),
                        "--train-size", "8000", "--epochs", "2"],
                       capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        sys.exit(f"the run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["train_phase_samples_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    cores = len(os.sched_getaffinity(0))
    rates = {"pytorch": [], "launcher": []}
    for i in range(a.repeats):
        for name, threads in (("pytorch", cores), ("launcher", None)):
            rates[name].append(run(a.build, a.nodes, threads))
            print(f"run {i + 1} {name:8s} ({'OMP_NUM_THREADS=%d' % threads if threads else 'default'}): "
                  f"{rates[name][-1]:8.0f} samples/s", flush=True)
    ratio = statistics.median(rates["launcher"]) / statistics.median(rates["pytorch"])
    print(f"{a.nodes} processes on {cores} cores: the launcher's default {ratio:.2f}x PyTorch's "
          "own thread pool (medians)")


if __name__ == "__main__":
    main()
