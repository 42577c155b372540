#!/usr/bin/env python3
"""Local AdamW against DDP-AdamW in one process, without murmur: what averaging every H steps
costs by itself (the reference for murmur's AdamW rows).

    /usr/bin/python3 bench/local_adamw.py --mode ddp --lr 0.016
    /usr/bin/python3 bench/local_adamw.py --mode local --every 5 --lr 0.024 [--average-moments]
    /usr/bin/python3 bench/local_adamw.py --mode nesterov --every 20 --lr 0.008

The CNN of examples/fashion_cnn.py, its data and shards (worker r of W takes every W-th training
sample from r), batch 64 a worker, AdamW (weight decay 0.01) on the examples' cosine schedule
with a 0.2-epoch warm-up. ddp: one AdamW on the mean gradient of the W batches. local: W workers
step in turn, and every H steps each model is replaced by the exact mean (--average-moments:
AdamW's two moments too). nesterov: the outer step of gossip/outer_optimizer.h (lr 0.9, momentum
0.8) on the exact mean's pseudo-gradient. Prints the test accuracy and mean cross-entropy of the
final (mean) model on the 10,000 test images. About 90 s on one core.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import fashion_cnn  # noqa: E402
import harness  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mode", choices=["ddp", "local", "nesterov"], required=True)
    p.add_argument("--every", type=int, default=1, help="H: steps between averages")
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--average-moments", action="store_true")
    a = p.parse_args()
    if a.every < 1 or a.lr <= 0 or a.workers < 1 or a.epochs <= 0:
        p.error("--every, --workers at least 1; --lr, --epochs positive")
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    xs, ys, xt, yt = fashion_cnn.load_fashion_mnist()
    w, batch = a.workers, 64
    total, warm = int(a.epochs * len(ys)), int(0.2 * len(ys))
    shards = [torch.arange(r, len(ys), w) for r in range(w)]
    g = torch.Generator().manual_seed(a.seed)
    start = fashion_cnn.Net().state_dict()
    count = 1 if a.mode == "ddp" else w
    models = [fashion_cnn.Net() for _ in range(count)]
    for m in models:
        m.load_state_dict(start)
    opts = [torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.01) for m in models]
    anchor = [q.detach().clone() for q in models[0].parameters()]
    velocity = [torch.zeros_like(q) for q in anchor]
    orders, pos = None, len(shards[0])
    steps = int(a.epochs * len(shards[0])) // batch
    for s in range(steps):
        if pos + batch > len(shards[0]):
            orders = [sh[torch.randperm(len(sh), generator=g)] for sh in shards]
            pos = 0
        rows = [o[pos:pos + batch] for o in orders]
        pos += batch
        for opt in opts:
            for group in opt.param_groups:
                group["lr"] = harness.cosine(a.lr, s * batch * w, total, warm)
        if a.mode == "ddp":
            idx = torch.cat(rows)
            opts[0].zero_grad()
            F.cross_entropy(models[0](xs[idx]), ys[idx]).backward()
            opts[0].step()
            continue
        for m, opt, idx in zip(models, opts, rows):
            opt.zero_grad()
            F.cross_entropy(m(xs[idx]), ys[idx]).backward()
            opt.step()
        if (s + 1) % a.every == 0:
            average(models, opts, anchor, velocity, a)
    final = fashion_cnn.Net()
    with torch.no_grad():
        for q, *qs in zip(final.parameters(), *[m.parameters() for m in models]):
            q.copy_(torch.stack(qs).mean(0))
        acc, loss = fashion_cnn.classification_scores(final, xt, yt)
    print(f"{a.mode} every={a.every} lr={a.lr} seed={a.seed}"
          f"{' moments averaged' if a.average_moments else ''}: accuracy {acc:.4f}, "
          f"test loss {loss:.4f}")


@torch.no_grad()
def average(models, opts, anchor, velocity, a):
    for k, qs in enumerate(zip(*[m.parameters() for m in models])):
        mean = torch.stack(qs).mean(0)
        if a.mode == "nesterov":
            delta = anchor[k] - mean
            velocity[k].mul_(0.8).add_(delta)
            anchor[k] -= 0.9 * (delta + 0.8 * velocity[k])
            mean = anchor[k]
        for q in qs:
            q.copy_(mean)
        if a.average_moments:
            for key in ("exp_avg", "exp_avg_sq"):
                states = [opt.state[q][key] for opt, q in zip(opts, qs)]
                m = torch.stack(states).mean(0)
                for t in states:
                    t.copy_(m)


if __name__ == "__main__":
    main()
