"""`nncompress -l`: the streams of archives, their sizes, ratio, bpc, level and format version,
as a table or as JSON.  Reads only the block frames (api.list_streams), never the payloads."""

from __future__ import annotations

from . import NNCError
from .cli_io import STDIN_NAME, STDOUT_NAME, Warn, std_stream
from .outputs import write_all


def list_archives(runner, files) -> None:
    """-l: one row per stream of each archive, printed as a table or JSON; a file that cannot be
    listed is reported through the runner (error or warning) and the rest are still listed."""
    from . import api

    rows = []
    for name in files:
        shown = STDIN_NAME if name == "-" else name
        try:
            runner.check_input(name, to_stdout=True)
            source = std_stream("stdin") if name == "-" else open(name, "rb")
            try:
                for s in api.list_streams(source):
                    rows.append({
                        "file": name,
                        "compressed": s.compressed_size,
                        "uncompressed": s.uncompressed_size,
                        "ratio": round(s.ratio, 4) if s.ratio is not None else None,
                        "bpc": (round(8 * s.compressed_size / s.uncompressed_size, 4)
                                if s.uncompressed_size else None),
                        "level": s.level,
                        "model": "rnnme" if s.params.rnnme_pure else "cm",  # branch neural2
                        "format_version": s.format_version,
                        "preset": s.preset,
                        "blocks": s.blocks,
                        "crc32": f"{s.crc32:08x}",
                        "params": s.params.describe(),
                    })
            finally:
                if name != "-":
                    source.close()
        except Warn as exc:
            runner.warn(shown, str(exc))
        except (NNCError, ValueError) as exc:
            runner.error(shown, str(exc))
        except OSError as exc:
            runner.error(shown, exc.strerror or str(exc))
    try:
        out = std_stream("stdout")
        write_all(out, format_listing(rows, runner.args.json).encode())
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        runner.error(STDOUT_NAME, exc.strerror or str(exc))


def format_listing(rows, as_json: bool) -> str:
    """The rows as JSON, or as a table with a totals line when there is more than one stream."""
    if as_json:
        import json

        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    lines = [f"{'compressed':>12} {'uncompressed':>12} {'ratio':>6} {'bpc':>7} {'level':>6} "
             f"{'version':>7}  name"]

    def line(compressed, uncompressed, level, version, name):
        ratio = f"{compressed / uncompressed:.3f}" if uncompressed else "-"
        bpc = f"{8 * compressed / uncompressed:.3f}" if uncompressed else "-"
        lines.append(f"{compressed:>12} {uncompressed:>12} {ratio:>6} {bpc:>7} {level:>6} "
                     f"{version:>7}  {name}")

    for row in rows:
        level = row["level"] or ("rnnme" if row.get("model") == "rnnme" else "custom")
        line(row["compressed"], row["uncompressed"], str(level),
             row["format_version"], row["file"])
    if len(rows) > 1:
        files = len({row["file"] for row in rows})
        line(sum(r["compressed"] for r in rows), sum(r["uncompressed"] for r in rows), "",
             "", f"(totals: {len(rows)} streams in {files} file{'s' * (files != 1)})")
    return "\n".join(lines) + "\n"
