"""python -m murmur.run [murmur local options] PROGRAM.py [program arguments]

Starts N processes of a Python program on murmur (torchrun's shape): `murmur local --exec` with
this interpreter, so each process imports the same murmur and torch as the launcher. Every
option before the program is `murmur local`'s (`--nodes 4`, `--epochs 3`, `--straggle
node=2,slowdown=4`, `--crash ...`, `--json`; `murmur local --help` lists them); the program is the
first argument ending in .py (or everything after `--`, or `-m MODULE ...`). Each process gets
MURMUR_RANK, MURMUR_WORLD_SIZE and its node's keys in the environment (murmur.Peer and
murmur.torch.GossipOptimizer read them); its output is relayed prefixed by its node, under
murmur's live table and above its report. The exit status is murmur local's.
"""

import os
import shlex
import sys

from murmur._cli import environment
from murmur._peer import binary

USAGE = ("usage: python -m murmur.run [murmur local options] PROGRAM.py [args...]\n"
         "       python -m murmur.run [murmur local options] -m MODULE [args...]\n"
         "       python -m murmur.run [murmur local options] -- PROGRAM [args...]")


def split(argv):
    """(murmur local's options, the program's argv), or None when no program is named."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return (argv[:i], argv[i + 1:]) if i + 1 < len(argv) else None
        if arg == "-m" and i + 1 < len(argv):
            return argv[:i], [sys.executable, "-m", *argv[i + 1:]]
        if arg.endswith(".py") and not arg.startswith("-"):
            return argv[:i], [sys.executable, arg, *argv[i + 1:]]
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    parts = split(argv)
    if parts is None:
        print(f"murmur.run: no program: name a .py file, -m MODULE or -- PROGRAM\n{USAGE}",
              file=sys.stderr)
        return 2
    options, program = parts
    if "--exec" in options or any(o.startswith("--exec=") for o in options):
        print("murmur.run: --exec is the program this launcher starts: name it after the options",
              file=sys.stderr)
        return 2
    if program and program[0] != sys.executable and program[0].endswith(".py"):
        program = [sys.executable, *program]
    path = binary()
    command = [path, "local", *options, "--exec", shlex.join(program)]
    os.execve(path, command, environment())


if __name__ == "__main__":
    sys.exit(main())
