#!/usr/bin/python3
"""murmur experiment SCENARIO.toml: run a grid of `murmur local` runs and report it.

A scenario (see ops/scenarios/) names a backend, a base configuration (any `murmur local` key)
and axes. An axis is either a list of values of one key (`seed = [1, 2, 3]`) or a table of named
settings (`[axes.straggler]` with `"4x" = { straggle = "node=2,slowdown=4" }`); the grid is every
combination, in the order the axes are written. A setting may also hold `events`: run-time
changes at given seconds, `{ at = 5, node = 2, straggle = "slowdown=4,for=10s" }` or
`{ at = 15, node = 2, clear = true }`, sent through the node's admin port (`murmur ctl`).

The experiment directory (--out) gets experiment.json (the scenario and the grid), runs/<id>/
(a run directory each: config.toml, result.json, logs, series, and done.json once the run was
seen through) and report/ (murmur report). Run again after an interruption, it resumes: runs
with done.json are kept, an unfinished one is started afresh.
Exit codes: 0 every run succeeded, 1 some run failed, 2 a bad scenario or flag, 130 interrupted.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report as REPORT  # noqa: E402

BACKENDS = ("local",)  # murmur sim takes scenario files of its own (ops/scenarios/sim/)
# What the runner sets itself: a scenario may not.
RESERVED = {"run_dir", "json", "progress", "prometheus_targets", "admin_token_file", "admin", "config"}


class ScenarioError(Exception):
    pass


def parse_scenario(path):
    try:
        with open(path, "rb") as f:
            s = tomllib.load(f)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file")
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}")
    known = {"name", "description", "backend", "target_accuracy", "timeout_s", "base", "axes",
             "exclude", "when", "report"}
    for k in s:
        if k not in known:
            raise ScenarioError(f"{path}: unknown key '{k}' (known: {', '.join(sorted(known))})")
    name = s.get("name") or os.path.splitext(os.path.basename(path))[0]
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ScenarioError(f"{path}: name '{name}' must be letters, digits, '.', '_' or '-'")
    backend = s.get("backend", "local")
    if backend not in BACKENDS:
        raise ScenarioError(f"{path}: backend '{backend}' is not one of {', '.join(BACKENDS)}"
                            + (" (virtual-time scenarios run with `murmur sim FILE`; ops/scenarios/sim/ has "
                               "examples)" if backend == "sim" else ""))
    target = s.get("target_accuracy", 0.8)
    if not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ScenarioError(f"{path}: target_accuracy {target!r} must be a number in (0, 1]")
    timeout = s.get("timeout_s", 600)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ScenarioError(f"{path}: timeout_s {timeout!r} must be a positive number of seconds")
    base = s.get("base", {})
    check_settings(path, "base", base)
    axes = []
    for axis, spec in s.get("axes", {}).items():
        if isinstance(spec, list):
            if not spec:
                raise ScenarioError(f"{path}: axis '{axis}' has no values")
            values = [(value_label(v), {axis: v}) for v in spec]
        elif isinstance(spec, dict):
            if not spec:
                raise ScenarioError(f"{path}: axis '{axis}' has no values")
            values = []
            for label, settings in spec.items():
                if not isinstance(settings, dict):
                    raise ScenarioError(f"{path}: axes.{axis}.{label} must be a table of settings")
                values.append((label, settings))
        else:
            raise ScenarioError(f"{path}: axis '{axis}' must be a list of values or a table of named settings")
        for label, settings in values:
            check_settings(path, f"axes.{axis}.{label}", settings)
        axes.append((axis, values))
    if not axes:
        raise ScenarioError(f"{path}: no axes: give at least one (e.g. seed = [1, 2])")
    exclude = s.get("exclude", [])
    axis_names = [a for a, _ in axes]
    for rule in exclude:
        for k in rule:
            if k not in axis_names:
                raise ScenarioError(f"{path}: exclude names axis '{k}', which is not one of {', '.join(axis_names)}")
    # [[when]]: settings for the cells whose labels match, e.g. a synchronous mode's batch for
    # each cluster size: { system = "ring", nodes = "8", set = { global_batch = 512 } }.
    when = s.get("when", [])
    for i, rule in enumerate(when):
        if not isinstance(rule.get("set"), dict) or len(rule) < 2:
            raise ScenarioError(f"{path}: when[{i}] needs axis labels to match and set = {{ ... }}")
        for k in rule:
            if k != "set" and k not in axis_names:
                raise ScenarioError(f"{path}: when[{i}] names axis '{k}', which is not one of {', '.join(axis_names)}")
        check_settings(path, f"when[{i}].set", rule["set"])
    report = s.get("report", {})
    for k in ("color", "panel"):
        if k in report and report[k] not in axis_names:
            raise ScenarioError(f"{path}: report.{k} '{report[k]}' is not an axis ({', '.join(axis_names)})")
    return {"name": name, "description": s.get("description", ""), "backend": backend,
            "target_accuracy": target, "timeout_s": timeout, "base": base, "axes": axes,
            "exclude": exclude, "when": when, "report": report}


def check_settings(path, where, settings):
    for k, v in settings.items():
        if k in RESERVED:
            raise ScenarioError(f"{path}: {where}: '{k}' is set by murmur experiment itself")
        if k == "events":
            if not isinstance(v, list):
                raise ScenarioError(f"{path}: {where}: events must be a list of tables")
            for e in v:
                if not isinstance(e, dict) or "at" not in e or "node" not in e or \
                        ("straggle" in e) == bool(e.get("clear")):
                    raise ScenarioError(f"{path}: {where}: an event is {{ at = SECONDS, node = K, "
                                        f"straggle = \"slowdown=4\" }} or {{ at = SECONDS, node = K, "
                                        f"clear = true }}; got {e!r}")
                for item in filter(None, e.get("straggle", "").split(",")):
                    if "=" not in item:
                        raise ScenarioError(f"{path}: {where}: event straggle '{item}' must be KEY=VALUE")


def value_label(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def slug(text):
    return re.sub(r"[^A-Za-z0-9.]+", "-", str(text)).strip("-")[:40] or "x"


def matches(labels, rule):
    """Whether every axis of `rule` has one of its labels (a label or a list) in `labels`."""
    return all(labels.get(k) in [value_label(x) for x in (v if isinstance(v, list) else [v])]
               for k, v in rule.items())


def only_rule(scn, picks):
    """--only AXIS=LABEL[,LABEL...] (repeatable) as a rule for matches(); ScenarioError naming
    the pick that is not an axis of `scn` with its labels."""
    rule = {}
    axis_names = [a for a, _ in scn["axes"]]
    for pick in picks:
        axis, eq, labels = pick.partition("=")
        known = {label for n, values in scn["axes"] if n == axis for label, _ in values}
        if not eq or axis not in axis_names or any(x not in known for x in labels.split(",")):
            raise ScenarioError(f"--only {pick}: not AXIS=LABEL with an axis of "
                                f"{', '.join(axis_names)} and its labels (here: "
                                f"{', '.join(sorted(known))})")
        rule.setdefault(axis, []).extend(labels.split(","))
    return rule


def grid(scn):
    """Every combination: [{"id", "labels": {axis: label}, "settings": {...}, "events": [...]}]."""
    combos = [([], {})]
    for axis, values in scn["axes"]:
        combos = [(labels + [(axis, label)], {**settings, **extra})
                  for labels, settings in combos for label, extra in values]
    out = []
    for labels, extra in combos:
        lab = dict(labels)
        if any(matches(lab, rule) for rule in scn["exclude"]):
            continue
        settings = {**scn["base"], **extra}
        for rule in scn["when"]:
            if matches(lab, {k: v for k, v in rule.items() if k != "set"}):
                settings.update(rule["set"])
        events = settings.pop("events", [])
        rid = f"{len(out):03d}-" + "_".join(slug(label) for _, label in labels)
        out.append({"id": rid, "labels": lab, "settings": settings, "events": events})
    return out


def flag_args(settings):
    args = []
    for k, v in settings.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, list):
            v = ",".join(str(x) for x in v)
        args.append(f"--{k.replace('_', '-')}={v}")
    return args


def ctl_args(event):
    if event.get("clear"):
        return ["clear"]
    args = ["straggle"]
    for item in filter(None, event["straggle"].split(",")):
        k, v = item.split("=", 1)
        args += [f"--{k.strip().replace('_', '-')}", v.strip()]
    return args


class Progress:
    """One line per run off a terminal; a redrawn bar with the ETA on one."""

    def __init__(self, total, done):
        self.total, self.done, self.tty = total, done, sys.stderr.isatty()
        self.durations = []
        self.start = time.monotonic()

    def eta(self):
        if not self.durations:
            return "?"
        left = (self.total - self.done) * sum(self.durations) / len(self.durations)
        return clock(left)

    def line(self, run, state):
        width = 24
        filled = int(width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (width - filled)
        labels = " · ".join(f"{v}" for v in run["labels"].values())
        text = (f"[{bar}] {self.done}/{self.total}  {state:<8} {labels:<48.48}  elapsed "
                f"{clock(time.monotonic() - self.start)}  ETA {self.eta()}")
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def finish_run(self, seconds):
        self.durations.append(seconds)
        self.done += 1


def clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else \
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def check_cells(murmur, scn, runs, path):
    """Every cell's command resolved as murmur local would (--dry-run: every key and the run's
    shape checked, nothing started), before the first run; the first refusal names the cell."""
    for r in runs:
        cmd = [murmur, "local", *flag_args(r["settings"]), "--dry-run", "--progress", "none"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
            labels = ", ".join(f"{k} = {v}" for k, v in r["labels"].items()) or "[base]"
            raise ScenarioError(f"{path}: cell {r['id']} ({labels}): {why}")


def run_one(murmur, run, run_dir, token_file, timeout_s, interrupted):
    """Runs one grid cell; returns its done.json content, or None when interrupted."""
    targets = os.path.join(run_dir, "targets.json")
    cmd = [murmur, "local", *flag_args(run["settings"]), "--run-dir", run_dir, "--json",
           "--progress", "none", "--admin-token-file", token_file, "--prometheus-targets", targets]
    os.makedirs(run_dir, exist_ok=True)
    started = time.time()
    t0 = time.monotonic()
    with open(os.path.join(run_dir, "stdout.json"), "w") as out, \
            open(os.path.join(run_dir, "stderr.log"), "w") as err:
        # Its own session: the runner decides when it stops (SIGINT, as Ctrl-C would).
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        except OSError as e:  # e.g. the binary being replaced by a rebuild at that moment
            return {"exit": 127, "started": started, "seconds": 0.0, "command": cmd,
                    "events": [], "timed_out": False, "refused": [f"cannot start {murmur}: {e}"]}
        pending = sorted(run["events"], key=lambda e: e["at"])
        sent = []
        killed = None
        while proc.poll() is None:
            now = time.monotonic() - t0
            if interrupted():
                proc.send_signal(signal.SIGINT)
                proc.wait()
                return None
            if now > timeout_s and killed is None:
                killed = now
                proc.send_signal(signal.SIGINT)
            if killed is not None and now > killed + 20:
                proc.kill()
            while pending and now >= pending[0]["at"]:
                e = pending.pop(0)
                sent.append(send_event(murmur, e, targets, token_file, now))
            time.sleep(0.05)
    done = {"exit": proc.returncode, "started": started, "seconds": time.monotonic() - t0,
            "command": cmd, "events": sent, "timed_out": killed is not None}
    if proc.returncode == 2:
        with open(os.path.join(run_dir, "stderr.log")) as f:
            done["refused"] = f.read().strip().splitlines()[-1:]
    return done


def send_event(murmur, event, targets_file, token_file, now):
    try:
        with open(targets_file) as f:
            groups = json.load(f)
        target = next(g["targets"][0] for g in groups if g["labels"]["node"] == str(event["node"]))
    except (OSError, ValueError, StopIteration, KeyError):
        return {**event, "sent_at": now, "error": f"node {event['node']} has no admin port in {targets_file}"}
    r = subprocess.run([murmur, "ctl", *ctl_args(event), "--target", target, "--token-file", token_file],
                       capture_output=True, text=True)
    return {**event, "sent_at": round(now, 3), "exit": r.returncode,
            **({"error": (r.stderr or r.stdout).strip()[-300:]} if r.returncode else {})}


def main(argv=None):
    p = argparse.ArgumentParser(prog="murmur experiment", description=__doc__.split("\n")[0])
    p.add_argument("scenario", help="the scenario TOML file (see ops/scenarios/)")
    p.add_argument("--out", help="experiment directory (default: experiments/NAME)")
    p.add_argument("--list", action="store_true", help="print the grid and exit")
    p.add_argument("--restart", action="store_true", help="discard the runs already in --out")
    p.add_argument("--no-report", action="store_true", help="run the grid only")
    p.add_argument("--only", action="append", default=[], metavar="AXIS=LABEL[,LABEL]",
                   help="run only the cells with one of these labels on that axis (repeatable)")
    a = p.parse_args(argv)
    murmur = os.environ.get("MURMUR_BIN") or shutil.which("murmur")
    if not murmur:
        print("murmur experiment: cannot find the murmur binary (MURMUR_BIN)", file=sys.stderr)
        return 2
    try:
        scn = parse_scenario(a.scenario)
    except ScenarioError as e:
        print(f"murmur experiment: {e}", file=sys.stderr)
        return 2
    runs = all_runs = grid(scn)
    try:
        rule = only_rule(scn, a.only)
    except ScenarioError as e:
        print(f"murmur experiment: {e}", file=sys.stderr)
        return 2
    runs = [r for r in runs if matches(r["labels"], rule)]
    if not runs:
        print("murmur experiment: --only leaves no cell to run", file=sys.stderr)
        return 2
    try:
        check_cells(murmur, scn, runs, a.scenario)
    except ScenarioError as e:
        print(f"murmur experiment: {e}; nothing ran", file=sys.stderr)
        return 2
    if a.list:
        for r in runs:
            print(f"{r['id']}  {' '.join(flag_args(r['settings']))}"
                  + (f"  events {r['events']}" if r["events"] else ""))
        return 0
    out = os.path.abspath(a.out or os.path.join("experiments", scn["name"]))
    meta_path = os.path.join(out, "experiment.json")
    with open(a.scenario, encoding="utf-8") as f:
        scenario_text = f.read()
    if os.path.isfile(meta_path) and not a.restart:
        with open(meta_path) as f:
            old = json.load(f)
        if old.get("scenario_text") != scenario_text:
            print(f"murmur experiment: {out} holds a different scenario's runs; give another --out, "
                  "or --restart to discard them", file=sys.stderr)
            return 2
    elif a.restart and os.path.isdir(out):
        shutil.rmtree(os.path.join(out, "runs"), ignore_errors=True)
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    token_file = os.path.join(out, "admin.token")
    if not os.path.exists(token_file):
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (os.urandom(24).hex() + "\n").encode())
        os.close(fd)
    machine = f"{os.cpu_count()} cores"
    meta = {"name": scn["name"], "description": scn["description"], "backend": scn["backend"],
            "target_accuracy": scn["target_accuracy"], "axes": [x for x, _ in scn["axes"]],
            "report": scn["report"], "machine": machine, "scenario_text": scenario_text,
            # The whole grid: runs of an earlier --only stay in the report (it reads those done).
            "runs": [{"id": r["id"], "labels": r["labels"]} for r in all_runs]}
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + ".tmp", meta_path)

    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    done_count = sum(os.path.isfile(os.path.join(out, "runs", r["id"], "done.json")) for r in runs)
    print(f"murmur experiment: {scn['name']}: {len(runs)} runs ({done_count} already done) on "
          f"{machine} -> {out}", file=sys.stderr)
    prog = Progress(len(runs), done_count)
    failed = 0
    for r in runs:
        run_dir = os.path.join(out, "runs", r["id"])
        done_path = os.path.join(run_dir, "done.json")
        if os.path.isfile(done_path):
            with open(done_path) as f:
                failed += json.load(f)["exit"] != 0
            continue
        shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted run starts afresh
        prog.line(r, "running")
        done = run_one(murmur, r, run_dir, token_file, scn["timeout_s"], lambda: stop["now"])
        if done is None or stop["now"]:
            if prog.tty:
                sys.stderr.write("\n")
            print(f"murmur experiment: interrupted; {prog.done} of {len(runs)} runs done. The same "
                  f"command resumes ({r['id']} starts again).", file=sys.stderr)
            return 130
        with open(done_path + ".tmp", "w") as f:
            json.dump(done, f, indent=1)
        os.replace(done_path + ".tmp", done_path)
        failed += done["exit"] != 0
        prog.finish_run(done["seconds"])
        prog.line(r, "ok" if done["exit"] == 0 else f"exit {done['exit']}")
    if prog.tty:
        sys.stderr.write("\n")
    if failed:
        print(f"murmur experiment: {failed} of {len(runs)} runs failed (their logs: runs/<id>/)",
              file=sys.stderr)
    if not a.no_report:
        rc = REPORT.write_report(out)
        if rc != 0:
            return rc
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
