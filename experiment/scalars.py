"""The figure of a library program's own scalars (GossipOptimizer.log / murmur.Peer.log): each
name's latest value in every node report line, over time, one panel per name and one line per
node. Drawn by report.py when a run's series carry any."""


def names(runs):
    """The scalar names any node of any run logged, sorted."""
    return sorted({name for r in runs for lines in r["series"].values() for line in lines
                   for name in (line.get("scalars") or {})})


def program_scalars(figs, runs, grid_axes, palette, readable_axes):
    found = names(runs)
    if not found:
        return
    fig, axes = grid_axes(len(found))
    for ax, name in zip(axes, found):
        values = []
        for run in runs:
            for k, (node, lines) in enumerate(sorted(run["series"].items())):
                points = [(line["time"] - run["t0"], line["scalars"][name]) for line in lines
                          if name in (line.get("scalars") or {})]
                if not points:
                    continue
                values += [v for _, v in points]
                label = f"node {node}" + (f" ({run['id']})" if len(runs) > 1 else "")
                ax.plot([t for t, _ in points], [v for _, v in points], lw=1.4, marker=".",
                        ms=4, color=palette[k % len(palette)], label=label)
        # A loss falls by decades: on a linear axis all but its first points lie on the floor.
        if values and min(values) > 0 and max(values) > 100 * min(values):
            ax.set_yscale("log")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("seconds since start")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        readable_axes(ax)
        ax.legend(fontsize=7)
    figs.save(fig, "program_scalars", "The program's own figures",
              "What the program logged (GossipOptimizer.log), each name's latest value in every "
              "report line of every node, against wall time.")
