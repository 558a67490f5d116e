"""A benchmark report: results, totals per set, text and Markdown tables, JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..comparators import Comparator
from .targets import BenchFile
from .worker import MAX_REPS

KB = 1024


def rate(size: int, seconds) -> float | None:
    """KB/s of original data (None when nothing was timed)."""
    return size / KB / seconds if seconds else None

@dataclass
class Report:
    files: list[BenchFile]
    groups: dict[str, list[str]]
    comparators: list[Comparator]
    results: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def totals(self) -> list[dict]:
        return aggregate(self)

    def to_json(self) -> dict:
        return {
            "meta": self.meta,
            "method": METHOD,
            "comparators": [{k: v for k, v in asdict(c).items() if k != "spec"} | {"spec": c.spec}
                            for c in self.comparators],
            "files": [{"name": f.name, "path": str(f.path), "bytes": f.bytes, "sha256": f.sha256}
                      for f in self.files],
            "groups": self.groups,
            "results": self.results,
            "totals": self.totals(),
        }


def report_from_json(blob: dict) -> Report:
    """Rebuild a Report from ``Report.to_json()`` output (to re-render tables and charts)."""
    comparators = [Comparator(c["key"], c["label"], c.get("spec", {}), c.get("version", ""),
                              c.get("available", True), c.get("note", "")) for c in blob["comparators"]]
    files = [BenchFile(f["name"], Path(f["path"]), f["bytes"], f["sha256"]) for f in blob["files"]]
    return Report(files, blob["groups"], comparators, list(blob["results"]), dict(blob.get("meta", {})))


METHOD = ("Each (file, compressor) pair runs in two fresh worker processes (compress, decompress); "
          "the output is compared byte for byte with the original. bpc = 8 x compressed bytes / "
          "original bytes, container included. Speeds are single-threaded and warm: the fastest of "
          f"repeated calls totalling at least the minimum time (at most {MAX_REPS} calls), in KB/s "
          "of original data (1 KB = 1024 bytes); nncompress first compresses and decompresses a few "
          "bytes to compile or load its numba kernels, reported as warm-up s. Peak memory is the "
          "worker's peak resident set size (ru_maxrss from os.wait4, i.e. getrusage of that child, "
          "including its own children, read by a bare launcher process so that the benchmark's own "
          "memory does not leak in), interpreter and imported modules included.")



def aggregate(report: Report) -> list[dict]:
    """Per group and compressor: totals over the group's files (complete only if every file ran)."""
    rows = {(r["file"], r["compressor"]): r for r in report.results}
    sizes = {f.name: f.bytes for f in report.files}
    out = []
    for group, names in report.groups.items():
        for comparator in report.comparators:
            if not comparator.available:
                continue
            found = [rows[(n, comparator.key)] for n in names if (n, comparator.key) in rows]
            if not found:
                continue
            ok = [r for r in found if r["roundtrip"] == "ok"]
            complete = len(ok) == len(names)
            original = sum(sizes[n] for n in names)
            total = sum(r["compressed"] for r in found if r["compressed"] is not None)
            comp_s = sum(r["comp_s"] for r in ok)
            decomp_s = sum(r["decomp_s"] for r in ok)
            peaks = [r["comp_peak_mib"] for r in found if r["comp_peak_mib"]] + \
                    [r["decomp_peak_mib"] for r in found if r["decomp_peak_mib"]]
            failed = len(found) - len(ok)
            out.append({
                "group": group, "compressor": comparator.key, "label": comparator.label,
                "files": len(names), "measured": len(found), "complete": complete,
                "original": original, "compressed": total if complete else None,
                "bpc": 8 * total / original if complete and original else None,
                "mean_bpc": sum(r["bpc"] for r in ok) / len(ok) if complete and ok else None,
                "comp_kbs": rate(original, comp_s) if complete else None,
                "decomp_kbs": rate(original, decomp_s) if complete else None,
                "peak_mib": max(peaks) if peaks else None,
                "roundtrip": "ok" if complete else (f"FAILED ({failed})" if failed else
                                                   f"incomplete ({len(found)}/{len(names)})"),
            })
    return out



def fmt_value(value, spec: str, empty: str = "-") -> str:
    return empty if value is None else format(value, spec)


def _speed(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


FILE_COLUMNS = ["file", "compressor", "bytes", "compressed", "bpc", "comp KB/s", "decomp KB/s",
                "comp MiB", "decomp MiB", "warm-up s", "round trip"]


def _file_cells(row: dict) -> list[str]:
    trip = row["roundtrip"] if row["roundtrip"] != "error" else f"error: {row['error']}"
    if row.get("cached"):
        trip += " (cached)"
    return [row["file"], row["label"], f"{row['bytes']:,}", fmt_value(row["compressed"], ","), fmt_value(row["bpc"], ".3f"),
            _speed(row["comp_kbs"]), _speed(row["decomp_kbs"]), fmt_value(row["comp_peak_mib"], ".0f"),
            fmt_value(row["decomp_peak_mib"], ".0f"), fmt_value(row["warmup_s"], ".2f", ""), trip]


TOTAL_COLUMNS = ["compressor", "files", "original", "compressed", "bpc", "mean bpc", "comp KB/s",
                 "decomp KB/s", "peak MiB", "round trip"]


def _total_cells(row: dict) -> list[str]:
    return [row["label"], str(row["files"]), f"{row['original']:,}", fmt_value(row["compressed"], ","),
            fmt_value(row["bpc"], ".3f"), fmt_value(row["mean_bpc"], ".3f"), _speed(row["comp_kbs"]),
            _speed(row["decomp_kbs"]), fmt_value(row["peak_mib"], ".0f"), row["roundtrip"]]


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    left = {0, 1} if header[0] == "file" else {0}
    left.add(len(header) - 1)

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _md_table(header: list[str], rows: list[list[str]], right_from: int, last_left: bool = True) -> str:
    align = ["---" if i < right_from or (last_left and i == len(header) - 1) else "---:"
             for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def files_label(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def _sorted_totals(report: Report, group: str) -> list[dict]:
    rows = [t for t in report.totals() if t["group"] == group]
    return sorted(rows, key=lambda t: (t["bpc"] is None, t["bpc"] or 0))


def skipped_notes(report: Report) -> list[str]:
    return [f"{c.label}: {c.note}" for c in report.comparators if not c.available]


def format_text(report: Report) -> str:
    parts = []
    notes = skipped_notes(report)
    if notes:
        parts.append("\n".join(notes))
    parts.append(_text_table(FILE_COLUMNS, [_file_cells(r) for r in report.results]))
    failures = [r for r in report.results if r["roundtrip"] != "ok"]
    if failures:
        parts.append("FAILED round trips:\n" + "\n".join(
            f"  {r['file']}, {r['label']}: {r['roundtrip']} - {r['error']}" for r in failures))
    for group, names in report.groups.items():
        rows = _sorted_totals(report, group)
        if rows:
            parts.append(f"{group}: {files_label(len(names))}, total over the set\n" +
                         _text_table(TOTAL_COLUMNS, [_total_cells(t) for t in rows]))
    return "\n\n".join(parts) + "\n"


def format_markdown(report: Report, preamble: str = "") -> str:
    lines = [preamble.rstrip() + "\n"] if preamble else []
    notes = skipped_notes(report)
    lines.append("## Totals per corpus set\n")
    lines.append("Sorted by bpc. *compressed* is the sum over the set's files (how Calgary and Canterbury "
                 "totals are reported); *bpc* = 8 × compressed / original; *mean bpc* is the unweighted "
                 "mean of the files' bpc; speeds are total original bytes / total time; *peak MiB* is the "
                 "largest peak RSS of any run in the set.\n")
    for group, names in report.groups.items():
        rows = _sorted_totals(report, group)
        if not rows:
            continue
        lines.append(f"### {group} ({files_label(len(names))}: {', '.join(names)})\n")
        lines.append(_md_table(TOTAL_COLUMNS, [_total_cells(t) for t in rows], 1) + "\n")
    failures = [r for r in report.results if r["roundtrip"] != "ok"]
    if failures:
        lines.append("## Failed round trips\n")
        lines.append("These runs did not give back the original bytes; their sets have no total for that "
                     "compressor.\n")
        lines += [f"* {r['file']}, {r['label']} ({r['version']}): {r['roundtrip']} - {r['error']}" for r in failures]
        lines.append("")
    lines.append("## bpc per file\n")
    keys = [c for c in report.comparators if c.available]
    by = {(r["file"], r["compressor"]): r for r in report.results}
    matrix = []
    for f in report.files:
        cells = [f.name, f"{f.bytes:,}"]
        for c in keys:
            r = by.get((f.name, c.key))
            cells.append("" if r is None else (fmt_value(r["bpc"], ".3f") if r["roundtrip"] == "ok" else f"**{r['roundtrip']}**"))
        matrix.append(cells)
    lines.append(_md_table(["file", "bytes"] + [c.label for c in keys], matrix, 1, last_left=False) + "\n")
    lines.append("## Every run\n")
    lines.append(_md_table(FILE_COLUMNS, [_file_cells(r) for r in report.results], 2) + "\n")
    lines.append("## Method\n")
    lines.append(METHOD + "\n")
    if notes:
        lines.append("Skipped compressors:\n")
        lines += [f"* {n}" for n in notes]
        lines.append("")
    lines.append("Compressor versions:\n")
    lines += [f"* {c.label}: {c.version}" for c in report.comparators if c.available]
    return "\n".join(lines) + "\n"



def write_outputs(report: Report, *, json_path=None, markdown_path=None, plot_path=None, preamble: str = "") -> None:
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report.to_json(), f, indent=1)
            f.write("\n")
    if markdown_path:
        with open(markdown_path, "w", encoding="utf-8") as f:
            f.write(format_markdown(report, preamble))
    if plot_path:
        from .plot import plot

        plot(report, plot_path)


