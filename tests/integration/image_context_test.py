#!/usr/bin/env python3
"""The images' build stage reads every file the `murmur` build reads (ctest `image_context`).

  python3 tests/integration/image_context_test.py ROOT BUILD_DIR
  python3 tests/integration/image_context_test.py ROOT BUILD_DIR --self-test

For each Dockerfile with a build stage (docker/Dockerfile, docker/Dockerfile.cuda) it builds, in a
temporary folder, the tree that stage's COPY instructions make from the build context as
.dockerignore filters it, and then:
  1. every file of the source tree that the host build of `murmur` read (the target's inputs and
     the headers in ninja's dependency log, from BUILD_DIR) must be in that tree: a folder left out
     of a COPY list or a pattern of .dockerignore that hides a source fails here, by name;
  2. CMake configures that tree with the stage's own -D flags, as the image build does (seconds;
     a missing add_subdirectory folder fails here, as it failed the image build). A CUDA stage is
     configured only where nvcc is found, and says so when it is not.
--self-test plants omissions in copies of the Dockerfile and .dockerignore and fails unless the
check catches each of them. Without podman or a Docker engine: this is the regular test
command's cheap guard; the full image build is `ctest -R containers` (opt-in).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

DOCKERFILES = ("docker/Dockerfile", "docker/Dockerfile.cuda")


class Violation(Exception):
    pass


# ---- .dockerignore, as Docker reads it ------------------------------------------------------

def read_ignore(path):
    """Patterns in order as (negated, regex, text). Docker's rules: '#' lines are comments, a
    leading '!' re-includes, '**' matches any number of folders, '*' and '?' stay in one folder;
    a path is left out when the last pattern matching it or one of its parent folders excludes."""
    patterns = []
    for raw in open(path, encoding="utf-8").read().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        text = os.path.normpath(line[1:].strip() if negated else line).lstrip("/")
        if "\\" in text or "[" in text:
            raise Violation(f"{path}: pattern '{raw}' uses escapes or classes this check does not "
                            "read; extend read_ignore() before using it")
        rx = ""
        i = 0
        while i < len(text):
            if text.startswith("**/", i):
                rx += "(?:.*/)?"
                i += 3
            elif text.startswith("**", i):
                rx += ".*"
                i += 2
            elif text[i] == "*":
                rx += "[^/]*"
                i += 1
            elif text[i] == "?":
                rx += "[^/]"
                i += 1
            else:
                rx += re.escape(text[i])
                i += 1
        patterns.append((negated, re.compile(rx + r"\Z"), raw.strip()))
    return patterns


def excluded_by(patterns, rel):
    """The pattern that leaves `rel` out of the context, or None when it is in."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    verdict = None
    for negated, rx, text in patterns:
        if any(rx.match(p) for p in prefixes):
            verdict = None if negated else text
    return verdict


def context_files(root, patterns):
    """Every file the build context holds (relative paths) after .dockerignore."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        # A folder left out is not walked unless a '!' pattern may take something back under it.
        dirnames[:] = [d for d in dirnames
                       if excluded_by(patterns, rel_dir + d) is None or
                       any(neg and text.lstrip("!").startswith(rel_dir + d + "/")
                           for neg, _, text in patterns)]
        for f in filenames:
            rel = rel_dir + f
            if excluded_by(patterns, rel) is None:
                out.add(rel)
    return out


# ---- the Dockerfile's build stage -----------------------------------------------------------

def build_stage(path):
    """The first stage's instructions (continuations joined): [(keyword, rest)]."""
    lines, current = [], ""
    for raw in open(path, encoding="utf-8").read().splitlines():
        if not current and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        lines.append((current + raw).strip())
        current = ""
    stage, seen_from = [], False
    for line in lines:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            if seen_from:
                break
            seen_from = True
            continue
        if seen_from:
            stage.append((keyword, rest.strip()))
    if not stage:
        raise Violation(f"{path}: no build stage found")
    return stage


def stage_tree(root, dockerfile, files, out):
    """Copies into `out` what the stage's COPY instructions take from the context `files`.
    Returns the stage's cmake -D flags (from its RUN cmake -S . line)."""
    workdir, defines = "/", None
    for keyword, rest in build_stage(dockerfile):
        if keyword == "WORKDIR":
            workdir = rest
        elif keyword in ("COPY", "ADD"):
            args = rest.split()
            flags = [a for a in args if a.startswith("--")]
            if any(f.startswith("--from") for f in flags):
                raise Violation(f"{dockerfile}: COPY --from in the build stage is not read here")
            args = [a for a in args if not a.startswith("--")]
            *sources, dest = args
            dest_dir = dest if dest.startswith("/") else os.path.join(workdir, dest)
            for src in sources:
                if any(c in src for c in "*?["):
                    raise Violation(f"{dockerfile}: COPY source '{src}' is a glob; not read here")
                src = os.path.normpath(src)
                if src == ".":
                    chosen = {f: f for f in files}
                elif src in files:  # one file: into dest/ when dest ends with '/', else as dest
                    name = os.path.basename(src) if dest.endswith("/") else ""
                    chosen = {src: name}
                else:
                    chosen = {f: f[len(src) + 1:] for f in files if f.startswith(src + "/")}
                for f, rel in chosen.items():
                    target = os.path.normpath(os.path.join(dest_dir, rel)) if rel else dest_dir
                    if not target.startswith("/src"):  # the stage builds in WORKDIR /src
                        continue
                    path = os.path.join(out, os.path.relpath(target, "/src"))
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    shutil.copy2(os.path.join(root, f), path)
        elif keyword == "RUN" and re.search(r"\bcmake -S \.", rest):
            defines = re.findall(r"(-D[A-Za-z0-9_]+=\S+)", rest)
    if workdir != "/src":
        raise Violation(f"{dockerfile}: the build stage's WORKDIR is {workdir}, not /src")
    if defines is None:
        raise Violation(f"{dockerfile}: no 'RUN cmake -S . ...' in the build stage")
    return defines


# ---- what the host build of `murmur` read ---------------------------------------------------

def murmur_inputs(root, build):
    """Source-tree files (relative to root) the `murmur` target was built from: its inputs, and
    the headers ninja recorded for its objects. {path: is_cuda}."""
    def ninja(*args):
        r = subprocess.run(["ninja", "-C", build, "-t", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: ninja -t {args[0]}: {r.stderr.strip()}")
        return r.stdout

    def in_tree(p):
        full = os.path.realpath(os.path.join(build, p))
        rel = os.path.relpath(full, os.path.realpath(root))
        generated = os.path.relpath(os.path.realpath(build), os.path.realpath(root))
        if rel.startswith("..") or rel == generated or rel.startswith(generated + "/"):
            return None
        return rel

    inputs = ninja("inputs", "murmur").split()
    out = {}
    objects = [p for p in inputs if p.endswith(".o")]
    for p in inputs:
        rel = in_tree(p)
        if rel and os.path.isfile(os.path.join(root, rel)):
            out[rel] = rel.endswith(".cu")
    # `ninja -t deps OBJ...`: "OBJ: #deps N ..." then one indented header per line.
    cuda_object = False
    for line in ninja("deps", *objects).splitlines():
        if line and not line[0].isspace():
            cuda_object = line.split(":")[0].endswith(".cu.o")
        elif line.strip():
            rel = in_tree(line.strip())
            if rel and os.path.isfile(os.path.join(root, rel)):
                out[rel] = out.get(rel, True) and cuda_object
    return out


# ---- the check ------------------------------------------------------------------------------

def check(root, build, dockerfiles, ignore, configure=True, inputs=None):
    """Returns a list of violations (empty: the stages build)."""
    problems = []
    patterns = read_ignore(ignore)
    files = context_files(root, patterns)
    inputs = murmur_inputs(root, build) if inputs is None else inputs
    nvcc = shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and
                                    "/usr/local/cuda/bin/nvcc")
    for dockerfile in dockerfiles:
        name = os.path.relpath(dockerfile, root) if dockerfile.startswith(root) else dockerfile
        with tempfile.TemporaryDirectory(prefix="murmur-image-context-") as tmp:
            tree = os.path.join(tmp, "src")
            os.makedirs(tree)
            try:
                defines = stage_tree(root, dockerfile, files, tree)
            except Violation as e:
                problems.append(str(e))
                continue
            cuda = "-DMURMUR_WITH_CUDA=ON" in defines
            missing = [f for f, is_cuda in sorted(inputs.items())
                       if (cuda or not is_cuda) and not os.path.exists(os.path.join(tree, f))]
            for f in missing:
                why = excluded_by(patterns, f)
                problems.append(f"{name}: {f} is read by the murmur build but not in the build "
                                f"stage ({'.dockerignore: ' + why if why else 'no COPY takes it'})")
            print(f"{name}: {len(inputs)} files the murmur build reads, {len(missing)} missing "
                  f"from its build stage's {sum(len(fs) for _, _, fs in os.walk(tree))} files",
                  flush=True)
            if not configure:
                continue
            if cuda and not nvcc:
                print(f"{name}: configure SKIPPED: the stage builds with CUDA and no nvcc is here",
                      flush=True)
                continue
            args = ["cmake", "-S", tree, "-B", os.path.join(tmp, "build"), "-G", "Ninja", *defines]
            if cuda and not shutil.which("nvcc"):
                args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0:
                text = (r.stdout + r.stderr).splitlines()
                # Each "CMake Error at ..." with the line that says what (CMake's own words).
                errors = [" ".join(l.strip() for l in text[i:i + 3] if l.strip())
                          for i, l in enumerate(text) if l.startswith("CMake Error")]
                errors = errors or [l.strip() for l in text if "Error" in l]
                problems.append(f"{name}: CMake cannot configure the build stage's tree "
                                f"({' '.join(defines)}): " + " | ".join(errors[:4]))
            else:
                print(f"{name}: the build stage's tree configures ({' '.join(defines)})", flush=True)
    return problems


def self_test(root, build):
    """Each planted omission must be caught."""
    inputs = murmur_inputs(root, build)
    real_ignore = os.path.join(root, ".dockerignore")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="murmur-image-plant-") as tmp:
        def plant(name, expect, dockerfile_text=None, ignore_extra=None, configure=False):
            nonlocal failures
            dockerfile = os.path.join(root, DOCKERFILES[0])
            if dockerfile_text is not None:
                dockerfile = os.path.join(tmp, "Dockerfile")
                open(dockerfile, "w").write(dockerfile_text)
            ignore = real_ignore
            if ignore_extra is not None:
                ignore = os.path.join(tmp, "dockerignore")
                open(ignore, "w").write(open(real_ignore).read() + ignore_extra + "\n")
            problems = check(root, build, [dockerfile], ignore, configure, inputs)
            hit = [p for p in problems if expect in p]
            if hit:
                print(f"ok   {name}: caught ({hit[0][:200]})", flush=True)
            else:
                print(f"FAIL {name}: no problem names '{expect}' ({problems})", flush=True)
                failures += 1

        text = open(os.path.join(root, DOCKERFILES[0])).read()
        if "COPY . .\n" not in text:
            raise SystemExit(f"FAIL: {DOCKERFILES[0]} no longer copies the context with 'COPY . .'; "
                             "update the self-test's plants")
        # The hand-kept list the images had, which missed api/ and python/ (and failed to build).
        old_list = "".join(f"COPY {d} {d}\n" for d in
                           ("base", "kernels", "coding", "gossip", "proto", "node", "fuzz",
                            "experiment")) + "COPY CMakeLists.txt ./\nCOPY docker/collect-libs.sh docker/\n"
        plant("a per-folder COPY list without api/ and python/ (the sources)",
              "api/peer.cc is read by the murmur build", text.replace("COPY . .\n", old_list))
        plant("a per-folder COPY list without api/ and python/ (the image build's own error)",
              '"api" which is not an existing directory', text.replace("COPY . .\n", old_list),
              configure=True)
        plant("a .dockerignore that leaves out api/", ".dockerignore: api/", ignore_extra="api/")
        plant("a .dockerignore that leaves out headers (configure alone would pass)",
              "api/peer.h is read by the murmur build", ignore_extra="**/*.h")
        plant("a .dockerignore that leaves out a CMakeLists.txt", "CMake cannot configure",
              ignore_extra="python/CMakeLists.txt", configure=True)
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("build")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    root, build = os.path.realpath(a.root), os.path.realpath(a.build)
    if not os.path.exists(os.path.join(build, "build.ninja")):
        print(f"SKIP: {build} was not generated by Ninja (the README's commands use -G Ninja); "
              "this check reads ninja's dependency log", flush=True)
        return 77
    if a.self_test:
        failures = self_test(root, build)
        return 1 if failures else 0
    problems = check(root, build, [os.path.join(root, d) for d in DOCKERFILES],
                     os.path.join(root, ".dockerignore"))
    for problem in problems:
        print(f"FAIL: {problem}", flush=True)
    if not problems:
        print("image context: ok", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
