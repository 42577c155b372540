#!/usr/bin/env python3
"""PyTorch baselines for bench/gpu_bench.cc on the same GPU: torch.topk at 1 % of the vector that
gpu_bench wrote with --dump (the same data), and the same MLP training step (784-256-128-10,
batch 64, SGD lr 0.01 momentum 0.9, batch gathered on the GPU). Medians after a warm-up, each
timed run ends with torch.cuda.synchronize(). Prints `topk_ms X` and `step_us Y`."""
import argparse, statistics, time

import numpy as np
import torch

p = argparse.ArgumentParser()
p.add_argument("--data", required=True, help="raw fp32 file from gpu_bench --dump")
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--steps", type=int, default=500)
a = p.parse_args()
dev = torch.device("cuda")

def median(f):
    f(); torch.cuda.synchronize()
    t = []
    for _ in range(a.repeats):
        s = time.perf_counter(); f(); torch.cuda.synchronize(); t.append(time.perf_counter() - s)
    return statistics.median(t)

v = torch.from_numpy(np.fromfile(a.data, dtype=np.float32)).to(dev)
k = v.numel() // 100
print(f"topk_ms {median(lambda: torch.topk(v.abs(), k, sorted=False)) * 1e3:.3f} (torch {torch.__version__})")

torch.manual_seed(1)
x = torch.randn(60000, 784, device=dev)
y = torch.randint(0, 10, (60000,), device=dev)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
perm = torch.randperm(60000, device=dev)
state = {"cursor": 0}

def steps():
    for _ in range(a.steps):
        c = state["cursor"]
        if c + 64 > 60000:
            c = 0
        idx = perm[c:c + 64]
        state["cursor"] = c + 64
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        loss.item()  # murmur's Step returns the loss to the host too

print(f"step_us {median(steps) / a.steps * 1e6:.1f}")
