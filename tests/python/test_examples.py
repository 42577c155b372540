"""The examples run end to end, briefly, under `python -m murmur.run` and as their DDP twins
(their full runs and figures: bench/byom_bench.py)."""

import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
BRIEF = ["--snapshot-every", "0", "--warmup-epochs", "0.1", "--eval-every", "0"]


def results(stderr):
    """Each node's result line (the harness's JSON) relayed by the launcher."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("node ") and " | {" in line:
            r = json.loads(line.split(" | ", 1)[1])
            out[r["rank"]] = r
    return out


def launch(program, *args):
    # A long finish wait: each process evaluates its own model (on the periodic rows) while the
    # contributions travel, which on 2 loaded cores (bfloat16 on a CPU) can outlast the default.
    r = subprocess.run([sys.executable, "-m", "murmur.run", "--progress", "none", "--nodes", "2",
                        "--epochs", "1", "--json", "--finish-wait-s", "120", os.path.join(EXAMPLES, program), *BRIEF, *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["finish"] == ["averaged"] * 2, report
    ranks = results(r.stderr)
    assert sorted(ranks) == [0, 1], r.stderr[-2000:]
    return report, ranks


def test_the_resnet_trains_under_murmur_with_bfloat16_autocast():
    pytest.importorskip("torch")
    if not os.path.exists("/usr/share/datasets/fashion-mnist"):
        pytest.skip("no Fashion-MNIST (ops/install-deps.sh installs it)")
    report, ranks = launch("resnet_fashion.py", "--train-rows", "4096", "--amp")
    # After the consensus finish both processes hold one model: the same test scores.
    assert ranks[0]["accuracy"] == ranks[1]["accuracy"] > 0.15, ranks  # chance: 0.10
    # The budget ends on the nodes' estimate of the cluster's samples, not an exact count.
    assert ranks[0]["samples"] + ranks[1]["samples"] >= 0.75 * 4096, ranks


def test_the_members_average_takes_each_process_latest_copy_by_then():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, EXAMPLES)
    import harness
    one = lambda v: [torch.tensor([v]), torch.tensor([10 * v])]
    a = {"first_step": 100.0, "snapshots": [(0.5, one(1.0)), (1.5, one(3.0))]}
    b = {"first_step": 100.2, "snapshots": [(0.6, one(5.0)), (2.0, one(9.0))]}
    assert harness.members_average([a, b], 100.7) is None  # b's first copy is at 100.8
    for at, want in [(100.8, 3.0), (101.4, 3.0), (101.5, 4.0), (102.19, 4.0), (102.2, 6.0),
                     (500.0, 6.0)]:
        got = harness.members_average([a, b], at)
        assert [v.item() for v in got] == pytest.approx([want, 10 * want]), at


@pytest.mark.parametrize("flags, why", [
    (["--members-timeline"], "--result-dir"),
    (["--members-timeline", "--result-dir", "/tmp", "--backend", "ddp"], "--backend murmur"),
    (["--members-timeline", "--result-dir", "/tmp", "--snapshot-every", "0"], "--snapshot-every"),
    (["--members-target", "0.5"], "--members-timeline")])
def test_a_members_timeline_that_cannot_be_made_is_refused(flags, why):
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "fortune_lm.py"), *flags],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and why in r.stderr, r.stderr[-2000:]


def test_the_language_model_trains_under_murmur_and_as_its_ddp_twin(tmp_path):
    pytest.importorskip("torch")
    if not os.path.isdir("/usr/share/games/fortunes"):
        pytest.skip("no fortunes (ops/install-deps.sh installs the package)")
    report, ranks = launch("fortune_lm.py", "--train-windows", "768", "--snapshot-every", "0.5",
                           "--result-dir", str(tmp_path), "--members-timeline")
    # Rank 0 evaluated the members' average over time, and removed the copies it read.
    members = ranks[0]["members_timeline"]
    assert members and ranks[1].get("members_timeline") is None, ranks
    assert [t for t, _ in members] == sorted(t for t, _ in members), members
    assert all(0 <= acc <= 1 for _, acc in members), members
    assert not list(tmp_path.glob("members-rank-*")), list(tmp_path.iterdir())
    uniform = math.log(256)  # the loss of a model that knows nothing
    # One model after the finish (the evaluation's sums may differ in their last digits).
    assert ranks[0]["accuracy"] == ranks[1]["accuracy"]
    assert ranks[0]["test_loss"] == pytest.approx(ranks[1]["test_loss"], rel=1e-2)
    assert ranks[0]["test_loss"] < 0.8 * uniform, ranks
    assert ranks[0]["optimizer"] == "adamw"
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "fortune_lm.py"), "--backend", "ddp",
                        "--procs", "2", "--epochs", "1", "--train-windows", "768", *BRIEF],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    twins = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(twins) == 2 and twins[0]["test_loss"] < 0.8 * uniform, twins
    # The same samples: the twin's global steps cover the epoch as murmur's budget does.
    assert sum(t["samples"] for t in twins) >= 768 - 2 * 32
