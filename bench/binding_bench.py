#!/usr/bin/env python3
"""Per-step overhead of the Python binding over the C++ library (<= 5 %).

    python3 bench/binding_bench.py build [--dim 1048576] [--steps 300] [--rounds 5]

Runs, in alternating rounds, build/bench/murmur_api_bench (an api::Peer alone, a flat buffer of
--dim floats; each turn is Next, then Done: murmur's round, compression included) and the same
loop in Python through murmur.Peer on a NumPy array. The turns compute nothing else, so the ratio
is the binding's overhead over murmur's own per-step work (a real step's computation, the same
in either language, would only dilute it; --touch adds one pass over the buffer on both sides,
a C++ loop against NumPy's `x *= 0.999`). Prints each round's microseconds per turn, the median
ratio Python / C++ and the goal; exit 1 when the goal is missed.
Run it with Debian's python3 (the module is built for it).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def python_round(dim, steps, warmup, compress, touch):
    import numpy as np
    import murmur

    x = np.ones(dim, dtype=np.float32)
    peer = murmur.Peer(x, plaintext=True, log_level="error", expect_members=1,
                       time_limit_s=3600, compress=compress, finish_wait_s=1)
    t0 = time.perf_counter()
    for i in range(warmup + steps):
        if i == warmup:
            t0 = time.perf_counter()
        if not peer.next().step:
            raise SystemExit("the run ended early")
        if touch:
            x *= 0.999
        peer.done(0.0, 64)
    us = (time.perf_counter() - t0) * 1e6 / steps
    peer.stop()
    while peer.next().step:
        peer.done(0.0, 0)
    peer.finish()
    return us


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--dim", type=int, default=1 << 20)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--compress", default="topk:0.01,values=fp16")
    p.add_argument("--touch", action="store_true")
    a = p.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    exe = os.path.join(a.build, "bench", "murmur_api_bench")
    ratios = []
    print(f"dim {a.dim}, {a.steps} turns per round, compress {a.compress}, touch {a.touch}")
    print("| round | C++ us/step | Python us/step | Python / C++ |")
    print("|---|---|---|---|")
    for r in range(a.rounds):
        out = subprocess.run([exe, "--dim", str(a.dim), "--steps", str(a.steps), "--warmup",
                              str(a.warmup), "--compress", a.compress] + (["--touch"] if a.touch else []),
                             check=True, capture_output=True, text=True).stdout
        cpp = json.loads(out)["us_per_step"]
        py = python_round(a.dim, a.steps, a.warmup, a.compress, a.touch)
        ratios.append(py / cpp)
        print(f"| {r + 1} | {cpp:.1f} | {py:.1f} | {py / cpp:.3f} |", flush=True)
    median = statistics.median(ratios)
    print(f"median Python / C++: {median:.3f} (goal <= 1.05: {'met' if median <= 1.05 else 'MISSED'})")
    return 0 if median <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
