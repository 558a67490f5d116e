"""The surprisal page: every character coloured by its cost under the model, the model's top-5
predictions on hover.

The page stays light (about 19 bytes per character shown, against ~85 for one element with a
tooltip per character): each file's text travels as compact data - the raw bytes, one kind code
per displayed character, every byte's cost in centibits (uint16) and, per character, the five
likeliest bytes with an index into a table of percentage labels (uint8), all base64 - and one
small script (page.js, shipped beside this module) draws it with the colour classes of page.css.
Without JavaScript the numbers are still there; the text is not.
"""

from __future__ import annotations

import base64
import html
import json
import unicodedata
from importlib import resources
from pathlib import Path

import numpy as np

from ..model.params import ModelParams
from ..presets import DEFAULT_LEVEL
from .costs import top_predictions
from .entropy import HIGH_ORDER_NOTE
from .report import fmt_number

DEFAULT_HTML_LIMIT = 20_000

# Colour bins by cost in bits (upper edges), light to dark.
BIN_EDGES = (0.25, 0.5, 1, 2, 3, 4, 6, 8, 12)
BIN_COLOURS = ("#ffffff", "#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02",
               "#993404", "#662506", "#3f007d")


def cost_bin(cost: float) -> int:
    for i, edge in enumerate(BIN_EDGES):
        if cost < edge:
            return i
    return len(BIN_EDGES)


def byte_label(b: int) -> str:
    """A short, safe label for one byte value in tooltips."""
    if b == 0x20:
        return "␣"
    if 0x21 <= b <= 0x7E:
        return chr(b)
    return {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}.get(b, f"\\x{b:02x}")


def _utf8_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 character starting at data[i], or 0 if none does."""
    b = data[i]
    if b < 0x80:
        return 1
    width = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
    if not width or i + width > len(data):
        return 0
    try:
        data[i : i + width].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return width


def _unsafe_char(ch: str) -> bool:
    """Characters shown escaped: controls, format characters (e.g. bidi overrides), line and
    paragraph separators, surrogates, private use and unassigned code points."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def char_groups(data: bytes) -> list[tuple[int, int, str, str]]:
    """Split bytes into display groups (start, end, kind, text): kind 'char' (one UTF-8
    character, text already HTML-escaped), 'newline' (LF or CR LF), 'tab', or 'escape'
    (a control byte, a byte that is not valid UTF-8, or an unsafe code point, shown as \\xNN
    / \\uNNNN)."""
    groups = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b == 0x0A:
            groups.append((i, i + 1, "newline", ""))
            i += 1
        elif b == 0x0D and i + 1 < n and data[i + 1] == 0x0A:
            groups.append((i, i + 2, "newline", ""))
            i += 2
        elif b == 0x09:
            groups.append((i, i + 1, "tab", "\t"))
            i += 1
        else:
            width = _utf8_len(data, i)
            if width == 0:
                groups.append((i, i + 1, "escape", f"\\x{b:02x}"))
                i += 1
                continue
            ch = data[i : i + width].decode("utf-8")
            if _unsafe_char(ch):
                text = f"\\x{ord(ch):02x}" if ord(ch) < 0x100 and width == 1 else f"\\u{ord(ch):04x}"
                groups.append((i, i + width, "escape", text))
            else:
                groups.append((i, i + width, "char", html.escape(ch, quote=True)))
            i += width
    return groups


def _pct(p: float) -> str:
    pct = 100 * p
    return f"{pct:.0f}%" if pct >= 9.95 else f"{pct:.1f}%" if pct >= 0.095 else "<0.1%"


def _css_bins() -> str:
    rules = []
    for i, colour in enumerate(BIN_COLOURS):
        fg = "#fff" if i >= 6 else "#000"
        rules.append(f".c{i}{{background:{colour};color:{fg}}}")
    return "\n".join(rules)


def _legend() -> str:
    parts = []
    lows = (0,) + BIN_EDGES
    for i in range(len(BIN_COLOURS)):
        label = f"{lows[i]:g}–{BIN_EDGES[i]:g}" if i < len(BIN_EDGES) else f"≥ {lows[i]:g}"
        parts.append(f'<span class="c{i}">{label}</span>')
    return ('<p class="legend">Cost in bits per character: ' + "".join(parts) + "</p>")


def _numbers_table(r: dict) -> str:
    nn = r["nncompress"]
    rows = [("size", f"{r['bytes']:,} bytes"), ("distinct byte values", str(r["distinct_bytes"]))]
    for e in r["entropy"]:
        frac = e["single_context_fraction"]
        extra = f" ({frac:.1%} of bytes have a context seen once)" if e["order"] >= 2 and frac else ""
        rows.append((f"H(X | {e['order']} previous bytes)", f"{fmt_number(e['bits_per_byte'])} bpc{extra}"))
    rows.append(("adaptive order-2 (KT estimator)", f"{fmt_number(r['order2_adaptive']['bpc'])} bpc"))
    for key, label in [("gzip", "gzip -9 (zlib)"), ("xz", "xz -9e (lzma)"), ("paq", "PAQ (paq9a)")]:
        ref = r["reference"].get(key)
        rows.append((label, f"{fmt_number(ref['bpc'])} bpc ({ref['bytes']:,} bytes)" if ref else "not run"))
    rows.append((f"nncompress -{nn['level']}, ideal code length",
                 f"{fmt_number(nn['code_length_bpc'])} bpc ({nn['code_length_bits'] / 8:,.0f} bytes)"))
    rows.append((f"nncompress -{nn['level']}, real .nnc file",
                 f"{fmt_number(nn['compressed_bpc'])} bpc ({nn['compressed_bytes']:,} bytes)"))
    body = "".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td></tr>" for a, b in rows)
    return f"<table><tr><th>measure (whole file)</th><th>value</th></tr>{body}</table>"


# Tooltip percentages as `_pct` writes them, so that a probability travels as one byte.
PCT_LABELS = (["<0.1%"] + [f"{tenths / 10:.1f}%" for tenths in range(1, 100)]
              + [f"{percent}%" for percent in range(10, 101)])
_PCT_INDEX = {label: i for i, label in enumerate(PCT_LABELS)}

# One code per displayed character: a character of 1..4 bytes, a line end (LF, CR LF), a tab, or
# 1..4 bytes shown escaped (\xNN, \uNNNN).
_CHAR_CODES = "1234"
_ESCAPE_CODES = "ABCD"


def _kind_code(kind: str, start: int, end: int) -> str:
    width = end - start
    if kind == "newline":
        return "n" if width == 1 else "r"
    if kind == "tab":
        return "t"
    return (_ESCAPE_CODES if kind == "escape" else _CHAR_CODES)[width - 1]


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def page_data(r: dict, limit: int = DEFAULT_HTML_LIMIT, params: ModelParams | None = None) -> dict:
    """The compact data page.js draws one file from (needs keep_costs=True): the first `limit`
    bytes cut at a character boundary."""
    data = r["data"]
    groups = [g for g in char_groups(data[: limit + 4]) if g[1] <= limit]
    shown = groups[-1][1] if groups else 0
    _, top_bytes, top_p = top_predictions(data[:shown], r["nncompress"]["level"] or DEFAULT_LEVEL, params)
    starts = [start for start, _, _, _ in groups]
    centibits = np.minimum(np.round(r["costs"]["nncompress"][:shown] * 100), 65535).astype("<u2")
    pct = np.array([[_PCT_INDEX[_pct(float(p))] for p in row] for row in top_p[starts]], dtype=np.uint8)
    return {"bytes": base64.b64encode(data[:shown]).decode("ascii"),
            "kinds": "".join(_kind_code(kind, start, end) for start, end, kind, _ in groups),
            "costs": _b64(centibits),
            "top": _b64(top_bytes[starts].astype(np.uint8).reshape(-1, 5) if groups else np.zeros(0, np.uint8)),
            "pct": _b64(pct.reshape(-1, 5) if groups else np.zeros(0, np.uint8))}


def _script_json(value) -> str:
    """JSON that cannot end the <script> element it sits in."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def surprisal_html(r: dict, limit: int = DEFAULT_HTML_LIMIT, params: ModelParams | None = None,
                   index: int = 0) -> str:
    """The section for one analysed file (needs keep_costs=True): numbers, notes, the text's data."""
    data = page_data(r, limit, params)
    shown = len(base64.b64decode(data["bytes"]))
    cut = (f"Showing the first {shown:,} of {r['bytes']:,} bytes; the numbers above cover the "
           f"whole file." if shown < r["bytes"] else f"Showing all {r['bytes']:,} bytes.")
    return (f"<h2>{html.escape(r['name'])}</h2>\n{_numbers_table(r)}\n"
            f'<p class="note">{html.escape(HIGH_ORDER_NOTE)}</p>\n'
            f'<p class="note">{cut} Each character is coloured by its cost −log2 P under '
            f"nncompress -{r['nncompress']['level']} as it compresses the file (the model learns "
            f"as it goes); a multi-byte UTF-8 character by the sum of its bytes. Hover for the "
            f"cost and the model's five most likely bytes before it. ↵ marks a line end, "
            f"\\xNN a byte that is a control code or not valid UTF-8.</p>\n"
            f'<div class="text" id="nnc-text-{index}"><noscript>The text is drawn by a small '
            f"script; with JavaScript off only the numbers above are shown.</noscript></div>\n"
            f'<script type="application/json" class="nnc-data" data-target="nnc-text-{index}">'
            f"{_script_json(data)}</script>\n")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def write_html(results: list[dict], out: str, limit: int = DEFAULT_HTML_LIMIT) -> str:
    sections = [surprisal_html(r, limit, index=i) for i, r in enumerate(results)]
    title = "nncompress surprisal: " + ", ".join(r["name"] for r in results)
    edges = [round(edge * 100) for edge in BIN_EDGES]
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>\n{_asset('page.css')}{_css_bins()}\n</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{_legend()}\n" + "".join(sections)
        + '<div id="nnc-tip" hidden></div>\n'
        + f'<script type="application/json" id="nnc-pct">{_script_json(PCT_LABELS)}</script>\n'
        + f'<script type="application/json" id="nnc-edges">{_script_json(edges)}</script>\n'
        + f"<script>\n{_asset('page.js')}</script>\n</body></html>\n"
    )
    Path(out).write_text(page, encoding="utf-8")
    return out
