#!/usr/bin/env python3
"""Every command the README and the guides under docs/ show pastes and runs as written.

Runs each `build/murmur ...` line of the README's code blocks (continuation lines joined), in
order, from a scratch directory holding `build`, `ops`, `examples`, `python` and `tests` links
to the checkout (so files a command writes, such as cluster.key, land there), with bash, each
bounded in time:
  - it passes when it exits 0, or is still running at its bound (a long training run or a node:
    it got past its flags and started; it is then stopped with SIGINT, as Ctrl-C would);
  - a line ending in `&` is started in the background and stopped once its block is done; a
    line after it that fails is retried until its bound (it may need the background cluster);
  - anything else (exit 2 for a flag the binary no longer takes, 127, a crash) fails the test.
The README's first two commands (install + build + the main job; install + build + the tests)
are this test's own setup; of the first, the main job itself (`build/murmur local ...`) runs.
The Python section runs too: a ```python block whose first line is `# NAME.py: ...` is written
to NAME.py in the scratch directory; `ops/python-venv.sh .venv` (the venv and the package) runs to
its end (the package's build reuses this build directory: MURMUR_CMAKE_BUILD_DIR) and must exit
0; a `.venv/bin/python ...` line is held to PYTHON_BOUND_S instead of BOUND_S.
The guides run after the README, in GUIDES' order (a later one may use a file an earlier one
wrote, as the security guide uses the gossip guide's cluster.key); a command line shown twice
runs once.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BOUND_S = 5.0
PYTHON_BOUND_S = 20.0
INSTALL_BOUND_S = 900.0
# The README, then the guides it points to, in the order a reader meets them.
GUIDES = ["README.md", "docs/thin-links.md", "docs/train.md", "docs/gossip.md", "docs/library.md",
          "docs/synchronous.md", "docs/experiments.md", "docs/membership.md", "docs/sim.md",
          "docs/operations.md", "docs/security.md"]


def python_files(readme):
    """{NAME.py: text} of the README's ```python blocks that start with `# NAME.py`."""
    files, current, lines = {}, None, None
    for line in open(readme, encoding="utf-8"):
        if line.startswith("```python"):
            lines = []
            continue
        if lines is not None and line.startswith("```"):
            m = re.match(r"# ([\w.-]+\.py)\b", lines[0]) if lines else None
            if m:
                files[m.group(1)] = "".join(lines)
            lines = None
            continue
        if lines is not None:
            lines.append(line)
    return files


def bound_of(line):
    """(seconds, whether it must end within them) for one command."""
    if line.startswith("ops/python-venv.sh"):
        return INSTALL_BOUND_S, True
    if line.startswith(".venv/bin/python"):
        return PYTHON_BOUND_S, False
    return BOUND_S, False


def commands(readme):
    """[(block number, command)] of the README's fenced blocks, continuation lines joined."""
    out, block, in_block, pending = [], 0, False, ""
    for line in open(readme, encoding="utf-8"):
        if line.startswith("```"):
            in_block = not in_block
            block += in_block
            continue
        if not in_block:
            continue
        text = pending + line.rstrip("\n")
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        # The setup commands: only the main job at the end of the first one is this test's.
        m = re.search(r"&& (build/murmur local [^&]*)$", text)
        if text.startswith("ops/install-deps.sh"):
            if m:
                out.append((block, m.group(1).strip()))
            continue
        if text.lstrip().startswith(("build/murmur", ".venv/bin/", "ops/python-venv.sh")):
            out.append((block, text.strip()))
    return out


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main():
    murmur = os.path.abspath(sys.argv[1])
    build = os.path.dirname(murmur)
    work = tempfile.mkdtemp(prefix="murmur-readme-test-")
    os.symlink(build, os.path.join(work, "build"))
    os.symlink(os.path.join(ROOT, "ops"), os.path.join(work, "ops"))
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
    os.symlink(os.path.join(ROOT, "python"), os.path.join(work, "python"))
    # The swarm's regression scenarios, which the simulator guide replays by their path.
    os.symlink(os.path.join(ROOT, "tests"), os.path.join(work, "tests"))
    for name, text in (kv for g in GUIDES for kv in python_files(os.path.join(ROOT, g)).items()):
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(text)
    env = dict(os.environ)
    # The README's `python3` is Debian's, the one its python3-* packages are for (a fresh Debian
    # 12 machine has no other; a build machine may put another first on its PATH).
    if os.path.exists("/usr/bin/python3"):
        env["PATH"] = "/usr/bin:" + env.get("PATH", "")
    env["MURMUR_CMAKE_BUILD_DIR"] = build
    env.pop("PYTHONPATH", None)  # the Python lines use the package they install
    background, failures, ran = [], [], 0
    last_block, seen = None, set()
    try:
        for block, cmd in ((f"{g} block {b}", c) for g in GUIDES
                           for b, c in commands(os.path.join(ROOT, g))):
            if cmd.rstrip() in seen and not cmd.rstrip().endswith("&"):
                print(f"ok   shown above, run once: {cmd[:110]}", flush=True)
                continue
            seen.add(cmd.rstrip())
            if block != last_block:
                for p in background:
                    stop(p)
                background = []
                last_block = block
            ran += 1
            line = cmd.rstrip()
            if line.endswith("&"):
                p = subprocess.Popen(["bash", "-c", line[:-1]], cwd=work, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True, text=True)
                background.append(p)
                print(f"ok   started in the background: {line}", flush=True)
                continue
            t0 = time.monotonic()
            verdict, tail = None, ""
            bound, must_end = bound_of(line)
            while verdict is None:
                p = subprocess.Popen(["bash", "-c", line], cwd=work, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True, text=True)
                try:
                    _, err = p.communicate(timeout=max(0.1, bound - (time.monotonic() - t0)))
                except subprocess.TimeoutExpired:
                    stop(p)
                    verdict = "still running at its bound"
                    if must_end:
                        failures.append(f"{line}\n    did not end within {bound:.0f} s")
                        verdict = "FAILED (did not end)"
                    break
                tail = (err or "").strip().splitlines()[-1:]
                if p.returncode == 0:
                    verdict = "exit 0"
                elif background and time.monotonic() - t0 < bound:
                    time.sleep(0.5)  # the background cluster may not be up yet
                else:
                    failures.append(f"{line}\n    exit {p.returncode}: {tail}")
                    verdict = f"FAILED (exit {p.returncode})"
            print(f"{'ok  ' if not verdict.startswith('FAILED') else 'FAIL'} {verdict:<27} "
                  f"{time.monotonic() - t0:5.1f} s  {line[:110]}", flush=True)
            if verdict.startswith("FAILED") and tail:
                print(f"     its last line: {tail[0][:300]}", flush=True)  # the reason, in place
    finally:
        for p in background:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)
    assert ran >= 20, f"only {ran} commands found: did the README's code blocks change?"
    if failures:
        print(f"\n{len(failures)} of {ran} README commands failed:\n" + "\n".join(failures))
        sys.exit(1)
    print(f"ok: all {ran} README commands run as written")


if __name__ == "__main__":
    main()
