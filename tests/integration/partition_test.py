#!/usr/bin/env python3
"""A network partition and its heal, on a network of the test's own.

    partition_test.py MURMUR        (root; exits 77, SKIPPED, without root or `ip`)

Four network namespaces, one `murmur node --mode gossip` in each, each behind a veth whose far
end sits on one of two bridges (nodes 0 and 1 on bridge A, 2 and 3 on bridge B) in a fifth
namespace; a veth pair joins the bridges, and every link is shaped to 200 Mbit/s by `tc tbf`.
Nothing touches the host's own namespace. Once the cluster trains, the pre-partition consensus
distance is the mean over every node's reports for 3 s. Setting the bridges' link down
partitions the cluster 2 | 2 for 15 s: both sides must keep training (their step clocks
advance) and each side sees the other die. After the link comes back the cluster must
reconverge — every node sees all four members alive and the mean consensus distance is back
under its pre-partition value — within 30 s. Everything is removed at the end, pass or fail.
"""
import os
import shutil
import subprocess
import sys
import time

from harness import NodeProcess, clean_up, stop_nodes, wait_until

MURMUR = sys.argv[1]
N = 4
TAG = f"mpt{os.getpid() % 100000}"
NS = [f"{TAG}n{i}" for i in range(N)]
BRIDGE_NS = f"{TAG}br"
ADDR = [f"10.77.0.{i + 1}" for i in range(N)]
PORT = 7000


def sh(*cmd, check=True):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def in_ns(ns, *cmd, check=True):
    return sh("ip", "netns", "exec", ns, *cmd, check=check)


def build_network():
    sh("ip", "netns", "add", BRIDGE_NS)
    in_ns(BRIDGE_NS, "ip", "link", "set", "lo", "up")
    for br in ("bra", "brb"):
        in_ns(BRIDGE_NS, "ip", "link", "add", br, "type", "bridge")
        in_ns(BRIDGE_NS, "ip", "link", "set", br, "up")
    # The link between the two bridges: partitioning sets it down.
    in_ns(BRIDGE_NS, "ip", "link", "add", "xa", "type", "veth", "peer", "name", "xb")
    in_ns(BRIDGE_NS, "ip", "link", "set", "xa", "master", "bra", "up")
    in_ns(BRIDGE_NS, "ip", "link", "set", "xb", "master", "brb", "up")
    for i, ns in enumerate(NS):
        sh("ip", "netns", "add", ns)
        in_ns(ns, "ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", f"{TAG}h{i}", "netns", ns, "type", "veth", "peer", "name",
           f"p{i}", "netns", BRIDGE_NS)
        in_ns(ns, "ip", "link", "set", f"{TAG}h{i}", "name", "eth0")
        in_ns(ns, "ip", "addr", "add", f"{ADDR[i]}/24", "dev", "eth0")
        in_ns(ns, "ip", "link", "set", "eth0", "up")
        in_ns(BRIDGE_NS, "ip", "link", "set", f"p{i}", "master", "bra" if i < 2 else "brb", "up")
        in_ns(BRIDGE_NS, "tc", "qdisc", "add", "dev", f"p{i}", "root", "tbf", "rate", "200mbit",
              "burst", "256kb", "latency", "50ms")


def remove_network():
    for ns in NS + [BRIDGE_NS]:
        sh("ip", "netns", "del", ns, check=False)


def mean_consensus(nodes, seconds):
    values = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for n in nodes:
            r = n.latest()
            if r is not None and r["consensus"]:
                values.append(r["consensus"])
        time.sleep(0.1)
    return sum(values) / max(1, len(values))


def main():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
        print("SKIPPED: the partition test needs root, ip and tc (network namespaces)")
        return 77
    logdir = __import__("tempfile").mkdtemp(prefix="murmur-partition-test-")
    nodes, ok = [], False
    try:
        build_network()
        seeds = f"{ADDR[0]}:{PORT},{ADDR[2]}:{PORT}"  # one on each side
        for i in range(N):
            nodes.append(NodeProcess(MURMUR, i, [
                "--mode", "gossip", "--id", str(i + 1), "--listen", f"tcp://{ADDR[i]}:{PORT}",
                "--seeds", seeds, "--cluster", "partition", "--shard-index", str(i),
                "--shard-count", str(N), "--expect-members", str(N), "--epochs", "0",
                "--time-limit-s", "120",
                "--eval-every", "0", "--max-wait-ms", "500", "--probe-interval-ms", "200",
                "--probe-timeout-ms", "80", "--report", "json", "--report-interval-ms", "100",
                "--straggle", "delay=5ms"], logdir, prefix=["ip", "netns", "exec", NS[i]]))
        for n in nodes:
            n.start()
        wait_until("every node trains and sees four members",
                   lambda: all((n.latest() or {}).get("members") == N and n.latest()["step"] > 50
                               for n in nodes), 60)
        time.sleep(2)
        before = mean_consensus(nodes, 3)
        print(f"pre-partition mean consensus distance {before:.4f}", flush=True)

        in_ns(BRIDGE_NS, "ip", "link", "set", "xa", "down")
        t0 = time.monotonic()
        steps = [n.latest()["step"] for n in nodes]
        wait_until("each side sees the other gone",
                   lambda: all(n.latest()["members"] == 2 for n in nodes), 15)
        time.sleep(max(0.0, 15 - (time.monotonic() - t0)))
        moved = [n.latest()["step"] - s for n, s in zip(nodes, steps)]
        print(f"steps during the 15 s partition: {moved}", flush=True)
        assert all(m > 100 for m in moved), "a side stopped training during the partition"

        in_ns(BRIDGE_NS, "ip", "link", "set", "xa", "up")
        took = wait_until("every node sees four members again",
                          lambda: all(n.latest()["members"] == N for n in nodes), 30)
        deadline = time.monotonic() + 30 - took
        after, series = None, []
        while time.monotonic() < deadline:
            after = mean_consensus(nodes, 1)
            series.append(round(after, 4))
            if after <= before:
                break
        print(f"after the heal: mean consensus distance per second {series} (before {before:.4f}), "
              f"{30 - (deadline - time.monotonic()):.1f} s after the heal", flush=True)
        assert after is not None and after <= before, "the cluster did not reconverge within 30 s"
        ok = True
        print("ok: both sides train through a partition and reconverge after the heal")
    finally:
        stop_nodes(nodes)
        remove_network()
        clean_up(logdir, ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
