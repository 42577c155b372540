"""Someone else's PyTorch program under murmur: examples/port/mnist_murmur.py, the public
example's form (own epoch loop, Adadelta, StepLR, its evaluation and save after the loop, a
--epochs flag) ported in at most 10 lines, ends on the launcher's budget, keeps its post-loop
work after Ctrl-C, and gets the launcher's thread default."""

import ast
import difflib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PORT = os.path.join(ROOT, "examples", "port")
SINGLE, PORTED = os.path.join(PORT, "mnist_single.py"), os.path.join(PORT, "mnist_murmur.py")


def code_lines(path):
    """The program's lines without its module docstring (which says what it is)."""
    text = open(path, encoding="utf-8").read()
    doc = ast.parse(text).body[0]
    lines = text.splitlines()
    return lines[doc.end_lineno:] if isinstance(doc, ast.Expr) else lines


def launcher(*args):
    return [sys.executable, "-m", "murmur.run", "--progress", "plain", *args]


def test_the_port_changes_at_most_ten_lines():
    diff = [line for line in difflib.unified_diff(code_lines(SINGLE), code_lines(PORTED),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    added = [line for line in diff if line.startswith("+")]
    assert 0 < len(added) <= 10, "\n".join(diff)


def test_the_ported_program_ends_on_the_launchers_budget_and_saves(tmp_path):
    # The program's own default is --epochs 14, which it hands to GossipOptimizer: the flag
    # given to the launcher sets the run, and the program's log says what it overrode.
    save = tmp_path / "model.pt"
    r = subprocess.run(launcher("--nodes", "2", "--epochs", "1", "--json", "--keep-logs", PORTED,
                                "--train-size", "2000", "--save", str(save)),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["end"] == "epochs" and report["finish"] == ["averaged"] * 2
    assert "the budget is 1 epochs (--epochs)" in r.stderr, r.stderr[:2000]
    assert report["cluster_accuracy"] > 0.5, report["cluster_accuracy"]
    assert "node 1 | saved" in r.stderr and save.exists()
    assert "node 2 | saved" not in r.stderr  # rank 0 alone saves
    assert report["budget_samples"] == 2000, report["budget_samples"]  # not the program's 14
    logs = [open(os.path.join(report["logs"], f"node-{i}.log")).read() for i in (1, 2)]
    for log in logs:
        assert "epochs: the launcher's 1 sets the run; the program's 14 is not used" in log, \
            log[-2000:]


def test_without_the_flag_the_programs_own_epochs_set_the_budget():
    r = subprocess.run(launcher("--nodes", "2", "--json", PORTED, "--epochs", "1",
                                "--train-size", "2000"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert "3 epochs (murmur's default: a program's epochs= replaces it)" in r.stderr
    assert report["budget_samples"] == 2000, report
    # Each program's own loop ends on its shard's pass as the budget does: whichever comes
    # first, the run ends with the consensus finish on both.
    assert report["end"] in ("epochs", "program") and report["finish"] == ["averaged"] * 2, report


def test_ctrl_c_lets_every_program_finish_its_own_work(tmp_path):
    # Ctrl-C (SIGINT to murmur local, which the launcher became) stops every program at its
    # next step; each then runs its post-loop evaluation and rank 0 its save, within the grace.
    save = tmp_path / "model.pt"
    p = subprocess.Popen(launcher("--nodes", "2", "--epochs", "1000", PORTED, "--train-size",
                                  "2000", "--save", str(save)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.monotonic() + 120
    for line in p.stderr:  # until both programs train (bounded by the deadline's check)
        seen.append(line)
        if sum("Train Epoch: 2" in s for s in seen) >= 1 or time.monotonic() > deadline:
            break
    assert time.monotonic() <= deadline, "".join(seen[-30:])
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    err = "".join(seen) + err
    assert p.returncode == 0, err[-3000:]
    assert re.search(r"interrupted: every program stops at its next step", err), err[-3000:]
    assert "node 1 | saved" in err and save.exists(), err[-3000:]
    assert re.search(r"interrupted at [0-9.]+ s \(Ctrl-C or a stop\): node 1 \d+ steps", out), out
    assert "killed" not in out.split("\n")[0], out


def test_the_launcher_caps_each_programs_threads_unless_told():
    probe = [sys.executable, "-c", "import os, torch; "
             "print(os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads(), flush=True)"]
    cores = len(os.sched_getaffinity(0))
    r = subprocess.run(launcher("--nodes", "2", "--", *probe), capture_output=True, text=True,
                       timeout=120)
    expected = max(1, cores // 2)
    assert f"each program runs {expected} thread" in r.stderr, r.stderr[-2000:]
    assert f"node 1 | {expected} {expected}" in r.stderr, r.stderr[-2000:]
    r = subprocess.run(launcher("--nodes", "2", "--", *probe), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, OMP_NUM_THREADS="3"))
    assert "OMP_NUM_THREADS=3 threads (from the environment)" in r.stderr, r.stderr[-2000:]
    assert "node 2 | 3 3" in r.stderr, r.stderr[-2000:]
