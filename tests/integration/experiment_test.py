#!/usr/bin/env python3
"""The researcher's loop end to end: `murmur experiment` and `murmur report`.

1. A 2 x 2 x 2 grid (ring and tree on 2 workers, with and without a slow rank, seeds 1 and 2;
   logistic regression, so each run takes about a second) runs uninterrupted: every run
   succeeds, the CSVs, the PNG and SVG figures and index.html are written.
2. The same grid in another directory is interrupted with SIGINT while its third run is going:
   exit 130; run again it resumes (keeping the two finished runs) and its runs.csv has the same
   rows as the uninterrupted grid's in every column that does not depend on timing (seeded runs:
   the loss and accuracy to 6 digits are the same).
3. The report opens in headless Chromium (Debian `chromium`) and every figure loads (the page
   counts them into data-figures); a screenshot is kept for a person to look at.
4. `murmur report` on a hand-run `murmur local --run-dir`, and what is refused with exit 2: a
   bad scenario, a changed scenario in the same directory, a directory without a run.
"""
import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiment"))
import runs as R  # noqa: E402

SCENARIO = """
name = "tiny"
description = "ring all-reduce against the uncoded tree, with and without a slow rank"
target_accuracy = 0.7
[base]
task = "logistic"
samples = 2000
features = 20
iterations = 30
eval_every = 5
n = 2
L = 1
lr = 0.5
[axes.system]
ring = { mode = "ring" }
tree = { mode = "tree" }
[axes.straggler]
none = {}
"rank 1 slow" = { straggle = "rank=1,delay=20ms" }
[axes]
seed = [1, 2]
"""
FIGURES = ["time_to_accuracy", "accuracy_vs_time", "accuracy_vs_bytes", "iteration_times"]


def wait_until(what, fn, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if fn():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for: {what}")


def experiment(murmur, scenario, out, **kw):
    return subprocess.run([murmur, "experiment", scenario, "--out", out], capture_output=True,
                          text=True, timeout=300, **kw)


def rows(path):
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in R.TIMING_COLUMNS} for r in csv.DictReader(f)]


def main():
    murmur = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="murmur-experiment-test-")
    keep = os.environ.get("MURMUR_KEEP_TEST_OUTPUT")
    try:
        scenario = os.path.join(tmp, "tiny.toml")
        with open(scenario, "w") as f:
            f.write(SCENARIO)
        # 1. Uninterrupted.
        a = os.path.join(tmp, "a")
        r = experiment(murmur, scenario, a)
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
        assert "8/8" in r.stderr and "ETA" in r.stderr, r.stderr[-2000:]
        full = rows(os.path.join(a, "report", "runs.csv"))
        assert len(full) == 8 and all(x["ok"] == "True" for x in full), full
        for stem in FIGURES:
            for ext in ("png", "svg"):
                p = os.path.join(a, "report", f"{stem}.{ext}")
                assert os.path.getsize(p) > 1000, p
        with open(os.path.join(a, "report", "series.csv")) as f:
            series = list(csv.DictReader(f))
        assert {x["node"] for x in series} == {"1", "2", "3"}, "tree has 3 processes, ring 2"
        print(f"ok: 8 runs, {len(series)} series rows, {len(FIGURES)} figures as PNG and SVG")

        # 2. Interrupted while the third run is going, then resumed.
        b = os.path.join(tmp, "b")
        proc = subprocess.Popen([murmur, "experiment", scenario, "--out", b],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        third = os.path.join(b, "runs", "002-ring_rank-1-slow_1", "series")
        wait_until("the third run writes its series", lambda: os.path.isdir(third), 120)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, f"exit {proc.returncode}\n{err[-2000:]}"
        assert "interrupted; 2 of 8 runs done" in err, err[-2000:]
        assert not os.path.exists(os.path.join(b, "runs", "002-ring_rank-1-slow_1", "done.json"))
        r = experiment(murmur, scenario, b)
        assert r.returncode == 0, f"resume: exit {r.returncode}\n{r.stderr[-3000:]}"
        assert "(2 already done)" in r.stderr, r.stderr[:500]
        resumed = rows(os.path.join(b, "report", "runs.csv"))
        for x, y in zip(full, resumed):
            assert x == y, f"resumed row differs:\n  {x}\n  {y}"
        assert len(resumed) == len(full)
        print(f"ok: SIGINT mid-grid exits 130; resumed, the {len(resumed)} rows equal the "
              f"uninterrupted grid's in {len(full[0])} columns "
              f"(timing columns left out: {', '.join(sorted(R.TIMING_COLUMNS))})")

        # 3. The page in a real browser.
        page = os.path.join(b, "report", "index.html")
        browser = shutil.which("chromium")
        assert browser, "chromium is missing (ops/install-deps.sh installs it)"
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--user-data-dir={os.path.join(tmp, 'chromium')}"]
        dom = subprocess.run([browser, *flags, "--dump-dom", "file://" + page],
                             capture_output=True, text=True, timeout=120).stdout
        want = f'data-figures="{len(FIGURES)}/{len(FIGURES)}"'
        assert want in dom, f"not every figure loaded in Chromium ({want} not in the page)"
        shot = os.path.join(tmp, "report.png")
        subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,2600",
                        "file://" + page], capture_output=True, timeout=120)
        assert os.path.getsize(shot) > 20000, "the screenshot is empty"
        print(f"ok: Chromium loaded {len(FIGURES)} of {len(FIGURES)} figures; screenshot {shot}")

        # 4. A hand-run local with --run-dir, reported the same way; refusals.
        hand = os.path.join(tmp, "hand")
        r = subprocess.run([murmur, "local", "--mode", "ring", "--n", "2", "--L", "1", "--task",
                            "logistic", "--samples", "1000", "--features", "10", "--iterations",
                            "20", "--eval-every", "5", "--progress", "none", "--run-dir", hand],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        for name in ("config.toml", "result.json", "series/node-1.jsonl", "logs/node-1.log"):
            assert os.path.exists(os.path.join(hand, name)), name
        r = subprocess.run([murmur, "local", "--run-dir", hand], capture_output=True, text=True)
        assert r.returncode == 2 and "already holds a run" in r.stderr, r.stderr
        r = subprocess.run([murmur, "report", hand], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and os.path.exists(os.path.join(hand, "report", "index.html")), r.stderr
        # The resolved configuration repeats the run.
        again = os.path.join(tmp, "again")
        r = subprocess.run([murmur, "local", "--config", os.path.join(hand, "config.toml"),
                            "--run-dir", again], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        losses = [R.load_run(d)["result"]["loss"] for d in (hand, again)]
        assert losses[0] == losses[1], f"the repeated run's loss differs: {losses}"
        print("ok: murmur local --run-dir keeps config, result, series and logs; murmur report "
              "reads it; its config.toml repeats the run; a used run directory is refused")
        # A gossip run's record repeats too: the keys it does not read (plain CHOCO rounds under
        # the outer optimizer, the synchronous modes' keys) are comments there, so loading it
        # gives none of them, and nothing is refused as given in vain.
        gossip = os.path.join(tmp, "gossip")
        r = subprocess.run([murmur, "local", "--nodes", "2", "--epochs", "0.05", "--progress",
                            "none", "--run-dir", gossip], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        record = open(os.path.join(gossip, "config.toml"), encoding="utf-8").read()
        assert "# local_steps = 0  # not read by this run" in record, record
        assert "\nouter = " in record, record
        r = subprocess.run([murmur, "local", "--config", os.path.join(gossip, "config.toml"),
                            "--run-dir", os.path.join(tmp, "gossip-again"), "--progress", "none"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        print("ok: a gossip run's config.toml repeats the run")
        bad = os.path.join(tmp, "bad.toml")
        for text, why in (("[axes]\nseed = []\n", "axis 'seed' has no values"),
                          ("backend = \"sim\"\n[axes]\nseed = [1]\n", "virtual-time scenarios run with `murmur sim FILE`"),
                          ("[base]\nrun_dir = \"x\"\n[axes]\nseed = [1]\n", "set by murmur experiment itself"),
                          ("[axes]\nseed = [1\n", "not valid TOML"),
                          # Every cell is resolved as murmur local would before anything runs:
                          # a typo in [base], a value one cell of an axis cannot take.
                          ("[base]\nnodse = 4\n[axes]\nseed = [1]\n", "cell 000-1 (seed = 1)"),
                          ("[base]\nnodes = 4\n[axes]\nstraggle = [\"node=2,slowdown=4\", "
                           "\"node=9,slowdown=4\"]\n", "cell 001-node-9-slowdown-4")):
            with open(bad, "w") as f:
                f.write(text)
            r = experiment(murmur, bad, os.path.join(tmp, "c"))
            assert r.returncode == 2 and why in r.stderr, (text, r.returncode, r.stderr)
            assert not os.path.exists(os.path.join(tmp, "c", "runs")), "a refused scenario ran"
        # --list checks the cells too: the grid it prints is one that runs.
        r = subprocess.run([murmur, "experiment", bad, "--list"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2 and "node '9' is not in" in r.stderr, (r.returncode, r.stderr)
        with open(scenario, "a") as f:
            f.write("\n# changed\n")
        r = experiment(murmur, scenario, a)
        assert r.returncode == 2 and "different scenario" in r.stderr, r.stderr
        r = subprocess.run([murmur, "report", tmp], capture_output=True, text=True)
        assert r.returncode == 2 and "holds no run" in r.stderr, r.stderr
        print("ok: bad scenarios, a changed scenario and a directory without a run exit 2 with the reason")
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
