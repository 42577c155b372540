#!/usr/bin/env python3
"""Run-time straggler injection through the admin port, on a running 3-node gossip cluster.

1. Every node becomes ready (/healthz 200 once joined). Step rates are measured from
   murmur_steps_total (steps each node computed).
2. `murmur ctl straggle --target node0 --slowdown 8 --for 120s` (PUT /straggler): node 0's step
   rate drops below half of its own earlier rate, the others' stays above 60 % of theirs (they
   stop waiting for it), and the others flag it: murmur_stragglers_detected_total rises and their
   /status marks node 0 a straggler.
3. `murmur ctl clear` (DELETE /straggler): node 0's rate comes back above 60 % of its first rate.
4. Bad input on the admin port gets a 4xx with a message and changes nothing: unknown path,
   wrong method, malformed JSON, unknown setting, out-of-range values, an oversized body; and
   `murmur ctl` says what is wrong (bad target: exit 2; unreachable: exit 1).
Rates on a shared 2-core machine are noisy: each is measured over 4 s and the bounds are loose.
"""
from http.client import RemoteDisconnected
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from harness import clean_up, free_ports, wait_until

MURMUR = sys.argv[1]
TOKEN_FILE = None


TOKEN = "test-token-0123456789abcdef"


def http(method, url, body=None, timeout=5, token=None):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is None and method in ("PUT", "DELETE"):
        token = TOKEN
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    # A GET whose connection the node closed before answering is asked again, as a scraper would:
    # the admin port drops a connection whose request it has not read within 1 s (slowloris), and
    # on 2 cores shared with 3 training nodes and other tests this client can stall that long
    # between connecting and sending (CI once failed here with RemoteDisconnected).
    for attempt in range(3 if method == "GET" else 1):
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except (RemoteDisconnected, ConnectionResetError):
            if attempt == 2 or method != "GET":
                raise


def answers(fn):
    """fn() or False while the node is not listening yet."""
    try:
        return fn()
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def steps(target):
    _, page = http("GET", f"http://{target}/metrics")
    m = re.search(r"^murmur_steps_total (\S+)$", page, re.M)
    return float(m.group(1))


def metric_labelled(target, name, labels):
    _, page = http("GET", f"http://{target}/metrics")
    m = re.search(rf"^{name}{{[^}}]*{labels}[^}}]*}} (\S+)$", page, re.M)
    return float(m.group(1)) if m else 0.0


def metric(target, name):
    _, page = http("GET", f"http://{target}/metrics")
    m = re.search(rf"^{name} (\S+)$", page, re.M)
    return float(m.group(1)) if m else None


def rates(targets, seconds=4.0):
    t0 = time.monotonic()
    a = [steps(t) for t in targets]
    time.sleep(seconds)
    b = [steps(t) for t in targets]
    dt = time.monotonic() - t0
    return [(y - x) / dt for x, y in zip(a, b)]


def wait_for_window(targets, base, what, good):
    """The 2 s rate windows read until one is `good` (up to 30 s); fails with them all."""
    windows = []

    def check():
        windows.append(rates(targets, 2.0))
        return good(windows[-1])
    try:
        wait_until(what, check, 30)
    except AssertionError:
        raise AssertionError(f"not {what}: {fmt(base)} -> "
                             + "; ".join(fmt(w) for w in windows)) from None
    return windows


def ctl(*args, env=None):
    r = subprocess.run([MURMUR, "ctl"] + list(args), capture_output=True, text=True, timeout=30,
                       env=env if env is not None else dict(os.environ, MURMUR_ADMIN_TOKEN_FILE=TOKEN_FILE))
    return r.returncode, r.stdout + r.stderr


def fmt(rs):
    return ", ".join(f"{r:.0f}/s" for r in rs)


def injection_and_recovery(targets, ids):
    wait_until("every node ready (/healthz 200)", lambda: answers(
        lambda: all(http("GET", f"http://{t}/healthz")[0] == 200 for t in targets)), 30)
    base = rates(targets)
    print(f"ok: step rates before: {fmt(base)}")
    assert all(r > 5 for r in base), base
    detected_before = sum(metric(t, "murmur_stragglers_detected_total") for t in targets[1:])

    rc, out = ctl("straggle", "--target", targets[0], "--slowdown", "8", "--for", "120s")
    assert rc == 0 and "injecting slowdown=8" in out, out
    status, body = http("GET", f"http://{targets[0]}/straggler")
    state = json.loads(body)
    assert status == 200 and state["active"] and state["source"] == "admin" and state["slowdown"] == 8, state
    assert 100 < state["remaining_s"] <= 120, state
    assert metric(targets[0], 'murmur_injection{setting="slowdown"}') == 8

    def flagged():
        return sum(metric(t, "murmur_stragglers_detected_total") for t in targets[1:]) > detected_before
    wait_until("the other nodes marked node 0 a straggler", flagged, 20)
    # Node 0 against the others in the same window (a base window shared with other ctest jobs
    # on 2 cores can read low for everyone), the others against their base. A window is waited
    # for (2 s each, up to 30 s): right after the marking the others may still be working off
    # the soft-sync hold, and a CI window beside another test's training once read node 1 at
    # 229/s against a base of 637/s while node 0 was at 33/s.
    slowed = wait_for_window(
        targets, base, "node 0 slow, the others at their base pace",
        lambda w: w[0] < 0.5 * min(w[1:]) and all(w[i] > 0.6 * base[i] for i in (1, 2)))
    print(f"ok: step rates with node 0 at slowdown 8: {fmt(slowed[-1])} (window {len(slowed)})")
    marked_by = []
    for t in targets[1:]:
        s = json.loads(http("GET", f"http://{t}/status")[1])
        if any(p["id"] == ids[0] and p["straggler"] for p in s["peers"]):
            marked_by.append(s["id"])
    assert marked_by, "no other node's /status marks node 0 a straggler"
    print(f"ok: node 0 (id {ids[0]}) marked a straggler in /status of node(s) {marked_by}; "
          f"murmur_stragglers on the others: {[metric(t, 'murmur_stragglers') for t in targets[1:]]}")

    rc, out = ctl("clear", "--targets", targets[0])
    assert rc == 0, out
    state = json.loads(http("GET", f"http://{targets[0]}/straggler")[1])
    assert not state["active"] and state["spec"] == "", state
    # Against the others in the same window, as above: a loaded CI once read every node at half
    # its base rate here (302/s -> 139/s, 143/s, 146/s), node 0 fully back at the others' pace.
    # A window is waited for (2 s each, up to 30 s): node 0 first works off the soft-sync lead
    # the others built while it was slow, and a window beside another test's training once
    # read it at 106/s against 284/s.
    windows = wait_for_window(targets, base, "node 0 back at the others' pace",
                              lambda w: w[0] > 0.6 * min(w[1:]))
    print(f"ok: step rates after DELETE: {fmt(windows[-1])} (window {len(windows)})")


def bad_input(target):
    url = f"http://{target}"
    before = http("GET", url + "/straggler")[1]
    cases = [
        ("GET", "/nope", None, 404, "no such path"),
        ("POST", "/straggler", "{}", 405, "does not take POST"),
        ("PUT", "/metrics", "{}", 405, "does not take PUT"),
        ("PUT", "/straggler", "{slowdown: 4", 400, "not valid JSON"),
        ("PUT", "/straggler", "[1, 2]", 400, "JSON object"),
        ("PUT", "/straggler", '{"slowdwn": 4}', 400, "unknown setting 'slowdwn'"),
        ("PUT", "/straggler", '{"slowdown": 0.5}', 400, "slowdown must be in [1, 1000]"),
        ("PUT", "/straggler", '{"slowdown": "fast"}', 400, "expected a number"),
        ("PUT", "/straggler", '{"drop": 1.5}', 400, "drop must be a probability"),
        ("PUT", "/straggler", '{"delay": "20 parsecs"}', 400, "delay"),
        ("PUT", "/straggler", '{"delay": -1}', 400, "outside [0, 86400]"),
        ("PUT", "/straggler", '{"slowdown": 2, "for": 0}', 400, "for: must be above 0"),
        ("PUT", "/straggler", "{}", 400, "nothing to inject"),
        ("PUT", "/straggler", '{"spec": "slowdown=2", "delay": "1ms"}', 400, "not both"),
        ("PUT", "/straggler", "{" + " " * 70000 + "}", 413, "larger than"),
    ]
    for method, path, body, want, text in cases:
        status, reply = http(method, url + path, body)
        assert status == want, f"{method} {path} {body[:40] if body else ''}: {status} {reply}"
        assert text in reply, f"{method} {path}: expected '{text}' in {reply!r}"
        assert http("GET", url + "/straggler")[1] == before, f"{method} {path} changed the injection"
    print(f"ok: {len(cases)} bad admin requests answered 4xx with a reason; the injection is unchanged")
    # Changes need the bearer token: none is 401, another is 403; both counted, nothing changed.
    refused_before = metric_labelled(target, "murmur_rejected_messages_total", 'reason="admin_unauthorized"')
    for token, want in (("", 401), ("not-the-token-0123456789", 403)):
        for method in ("PUT", "DELETE"):
            status, reply = http(method, url + "/straggler", '{"slowdown": 2}', token=token)
            assert status == want and "error" in reply, f"{method} with token {token!r}: {status} {reply}"
            assert http("GET", url + "/straggler")[1] == before, "an unauthorized request changed the injection"
    refused = metric_labelled(target, "murmur_rejected_messages_total", 'reason="admin_unauthorized"')
    assert refused == refused_before + 4, (refused_before, refused)
    rc, out = ctl("straggle", "--target", target, "--slowdown", "2", env=dict(os.environ))
    assert rc == 1 and "answered 401" in out, out
    print("ok: changes without the token (401) or with another (403) are refused and counted")
    # 200 idle connections (slowloris) do not take the port: /healthz still answers.
    socks = []
    host, port = target.split(":")
    for _ in range(200):
        s = socket.create_connection((host, int(port)), timeout=5)
        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
        socks.append(s)
    t0 = time.monotonic()
    status, _ = http("GET", url + "/healthz", timeout=10)
    answered = time.monotonic() - t0
    for s in socks:
        s.close()
    assert status == 200 and answered < 5, f"/healthz under 200 idle connections: {status} after {answered:.1f} s"
    print(f"ok: /healthz answered in {answered:.2f} s while 200 idle connections were open")
    rc, out = ctl("status", "--targets", "not-a-target")
    assert rc == 2 and "HOST:PORT" in out, out
    (closed,) = free_ports(1)
    rc, out = ctl("health", "--targets", f"127.0.0.1:{closed}")
    assert rc == 1 and "unreachable" in out, out
    rc, out = ctl("straggle", "--target", target, "--slowdown", "0.5")
    assert rc == 2 and "slowdown must be in" in out, out
    rc, out = ctl("status", "--targets", target, "--json")
    assert rc == 0 and json.loads(out)[0]["mode"] == "gossip", out
    print("ok: murmur ctl: bad target exit 2, unreachable exit 1, bad value exit 2, status --json")


def main():
    tmp = tempfile.mkdtemp(prefix="murmur-straggler-test-")
    targets_file = os.path.join(tmp, "targets.json")
    log = open(os.path.join(tmp, "local.log"), "w")
    global TOKEN_FILE
    TOKEN_FILE = os.path.join(tmp, "admin.token")
    with open(os.open(TOKEN_FILE, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(TOKEN + "\n")
    # The budget outlasts the test (which stops the cluster itself): under a loaded ctest -j2 the
    # checks below took 100 s, and a cluster that ended first left nothing to query.
    cluster = subprocess.Popen(
        [MURMUR, "local", "--nodes", "3", "--mode", "gossip", "--epochs", "0", "--time-limit-s",
         "600", "--progress", "none", "--prometheus-targets", targets_file,
         "--admin-token-file", TOKEN_FILE],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ok = False
    try:
        wait_until("murmur local wrote its admin ports", lambda: os.path.exists(targets_file), 20)
        targets = [g["targets"][0] for g in json.load(open(targets_file))]
        # The targets file is written when the nodes are spawned, before they listen.
        wait_until("every node has an id in /status", lambda: answers(lambda: all(
            json.loads(http("GET", f"http://{t}/status")[1])["id"] is not None for t in targets)), 20)
        ids = [json.loads(http("GET", f"http://{t}/status")[1])["id"] for t in targets]
        injection_and_recovery(targets, ids)
        bad_input(targets[1])
        ok = True
    finally:
        if cluster.poll() is None:
            os.killpg(cluster.pid, signal.SIGINT)
            try:
                cluster.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(cluster.pid, signal.SIGKILL)
                cluster.wait()
        log.close()
        clean_up(tmp, ok, [os.path.join(tmp, "local.log")])
    print("PASS")


if __name__ == "__main__":
    main()
