"""PyTorch integration: GossipOptimizer trains a model's parameters over murmur gossip.

    model = Net()
    opt = murmur.torch.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                       epochs=3, epoch_samples=60000, seeds="10.0.0.1:7070")
    while opt.running:
        x, y = next(batches)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step(loss=loss.item(), samples=len(y))   # local step, gossip round, wait for the next
    result = opt.finish()                              # the model is now the cluster's average

The parameters are moved once into one contiguous buffer (each parameter a view of it), which
murmur mixes into in place: no copy of the model per step. float32 parameters, all on the CPU or
all on one GPU: on a GPU the buffer stays in GPU memory and murmur's round runs there (its
kernels on the legacy default stream, PyTorch's default; work the step queued on another stream
is waited for before the round).
"""

import time

import numpy as _numpy
import torch as _torch

from murmur import Peer


class GossipOptimizer:
    """Wraps `optimizer`; `params` defaults to every parameter of its groups. Keyword arguments
    are murmur's keys (murmur.known_keys()). `evaluate(full)`, optional, returns the model's test
    accuracy in [0, 1]: murmur evaluates every eval_every steps and after the consensus finish.
    With checkpoint_dir (and the same `id` on a restart) the peer's checkpoints hold the wrapped
    optimizer's state too (momentum buffers, Adam's moments and step): a process killed and
    started again resumes the model, murmur's clocks and the optimizer where they were."""

    def __init__(self, optimizer, params=None, evaluate=None, **config):
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
        self.peer = Peer(flat if device.type == "cuda" else flat.numpy(), evaluate=evaluate,
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
