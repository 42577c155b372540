"""Helpers shared by the multi-process integration tests."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time


def free_ports(n):
    """n distinct free loopback ports (all held open while choosing)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def loopback(n, prefix):
    """A fresh log directory and n distinct tcp://127.0.0.1:PORT endpoints on free ports."""
    return tempfile.mkdtemp(prefix=prefix), [f"tcp://127.0.0.1:{p}" for p in free_ports(n)]


def stop_nodes(nodes, grace=5.0):
    """Every NodeProcess still running is resumed (it may be SIGSTOPped) and terminated; what
    has not exited after `grace` seconds is killed."""
    running = [n.proc for n in nodes if n.proc is not None and n.proc.poll() is None]
    for p in running:
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    for p in running:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def clean_up(tmp, ok, local_logs=()):
    """After a test: when it passed, removes `tmp` and the node-log folders that the `murmur local`
    outputs in `local_logs` kept; otherwise says where they are."""
    kept = []
    for path in local_logs:
        if os.path.exists(path):
            kept += re.findall(r"node logs kept in (\S+)", open(path).read())
    for d in kept + [tmp]:
        if ok:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"logs kept in {d}")


def wait_until(what, cond, limit):
    """Polls cond every 50 ms; returns the seconds it took, raises after `limit` seconds."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if cond():
            took = time.monotonic() - start
            print(f"ok: {what} after {took:.2f} s (limit {limit:.1f} s)", flush=True)
            return took
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {limit:.1f} s")


def poll_for(what, cond, deadline_s, every=0.2):
    """Polls cond() -> (done, value) every `every` s until done and returns the value; after
    `deadline_s` exits the test with FAIL naming `what` and the last value."""
    end = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < end:
        ok, last = cond()
        if ok:
            return last
        time.sleep(every)
    raise SystemExit(f"FAIL: {what}: not within {deadline_s} s (last: {last})")


class NodeProcess:
    """One `murmur node ... --report json` process. A reader thread keeps its report lines
    (monotonic arrival time, parsed line) and the final one; stderr goes to LOGDIR/node-INDEX.log.
    start() starts it, or starts it again after a kill: lines of an earlier life are dropped.
    `prefix` goes before the command (e.g. ["ip", "netns", "exec", NS])."""

    def __init__(self, murmur, index, args, logdir, prefix=()):
        self.murmur, self.index, self.args, self.logdir = murmur, index, args, logdir
        self.prefix = list(prefix)
        self.reports = []  # (monotonic time, report)
        self.final = None
        self.proc = None
        self.lock = threading.Lock()

    def start(self):
        log = open(os.path.join(self.logdir, f"node-{self.index}.log"), "a")
        # Loopback tests run plaintext unless they give a key (CURVE is tested on its own).
        secure = any(a.startswith("--cluster-key-file") for a in self.args)
        args = self.args if secure else self.args + ["--plaintext"]
        proc = subprocess.Popen(self.prefix + [self.murmur, "node"] + args, stdout=subprocess.PIPE,
                                stderr=log, text=True)
        with self.lock:
            self.proc, self.reports, self.final = proc, [], None
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            try:
                report = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if proc is not self.proc:
                    continue
                self.reports.append((time.monotonic(), report))
                if report.get("kind") == "final":
                    self.final = report

    def latest(self):
        """The newest report line, or None before the first."""
        with self.lock:
            return self.reports[-1][1] if self.reports else None

    def count(self):
        with self.lock:
            return len(self.reports)


def read_checkpoint(path):
    """The sections of a murmur checkpoint (node/train/checkpoint.h) as a dict: text as str,
    numbers as int, tensors as array('f'), indices as array('q'). The checksum is the C++
    reader's to verify; this one checks the header and the section bounds."""
    import array
    import struct
    data = open(path, "rb").read()
    assert data[:8] == b"MURMURCK", f"{path}: not a murmur checkpoint"
    version, count = struct.unpack_from("<II", data, 8)
    assert version == 1, f"{path}: format version {version}"
    at, out = 16, {}
    for _ in range(count):
        kind, name_len = struct.unpack_from("<BH", data, at)
        at += 3
        name = data[at:at + name_len].decode()
        at += name_len
        (length,) = struct.unpack_from("<Q", data, at)
        at += 8
        body = data[at:at + length]
        assert len(body) == length, f"{path}: section {name} overruns the file"
        at += length
        if kind == 1:
            out[name] = body.decode()
        elif kind == 2:
            out[name] = struct.unpack("<Q", body)[0]
        else:
            values = array.array("f" if kind == 3 else "q")
            values.frombytes(body)
            out[name] = values
    assert at == len(data) - 8, f"{path}: trailing bytes"
    return out
