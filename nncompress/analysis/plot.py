"""Learning curves: moving-average bits per byte against position in the file."""

from __future__ import annotations

import sys

import numpy as np

from ..plotting import pyplot


def moving_average(values: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(end positions, mean of values over the `window` bytes ending there)."""
    n = values.shape[0]
    window = max(1, min(window, n))
    if n == 0:
        return np.zeros(0), np.zeros(0)
    csum = np.concatenate([[0.0], np.cumsum(values)])
    avg = (csum[window:] - csum[:-window]) / window
    return np.arange(window, n + 1), avg


def auto_window(n: int) -> int:
    return int(min(5000, max(50, n // 100)))


def cumulative_average(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions 1..n, mean of values over the first k bytes): the archive's bpc had the file
    ended there."""
    n = values.shape[0]
    return np.arange(1, n + 1), np.cumsum(values) / np.arange(1, n + 1)


def write_plot(results: list[dict], out: str, window: int | None = None, max_files: int = 8) -> str:
    """PNG learning curves, one row per file (results need keep_costs=True): on the left the
    moving-average bits per byte vs position, nncompress and the adaptive order-2 baseline; on
    the right the cumulative bits per byte (what the whole archive would cost had the file ended
    there) on a log scale of position, against the comparators' whole-file results."""
    plt = pyplot()

    shown = [r for r in results if r["bytes"]][:max_files]
    if len([r for r in results if r["bytes"]]) > max_files:
        print(f"nncompress analyze: plotting the first {max_files} files only", file=sys.stderr)
    if not shown:
        raise ValueError("nothing to plot (empty files)")
    fig, axes = plt.subplots(len(shown), 2, figsize=(15, 3.6 * len(shown)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2]})
    for ax, side, r in zip(axes[:, 0], axes[:, 1], shown):
        _cumulative_panel(side, r)
        w = window or auto_window(r["bytes"])
        level = r["nncompress"]["level"]
        for key, label, color in [("nncompress", f"nncompress -{level} (RNNME, online)", "C3"),
                                  ("order2", "adaptive order-2 (KT estimator)", "C0")]:
            x, y = moving_average(r["costs"][key], w)
            step = max(1, x.shape[0] // 4000)  # a few thousand points are plenty for a line
            ax.plot(x[::step], y[::step], color=color, linewidth=1.0, label=label)
        for key, label, style in [("gzip", "gzip -9", ":"), ("xz", "xz -9e", "--"), ("paq", "paq9a", "-.")]:
            ref = r["reference"].get(key)
            if ref:
                ax.axhline(ref["bpc"], color="0.45", linestyle=style, linewidth=0.9,
                           label=f"{label} (whole file, {ref['bpc']:.2f})")
        ax.set_xlim(0, r["bytes"])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("position in file (bytes)")
        ax.set_ylabel(f"bits per byte (mean of last {w:,} bytes)")
        ax.set_title(f"{r['name']}: learning curve ({r['bytes']:,} bytes; nncompress "
                     f"{r['nncompress']['code_length_bpc']:.3f} bpc overall)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out



def _cumulative_panel(ax, r: dict) -> None:
    level = r["nncompress"]["level"]
    for key, label, color in [("nncompress", f"nncompress -{level}", "C3"),
                              ("order2", "adaptive order-2", "C0")]:
        x, y = cumulative_average(r["costs"][key])
        keep = np.unique(np.geomspace(1, x.shape[0], num=min(2000, x.shape[0])).astype(np.int64)) - 1
        ax.plot(x[keep], y[keep], color=color, linewidth=1.0, label=label)
    for key, label, style in [("gzip", "gzip -9", ":"), ("xz", "xz -9e", "--"), ("paq", "paq9a", "-.")]:
        ref = r["reference"].get(key)
        if ref:
            ax.axhline(ref["bpc"], color="0.45", linestyle=style, linewidth=0.9,
                       label=f"{label} ({ref['bpc']:.2f})")
    ax.set_xscale("log")
    ax.set_xlim(1, max(r["bytes"], 2))
    ax.set_ylim(0, 9)
    ax.set_xlabel("first bytes of the file (log scale)")
    ax.set_ylabel("cumulative bits per byte")
    ax.set_title("cost so far, against the whole-file comparators")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="lower left", fontsize=8)
