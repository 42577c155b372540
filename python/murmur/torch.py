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

import collections as _collections
import itertools as _itertools
import os
import time
import warnings as _warnings

import numpy as _numpy
import torch as _torch
import torch.utils.hooks as _hooks

from murmur._peer import Peer as _Peer

__all__ = ["GossipOptimizer", "rank", "shard", "world_size"]


def _world():
    """(rank, world size) from murmur's launcher (MURMUR_RANK, MURMUR_WORLD_SIZE) or torchrun's
    (RANK, WORLD_SIZE); (0, 1) for a process started alone."""
    for rank_key, world_key in (("MURMUR_RANK", "MURMUR_WORLD_SIZE"), ("RANK", "WORLD_SIZE")):
        if rank_key in os.environ and world_key in os.environ:
            return int(os.environ[rank_key]), int(os.environ[world_key])
    return 0, 1


def rank():
    """This process's rank in the run: the launcher's (`python -m murmur.run`, `murmur local
    --exec`), or torchrun's RANK, or 0 alone (e.g. to save from one process only)."""
    return _world()[0]


def world_size():
    """The run's processes: the launcher's MURMUR_WORLD_SIZE, or torchrun's, or 1 alone."""
    return _world()[1]


def shard(dataset, rank=None, world=None, contiguous=None):
    """This process's part of `dataset`, so the processes of a run see disjoint parts of the
    same size (±1) and together all of it. `rank` and `world` default to the launcher's
    (`python -m murmur.run`, `murmur local --exec`), or torchrun's RANK / WORLD_SIZE, or (0, 1).

      - a map-style torch Dataset: every world-th item from `rank` (a Subset), or with
        contiguous=True the rank-th of `world` consecutive ranges;
      - an IterableDataset (a stream): every world-th item it yields, from the rank-th;
      - a tensor, NumPy array or list (a token stream): its rank-th contiguous part, so each
        process reads whole runs of text (contiguous is the default here; contiguous=False
        strides it as a Dataset)."""
    default_rank, default_world = _world()
    rank = default_rank if rank is None else int(rank)
    world = default_world if world is None else int(world)
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"shard: rank={rank}, world={world}: need 0 <= rank < world")
    if isinstance(dataset, _torch.utils.data.IterableDataset):
        if contiguous:
            raise ValueError("shard: a stream has no length to cut in contiguous parts; it is "
                             "split item by item")
        return _StridedStream(dataset, rank, world)
    sequence = isinstance(dataset, (_torch.Tensor, _numpy.ndarray, list, tuple))
    n = len(dataset)
    if (sequence and contiguous is None) or contiguous:
        lo, hi = rank * n // world, (rank + 1) * n // world
        return dataset[lo:hi] if sequence else _torch.utils.data.Subset(dataset, range(lo, hi))
    if sequence:
        return dataset[rank::world]
    return _torch.utils.data.Subset(dataset, range(rank, n, world))


class _StridedStream(_torch.utils.data.IterableDataset):
    """Every world-th item of a stream, from the rank-th (shard() of an IterableDataset)."""

    def __init__(self, stream, rank, world):
        super().__init__()
        self.stream, self.rank, self.world = stream, rank, world

    def __iter__(self):
        return _itertools.islice(iter(self.stream), self.rank, None, self.world)


class GossipOptimizer(_torch.optim.Optimizer):
    """Trains the parameters of `optimizer` (any torch.optim optimizer) over murmur gossip.

    Each `step()` runs the wrapped optimizer's local step, then murmur's round (gossip, the outer
    optimizer every 80 steps by default, soft sync); `running` turns False once the cluster's
    budget is spent and the consensus finish made every process's model the same average.

    It is a torch.optim.Optimizer: `param_groups`, `state`, `defaults`, `zero_grad()`,
    `state_dict()` / `load_state_dict()` (the wrapped optimizer's, with murmur's clocks beside
    them) and `register_step_pre_hook` / `register_step_post_hook` are the wrapped optimizer's,
    so LR schedulers (StepLR, CosineAnnealingLR, ...), gradient scalers and checkpoint code
    written for PyTorch take it as they take the optimizer it wraps. `step(closure=None, *,
    loss=None, samples=None)`: `loss` (a float) feeds murmur's progress and its figures when the
    program has no evaluate; `samples` (the batch's rows) the budget, or `samples_per_step`.

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
      samples_per_step (int): the samples a step() counts when it is not told (`samples=`);
          without either, a budget in epochs is refused at the first step.

    A bad value raises ValueError and anything else murmur.Error, each with murmur's reason.
    """

    def __init__(self, optimizer, params=None, *, evaluate=None, epochs=None, epoch_samples=None,
                 seeds=None, listen=None, expect_members=None, plaintext=None,
                 cluster_key_file=None, lr=None, lr_schedule=None, outer=None, compress=None,
                 eval_every=None, target_accuracy=None, time_limit_s=None, checkpoint_dir=None,
                 checkpoint_every=None, device=None, samples_per_step=None, **keys):
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
        self.defaults = optimizer.defaults
        self.params = params
        self._hook_for_profile()  # what torch.optim.Optimizer.__init__ sets up, minus the groups
        self._step_pre_hooks = _collections.OrderedDict()
        self._step_post_hooks = _collections.OrderedDict()
        if samples_per_step is not None and int(samples_per_step) < 1:
            raise ValueError(f"samples_per_step={samples_per_step}: need at least 1")
        self._samples_per_step = None if samples_per_step is None else int(samples_per_step)
        self._stop_asked = False
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

    # ---- torch.optim.Optimizer's surface, the wrapped optimizer's own ----

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups):
        self.optimizer.param_groups = groups

    @property
    def state(self):
        return self.optimizer.state

    @state.setter
    def state(self, state):
        self.optimizer.state = state

    def __getstate__(self):
        raise TypeError("a GossipOptimizer holds a live murmur peer: pickle its state_dict()")

    def __repr__(self):
        return f"GossipOptimizer({self.optimizer!r})"

    def add_param_group(self, param_group):
        raise ValueError("GossipOptimizer trains the parameters it was made with (one buffer "
                         "murmur mixes): add the group to the wrapped optimizer before wrapping")

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) before each step (PyTorch 2's API); returns a handle
        whose remove() takes it away."""
        handle = _hooks.RemovableHandle(self._step_pre_hooks)
        self._step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) after each step and its gossip round."""
        handle = _hooks.RemovableHandle(self._step_post_hooks)
        self._step_post_hooks[handle.id] = hook
        return handle

    def state_dict(self):
        """The wrapped optimizer's state_dict (its `state` and `param_groups`, as torch.save
        keeps an optimizer's) with murmur's clocks under "murmur"; the model is the model's own
        state_dict(), as in any PyTorch checkpoint. The peer's own checkpoints (checkpoint_dir)
        also carry murmur's clocks for a restart."""
        progress = self.peer.progress()
        out = self.optimizer.state_dict()
        out["murmur"] = {"step": int(progress.step), "samples": int(progress.samples)}
        return out

    def load_state_dict(self, state):
        """Puts a state_dict() back into the wrapped optimizer. A dict with "model" (the flat
        buffer) and "optimizer", as earlier versions wrote, also puts the model back into the
        buffer murmur mixes (in place, so every parameter view sees it); ValueError for a model
        of another size."""
        if "model" in state:
            model = state["model"]
            if model.numel() != self.flat.numel():
                raise ValueError(f"load_state_dict: a model of {model.numel()} values, this one "
                                 f"has {self.flat.numel()}")
            with _torch.no_grad():
                self.flat.copy_(model.reshape(-1).to(self.flat.device, self.flat.dtype))
            state = state["optimizer"]
        self.optimizer.load_state_dict({k: v for k, v in state.items() if k != "murmur"})

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    # ---- murmur's turn ----

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

    def step(self, closure=None, *, loss=None, samples=None):
        """The local step of the wrapped optimizer, then murmur's gossip round, then waits until
        the next step may run. `loss` (default: the closure's result) and `samples` (default:
        samples_per_step) feed murmur's progress and budget."""
        if not self._wait_turn().step:
            raise RuntimeError("the run is over: check GossipOptimizer.running")
        if samples is None:
            samples = self._samples_per_step
        if samples is None:
            if self.peer.progress().budget_samples > 0:
                raise ValueError("step(): a budget in epochs counts samples: pass samples=len(batch) "
                                 "or GossipOptimizer(..., samples_per_step=BATCH)")
            samples = 0
        for hook in list(self._step_pre_hooks.values()):
            hook(self, (closure,), {"loss": loss, "samples": samples})
        if self._turn.lr is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = self._turn.lr
        result = self.optimizer.step(closure)
        if loss is None and closure is not None and result is not None:
            loss = float(result)
        if self.device.type == "cuda":
            stream = _torch.cuda.current_stream(self.device)
            if stream != _torch.cuda.default_stream(self.device):
                stream.synchronize()  # murmur's round reads the buffer on the default stream
        self.peer.done(None if loss is None else float(loss), int(samples),
                       time.perf_counter() - self._turn_at)
        self._turn = self.peer.next()
        self._turn_at = time.perf_counter()
        for hook in list(self._step_post_hooks.values()):
            hook(self, (closure,), {"loss": loss, "samples": samples})
        return result

    def stop(self):
        """Ends this peer's run at its next turn (no consensus finish: the model stays its
        own); callable from another thread or a signal handler."""
        self._stop_asked = True
        self.peer.stop()

    def progress(self):
        return self.peer.progress()

    def log(self, name, value):
        """A figure of the program's own (a validation loss, the rate its scheduler set): its
        latest value goes into murmur's report lines, so `--run-dir`'s series.csv and `murmur
        report`'s figures show it beside murmur's. Names: letters, digits, _ . / - (up to 64
        of them)."""
        self.peer.log(str(name), float(value))

    def finish(self):
        """Ends the run and returns the final murmur.Progress. After `running` turned False the
        model is the cluster's. Called earlier (the program's own loop ended first), this
        peer's training ends there, said once as a warning, and the run ends as a spent budget
        ends it: the consensus finish, which averages this model in when the others reach
        theirs within finish_wait_s (with 2 members, one that ended brings the other to its
        end). Never more steps. After stop() it is the stop: no finish, the model its own."""
        if self._turn is None or self._turn.step:
            p = self.peer.progress()
            share = p.budget_samples / max(1, p.live_members, world_size())
            if not self._stop_asked and p.samples < 0.9 * share:
                _warnings.warn(
                    f"murmur: finish() after {p.local_steps} steps, before the run's end "
                    f"({p.samples} samples here of the cluster's {p.budget_samples}): this "
                    "peer's training ends here; loop while opt.running to train to the budget",
                    RuntimeWarning, stacklevel=2)
            if not self._stop_asked:
                self.peer.end_training()
            if self._turn is not None and self._turn.step:
                self.peer.done(None, 0, 0.0)  # the step asked for, not taken: no loss, no rows
            self._turn = self.peer.next()
            while self._turn.step:  # the run ends at its next turn; bounded by that
                self.peer.done(None, 0, 0.0)
                self._turn = self.peer.next()
        return self.peer.finish()
