#!/usr/bin/env python3
"""A small CNN on Fashion-MNIST, trained by N processes over murmur gossip or torch DDP.

    # 4 processes over murmur gossip (the live table, the report, --straggle as for murmur's own):
    build/murmur local --nodes 4 --epochs 3 --exec "python3 examples/fashion_cnn.py"
    # the same model, batch, samples and schedule under torch.distributed DDP (gloo, CPU; the
    # script starts its 4 processes itself):
    python3 examples/fashion_cnn.py --backend ddp --procs 4
    # one process:
    python3 examples/fashion_cnn.py --backend single
    # on GPUs (murmur local places rank r on a GPU and says which in MURMUR_DEVICE):
    build/murmur local --nodes 4 --device cuda --exec "python3 examples/fashion_cnn.py"

    # AdamW inner steps (under murmur, its outer optimizer's rounds every 50 of them):
    build/murmur local --nodes 4 --epochs 3 --exec "python3 examples/fashion_cnn.py --optimizer adamw --lr 0.002"

Reads the IDX files of Debian's dataset-fashion-mnist. Each process trains its shard (rank r of
N takes every N-th training row from r) with SGD + momentum (or AdamW) at batch --batch-size, on a
cosine schedule with a linear warm-up over the cluster's samples. Prints one JSON line at the end:
accuracy and mean cross-entropy of the final model on the 10,000 test images, samples, bytes,
seconds.
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DATA = os.environ.get("MURMUR_DATA_DIR", "/usr/share/datasets/fashion-mnist")


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load():
    xs = read_idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ys = read_idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    xt = read_idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    yt = read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    norm = lambda x: torch.from_numpy((x - 0.2860) / 0.3530).unsqueeze(1)
    return norm(xs), torch.from_numpy(ys), norm(xt), torch.from_numpy(yt)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 16, 5, padding=2)
        self.fc1 = torch.nn.Linear(16 * 7 * 7, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 8 x 14 x 14
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def accuracy(model, xt, yt, rows=None):
    return scores(model, xt, yt, rows)[0]


def scores(model, xt, yt, rows=None):
    """(accuracy, mean cross-entropy) on the first `rows` test images (all: None)."""
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        n = len(yt) if rows is None else rows
        for i in range(0, n, 1000):
            logits = model(xt[i:i + 1000])
            correct += (logits.argmax(1) == yt[i:i + 1000]).sum().item()
            loss += F.cross_entropy(logits, yt[i:i + 1000], reduction="sum").item()
    model.train()
    return correct / n, loss / n


def cosine(lr, samples, total, warmup):
    if samples < warmup:
        return lr * (samples + 1) / warmup
    return 0.5 * lr * (1 + math.cos(math.pi * min(1.0, (samples - warmup) / max(1, total - warmup))))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["murmur", "ddp", "single"], default="murmur")
    p.add_argument("--epochs", type=float, default=3, help="ddp/single (murmur: murmur local --epochs)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--warmup-epochs", type=float, default=0.2)
    p.add_argument("--nesterov", action=argparse.BooleanOptionalAction, default=False,
                   help="Nesterov momentum (0.9) instead of heavy ball")
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd",
                   help="the (inner) optimizer: SGD with momentum 0.9, or AdamW (betas 0.9, 0.999)")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's decoupled weight decay")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--device", default=os.environ.get("MURMUR_DEVICE", "cpu"),
                   help="where the model and the data live: cpu, cuda, cuda:N (default: "
                        "MURMUR_DEVICE, set by murmur local --device, else cpu)")
    p.add_argument("--slowdown", type=float, default=1, help="ddp/single: sleep (f - 1) x each step's compute (murmur: --straggle)")
    p.add_argument("--slow-rank", type=int, default=-1, help="ddp: the rank --slowdown applies to")
    p.add_argument("--procs", type=int, default=4, help="ddp: processes to start")
    p.add_argument("--eval-every", type=int, default=100,
                   help="murmur: steps between evaluations on 1000 test rows (murmur local's "
                        "live table)")
    p.add_argument("--snapshot-every", type=float, default=0.25,
                   help="seconds between copies of the model, evaluated on 1000 test rows after "
                        "training: the result's timeline, at the same times for every backend "
                        "and not in the training time (0: none)")
    p.add_argument("--result-dir", default="",
                   help="also write each process's result JSON to DIR/rank-R.json")
    p.add_argument("--cpu-cgroup", default="",
                   help="join the CPU cgroup DIR/rank-R (made by the caller, e.g. "
                        "bench/byom_bench.py: one share of the cores per process) before training")
    args = p.parse_args()
    if args.backend == "ddp":
        import socket
        import torch.multiprocessing as mp
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(train, args=(args, port), nprocs=args.procs, join=True)
        return 0
    train(0, args, None)
    return 0


def train(rank, args, port):
    torch.set_num_threads(args.threads)

    if args.backend == "murmur":
        rank = int(os.environ.get("MURMUR_RANK", 0))
        world = int(os.environ.get("MURMUR_WORLD_SIZE", 1))
    elif args.backend == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=args.procs)
        world = args.procs
    else:
        world = 1
    if args.cpu_cgroup:
        # Every thread of this process moves (cgroup.procs); a cgroup that cannot be joined ends
        # the run: training without the share would measure another machine.
        with open(os.path.join(args.cpu_cgroup, f"rank-{rank}", "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    device = torch.device(args.device)
    xs, ys, xt, yt = (t.to(device) for t in load())
    shard = torch.arange(rank, len(ys), world, device=device)
    torch.manual_seed(args.seed)  # one initial model on every process
    model = Net().to(device)
    if args.optimizer == "adamw":
        sgd = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        sgd = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=args.nesterov)
    g = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    start = time.time()
    samples = 0
    steps = 0

    def batches():
        while True:
            order = shard[torch.randperm(len(shard), generator=g).to(device)]
            for i in range(0, len(order) - args.batch_size + 1, args.batch_size):
                yield xs[order[i:i + args.batch_size]], ys[order[i:i + args.batch_size]]

    stream = batches()
    result = {"backend": args.backend, "rank": rank, "world": world}
    snapshots = []  # (seconds since the first step, a copy of the parameters)
    first_step = [None]

    def snapshot():
        now = time.time()
        if args.snapshot_every > 0 and (not snapshots or
                                        now - first_step[0] - snapshots[-1][0] >= args.snapshot_every):
            snapshots.append((now - first_step[0], [p.detach().clone() for p in model.parameters()]))

    def evaluate(full):
        net = model.module if hasattr(model, "module") else model  # DDP's inner model
        return accuracy(net, xt, yt, None if full else 1000)
    if args.backend == "murmur":
        import murmur.torch
        opt = murmur.torch.GossipOptimizer(
            sgd, evaluate=evaluate, epoch_samples=len(ys), shard_samples=len(shard),
            same_init=True, lr=args.lr, lr_schedule="cosine", warmup_epochs=args.warmup_epochs,
            eval_every=args.eval_every)
        while opt.running:
            if first_step[0] is None:
                first_step[0] = time.time()
            x, y = next(stream)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step(loss=loss.item(), samples=len(y))
            samples += len(y)
            steps += 1
            snapshot()
        final = opt.finish()
        train_seconds = time.time() - first_step[0] if first_step[0] else 0  # the finish in it
        result.update(bytes_sent=final.bytes_sent, finish=final.finish, end=final.end_reason)
    else:
        if args.backend == "ddp":
            model = torch.nn.parallel.DistributedDataParallel(model)
        total = int(args.epochs * len(ys))
        global_batch = args.batch_size * world
        cluster = 0
        first_step[0] = time.time()
        while cluster < total:
            t0 = time.time()
            for group in sgd.param_groups:
                group["lr"] = cosine(args.lr, cluster, total, int(args.warmup_epochs * len(ys)))
            x, y = next(stream)
            sgd.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            sgd.step()
            if args.slowdown > 1 and (args.slow_rank < 0 or args.slow_rank == rank):
                time.sleep((args.slowdown - 1) * (time.time() - t0))
            samples += len(y)
            cluster += global_batch
            steps += 1
            snapshot()
        train_seconds = time.time() - first_step[0]
        if args.backend == "ddp":
            model = model.module
    final_accuracy, final_loss = scores(model, xt, yt)
    result.update(accuracy=final_accuracy, test_loss=round(final_loss, 5), samples=samples,
                  steps=steps, seconds=round(time.time() - start, 2), optimizer=args.optimizer)
    if args.backend == "ddp":
        # gloo's ring all-reduce: 2 (N - 1) / N of the fp32 gradient per step, each way.
        d = sum(p.numel() for p in model.parameters())
        result["bytes_sent"] = int(steps * 2 * (world - 1) / world * 4 * d)
    # The timeline: each snapshot's accuracy on 1000 test rows, evaluated now, in the model
    # (whose final accuracy is measured above).
    timeline = []
    with torch.no_grad():
        for t, params in snapshots:
            for p, v in zip(model.parameters(), params):
                p.copy_(v)
            timeline.append((round(t, 3), accuracy(model, xt, yt, 1000)))
    result["timeline"] = timeline
    result["train_seconds"] = round(train_seconds, 2)
    line = json.dumps(result)
    print(line, flush=True)
    if args.result_dir:
        with open(os.path.join(args.result_dir, f"rank-{rank}.json"), "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
