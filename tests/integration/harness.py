"""Helpers shared by the multi-process integration tests."""
import socket
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
