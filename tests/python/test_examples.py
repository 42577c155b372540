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


def test_the_language_model_trains_under_murmur_and_as_its_ddp_twin():
    pytest.importorskip("torch")
    if not os.path.isdir("/usr/share/games/fortunes"):
        pytest.skip("no fortunes (ops/install-deps.sh installs the package)")
    report, ranks = launch("fortune_lm.py", "--train-windows", "768")
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
