"""A program on the library for `murmur local --exec` tests: least squares on synthetic data
(NumPy only), rank r of N from the launcher's environment, evaluate() = the fraction of test
points predicted within 0.5. Prints one JSON line at the end. With TINY_HOLD_S, every rank but 0
does post-loop work of its own that long before its finish; with TINY_TIMES, each rank writes
how long its run took from its last step to the end of its finish to TINY_TIMES-<rank>.json."""

import json
import os
import sys
import time

import numpy as np

import murmur

rank = int(os.environ["MURMUR_RANK"])
world = int(os.environ["MURMUR_WORLD_SIZE"])
rng = np.random.default_rng(1)  # the same task on every rank
w_true = rng.normal(size=32).astype(np.float32)
xs = rng.normal(size=(4096, 32)).astype(np.float32)
ys = xs @ w_true
xt = rng.normal(size=(512, 32)).astype(np.float32)
yt = xt @ w_true
mine = np.arange(rank, len(ys), world)
w = np.zeros(32, dtype=np.float32)


def evaluate(full):
    return float(np.mean(np.abs(xt @ w - yt) < 0.5))


peer = murmur.Peer(w, evaluate=evaluate, epoch_samples=len(ys), shard_samples=len(mine),
                   same_init=True, eval_every=20)
local = np.random.default_rng(rank)
steps = 0
while peer.next().step:
    b = local.choice(mine, 32)
    err = xs[b] @ w - ys[b]
    w -= 0.05 * (xs[b].T @ err) / len(b)
    peer.done(float(np.mean(err ** 2)), len(b))
    last_done = time.monotonic()
    if steps % 10 == 0:
        peer.log("test_mse", float(np.mean((xt @ w - yt) ** 2)))  # a figure of its own
    steps += 1
if rank != 0:
    time.sleep(float(os.environ.get("TINY_HOLD_S", "0")))  # its own evaluation, its save
result = peer.finish()
if "TINY_TIMES" in os.environ:
    with open(f"{os.environ['TINY_TIMES']}-{rank}.json", "w") as f:
        json.dump({"tail_s": time.monotonic() - last_done}, f)
print(json.dumps({"rank": rank, "steps": steps, "accuracy": result.accuracy,
                  "finish": result.finish, "python": sys.executable}), flush=True)
