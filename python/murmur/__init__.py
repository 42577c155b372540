"""murmur: decentralized, straggler-tolerant gossip training of your own model.

    peer = murmur.Peer(flat_float32_array, epochs=3, epoch_samples=60000, seeds="host:7070",
                       plaintext=True)
    while (turn := peer.next()).step:     # blocks while joining, held by soft sync, finishing
        ...one local step on the array...
        peer.done(loss, batch_rows)       # the gossip round (mixes into the array)
    result = peer.finish()

murmur.torch.GossipOptimizer wraps any torch.optim optimizer the same way. A bad argument raises
ValueError, anything else murmur.Error, each with murmur's reason.
"""

import os
import signal
import threading
import weakref

from murmur._murmur import Error, Progress, Turn, known_keys
from murmur._murmur import Peer as _Peer

__all__ = ["Error", "Peer", "Progress", "Turn", "known_keys", "config_text"]


def config_text(config):
    """murmur's keys as the text it parses: booleans as true/false, sequences comma-joined."""
    out = {}
    for key, value in config.items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        else:
            text = str(value)
        out[key] = text
    return out


class Peer(_Peer):
    """One peer training `params` (a 1-D float32 array, mixed into in place); the keyword
    arguments are murmur's keys (murmur.known_keys(); `murmur node --help` describes each).
    `evaluate(full)`, optional, returns the model's test accuracy in [0, 1] (or None).
    `save_state()` and `restore_state(state)`, optional and together, carry your optimizer's state
    in the peer's checkpoints (keys checkpoint_dir, checkpoint_every): a dict of float32 or int64
    NumPy arrays, str and int, saved beside the model and murmur's clocks, and handed back when
    a restarted process resumes from its checkpoint (inside Peer(...)). An exception in either
    is raised by the call that ran it; a restore that raised leaves the file set aside as
    PATH.corrupt, as murmur does with a damaged checkpoint. `replaced()`, optional, is called
    the moment murmur replaces the model (a snapshot, a catch-up, the consensus finish): drop
    momentum there, before a checkpoint reads it (Turn.model_replaced says so one turn later)."""

    def __init__(self, params, evaluate=None, save_state=None, restore_state=None, replaced=None,
                 **config):
        super().__init__(params, config_text(config), evaluate, save_state, restore_state,
                         replaced)
        if "MURMUR_PEER_ARGS" in os.environ:
            _stop_on_sigterm(self)


_running = weakref.WeakSet()  # the process's peers, for the SIGTERM handler


def _stop_on_sigterm(peer):
    """Under `murmur local --exec`, SIGTERM (its stop: Ctrl-C, --duration) stops the run as it
    stops `murmur node`: every live peer ends its run (no consensus finish), reports and leaves
    instead of dying. With no live peer left, SIGTERM terminates the process as by default. The
    handler is installed once, only from the main thread (Python's rule) and only when the
    program has not set one of its own."""
    _running.add(peer)
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm or current not in (signal.SIG_DFL, None):
        return
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame):
    peers = list(_running)
    if not peers:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    for p in peers:
        p.stop()
