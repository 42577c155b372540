"""The `murmur` command of a pip installation: the executable the package ships, run with this
interpreter named as the one `murmur local --exec "python3 ..."` starts programs with."""

import os
import sys

from murmur._peer import binary


def environment():
    """os.environ plus MURMUR_PYTHON (this interpreter, which imports this murmur) and, for a
    package used from the build tree, PYTHONPATH leading to it."""
    env = dict(os.environ)
    env["MURMUR_PYTHON"] = sys.executable
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_parent not in paths and not _importable_without(package_parent):
        env["PYTHONPATH"] = os.pathsep.join([package_parent, *paths])
    return env


def _importable_without(package_parent):
    """Whether this interpreter finds this package on its own path (an installed package)."""
    return any(os.path.abspath(p or ".") == package_parent for p in sys.path[1:])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        path = binary()
    except Exception as e:  # murmur.Error: no executable beside the package
        print(f"murmur: {e}", file=sys.stderr)
        return 1
    os.execve(path, [path, *argv], environment())


if __name__ == "__main__":
    sys.exit(main())
