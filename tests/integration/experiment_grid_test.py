#!/usr/bin/env python3
"""The scenario grid of murmur experiment: [[when]] settings per matching cell,
--only, and the link rate the report reads from a run's network.

    experiment_grid_test.py MURMUR
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiment"))
import experiment as E  # noqa: E402
import report as REPORT  # noqa: E402

MURMUR = sys.argv[1]
SCENARIO = """
name = "grid"
[base]
iterations = 10
[axes.system]
ring = { mode = "ring" }
tree = { mode = "tree" }
[axes.nodes]
"2" = { nodes = 2 }
"4" = { nodes = 4 }
[axes]
seed = [1, 2]
[[when]]
system = "ring"
nodes = ["4"]
set = { global_batch = 256 }
[[exclude]]
system = "tree"
nodes = "4"
"""


def listed(path, *only):
    r = subprocess.run([MURMUR, "experiment", path, "--list", *[f"--only={o}" for o in only]],
                       capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines(), r.stderr


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grid.toml")
        with open(path, "w") as f:
            f.write(SCENARIO)
        runs = E.grid(E.parse_scenario(path))
        assert len(runs) == 6, [r["id"] for r in runs]  # 2 x 2 x 2, less tree at 4
        for r in runs:
            want = 256 if (r["labels"]["system"], r["labels"]["nodes"]) == ("ring", "4") else None
            assert r["settings"].get("global_batch") == want, r
        print("ok: [[when]] sets global_batch in exactly the ring cells at 4 nodes")

        rc, lines, err = listed(path, "system=ring", "nodes=4")
        assert rc == 0 and len(lines) == 2, (rc, lines, err)
        assert all("--global-batch=256" in line and "--mode=ring" in line for line in lines), lines
        ids = {line.split()[0] for line in lines}
        assert ids <= {r["id"] for r in runs}, "--only renumbered the cells"
        rc, lines, _ = listed(path, "seed=1", "seed=2", "system=tree")
        assert rc == 0 and len(lines) == 2, lines
        print(f"ok: --only picks cells and keeps their ids: {sorted(ids)}")
        for bad in ("nodes=3", "colour=red", "system"):
            rc, _, err = listed(path, bad)
            assert rc == 2 and "--only" in err, (bad, rc, err)
        rc, _, err = listed(path, "system=tree", "nodes=4")
        assert rc == 2 and "leaves no cell" in err, err
        print("ok: a bad --only is exit 2 with its reason")

        bad = SCENARIO + '[[when]]\ncolour = "red"\nset = { lr = 1 }\n'
        with open(path, "w") as f:
            f.write(bad)
        try:
            E.parse_scenario(path)
            raise AssertionError("a [[when]] on an unknown axis was accepted")
        except E.ScenarioError as e:
            assert "colour" in str(e), e
        print("ok: [[when]] on an unknown axis is refused")

    def rate(network):
        return REPORT.link_rate({"config": {"network": network}})
    assert rate("netns:rate=100mbit") == 100e6
    assert rate("netns:burst=64kb,rate=1.5gbit,topology=two-racks") == 1.5e9
    assert rate("netns:rate=1gbit,node2=10mbit") is None  # not a uniform rate
    assert rate("loopback") is None and rate("") is None
    print("ok: the report reads a uniform link rate, and only that")
    return 0


if __name__ == "__main__":
    sys.exit(main())
