"""The benchmark chart: bpc against compression speed, one panel per corpus set."""

from __future__ import annotations

from ..plotting import pyplot
from .report import Report, files_label


def plot(report: Report, path, title: str = "nncompress bench") -> None:
    """bpc against compression speed (log x), one point per compressor, one panel per corpus set."""
    plt = pyplot()
    groups = [g for g in report.groups if any(t["bpc"] is not None for t in report.totals() if t["group"] == g)]
    if not groups:
        groups = list(report.groups)[:1]
    count = max(1, len(groups))
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows + 0.8), squeeze=False)
    comps = [c for c in report.comparators if c.available]
    markers = "osD^v<>pPX*hH"
    cmap = plt.get_cmap("tab20")
    style = {c.key: (cmap(i % 20), markers[i % len(markers)]) for i, c in enumerate(comps)}
    totals = report.totals()
    for ax, group in zip(axes.flat, groups):
        for t in totals:
            if t["group"] != group or t["bpc"] is None or not t["comp_kbs"]:
                continue
            color, marker = style[t["compressor"]]
            ours = t["compressor"].startswith("nnc-")
            ax.scatter(t["comp_kbs"], t["bpc"], color=color, marker=marker, s=130 if ours else 60, label=t["label"],
                       edgecolors="black", linewidths=0.5, zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("compression speed (KB/s, log scale)")
        ax.set_ylabel("bits per character (bpc)")
        ax.set_title(f"{group} ({files_label(len(report.groups[group]))})")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], linestyle="", marker=style[c.key][1], color=style[c.key][0],
                          markeredgecolor="black", markersize=11 if c.key.startswith("nnc-") else 8,
                          label=c.label) for c in comps]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), frameon=False)
    fig.suptitle(f"{title}: bits per character vs compression speed, per corpus set "
                 "(lower = smaller, right = faster)")
    fig.tight_layout(rect=(0, 0.06 + 0.03 * ((len(handles) - 1) // 5), 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


