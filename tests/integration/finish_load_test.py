#!/usr/bin/env python3
"""The consensus finish on a loaded machine and after a kill, as bench/finish_bench.py
runs it: `murmur local --nodes 4 --epochs 1 --admin`, a busy loop on every core and idle
connections held on node 1's admin port; the second run also SIGKILLs node 1 (the collector)
at 0.6 s and restarts it 1 s later, so it comes back as the lowest id, having trained nothing,
while the others finish.

Each run must end with every node in the finish ("averaged" or "missed") and the report
accounting for each: one model, or the groups and the missed nodes that say which node holds
which. The cluster model must be far above chance. Runs alone (RUN_SERIAL): the busy loops would
slow every test beside it.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import finish_bench  # noqa: E402

MURMUR = sys.argv[1]


def main():
    failures = []
    for kill in (False, True):
        case = "kill" if kill else "load"
        x = finish_bench.run(MURMUR, nodes=4, epochs=1, kill=kill, connections=600)
        print(f"{case}: {x.get('models')} model(s), finish {x.get('finish')}, groups "
              f"{x.get('groups')}, missed {x.get('missed')}, ends {x.get('ends')}, cluster accuracy "
              f"{x.get('accuracy')}, {x['held']} admin connections open at the end, "
              f"{x['wall']:.1f} s", flush=True)
        if not x["ok"]:
            failures.append(f"{case}: {x.get('why')}")
            continue
        if any(f not in ("averaged", "missed") for f in x["finish"]):
            failures.append(f"{case}: a node did not reach the finish: {x['finish']}")
        if x["models"] > 1:
            print(f"{case}: the run ended on {x['models']} models, each named in the report")
        if not x["accuracy"] or x["accuracy"] < 0.7:
            failures.append(f"{case}: cluster accuracy {x['accuracy']}")
        if kill and not x.get("ends"):
            failures.append(f"{case}: no end reasons in the report")
    for f in failures:
        print("FAILED", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
