#!/usr/bin/python3
"""murmur report DIR: the CSV, the figures and one self-contained HTML page of a run directory
(murmur local --run-dir) or of an experiment directory (murmur experiment).

Writes into DIR/report/: runs.csv (one row per run), series.csv (one row per node report line),
the figures as PNG and SVG, and index.html with the figures embedded (it opens anywhere, alone).
Exit 2 when DIR holds no run.
"""
import argparse
import base64
import html
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as R  # noqa: E402
import scalars  # noqa: E402

import matplotlib  # noqa: E402
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
# Per node in the step-rate figure: distinct colours without red or grey (the injection's shade
# and the crash band); the injected node is told apart by its line's style, not a colour.
NODE_COLORS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
               "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39"]


def readable_axes(ax, accuracy_y=False, x=True):
    """At least three tick labels on each linear axis (the y axis only with x=False: categories
    keep their own ticks); an accuracy axis spans at least 0.01, so that a difference in the
    fourth decimal is not drawn as a trend."""
    for axis in (ax.xaxis, ax.yaxis) if x else (ax.yaxis,):
        if axis.get_scale() == "linear":
            axis.set_major_locator(MaxNLocator(nbins=6, min_n_ticks=3))
    if accuracy_y and ax.get_lines():
        ys = [y for line in ax.get_lines() for y in line.get_ydata() if y == y]
        if ys and max(ys) - min(ys) < 0.01:
            mid = (max(ys) + min(ys)) / 2
            ax.set_ylim(mid - 0.005, mid + 0.005)


def load(directory):
    """(experiment metadata, [run]) of an experiment directory or a single run directory."""
    meta_path = os.path.join(directory, "experiment.json")
    if os.path.isfile(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        out = []
        for entry in meta["runs"]:
            path = os.path.join(directory, "runs", entry["id"])
            if os.path.isfile(os.path.join(path, "done.json")):
                out.append(R.load_run(path, entry["labels"], entry["id"]))
        return meta, out
    if R.is_run_dir(directory):
        run = R.load_run(directory)
        run["labels"] = {"mode": R.mode_of(run)}
        meta = {"name": os.path.basename(os.path.normpath(directory)), "axes": ["mode"],
                "description": "a run of murmur local", "target_accuracy": None}
        return meta, [run]
    return None, []


def stats(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None, None
    return sum(vals) / len(vals), min(vals), max(vals)


class Figures:
    """Draws each figure to PNG and SVG in `out` and remembers them for the page."""

    def __init__(self, out):
        self.out = out
        self.made = []  # (file stem, title, caption)

    def save(self, fig, stem, title, caption):
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(self.out, f"{stem}.{ext}"), dpi=110)
        plt.close(fig)
        self.made.append((stem, title, caption))


def grid_axes(count, width=5.2, height=3.4):
    cols = min(3, max(1, count))
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[count:]:
        a.axis("off")
    return fig, flat[:count]


def time_to_accuracy(figs, runs, color, panel, target):
    colors = unique(r["labels"].get(color) for r in runs)
    cats = unique(r["labels"].get(panel) for r in runs) if panel else [None]
    fig, ax = plt.subplots(figsize=(min(15, max(6, 0.45 * len(cats) * max(1, len(colors)) + 3)), 4.2))
    width = 0.8 / max(1, len(colors))
    top = 0
    missing = []
    for ci, c in enumerate(colors):
        xs, ys, lo, hi = [], [], [], []
        for ki, k in enumerate(cats):
            group = [r for r in runs if r["labels"].get(color) == c and (panel is None or r["labels"].get(panel) == k)]
            if not group:
                continue
            times = [R.time_to(r["accuracy"] + ([r["final"]] if r.get("final") else []), target)
                     for r in group]
            mean, mn, mx = stats(times)
            x = ki + (ci - (len(colors) - 1) / 2) * width
            if mean is None:
                missing.append(x)
                continue
            xs.append(x)
            ys.append(mean)
            lo.append(mean - mn)
            hi.append(mx - mean)
            top = max(top, mx)
            if any(t is None for t in times):
                missing.append(x)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=str(c), color=PALETTE[ci % len(PALETTE)])
    for x in missing:
        ax.text(x, top * 0.02 if top else 0.1, "✕", ha="center", va="bottom", color="black", fontsize=12)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([str(k) if k is not None else "" for k in cats], rotation=15)
    ax.set_ylabel(f"seconds to {100 * target:.0f} % test accuracy")
    ax.set_xlabel(panel or "")
    ax.legend(fontsize=8, title=color)
    ax.grid(axis="y", alpha=0.3)
    readable_axes(ax, x=False)
    seeds = max(len([r for r in runs if r["labels"].get(color) == c]) for c in colors) // max(1, len(cats))
    figs.save(fig, "time_to_accuracy", f"Time to {100 * target:.0f} % accuracy",
              f"Mean over {seeds} seed(s) per bar; the error bars span the fastest and the slowest "
              "seed. ✕: a seed (or every seed) never reached the target within its budget.")


def curves(figs, runs, color, panel, which):
    cats = unique(r["labels"].get(panel) for r in runs) if panel else [None]
    colors = unique(r["labels"].get(color) for r in runs)
    fig, axes = grid_axes(len(cats))
    for ax, k in zip(axes, cats):
        for r in runs:
            if panel and r["labels"].get(panel) != k:
                continue
            acc = r["accuracy"]
            if not acc:
                continue
            ci = colors.index(r["labels"].get(color))
            if which == "time":
                xs = [t for t, _ in acc]
            else:
                sent = R.bytes_curve(r)
                xs = [bytes_at(sent, t) / 1e6 for t, _ in acc]
            ax.plot(xs, [a for _, a in acc], color=PALETTE[ci % len(PALETTE)], alpha=0.8, lw=1.4, marker=".", ms=4,
                    label=str(r["labels"].get(color)))
            if r.get("final"):  # every test row, where the line's evaluations take a sample
                t, a = r["final"]
                x = t if which == "time" else bytes_at(R.bytes_curve(r), t) / 1e6
                ax.plot([x], [a], color=PALETTE[ci % len(PALETTE)], marker="*", ms=9, ls="none",
                        label="final (all test rows)")
        ax.set_title(str(k) if k is not None else "", fontsize=10)
        ax.set_xlabel("seconds since start" if which == "time" else "MB sent per node")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
        xs_all = [x for l in ax.get_lines() for x in l.get_xdata()]
        if which == "bytes" and xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) > 10:
            ax.set_xscale("log")  # a log axis only over more than a decade (else one tick label)
        readable_axes(ax, accuracy_y=True)
        handles, labels = ax.get_legend_handles_labels()
        seen = {}
        for h, lab in zip(handles, labels):
            seen.setdefault(lab, h)
        ax.legend(seen.values(), seen.keys(), fontsize=7)
    if which == "time":
        figs.save(fig, "accuracy_vs_time", "Accuracy against wall time",
                  "The cluster's test accuracy (gossip: the mean of every node's latest periodic "
                  "evaluation, on a sample of the test rows; synchronous modes: the root's model), "
                  "one line per run. A star: the final evaluation, on every test row.")
    else:
        figs.save(fig, "accuracy_vs_bytes", "Accuracy against bytes sent",
                  "The same accuracy against the mean bytes a node had sent by then "
                  "(every message: updates and control), on a log scale when it spans more than "
                  "a decade. A star: the final evaluation, on every test row.")


def bytes_at(curve, t):
    last = 0.0
    for ts, b in curve:
        if ts > t:
            break
        last = b
    return last


def step_rates(figs, runs, panel):
    """Per-node step rate over time of one run per panel: the injected node, and when marked."""
    cats = unique(r["labels"].get(panel) for r in runs) if panel else [None]
    picked = []
    for k in cats:
        group = [r for r in runs if (panel is None or r["labels"].get(panel) == k) and not R.is_sync(r)]
        # A run where another node marked a straggler, else one with an injection, else the
        # first (of the grid's order: the first system, the first seed).
        group.sort(key=lambda r: (not first_marked(r),
                                  not any(l.get("injection") for ls in r["series"].values() for l in ls)))
        if group:
            picked.append((k, group[0]))
    if not picked:
        return
    fig, axes = grid_axes(len(picked))
    for ax, (k, run) in zip(axes, picked):
        t0 = run["t0"]
        injected_nodes = {n for n, ls in run["series"].items() if any(l.get("injection") for l in ls)}
        span = max((l["time"] for ls in run["series"].values() for l in ls), default=t0) - t0
        # About 30 windows over the run, none shorter than the nodes' report interval (0.1 s).
        window = min(1.0, max(0.1, span / 30))
        for node, lines in sorted(run["series"].items()):
            rate = step_rate(lines, t0, window)
            if not rate:
                continue
            hot = node in injected_nodes
            ax.plot([t for t, _ in rate], [v for _, v in rate], lw=2.4 if hot else 1.2,
                    ls="--" if hot else "-", color=NODE_COLORS[(node - 1) % len(NODE_COLORS)],
                    label=f"node {node}" + (" (injected)" if hot else ""), alpha=0.9)
        for node, crashed, back in crash_bands(run):
            ax.axvspan(crashed, back, color="#7f7f7f", alpha=0.12)
            ax.text(crashed, 0.02, f" node {node} down", transform=ax.get_xaxis_transform(),
                    fontsize=7, rotation=90, va="bottom", color="#555")
        for node in injected_nodes:
            for a, b, spec in injection_spans(run["series"][node], t0):
                ax.axvspan(a, b, color="#d62728", alpha=0.06)
                if len(injected_nodes) <= 2:
                    ax.text(a, 0.98, f" node {node}: {spec}", transform=ax.get_xaxis_transform(),
                            fontsize=6, va="top")
        for node, t in first_marked(run).items():
            ax.axvline(t, color="black", ls="--", lw=1)
            ax.text(t, 0.5, f" node {node} marked", transform=ax.get_xaxis_transform(), fontsize=7,
                    rotation=90, va="center")
        ax.set_title(f"{k if k is not None else ''}: {run['id']}", fontsize=8)
        ax.set_xlabel("seconds since start")
        ax.set_ylabel("steps per second")
        ax.grid(alpha=0.3)
        readable_axes(ax)
        ax.legend(fontsize=6)
    figs.save(fig, "step_rate", "Per-node step rate over time",
              "One gossip run per panel, a colour per node. The injected node's line is dashed and "
              "thicker, its injection shaded red and named; a black dashed line where another node "
              "first marked it a straggler (stopped waiting for it); grey where a crashed node was "
              "down until it started again (the times murmur local crashed and restarted it). Each "
              "panel shows a run where a straggler was marked if there is one. Rates over complete "
              "windows of 0.1-1 s (about 30 over the run) of the steps each node computed while it "
              "trained.")


def step_rate(lines, t0, window=1.0):
    """[(t, steps per second)] of the steps this node computed (local_steps), over windows of
    about `window` seconds within one process (a restart starts counting again)."""
    out, base = [], None
    for l in lines:
        # Training lines only: a final line comes after the finish, when no step is taken, and
        # would end every line with a dive to zero.
        if l.get("kind") != "train" or "local_steps" not in l:
            continue
        if base is not None and (l["local_steps"] < base["local_steps"] or
                                 l.get("elapsed_s", 0) < base.get("elapsed_s", 0)):
            base = None  # a new process: break the line
            if out:
                out.append((out[-1][0], float("nan")))
        if base is None:
            base = l
            continue
        dt = l["time"] - base["time"]
        if dt >= window:
            out.append(((l["time"] + base["time"]) / 2 - t0, (l["local_steps"] - base["local_steps"]) / dt))
            base = l
    return out


def restarts(lines, t0):
    """[(last line of a process, first of the next)] in seconds: where a node's series shows a
    new process (its clocks went back): it was down in between."""
    out = []
    for a, b in zip(lines, lines[1:]):
        if b.get("elapsed_s", 0) < a.get("elapsed_s", 0) or \
                b.get("local_steps", 0) < a.get("local_steps", 0):
            out.append((a["time"] - t0, b["time"] - t0))
    return out


def crash_bands(run):
    """[(node, down from, back at)] in seconds since the run's start: murmur local's own record
    of the crashes it injected (result.json) when there is one, else where a node's series shows
    a new process (the band then starts at its last line before the crash)."""
    injected = (run["result"] or {}).get("injected_crashes")
    if injected:
        end = max((l["time"] for ls in run["series"].values() for l in ls), default=run["t0"])
        return [(c["node"], c["at_s"], c["restarted_at_s"] if c.get("restarted_at_s") is not None
                 else end - run["t0"]) for c in injected]
    return [(node, a, b) for node, lines in run["series"].items()
            for a, b in restarts(lines, run["t0"])]


def injection_spans(lines, t0):
    spans, start, spec = [], None, ""
    for l in lines:
        inj = l.get("injection", "")
        if inj and start is None:
            start, spec = l["time"] - t0, inj
        elif not inj and start is not None:
            spans.append((start, l["time"] - t0, spec))
            start = None
    if start is not None:
        spans.append((start, lines[-1]["time"] - t0, spec))
    return spans


def first_marked(run):
    """node -> seconds when another node first listed it among its stragglers."""
    out = {}
    for lines in run["series"].values():
        for l in lines:
            for other in l.get("stragglers") or []:
                t = l["time"] - run["t0"]
                if other not in out or t < out[other]:
                    out[other] = t
    return out


def iteration_times(figs, runs, color, panel):
    sync = [r for r in runs if R.is_sync(r) and (r["result"] or {}).get("iteration_ms")]
    if not sync:
        return
    groups, per_gradient = {}, set()
    for r in sync:
        key = (str(r["labels"].get(color)), str(r["labels"].get(panel)) if panel else "")
        groups.setdefault(key, []).extend(r["result"]["iteration_ms"][5:] or r["result"]["iteration_ms"])
        # An async or SSP parameter server updates once per worker gradient.
        if R.mode_of(r) == "ps" and not str((r["result"] or {}).get("ps_sync", "full")).startswith("full"):
            per_gradient.add(key)
    keys = list(groups)  # the grid's order
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(keys) + 2), 4))
    ax.boxplot([groups[k] for k in keys], showfliers=True, whis=(5, 95))
    ax.set_xticks(range(1, len(keys) + 1))
    ax.set_xticklabels([(f"{a}\n{b}" if b else a) + ("\n(per gradient)" if (a, b) in per_gradient else "")
                        for a, b in keys], fontsize=7, rotation=20)
    ax.set_ylabel("iteration time (ms)")
    ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    figs.save(fig, "iteration_times", "Iteration times of the synchronous modes",
              "Per iteration, the root's time from sending the model to holding the decoded "
              "gradient (ring: rank 0's; a parameter server's between its updates, which an "
              "async or SSP server makes per worker gradient), every seed pooled, the first 5 "
              "iterations dropped; the box spans the quartiles, the whiskers the 5th and 95th "
              "percentiles.")


def link_rate(run):
    """The per-node link rate (bit/s) of a run on a uniform network of namespaces, else None
    (loopback, or a node of its own rate)."""
    m = re.fullmatch(r"netns:(.*)", str(run["config"].get("network", "")))
    if not m or re.search(r"(^|,)node\d+=", m.group(1)):
        return None
    rate = re.search(r"(^|,)rate=([0-9.]+)(bit|kbit|mbit|gbit)\b", m.group(1), re.I)
    if not rate:
        return None
    return float(rate.group(2)) * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[rate.group(3).lower()]


def time_by_link_rate(figs, runs, color, target):
    """Time to the target against the link rate (log axis), a line per `color` value; only for
    experiments over at least two uniform link rates."""
    rated = [(link_rate(r), r) for r in runs]
    rated = [(rate, r) for rate, r in rated if rate]
    rates = sorted({rate for rate, _ in rated})
    if len(rates) < 2:
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    top = 0
    never = []
    for ci, c in enumerate(unique(r["labels"].get(color) for _, r in rated)):
        xs, ys = [], []
        for rate in rates:
            times = [R.time_to(r["accuracy"] + ([r["final"]] if r.get("final") else []), target)
                     for x, r in rated if x == rate and r["labels"].get(color) == c]
            if not times:
                continue
            mean, _, mx = stats(times)
            if mean is None or any(t is None for t in times):
                never.append((rate / 1e6, PALETTE[ci % len(PALETTE)]))
            if mean is not None:
                xs.append(rate / 1e6)
                ys.append(mean)
                top = max(top, mx)
        ax.plot(xs, ys, marker="o", label=str(c), color=PALETTE[ci % len(PALETTE)])
    ax.set_xscale("log")
    ax.set_xticks([r / 1e6 for r in rates])
    ax.set_xlabel("link rate per node, each way (Mbit/s)")
    ax.set_ylabel(f"seconds to {100 * target:.0f} % test accuracy")
    if top and min(l.get_ydata().min() for l in ax.get_lines() if len(l.get_ydata())) * 10 < top:
        ax.set_yscale("log")  # labels at 1, 2, 5 of every decade: a decade alone has one or two
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if never:  # a band above every point for the ✕s, in each system's colour
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 2.5 if ax.get_yscale() == "log" else high * 1.15)
        for x, col in never:
            ax.text(x, 0.98, "✕", ha="center", va="top", color=col, fontsize=12,
                    transform=ax.get_xaxis_transform())
    ax.legend(fontsize=8, title=color)
    ax.grid(alpha=0.3, which="both")
    readable_axes(ax, x=False)
    figs.save(fig, "time_by_link_rate", f"Time to {100 * target:.0f} % accuracy by link rate",
              "Each node behind a link of this rate both ways (tc tbf in network namespaces); a point "
              "per system and rate, the mean over its seeds. ✕ along the top, in a system's colour: a "
              "seed of that system never reached the target within its budget at that rate.")


def unique(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def summary_rows(rows, color, panel):
    groups = {}
    for row in rows:
        groups.setdefault((row.get(color), row.get(panel) if panel else None), []).append(row)
    out = []
    for (c, k), group in groups.items():
        acc = stats([g["final_accuracy"] for g in group])
        ttt = stats([g["time_to_target_s"] for g in group])
        wall = stats([g["wall_s"] for g in group])
        byt = stats([g["bytes_per_node"] for g in group])
        out.append({color: c, **({panel: k} if panel else {}), "runs": len(group),
                    "ok": sum(1 for g in group if g["ok"]),
                    "final accuracy": fmt_range(acc, "{:.4f}"),
                    "time to target (s)": fmt_range(ttt, "{:.1f}") +
                    (f" ({sum(1 for g in group if g['time_to_target_s'] is None)} missed)"
                     if any(g["time_to_target_s"] is None for g in group) else ""),
                    "MB per node": fmt_range(tuple(None if v is None else v / 1e6 for v in byt), "{:.2f}"),
                    "wall (s)": fmt_range(wall, "{:.1f}")})
    return out


def fmt_range(s, f):
    mean, lo, hi = s
    if mean is None:
        return "–"
    if lo == hi:
        return f.format(mean)
    return f"{f.format(mean)} [{f.format(lo)}–{f.format(hi)}]"


def table_html(rows):
    if not rows:
        return "<p>No runs.</p>"
    cols = list(rows[0].keys())
    for r in rows:
        cols += [k for k in r if k not in cols]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if r.get(c) is None else str(r.get(c)))}</td>"
                                    for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }}
figure {{ margin: 1.5em 0; }} figure img {{ max-width: 100%; border: 1px solid #ddd; }}
figcaption {{ font-size: 0.9em; color: #555; }}
table {{ border-collapse: collapse; font-size: 0.8em; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}
th {{ background: #f3f3f3; }} .broken {{ color: #b00; font-weight: bold; }}
.scroll {{ overflow-x: auto; }}
</style></head>
<body>
<h1>{title}</h1>
<p>{description}</p>
<p>{facts}</p>
<h2>Summary</h2>
<div class="scroll">{summary}</div>
<h2>Figures</h2>
{figures}
<h2>Every run</h2>
<p>Also as <a href="runs.csv">runs.csv</a>; every node's time series in <a href="series.csv">series.csv</a>.</p>
<div class="scroll">{table}</div>
<script>
// Says on the page (and in data-figures) how many figures loaded; a broken one is named.
window.addEventListener("load", function () {{
  var imgs = document.querySelectorAll("figure img"), ok = 0;
  imgs.forEach(function (img) {{
    if (img.complete && img.naturalWidth > 0) {{ ok++; return; }}
    var p = document.createElement("p"); p.className = "broken";
    p.textContent = "This figure did not load: " + img.alt; img.parentNode.appendChild(p);
  }});
  document.body.setAttribute("data-figures", ok + "/" + imgs.length);
}});
</script>
</body></html>
"""


def write_report(directory, target=None):
    meta, loaded = load(directory)
    if meta is None:
        print(f"murmur report: {directory} holds no run (no result.json or series/, and no "
              "experiment.json)", file=sys.stderr)
        return 2
    if not loaded:
        print(f"murmur report: {directory}: no run has finished yet", file=sys.stderr)
        return 2
    target = target or meta.get("target_accuracy") or 0.8
    axes = [a for a in meta.get("axes", []) if a != "seed"]
    report = meta.get("report", {})
    color = report.get("color") or (axes[0] if axes else "mode")
    panel = report.get("panel") or next((a for a in axes if a != color), None)
    out = os.path.join(directory, "report")
    os.makedirs(out, exist_ok=True)
    rows = [R.run_row(r, target) for r in loaded]
    R.write_csv(os.path.join(out, "runs.csv"), rows)
    R.write_csv(os.path.join(out, "series.csv"), [s for r in loaded for s in R.series_rows(r)])
    figs = Figures(out)
    time_to_accuracy(figs, loaded, color, panel, target)
    time_by_link_rate(figs, loaded, color, target)
    curves(figs, loaded, color, panel, "time")
    curves(figs, loaded, color, panel, "bytes")
    step_rates(figs, loaded, panel)
    iteration_times(figs, loaded, color, panel)
    scalars.program_scalars(figs, loaded, grid_axes, NODE_COLORS, readable_axes)
    parts = []
    for stem, title, caption in figs.made:
        with open(os.path.join(out, f"{stem}.png"), "rb") as f:
            data = base64.b64encode(f.read()).decode()
        parts.append(f'<figure id="{stem}"><h3>{html.escape(title)}</h3>'
                     f'<img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
                     f'<figcaption>{html.escape(caption)} (<a href="{stem}.svg">SVG</a>, '
                     f'<a href="{stem}.png">PNG</a>)</figcaption></figure>')
    total = len(meta.get("runs", [])) or len(loaded)
    facts = (f"{len(loaded)} of {total} runs finished; target accuracy {100 * target:.0f} %; "
             f"grouped by {html.escape(color)}" + (f" and {html.escape(panel)}" if panel else "") +
             (f"; machine: {html.escape(meta['machine'])}" if meta.get("machine") else ""))
    page = PAGE.format(title=html.escape(f"murmur experiment: {meta.get('name', '')}"),
                       description=html.escape(meta.get("description", "")), facts=facts,
                       summary=table_html(summary_rows(rows, color, panel)),
                       figures="\n".join(parts), table=table_html(rows))
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    print(f"murmur report: {len(loaded)} runs, {len(figs.made)} figures -> {os.path.join(out, 'index.html')}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="murmur report", description=__doc__.split("\n")[0])
    p.add_argument("dir", help="a run directory (murmur local --run-dir) or an experiment directory")
    p.add_argument("--target-accuracy", type=float, default=None,
                   help="the accuracy time-to-accuracy is measured to (default: the scenario's, else 0.8)")
    a = p.parse_args(argv)
    if a.target_accuracy is not None and not 0 < a.target_accuracy <= 1:
        p.error(f"--target-accuracy {a.target_accuracy}: must be in (0, 1]")
    return write_report(a.dir, a.target_accuracy)


if __name__ == "__main__":
    sys.exit(main())
