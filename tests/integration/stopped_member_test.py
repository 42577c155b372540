"""A member that stops answering (SIGSTOP: it neither exits nor replies) in every mode of
`murmur local`, with the documented bounds (docs/operations.md, "A member that stops answering"):

- its peers' membership declares it dead within the detection bound, 2n + spread probe periods
  plus the suspicion timeout (3.6 s for 4 nodes at the default 200 ms period);
- gossip and the parameter server's workers go on without it; a ring ends at once with the
  reason (every rank carries a chunk of every step); a tree whose parent loses more children
  than its code tolerates ends with the reason; a coded tree that tolerates it goes on;
- `murmur local` kills it --unresponsive-s after the later of its last report and the others'
  exit, and names it as the run's failure.

Usage: stopped_member_test.py MURMUR
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

MURMUR = sys.argv[1]
DETECTION_S = 3.6  # Membership::DetectionBound(4) at the default probe period
UNRESPONSIVE_S = 3.0
# On a loaded 2-core machine the verdict's spread and the nodes' reaction take longer than on an
# idle one; this is the slack over the bounds, not a bound of its own.
SLACK_S = 4.0
LOGIC = ["--task", "logistic", "--samples", "3000", "--features", "100", "--lr", "0.5",
         "--eval-every", "0"]


class Local:
    """One `murmur local` run: its stderr read as it comes, with each line's arrival time."""

    def __init__(self, args):
        self.cmd = [MURMUR, "local", "--progress", "plain", "--json", "--admin", "false",
                    "--unresponsive-s", str(UNRESPONSIVE_S)] + args
        print("+ " + " ".join(self.cmd), flush=True)
        self.start = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines = []  # (seconds since start, line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic() - self.start, line.rstrip("\n")))

    def node_pid(self, k):
        """The pid of node k (1-based): the child whose config file is node-k.toml."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                children = f.read().split()
        except FileNotFoundError:
            return None
        for pid in children:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except FileNotFoundError:
                continue
            if any(a.endswith(f"/node-{k}.toml".encode()) for a in argv):
                return int(pid)
        return None

    def progress(self, k):
        """The latest count (gossip: steps; the other modes: iterations) node k's row shows."""
        latest = -1
        for _, line in list(self.lines):
            # gossip:   "   2.0 s    3     745   3.17 ..."; others: "   2.0 s    3     2  ring   4"
            m = re.match(rf"^\s*[\d.]+ s\s+{k}\s+(\d+)\s+(?:([a-z]+)\s+(\d+))?", line)
            if m:
                latest = int(m.group(3) if m.group(2) else m.group(1))
        return latest

    def first(self, pattern):
        """(time, line) of the first stderr line matching `pattern`, or None."""
        for t, line in list(self.lines):
            if re.search(pattern, line):
                return t, line
        return None

    def wait(self, limit):
        try:
            self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            tail = "\n".join(l for _, l in self.lines[-30:])
            raise AssertionError(f"murmur local did not end within {limit:.0f} s:\n{tail}")
        self.reader.join(timeout=10)
        self.end = time.monotonic() - self.start
        out = self.proc.stdout.read()
        js = [l for l in out.splitlines() if l.startswith("{")]
        assert js, f"no summary on stdout (rc {self.proc.returncode}): {out[-2000:]}"
        return json.loads(js[-1])


def wait_for(what, cond, limit):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {limit} s")


def stop_when_running(run, k, at_least=3):
    """SIGSTOPs node k once its row shows `at_least` steps or iterations; the time it did."""
    wait_for(f"node {k} runs", lambda: run.progress(k) >= at_least and run.node_pid(k), 60)
    os.kill(run.node_pid(k), signal.SIGSTOP)
    t = time.monotonic() - run.start
    print(f"  node {k} SIGSTOPped at {t:.1f} s (its row at {run.progress(k)})", flush=True)
    return t


def check_killed(run, summary, k, stopped_at):
    """The stopped node was killed as unresponsive, named, and not later than the bound."""
    assert run.proc.returncode != 0, "a run with an unresponsive node must not exit 0"
    assert f"node {k} unresponsive" in summary.get("failure", ""), summary.get("failure")
    said = run.first(rf"node {k} unresponsive: wrote nothing")
    assert said is not None, "murmur local did not say it killed the stopped node"
    ended = {}  # node -> when its row first said done, or the launcher said it exited
    for t, line in list(run.lines):
        m = re.match(r"^\s*[\d.]+ s\s+(\d+)\s.*\s(done|\(exited\))$", line) or \
            re.search(r"node (\d+) exited with code", line)
        if m and int(m.group(1)) != k:
            ended.setdefault(int(m.group(1)), t)
    others_ended = max(list(ended.values()) + [stopped_at])
    # --unresponsive-s after the later of its last report (about when it stopped) and the others'
    # exit (docs/operations.md).
    bound = max(others_ended, stopped_at) + UNRESPONSIVE_S
    print(f"  killed at {said[0]:.1f} s (others ended by {others_ended:.1f} s, bound "
          f"{bound:.1f} s + slack); launcher exited at {run.end:.1f} s", flush=True)
    assert said[0] <= bound + SLACK_S + 1.0, said


def gossip():
    run = Local(["--nodes", "4", "--epochs", "4", "--finish-wait-s", "10"])
    stopped = stop_when_running(run, 3, at_least=100)
    s = run.wait(120)
    print(f"  gossip: {s['failure']}; ends {s['ends']}, cluster accuracy {s['cluster_accuracy']} "
          f"from {s['finish_contributors']} contributors", flush=True)
    assert s["ends"].get("epochs") == [1, 2, 4], f"the others must go on to the budget: {s['ends']}"
    assert s["cluster_accuracy"] is not None and s["cluster_accuracy"] > 0.8, s["cluster_accuracy"]
    check_killed(run, s, 3, stopped)
    print("ok: gossip goes on without a stopped member and ends on its budget", flush=True)


def ring():
    run = Local(["--mode", "ring", "--n", "4", "--L", "1", "--iterations", "100000"] + LOGIC)
    stopped = stop_when_running(run, 3)
    s = run.wait(60)
    ended = run.first(r"node \d+ exited with code 1")
    assert ended is not None, "the ring ranks should end with a failure"
    why = run.first(r"ring rank 2 \(node 3\) is gone \(declared dead")
    assert why is not None, "the reason must name the gone rank"
    took = ended[0] - stopped
    print(f"  ring: the first rank ended {took:.1f} s after the stop (detection bound "
          f"{DETECTION_S} s): {why[1].strip()[:140]}", flush=True)
    assert took <= DETECTION_S + SLACK_S, took
    check_killed(run, s, 3, stopped)
    print("ok: a ring ends with the reason once a rank stops answering", flush=True)


def ps():
    run = Local(["--mode", "ps", "--n", "3", "--L", "1", "--iterations", "3000"] + LOGIC)
    stopped = stop_when_running(run, 3)  # a worker (rank 2; rank 0 is the server)
    s = run.wait(120)
    print(f"  ps: {s['iterations']} iterations with worker node 3 stopped at {stopped:.1f} s",
          flush=True)
    assert s["iterations"] == 3000, s["iterations"]
    check_killed(run, s, 3, stopped)
    print("ok: the parameter server goes on without a stopped worker", flush=True)


def coded_tree():
    # n = 2, L = 2: the root, parents 1 and 2, leaves 3-6; node 2 is parent rank 1.
    run = Local(["--mode", "coded-tree", "--n", "2", "--L", "2", "--s", "1", "--iterations",
                 "3000"] + LOGIC)
    stopped = stop_when_running(run, 2)
    s = run.wait(120)
    print(f"  coded-tree: {s['iterations']} iterations with parent node 2 stopped at "
          f"{stopped:.1f} s", flush=True)
    assert s["iterations"] == 3000, s["iterations"]
    check_killed(run, s, 2, stopped)
    print("ok: a coded tree goes on past a stopped parent (s = 1)", flush=True)


def tree():
    # tree (s = 0): a stopped leaf leaves its parent undecodable, which ends, and so the root.
    run = Local(["--mode", "tree", "--n", "2", "--L", "2", "--iterations", "100000"] + LOGIC)
    stopped = stop_when_running(run, 4)  # leaf rank 3, under parent rank 1 (node 2)
    s = run.wait(60)
    why = run.first(r"children are gone \(nodes 4\)")
    assert why is not None, "the parent must say which child is gone"
    root = run.first(r"node 1 exited with code 1")
    assert root is not None, "the root must end once its subtree cannot answer"
    took = root[0] - stopped
    print(f"  tree: the root ended {took:.1f} s after the stop: {why[1].strip()[:140]}", flush=True)
    assert took <= 2 * DETECTION_S + SLACK_S, took  # the leaf's death, then the parent's
    check_killed(run, s, 4, stopped)
    print("ok: a tree that cannot decode ends with the reason", flush=True)


if __name__ == "__main__":
    cases = {"gossip": gossip, "ring": ring, "ps": ps, "coded-tree": coded_tree, "tree": tree}
    for name in (sys.argv[2:] or cases):
        print(f"== {name}", flush=True)
        cases[name]()
    print("PASS")
