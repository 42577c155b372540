"""`murmur local --exec --straggle`: a program's step rate, so this file runs as its own test,
one cluster at a time (tests/CMakeLists.txt), never beside other clusters that starve it."""

import json

from test_launcher import PROGRAM, local


def test_a_slowed_program_of_two_is_marked_a_straggler():
    # With two processes the fast one has only the slow one to wait for: it marks it after its
    # wait (soft sync's W) instead of pacing itself to it for the whole run.
    r = local("--nodes", "2", "--epochs", "200", "--exec", PROGRAM, "--json",
              "--straggle", "node=2,slowdown=4")
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["stragglers_flagged"] == [2], report["stragglers_flagged"]
    waiting = [p["waiting_s"] / p["wall_s"] for p in report["phases"]]
    print(f"waiting fraction of each node: {waiting}")
    assert waiting[0] < 0.5, waiting
