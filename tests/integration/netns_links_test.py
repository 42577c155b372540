#!/usr/bin/env python3
"""`murmur local --network netns:...` on a real, shaped network.

    netns_links_test.py MURMUR        (root; exits 77, SKIPPED, without root, ip or tc)

1. A 3-node gossip run over 20 Mbit/s links (one epoch): it trains, and its report names the
   network.
2. A 3-node ring all-reduce (n 3, L 1, 20 iterations of 192 samples) over the same links and on
   loopback: on the network no node's iteration is shorter than its own bytes need at 20 Mbit/s
   (the shaping is real), and on loopback the same ring moves its bytes faster than that (so the
   bound is the link's, not the computation's).
3. A run killed with SIGKILL leaves its namespaces behind; the next run says it removed them,
   and they are gone. A run stopped with Ctrl-C (SIGINT) removes its own.
4. Two racks: the nodes split over two bridges joined by a shaped uplink, a node of its own rate.
5. The consensus finish over 10 Mbit/s links (8 nodes, the default gossip): the collector's link
   carries every model in and the average out for seconds, and every member still ends on the
   average of all 8 (membership's own lane keeps the collector from being taken for dead).
After every run: no namespace and no host link of that run is left (`ip netns list`, `ip link`).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import poll_for

MURMUR = sys.argv[1]
RATE_BPS = 20e6


def namespaces(pid):
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"murmur-{pid}-")]


def host_links(pid):
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return re.findall(rf"\b(mm{pid}h)\b", out)


def local(args, log):
    """Runs murmur local to its end; returns (pid, exit code, JSON report or None)."""
    with open(log, "w") as err:
        p = subprocess.Popen([MURMUR, "local", "--json", "--progress", "plain"] + args,
                             stdout=subprocess.PIPE, stderr=err, text=True)
        out, _ = p.communicate(timeout=180)
    report = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    return p.pid, p.returncode, report


def assert_clean(pid, what):
    left = namespaces(pid) + host_links(pid)
    assert not left, f"{what}: left behind {left}"
    print(f"ok: {what}: no namespace or host link of run {pid} is left", flush=True)


def gossip_over_links(tmp):
    pid, rc, r = local(["--nodes", "3", "--network", "netns:rate=20mbit", "--epochs", "1"],
                       f"{tmp}/gossip.log")
    assert rc == 0 and r and r["ok"], f"gossip run failed ({rc}); see {tmp}/gossip.log"
    assert "20 Mbit/s" in r["network"], r["network"]
    print(f"ok: gossip over 20 Mbit/s: accuracy {r['cluster_accuracy']:.4f} in {r['wall_s']:.1f} s, "
          f"{r['bytes_sent_total'] / 1e6:.1f} MB sent", flush=True)
    assert r["cluster_accuracy"] > 0.7, r["cluster_accuracy"]
    assert_clean(pid, "gossip run")


def ring(tmp, network, name):
    ring_args = ["--mode", "ring", "--n", "3", "--L", "1", "--global-batch", "192",
                 "--iterations", "20", "--eval-every", "0"]
    pid, rc, r = local(ring_args + (["--network", network] if network else []), f"{tmp}/{name}.log")
    assert rc == 0 and r and r["ok"], f"ring run ({name}) failed ({rc}); see {tmp}/{name}.log"
    # Each iteration a node sends its share of the reduce-scatter and the all-gather; the
    # fastest iteration cannot move those bytes faster than its link.
    per_iteration = max(r["bytes_sent"]) / r["iterations"]
    fastest_ms = min(r["iteration_ms"])
    rate = per_iteration * 8 / (fastest_ms / 1e3)
    print(f"{name}: {per_iteration / 1e6:.2f} MB per node per iteration, fastest iteration "
          f"{fastest_ms:.0f} ms, {r['iteration_ms_mean']:.0f} ms mean: {rate / 1e6:.1f} Mbit/s "
          f"at the fastest", flush=True)
    return pid, rate


def ring_is_link_bound(tmp):
    pid, shaped = ring(tmp, "netns:rate=20mbit", "ring-netns")
    assert shaped <= RATE_BPS * 1.05, f"the ring moved {shaped / 1e6:.1f} Mbit/s over a 20 Mbit/s link"
    assert_clean(pid, "ring run")
    _, free = ring(tmp, None, "ring-loopback")
    assert free > RATE_BPS * 1.5, (
        f"on loopback the ring moved only {free / 1e6:.1f} Mbit/s: the bound above proves nothing")
    print(f"ok: the ring is held to the link: {shaped / 1e6:.1f} Mbit/s shaped, "
          f"{free / 1e6:.0f} Mbit/s on loopback", flush=True)


def start_membership(tmp, name, network="netns:rate=20mbit", nodes=3):
    log = open(f"{tmp}/{name}.log", "w")
    p = subprocess.Popen([MURMUR, "local", "--mode", "membership", "--nodes", str(nodes), "--progress",
                          "plain", "--network", network], stdout=log, stderr=log)
    poll_for(f"{name}: the network is up and every node sees every node",
             lambda: (b"full view after" in open(f"{tmp}/{name}.log", "rb").read(), None), 30)
    return p


def leftovers_are_removed(tmp):
    killed = start_membership(tmp, "killed")
    left = namespaces(killed.pid)
    killed.kill()
    killed.wait()
    assert len(left) == 4, f"expected 3 node namespaces and a bridge's, found {left}"
    assert namespaces(killed.pid) == left, "SIGKILL cannot have removed anything"
    print(f"ok: a killed run left {left}", flush=True)
    stopped = start_membership(tmp, "next")
    log = open(f"{tmp}/next.log").read()
    for ns in left:
        assert f"removed network namespace {ns}" in log, f"the next run did not say it removed {ns}"
    assert_clean(killed.pid, "the killed run's leftovers")
    stopped.send_signal(signal.SIGINT)
    stopped.wait(timeout=30)
    assert_clean(stopped.pid, "a run stopped with Ctrl-C")


def two_racks(tmp):
    """Two bridges, nodes 1-2 on one and 3-4 on the other, joined by an uplink shaped both ways."""
    p = start_membership(tmp, "racks", "netns:rate=100mbit,topology=two-racks,uplink=5mbit,node4=2mbit", 4)
    br = f"murmur-{p.pid}-br"
    try:
        qdisc = subprocess.run(["tc", "-n", br, "qdisc", "show"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-n", br, "-o", "link"], capture_output=True, text=True).stdout
        for dev in ("xa", "xb"):
            assert re.search(rf"dev {dev} root .*rate 5Mbit", qdisc), qdisc
        assert re.search(r"dev p4 root .*rate 2Mbit", qdisc) and re.search(r"dev p1 root .*rate 100Mbit", qdisc), qdisc
        for port, bridge in (("p1", "bra"), ("p2", "bra"), ("p3", "brb"), ("p4", "brb")):
            assert re.search(rf"\b{port}@\S+.* master {bridge}\b", links), (port, bridge, links)
        print("ok: two racks: nodes 1-2 on one bridge, 3-4 on the other, a 5 Mbit/s uplink, node 4 at 2 Mbit/s",
              flush=True)
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
    assert_clean(p.pid, "the two-rack run")


def finish_over_a_thin_link(tmp):
    pid, rc, r = local(["--nodes", "8", "--network", "netns:rate=10mbit", "--epochs", "3"],
                       f"{tmp}/finish.log")
    assert rc == 0 and r and r["ok"], f"the run failed ({rc}); see {tmp}/finish.log"
    groups = r["finish_groups"]
    print(f"ok: 8 nodes over 10 Mbit/s in {r['wall_s']:.1f} s: finish groups {groups}, "
          f"missed {r['finish_missed']}", flush=True)
    assert r["finish_models"] == 1 and not r["finish_missed"], (groups, r["finish_missed"])
    assert groups[0]["contributors"] == 8 and len(groups[0]["nodes"]) == 8, groups
    assert_clean(pid, "thin-link finish run")


def main():
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        print("SKIPPED: a network of namespaces needs root, ip and tc")
        return 77
    tmp = tempfile.mkdtemp(prefix="murmur-netns-test-")
    ok = False
    try:
        gossip_over_links(tmp)
        ring_is_link_bound(tmp)
        leftovers_are_removed(tmp)
        two_racks(tmp)
        finish_over_a_thin_link(tmp)
        ok = True
        print("ok: murmur local on a shaped network of namespaces")
    finally:
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"logs kept in {tmp}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
