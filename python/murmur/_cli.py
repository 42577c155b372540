"""The `murmur` command of a pip installation: the executable the package ships, run with this
interpreter named as the one `murmur local --exec "python3 ..."` starts programs with."""

import os
import sys

from murmur._peer import binary


def environment():
    """os.environ plus MURMUR_PYTHON (this interpreter, which imports this murmur) and, for a
    package used from the build tree rather than installed, PYTHONPATH leading to it."""
    env = dict(os.environ)
    env["MURMUR_PYTHON"] = sys.executable
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    installed = os.path.basename(package_parent) in ("site-packages", "dist-packages")
    if not installed and package_parent not in paths:
        env["PYTHONPATH"] = os.pathsep.join([package_parent, *paths])
    return env


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
