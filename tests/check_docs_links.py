#!/usr/bin/env python3
"""Every document the tree cites is in the tree, and no text names a tracker's issue number.

Usage: check_docs_links.py REPO_ROOT       check the tree (exit 1 with each finding)
       check_docs_links.py --self-test     plant a broken reference and an issue number in a
                                           scratch tree and require both to be found

A reference is any name ending in `.md`, with or without folders, in a source, build, script
or documentation file. One with a folder resolves against the citing file's folder or the repository root; a bare
name against the citing file's folder, the root, `docs/` or `bench/results/`. Absolute paths
(what a command writes under /tmp) and patterns (`*.md`) are not references. The issue check
skips `bench/results/`, the dated history, where a result may say which request it answered.
"""
import os
import re
import shutil
import sys
import tempfile

TEXT_SUFFIXES = (".md", ".h", ".cc", ".cu", ".inc", ".txt", ".sh", ".py", ".capnp", ".toml",
                 ".yaml", ".yml", ".json", ".cmake", ".in", ".sbatch")
TEXT_NAMES = ("Dockerfile", "CMakeLists.txt", "run")
SKIP_DIRS = {".git", "build", ".venv", "node_modules", "__pycache__", "corpus", "regressions"}
REFERENCE = re.compile(r"(?<![\w./-])([\w.-]+(?:/[\w.-]+)*\.md)\b")
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")
BARE_PLACES = ("", "docs", os.path.join("bench", "results"))


def text_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for name in files:
            if name.endswith(TEXT_SUFFIXES) or name in TEXT_NAMES or name.startswith("Dockerfile"):
                yield os.path.join(folder, name)


def resolves(root, citing_dir, ref):
    if "/" in ref:
        candidates = [os.path.join(citing_dir, ref), os.path.join(root, ref)]
    else:
        candidates = [os.path.join(citing_dir, ref)] + [os.path.join(root, p, ref) for p in BARE_PLACES]
    return any(os.path.isfile(os.path.normpath(c)) for c in candidates)


def findings(root):
    out = []
    results = os.path.join(root, "bench", "results") + os.sep
    for path in sorted(text_files(root)):
        rel = os.path.relpath(path, root)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for m in REFERENCE.finditer(line):
                ref = m.group(1)
                if not resolves(root, os.path.dirname(path), ref):
                    out.append(f"{rel}:{number}: '{ref}' is not a file in the tree")
            if not path.startswith(results):
                for m in ISSUE.finditer(line):
                    out.append(f"{rel}:{number}: '{m.group(0)}' names an issue the tree does not "
                               "hold: say the reason in words")
    return out


def self_test():
    scratch = tempfile.mkdtemp(prefix="murmur-docs-links-")
    try:
        os.makedirs(os.path.join(scratch, "docs"))
        os.makedirs(os.path.join(scratch, "gossip"))
        open(os.path.join(scratch, "docs", "design.md"), "w").write("# design\n")
        open(os.path.join(scratch, "gossip", "README.md"), "w").write(
            "See docs/design.md and ../docs/design.md and README.md.\n")
        good = findings(scratch)
        if good:
            print("self-test: a tree with good references was refused:\n" + "\n".join(good))
            return 1
        # The planted names are built here, so that this file cites none of them itself.
        missing_doc, outside_doc, issue = "docs/algorithms" + ".md", "DESIGN" + ".md", "issue" + " 12"
        open(os.path.join(scratch, "gossip", "choco.h"), "w").write(
            f"// CHOCO ({missing_doc} §3; {issue}): see {outside_doc} \"Wire\".\n")
        bad = findings(scratch)
        want = [f"'{missing_doc}' is not a file", f"'{outside_doc}' is not a file", f"'{issue}'"]
        missing = [w for w in want if not any(w in b for b in bad)]
        if missing:
            print("self-test: planted faults not found: " + ", ".join(missing))
            return 1
        print(f"ok: self-test found the {len(bad)} planted faults:\n  " + "\n  ".join(bad))
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = findings(root)
    if found:
        print(f"{len(found)} references to nothing in the tree:\n" + "\n".join(found))
        return 1
    print("ok: every cited document is in the tree, and no issue numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
