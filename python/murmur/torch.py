"""PyTorch integration: GossipOptimizer trains a model's parameters over murmur gossip.

    model = Net()
    opt = murmur.torch.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                       epochs=3, epoch_samples=60000, plaintext=True)
    for x, y in loader(murmur.torch.shard(train_set)):   # this process's part of the data
        if not opt.running:
            break
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step(loss=loss.item(), samples=len(y))   # local step, gossip round, wait for the next
    result = opt.finish()                              # the model is now the cluster's average

The parameters are moved once into one contiguous buffer (each parameter a view of it), which
murmur mixes into in place: no copy of the model per step. float32 parameters, all on the CPU or
all on one GPU: on a GPU the buffer stays in GPU memory and murmur's round runs there (its
kernels on the legacy default stream, PyTorch's default; work the step queued on another stream
is waited for before the round). Mixed precision: autocast keeps the parameters float32, so
`with torch.autocast(...)` around the forward pass works as it does without murmur.
"""

import os
import time

import numpy as _numpy
import torch as _torch

from murmur._peer import Peer as _Peer

__all__ = ["GossipOptimizer", "shard"]


def _world():
    """(rank, world size) from murmur's launcher (MURMUR_RANK, MURMUR_WORLD_SIZE) or torchrun's
    (RANK, WORLD_SIZE); (0, 1) for a process started alone."""
    for rank_key, world_key in (("MURMUR_RANK", "MURMUR_WORLD_SIZE"), ("RANK", "WORLD_SIZE")):
        if rank_key in os.environ and world_key in os.environ:
            return int(os.environ[rank_key]), int(os.environ[world_key])
    return 0, 1


def shard(dataset, rank=None, world=None):
    """This process's part of `dataset` (a torch Dataset): every world-th item from `rank`, so the
    processes of a run see disjoint parts of the same size (±1) and together all of it. `rank`
    and `world` default to the launcher's (`python -m murmur.run`, `murmur local --exec`), or
    torchrun's RANK / WORLD_SIZE, or (0, 1)."""
    default_rank, default_world = _world()
    rank = default_rank if rank is None else int(rank)
    world = default_world if world is None else int(world)
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"shard: rank={rank}, world={world}: need 0 <= rank < world")
    return _torch.utils.data.Subset(dataset, range(rank, len(dataset), world))


class GossipOptimizer:
    """Trains the parameters of `optimizer` (any torch.optim optimizer) over murmur gossip.

    Each `step()` runs the wrapped optimizer's local step, then murmur's round (gossip, the outer
    optimizer every 80 steps by default, soft sync); `running` turns False once the cluster's
    budget is spent and the consensus finish made every process's model the same average.

    Keyword arguments (None: murmur's default; `murmur.known_keys()` lists every key, and
    `**keys` passes any other, e.g. `gossip_fanout=2`):
      epochs (float): the budget in passes over `epoch_samples` (or time_limit_s or
          target_accuracy).
      epoch_samples (int): the training samples of one epoch over the whole cluster.
      seeds (str or list of str): "host:port" of members to join; none to start a cluster.
      listen (str): this process's endpoint, e.g. "tcp://0.0.0.0:7070" (default: a free
          loopback port).
      expect_members (int): wait for this many members before the first step (the launcher's
          world size under `python -m murmur.run`).
      plaintext (bool): no authentication (an experiment on a network you trust), or
      cluster_key_file (str): the cluster's key (`murmur keygen --out FILE`).
      lr (float), lr_schedule (str): murmur's schedule of the learning rate ("cosine",
          "step:...", "constant"), applied to every param group each step; without lr_schedule
          the wrapped optimizer keeps its own rate (and a torch LR scheduler you step works as
          usual). lr defaults to the optimizer's first group's rate.
      outer (str): the outer optimizer ("nesterov:every=80,lr=0.9,momentum=0.8,rounds=4",
          murmur's default: every 80 steps, more often in a run too short for 4 such rounds;
          "none": CHOCO gossip every step).
      compress (str): the operator for the exchanged updates ("auto", "int8", "topk:0.01", ...).
      eval_every (int): steps between evaluate() calls; target_accuracy (float) ends the run
          once reached.
      time_limit_s (float): a wall-clock budget.
      checkpoint_dir (str), checkpoint_every (int): the peer's checkpoints, holding the wrapped
          optimizer's state too; with the same `id` a restarted process resumes.
      device (str): "cuda:N" for parameters on a GPU (set from the parameters).
      evaluate (callable): evaluate(full) -> the model's test accuracy in [0, 1] (or None);
          full=True (the whole test set) only for the model the run ends on, once: the periodic
          evaluations and the own model's before the consensus finish are full=False.
      params: the parameters to train (default: every parameter of the optimizer's groups).

    A bad value raises ValueError and anything else murmur.Error, each with murmur's reason.
    """

    def __init__(self, optimizer, params=None, *, evaluate=None, epochs=None, epoch_samples=None,
                 seeds=None, listen=None, expect_members=None, plaintext=None,
                 cluster_key_file=None, lr=None, lr_schedule=None, outer=None, compress=None,
                 eval_every=None, target_accuracy=None, time_limit_s=None, checkpoint_dir=None,
                 checkpoint_every=None, device=None, **keys):
        config = dict(epochs=epochs, epoch_samples=epoch_samples, seeds=seeds, listen=listen,
                      expect_members=expect_members, plaintext=plaintext,
                      cluster_key_file=cluster_key_file, lr=lr, lr_schedule=lr_schedule,
                      outer=outer, compress=compress, eval_every=eval_every,
                      target_accuracy=target_accuracy, time_limit_s=time_limit_s,
                      checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
                      device=device)
        config = {k: v for k, v in config.items() if v is not None}
        config.update(keys)
        # murmur's schedule scales the optimizer's own rate unless another is given.
        schedule_keys = ("lr_schedule", "warmup_epochs", "lr_reference_batch")
        if "lr" not in config and any(k in config for k in schedule_keys):
            config["lr"] = float(optimizer.param_groups[0]["lr"])
        if params is None:
            params = [p for group in optimizer.param_groups for p in group["params"]]
        params = list(params)
        if not params:
            raise ValueError("no parameters to train")
        device = params[0].device
        for i, p in enumerate(params):
            if p.device != device:
                raise ValueError(f"parameter {i} is on {p.device}, parameter 0 on {device}: "
                                 "GossipOptimizer takes a model on one device")
            if device.type not in ("cpu", "cuda"):
                raise ValueError(f"parameter {i} is on {p.device}: GossipOptimizer takes CPU or "
                                 "CUDA tensors")
            if p.dtype != _torch.float32:
                raise ValueError(f"parameter {i} is {p.dtype}: GossipOptimizer takes float32")
        if device.type == "cuda":
            index = device.index if device.index is not None else _torch.cuda.current_device()
            if config.setdefault("device", f"cuda:{index}") != f"cuda:{index}":
                raise ValueError(f"device={config['device']}, but the parameters are on cuda:{index}")
        self.device = device
        self.optimizer = optimizer
        self.params = params
        with _torch.no_grad():
            flat = _torch.cat([p.detach().reshape(-1) for p in params]).contiguous()
            offset = 0
            for p in params:
                n = p.numel()
                p.data = flat[offset:offset + n].view_as(p)
                offset += n
        self.flat = flat
        # A replaced model (a snapshot, a catch-up, the consensus finish) drops the momentum at
        # once, so no checkpoint holds momentum of a model that is gone.
        hooks = {"replaced": self.optimizer.state.clear}
        if config.get("checkpoint_dir"):
            hooks.update(save_state=self._save_state, restore_state=self._restore_state)
        self.peer = _Peer(flat if device.type == "cuda" else flat.numpy(), evaluate=evaluate,
                         **hooks, **config)
        self._turn = None  # the first turn is waited for by the first `running` or step()
        self._turn_at = time.perf_counter()

    def _save_state(self):
        """The optimizer's per-parameter state as checkpoint sections: a tensor as
        'optimizer.I.KEY' (float32 values) with its shape and dtype beside it, an int as it is."""
        index = {id(p): i for i, p in enumerate(self.params)}
        out = {}
        for p, state in self.optimizer.state.items():
            i = index.get(id(p))
            if i is None:
                continue
            for key, value in state.items():
                name = f"optimizer.{i}.{key}"
                if _torch.is_tensor(value):
                    t = value.detach().to("cpu")
                    out[name] = t.to(_torch.float32).contiguous().reshape(-1).numpy()
                    out[name + ".shape"] = _numpy.array(t.shape, dtype=_numpy.int64)
                    out[name + ".dtype"] = str(t.dtype).replace("torch.", "")
                elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    out[name] = value
                else:
                    raise ValueError(f"optimizer state {key!r} of parameter {i} is a "
                                     f"{type(value).__name__}: GossipOptimizer checkpoints "
                                     "tensors and non-negative ints")
        return out

    def _restore_state(self, saved):
        """The inverse of _save_state, onto the parameters' device."""
        self.optimizer.state.clear()
        for name, value in saved.items():
            if not name.startswith("optimizer.") or name.endswith((".shape", ".dtype")):
                continue
            _, i, key = name.split(".", 2)
            p = self.params[int(i)]
            if isinstance(value, int):
                self.optimizer.state[p][key] = value
                continue
            shape = tuple(int(d) for d in saved[name + ".shape"])
            dtype = getattr(_torch, saved[name + ".dtype"])
            self.optimizer.state[p][key] = (
                _torch.from_numpy(value).reshape(shape).to(self.device, dtype))

    def state_dict(self):
        """The model (the flat buffer, on the CPU) and the wrapped optimizer's state_dict, for
        torch.save: a snapshot a program may keep and load_state_dict() into a later run. The
        peer's own checkpoints (checkpoint_dir) also carry murmur's clocks for a restart."""
        progress = self.peer.progress()
        return {"model": self.flat.detach().to("cpu").clone(),
                "optimizer": self.optimizer.state_dict(),
                "murmur": {"step": int(progress.step), "samples": int(progress.samples)}}

    def load_state_dict(self, state):
        """Puts a state_dict() back: the model into the buffer murmur mixes (in place, so every
        parameter view sees it) and the wrapped optimizer's state. ValueError for a model of
        another size."""
        model = state["model"]
        if model.numel() != self.flat.numel():
            raise ValueError(f"load_state_dict: a model of {model.numel()} values, this one has "
                             f"{self.flat.numel()}")
        with _torch.no_grad():
            self.flat.copy_(model.reshape(-1).to(self.flat.device, self.flat.dtype))
        self.optimizer.load_state_dict(state["optimizer"])

    def _wait_turn(self):
        if self._turn is None:
            self._turn = self.peer.next()  # joins: blocks until the cluster lets it train
            self._turn_at = time.perf_counter()
        return self._turn

    @property
    def running(self):
        """False once the cluster's budget is spent (or stop() was called) and the finish ran.
        The first call waits for the peer to join."""
        return self._wait_turn().step

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, loss=float("nan"), samples=0, closure=None):
        """The local step of the wrapped optimizer, then murmur's gossip round, then waits until
        the next step may run. `loss` and `samples` feed murmur's progress and budget."""
        if not self._wait_turn().step:
            raise RuntimeError("the run is over: check GossipOptimizer.running")
        if self._turn.lr is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = self._turn.lr
        result = self.optimizer.step(closure)
        if closure is not None and result is not None and loss != loss:
            loss = float(result)
        if self.device.type == "cuda":
            stream = _torch.cuda.current_stream(self.device)
            if stream != _torch.cuda.default_stream(self.device):
                stream.synchronize()  # murmur's round reads the buffer on the default stream
        self.peer.done(float(loss), int(samples), time.perf_counter() - self._turn_at)
        self._turn = self.peer.next()
        self._turn_at = time.perf_counter()
        return result

    def stop(self):
        self.peer.stop()

    def progress(self):
        return self.peer.progress()

    def finish(self):
        """Drains the run (if stop() was called) and returns the final murmur.Progress."""
        while self._wait_turn().step:  # stop() was called: the run ends at the next turn
            self.peer.done(float("nan"), 0, 0.0)
            self._turn = self.peer.next()
        return self.peer.finish()
