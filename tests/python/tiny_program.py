"""A program on the library for `murmur local --exec` tests: least squares on synthetic data
(NumPy only), rank r of N from the launcher's environment, evaluate() = the fraction of test
points predicted within 0.5. Prints one JSON line at the end."""

import json
import os
import sys

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
    steps += 1
result = peer.finish()
print(json.dumps({"rank": rank, "steps": steps, "accuracy": result.accuracy,
                  "finish": result.finish, "python": sys.executable}), flush=True)
