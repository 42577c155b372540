#!/usr/bin/env python3
"""The README's figures: runs each command of the table once on this machine and prints the
table, or writes it between the README's figures markers.

  python3 bench/figures.py build/murmur                   # print the table
  python3 bench/figures.py build/murmur --write README.md # replace the table in the README

Every row is one command, as a user would type it (with --json for the numbers), run on this
machine, one after the other (nothing else of murmur's should run meanwhile: the nodes share the
cores). The header names the date, the machine and this command. A row whose command fails
stops the script (exit 1) before anything is written.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

BEGIN = "<!-- figures: made by bench/figures.py; do not edit by hand -->"
END = "<!-- figures end -->"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return re.sub(r"\s+", " ", line.split(":", 1)[1].strip())
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run(murmur, args):
    t0 = time.monotonic()
    r = subprocess.run([murmur, *args, "--json", "--progress", "none"], capture_output=True,
                       text=True, timeout=900)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"bench/figures.py: murmur {' '.join(args)} exited {r.returncode}:\n"
                         f"{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1]), wall


def gossip_row(murmur, args):
    d, wall = run(murmur, args)
    flagged = d.get("stragglers_flagged") or []
    result = (f"cluster model {d['cluster_accuracy']:.4f}; "
              f"{d['fewer_bytes_than_allreduce']:.0f}x fewer bytes than ring all-reduce "
              f"({d['bytes_sent_total'] / 1e6:.1f} MB)")
    if "--straggle" in args:
        result += f"; marked: {', '.join(f'node {k}' for k in flagged) or 'none'}"
    return "murmur " + " ".join(args), result, wall


def train_row(murmur, args):
    d, wall = run(murmur, args)
    return ("murmur " + " ".join(args),
            f"test accuracy {d['test_accuracy']:.4f}; {d['samples_per_second'] / 1e3:.0f} k "
            "samples/s", wall)


def ring_row(murmur, args):
    d, wall = run(murmur, args)
    return ("murmur " + " ".join(args),
            f"model {d['accuracy']:.4f}; {d['bytes_sent_total'] / 1e6:.0f} MB sent; iteration "
            f"{d['iteration_ms_mean']:.0f} ms mean", wall)


def needs_root(make):
    """A row on a network of namespaces: said, not run, without root."""
    def row(murmur, args):
        if os.geteuid() != 0:
            return "murmur " + " ".join(args), "not run: a network of namespaces needs root", 0
        return make(murmur, args)
    return row


def sim_row(murmur, args):
    d, wall = run(murmur, args)
    return ("murmur " + " ".join(args),
            f"{d['virtual_s']:.2f} s of virtual time, {d['bytes'] / 1e6:.0f} MB on the simulated "
            f"links, trace {d['trace_hash']}", wall)


ROWS = [
    (train_row, ["train"]),
    (gossip_row, ["local", "--nodes", "4"]),
    (gossip_row, ["local", "--nodes", "4", "--straggle", "node=3,slowdown=4"]),
    (gossip_row, ["local", "--nodes", "8"]),
    (sim_row, ["sim", "--nodes", "64", "--epochs", "3", "--straggle", "node=3,slowdown=4"]),
    # The same 3 epochs of 64 samples per worker per step over 100 Mbit/s links: gossip, and ring
    # all-reduce at its best rate of 0.1, 0.2, 0.4 (ops/scenarios/thin_links.toml).
    (needs_root(gossip_row), ["local", "--nodes", "8", "--network", "netns:rate=100mbit"]),
    (needs_root(ring_row), ["local", "--mode", "ring", "--nodes", "8", "--global-batch", "512",
                            "--iterations", "351", "--lr", "0.2", "--lr-schedule", "cosine",
                            "--network", "netns:rate=100mbit"]),
]


def table(murmur):
    rows = []
    for make, args in ROWS:
        print(f"bench/figures.py: murmur {' '.join(args)}", file=sys.stderr, flush=True)
        rows.append(make(murmur, args))
    date = datetime.date.today().isoformat()
    lines = [f"Measured {date} on {os.cpu_count()} cores ({cpu_model()}), one run per row, by "
             "`python3 bench/figures.py build/murmur --write README.md`:", "",
             "| command | result | wall s |", "|---|---|---|"]
    for command, result, wall in rows:
        lines.append(f"| `{command}` | {result} | {wall:.1f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("murmur")
    p.add_argument("--write", metavar="README", help="replace the table between the markers")
    a = p.parse_args()
    text = table(os.path.abspath(a.murmur))
    if not a.write:
        print(text)
        return 0
    readme = open(a.write, encoding="utf-8").read()
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"bench/figures.py: {a.write} has no figures markers ({BEGIN} ... {END})")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(a.write + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    os.replace(a.write + ".tmp", a.write)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
