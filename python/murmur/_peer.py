"""murmur.Peer over the binding: keys as Python values, errors in Python's words, the stop of
`murmur local` / `python -m murmur.run` as SIGTERM."""

import os
import re
import signal
import threading
import weakref

from murmur import _murmur


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


_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)+|[a-z][a-z0-9]+)\b( FILE| N| MS)?")


def pythonic(message):
    """murmur's reason with its command-line spelling of a key (`--cluster-key-file FILE`) as the
    keyword a Python caller writes (`cluster_key_file=...`); other flags (of `murmur keygen`, in
    a quoted command) are left as they are."""
    keys = set(_murmur.known_keys())

    def keyword(m):
        name = m.group(1).replace("-", "_")
        if name not in keys:
            return m.group(0)
        return f"{name}=True" if name == "plaintext" else f"{name}=..."

    out, quoted = [], False
    for part in re.split(r"(`)", message):
        if part == "`":
            quoted = not quoted
            out.append(part)
        else:
            out.append(part if quoted else _FLAG.sub(keyword, part))
    return "".join(out)


def _reworded(error):
    """The same exception type, with its message in Python's words."""
    text = str(error)
    better = pythonic(text)
    if better == text:
        return error
    return type(error)(better)


class Peer(_murmur.Peer):
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
        try:
            super().__init__(params, config_text(config), evaluate, save_state, restore_state,
                             replaced)
        except (ValueError, _murmur.Error) as e:
            raise _reworded(e) from None
        if "MURMUR_PEER_CONFIG" in os.environ:
            _stop_on_sigterm(self)

    def next(self):
        try:
            return super().next()
        except (ValueError, _murmur.Error) as e:
            raise _reworded(e) from None


def binary():
    """The path of the `murmur` executable of this installation: the one the package ships
    (murmur/_bin/murmur, from `pip install`), else the build tree's (build/murmur beside
    build/python/murmur). murmur.Error when neither is there."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "_bin", "murmur"),
                 os.path.join(os.path.dirname(os.path.dirname(here)), "murmur")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise _murmur.Error(f"no murmur executable beside the package ({here}): install the package "
                        "(pip install ./python) or build the tree (cmake --build build)")


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
