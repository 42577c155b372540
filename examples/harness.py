"""The loop every example shares: N processes train one model on one task over murmur gossip
(`python -m murmur.run --nodes N examples/X.py`, or `murmur local --exec`), or its DDP twin
(`--backend ddp --procs N`: torch.distributed, gloo on the CPU, nccl on GPUs), or one process
(`--backend single`), with the same model, global batch, samples and schedule. An example
supplies a Task: its data, its model, its loss and its scores; the harness does the rest.

Each process trains its shard (rank r of N takes every N-th training sample from r) with SGD +
momentum (or AdamW) at batch --batch-size, on a cosine schedule with a linear warm-up over the
cluster's samples (murmur's lr_schedule; the twin's the same formula). `--amp` runs the forward
pass under autocast (bfloat16) with float32 master parameters. Prints one JSON line at the end:
accuracy and mean loss of the final model on the test set, samples, bytes, seconds, and a
timeline of the accuracy of copies of the model taken every --snapshot-every seconds.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time
import tomllib

import torch


class Task:
    """What an example supplies. Tensors are indexed by sample along their first dimension."""
    name = "task"
    lr = 0.05
    batch_size = 64
    epochs = 3.0

    def load(self, args):
        """(train inputs, train targets, test inputs, test targets), on the CPU."""
        raise NotImplementedError

    def model(self, args):
        raise NotImplementedError

    def loss(self, model, x, y):
        raise NotImplementedError

    def scores(self, model, xt, yt):
        """(accuracy in [0, 1], mean loss) of `model` on these test samples."""
        raise NotImplementedError

    def add_arguments(self, parser):
        """The example's own flags."""


def launched_at():
    """When this process was started (wall clock, s; to 10 ms): its start from /proc against the
    uptime, so start-up counts the interpreter, the imports and the data as well."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def finish_wait(args):
    """The finish_wait_s key: --finish-wait-s, else the launcher's when it was given one, else
    60 s. Each process evaluates its own model on --eval-rows rows while the consensus finish's
    contributions travel, and a ResNet's evaluation on shared CPU cores outlasts murmur's default
    10 s."""
    if args.finish_wait_s is not None:
        return {"finish_wait_s": args.finish_wait_s}
    launcher = os.environ.get("MURMUR_PEER_CONFIG")
    if launcher:
        with open(launcher, "rb") as f:
            if "finish_wait_s" in tomllib.load(f):
                return {}
    return {"finish_wait_s": 60}


def cosine(lr, samples, total, warmup):
    if samples < warmup:
        return lr * (samples + 1) / warmup
    return 0.5 * lr * (1 + math.cos(math.pi * min(1.0, (samples - warmup) / max(1, total - warmup))))


def parse(task, doc):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["murmur", "ddp", "single"], default="murmur")
    p.add_argument("--epochs", type=float, default=task.epochs,
                   help="ddp/single (murmur: the launcher's --epochs)")
    p.add_argument("--batch-size", type=int, default=task.batch_size)
    p.add_argument("--lr", type=float, default=task.lr)
    p.add_argument("--warmup-epochs", type=float, default=0.2)
    p.add_argument("--nesterov", action=argparse.BooleanOptionalAction, default=False,
                   help="Nesterov momentum (0.9) instead of heavy ball")
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd",
                   help="the (inner) optimizer: SGD with momentum 0.9, or AdamW (betas 0.9, 0.999)")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's decoupled weight decay")
    p.add_argument("--amp", action="store_true",
                   help="autocast the forward pass to bfloat16 (float32 master parameters)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--device", default=os.environ.get("MURMUR_DEVICE", "cpu"),
                   help="where the model and the data live: cpu, cuda, cuda:N (default: "
                        "MURMUR_DEVICE, set by the launcher's --device, else cpu)")
    p.add_argument("--slowdown", type=float, default=1,
                   help="ddp/single: sleep (f - 1) x each step's compute (murmur: --straggle)")
    p.add_argument("--slow-rank", type=int, default=-1, help="ddp: the rank --slowdown applies to")
    p.add_argument("--procs", type=int, default=4, help="ddp: processes to start")
    p.add_argument("--eval-every", type=int, default=100,
                   help="murmur: steps between evaluations on a part of the test set (the live "
                        "table)")
    p.add_argument("--eval-rows", type=int, default=1000,
                   help="test samples of the periodic and timeline evaluations")
    p.add_argument("--snapshot-every", type=float, default=0.25,
                   help="seconds between copies of the model, evaluated after training: the "
                        "result's timeline, at the same times for every backend and not in the "
                        "training time (0: none)")
    p.add_argument("--members-timeline", action="store_true",
                   help="murmur, with --result-dir: rank 0 also evaluates the members' average "
                        "(the model a consensus finish would make) at each of its snapshot "
                        "times, from every process's latest copy by then (members_timeline)")
    p.add_argument("--members-target", type=float, default=None,
                   help="--members-timeline: stop at the first time the average reaches this "
                        "accuracy (default: evaluate at every snapshot time)")
    p.add_argument("--finish-wait-s", type=float, default=None,
                   help="murmur: how long a process waits for the consensus finish's average "
                        "(default: the launcher's --finish-wait-s when given, else 60)")
    p.add_argument("--result-dir", default="",
                   help="also write each process's result JSON to DIR/rank-R.json")
    p.add_argument("--cpu-cgroup", default="",
                   help="join the CPU cgroup DIR/rank-R (made by the caller, e.g. "
                        "bench/byom_bench.py: one share of the cores per process) before training")
    task.add_arguments(p)
    args = p.parse_args()
    if args.members_timeline and (args.backend != "murmur" or not args.result_dir
                                  or args.snapshot_every <= 0):
        p.error("--members-timeline needs --backend murmur (DDP's ranks hold one model), "
                "--result-dir (where the processes leave their copies) and --snapshot-every > 0")
    if args.members_target is not None and not args.members_timeline:
        p.error("--members-target applies to --members-timeline, which is not given")
    return args


def members_timeline(args, rank, world, first_step, snapshots, model, accuracy):
    """The accuracy of the members' average over time: each process saves its copies to
    --result-dir; rank 0 waits for all of them (at most 10 minutes) and, at each of its own
    snapshot times T, averages every process's latest copy taken by T and evaluates it. Times are
    from the earliest first step of the members; the timeline ends where the average first
    reaches --members-target, when given. None for ranks other than 0, or when a process's
    copies never came (named on stderr)."""
    def path(r):
        return os.path.join(args.result_dir, f"members-rank-{r}.pt")
    partial = path(rank) + ".part"
    torch.save({"first_step": first_step, "snapshots": snapshots}, partial)
    os.replace(partial, path(rank))  # whole or absent, for rank 0's wait
    if rank != 0:
        return None
    deadline = time.time() + 600
    while not all(os.path.exists(path(r)) for r in range(world)):
        if time.time() > deadline:
            missing = [r for r in range(world) if not os.path.exists(path(r))]
            print(f"members timeline: no copies from ranks {missing} after 10 minutes",
                  file=sys.stderr, flush=True)
            return None
        time.sleep(0.2)
    saved = [torch.load(path(r)) for r in range(world)]
    for r in range(world):
        os.remove(path(r))
    origin = min(m["first_step"] for m in saved)
    timeline = []
    with torch.no_grad():
        for t, _ in snapshots:
            average = members_average(saved, first_step + t)
            if average is None:
                continue
            for p, v in zip(model.parameters(), average):
                p.copy_(v)
            timeline.append((round(first_step + t - origin, 3), accuracy()))
            if args.members_target is not None and timeline[-1][1] >= args.members_target:
                break
    return timeline


def members_average(saved, at):
    """The mean over the members of each one's latest copy taken by wall-clock time `at` (a list
    of tensors, one per parameter), or None while some member has no copy yet. `saved`: each
    member's {"first_step": wall-clock s, "snapshots": [(s since it, [tensor, ...]), ...]}."""
    latest = []
    for m in saved:
        taken = [params for t, params in m["snapshots"] if m["first_step"] + t <= at]
        if not taken:
            return None
        latest.append(taken[-1])
    return [sum(values) / len(latest) for values in zip(*latest)]


def main(task, doc):
    args = parse(task, doc)
    if args.backend == "ddp":
        import socket
        import torch.multiprocessing as mp
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(train, args=(task, args, port), nprocs=args.procs, join=True)
        return 0
    train(0, task, args, None)
    return 0


def train(rank, task, args, port):
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if args.backend == "murmur":
        rank = int(os.environ.get("MURMUR_RANK", 0))
        world = int(os.environ.get("MURMUR_WORLD_SIZE", 1))
    elif args.backend == "ddp":
        import torch.distributed as dist
        gpus = torch.cuda.device_count() if device.type == "cuda" else 0
        if gpus:
            device = torch.device(f"cuda:{rank % gpus}")  # NCCL wants a GPU per rank
        dist.init_process_group("nccl" if gpus >= args.procs else "gloo",
                                init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=args.procs)
        world = args.procs
    else:
        world = 1
    if args.cpu_cgroup:
        # Every thread of this process moves (cgroup.procs); a cgroup that cannot be joined ends
        # the run: training without the share would measure another machine.
        with open(os.path.join(args.cpu_cgroup, f"rank-{rank}", "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    xs, ys, xt, yt = (t.to(device) for t in task.load(args))
    shard = torch.arange(rank, len(ys), world, device=device)
    torch.manual_seed(args.seed)  # one initial model on every process
    model = task.model(args).to(device)
    if args.optimizer == "adamw":
        inner = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        inner = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=args.nesterov)
    g = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if args.amp else \
        contextlib.nullcontext

    def batches():
        while True:
            order = shard[torch.randperm(len(shard), generator=g).to(device)]
            for i in range(0, len(order) - args.batch_size + 1, args.batch_size):
                yield xs[order[i:i + args.batch_size]], ys[order[i:i + args.batch_size]]

    def evaluate(full):
        net = model.module if hasattr(model, "module") else model  # DDP's inner model
        rows = len(yt) if full else min(args.eval_rows, len(yt))
        net.eval()
        with torch.no_grad(), autocast():
            out = task.scores(net, xt[:rows], yt[:rows])
        net.train()
        return out

    stream = batches()
    result = {"backend": args.backend, "rank": rank, "world": world, "task": task.name}
    snapshots = []  # (seconds since the first step, a copy of the parameters)
    start = launched_at()
    first_step = [None]
    samples = steps = 0

    def snapshot():
        now = time.time()
        if args.snapshot_every > 0 and (not snapshots or
                                        now - first_step[0] - snapshots[-1][0] >= args.snapshot_every):
            snapshots.append((now - first_step[0], [p.detach().clone() for p in model.parameters()]))

    def one_step(opt, gossip):
        x, y = next(stream)
        opt.zero_grad()
        with autocast():
            loss = task.loss(model, x, y)
        loss.backward()
        if gossip:
            opt.step(loss=loss.item(), samples=len(y))
        else:
            opt.step()
        return len(y)

    # murmur evaluates the model the run ends on (the cluster's average) on the full test set as
    # the finish ends; that result, with its loss, is this process's final one: a step clears it.
    final_evaluation = [None]

    def evaluate_for_murmur(full):
        out = evaluate(full)
        final_evaluation[0] = out if full else None
        return out[0]

    if args.backend == "murmur":
        import murmur.torch
        opt = murmur.torch.GossipOptimizer(
            inner, evaluate=evaluate_for_murmur, epoch_samples=len(ys),
            shard_samples=len(shard), same_init=True, lr_schedule="cosine",
            warmup_epochs=args.warmup_epochs, eval_every=args.eval_every,
            **finish_wait(args))
        while opt.running:
            if first_step[0] is None:
                first_step[0] = time.time()
                result["startup_s"] = round(first_step[0] - start, 3)
            final_evaluation[0] = None  # what is evaluated from here on is a newer model
            samples += one_step(opt, True)
            steps += 1
            snapshot()
        final = opt.finish()
        final_result = final_evaluation[0] or evaluate(True)
        # The finish and the final model's evaluation in it, as in DDP's below.
        train_seconds = time.time() - first_step[0] if first_step[0] else 0
        result.update(bytes_sent=final.bytes_sent, finish=final.finish, end=final.end_reason)
    else:
        if args.backend == "ddp":
            model = torch.nn.parallel.DistributedDataParallel(model)
        total = int(args.epochs * len(ys))
        cluster = 0
        first_step[0] = time.time()
        result["startup_s"] = round(first_step[0] - start, 3)
        while cluster < total:
            t0 = time.time()
            for group in inner.param_groups:
                group["lr"] = cosine(args.lr, cluster, total, int(args.warmup_epochs * len(ys)))
            samples += one_step(inner, False)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if args.slowdown > 1 and (args.slow_rank < 0 or args.slow_rank == rank):
                time.sleep((args.slowdown - 1) * (time.time() - t0))
            cluster += args.batch_size * world
            steps += 1
            snapshot()
        final_result = evaluate(True)
        train_seconds = time.time() - first_step[0]
        if args.backend == "ddp":
            model = model.module
    final_accuracy, final_loss = final_result
    result.update(accuracy=final_accuracy, test_loss=round(final_loss, 5), samples=samples,
                  steps=steps, seconds=round(time.time() - start, 2), optimizer=args.optimizer)
    if args.backend == "ddp":
        # The ring all-reduce: 2 (N - 1) / N of the fp32 gradient per step, each way.
        d = sum(p.numel() for p in model.parameters())
        result["bytes_sent"] = int(steps * 2 * (world - 1) / world * 4 * d)
    # The timeline: each snapshot's accuracy on --eval-rows test samples, evaluated now.
    timeline = []
    with torch.no_grad():
        for t, params in snapshots:
            for p, v in zip(model.parameters(), params):
                p.copy_(v)
            timeline.append((round(t, 3), evaluate(False)[0]))
    result["timeline"] = timeline
    if args.members_timeline:
        result["members_timeline"] = members_timeline(args, rank, world, first_step[0], snapshots,
                                                      model, lambda: evaluate(False)[0])
    result["train_seconds"] = round(train_seconds, 2)
    line = json.dumps(result)
    print(line, flush=True)
    if args.result_dir:
        with open(os.path.join(args.result_dir, f"rank-{rank}.json"), "w") as f:
            f.write(line + "\n")
