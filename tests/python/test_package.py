"""The package installs as a PyTorch user installs it: `ops/python-venv.sh` (a venv on Debian's
interpreter, checked to see PyTorch, and `pip install --no-build-isolation ./python` into it,
with no package index, leaving the source tree as it was), then `import murmur, murmur.torch` from outside
the tree, the `murmur` command of the same install, and `python -m murmur.run` with it. The
build reuses this checkout's build directory (MURMUR_CMAKE_BUILD_DIR), as CI has it built."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def git_status():
    """The checkout's untracked and changed files, ignored ones included (None: not a git
    checkout, e.g. an unpacked tarball)."""
    r = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--ignored", "--", "python"],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def test_a_clean_venv_installs_the_package_and_imports_it_from_outside_the_tree(tmp_path):
    build = os.path.dirname(os.path.abspath(os.environ["MURMUR_BINARY"]))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MURMUR_PYTHON")}
    env["MURMUR_CMAKE_BUILD_DIR"] = build
    tree_before = git_status()
    # The README's step: the venv on Debian's interpreter, checked, and the package in it.
    r = subprocess.run([os.path.join(ROOT, "ops", "python-venv.sh"), str(venv)],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"{venv} has murmur" in r.stdout and "with torch" in r.stdout, r.stdout
    # pip built out of the source tree: nothing new in it (setuptools' build/ and egg-info
    # went into the CMake build directory).
    assert git_status() == tree_before, (tree_before, git_status())
    python = str(venv / "bin" / "python")
    away = tmp_path / "elsewhere"
    away.mkdir()
    probe = ("import json, murmur, murmur.torch; "
             "print(json.dumps([murmur.__version__, murmur.__file__, murmur.binary()]))")
    r = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env, cwd=away,
                       check=True)
    version, module, binary = json.loads(r.stdout)
    assert module.startswith(str(venv)) and binary.startswith(str(venv)), (module, binary)
    # The `murmur` command of the same install is the binary of the same version.
    r = subprocess.run([str(venv / "bin" / "murmur"), "--version"], capture_output=True,
                       text=True, env=env, check=True)
    assert r.stdout.split()[:2] == ["murmur", version], r.stdout
    # The launcher of the install runs a program that imports the installed package.
    program = away / "train.py"
    program.write_text(open(os.path.join(HERE, "tiny_program.py")).read())
    r = subprocess.run([python, "-m", "murmur.run", "--progress", "none", "--nodes", "2",
                        "--epochs", "2", "--json", str(program)], capture_output=True,
                       text=True, env=env, cwd=away, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1])["ok"]
    lines = [l.split(" | ", 1)[1] for l in r.stderr.splitlines() if l.startswith("node 1 | {")]
    assert lines and json.loads(lines[-1])["python"] == python, r.stderr[-2000:]
