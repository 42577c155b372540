#!/usr/bin/env python3
"""The same training step as bench/train_throughput.cc, in PyTorch on the CPU: MLP 784-256-128-10,
cross-entropy, SGD(lr=0.01, momentum=0.9), batch gathered from a shuffled in-memory data set,
one thread. Prints one JSON object. Optional: bench/train_bench.sh skips it when torch is absent."""
import argparse, json, statistics, time

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--batch", type=int, default=64)
a = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(1)
x = torch.randn(60000, 784)
y = torch.randint(0, 10, (60000,))
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
perm = torch.randperm(60000)
cursor = 0

def step():
    global cursor, perm
    if cursor + a.batch > 60000:
        perm, cursor = torch.randperm(60000), 0
    idx = perm[cursor:cursor + a.batch]
    cursor += a.batch
    xb, yb = x[idx], y[idx]
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    return loss

for _ in range(50):
    step()
rates = []
for _ in range(a.repeats):
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    rates.append(a.steps * a.batch / (time.perf_counter() - t))
print(json.dumps({"impl": "pytorch", "version": torch.__version__, "batch": a.batch, "threads": 1,
                  "samples_per_second": statistics.median(rates), "min": min(rates),
                  "max": max(rates)}))
