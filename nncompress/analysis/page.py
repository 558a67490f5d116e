"""The surprisal page: every character coloured by its cost under the model, the model's top-5
predictions on hover."""

from __future__ import annotations

import html
import unicodedata
from pathlib import Path

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


_PAGE_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:62em;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.15em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.text{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:14px;
white-space:pre-wrap;word-wrap:break-word;border:1px solid #ccc;padding:.8em;line-height:1.5;
background:#fff}
.text i{font-style:normal}
.text i:hover{outline:1px solid #000}
.e{font-size:.8em;border:1px dotted #555;border-radius:2px}
.nl{font-size:.75em;opacity:.8}
.legend span{display:inline-block;min-width:4.2em;text-align:center;padding:.1em .3em;
font-family:ui-monospace,monospace;font-size:.85em;border:1px solid #ddd}
.note{color:#555;font-size:.9em}
"""


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


def surprisal_html(r: dict, limit: int = DEFAULT_HTML_LIMIT, params: ModelParams | None = None) -> str:
    """The coloured-text section for one analysed file (needs keep_costs=True)."""
    data = r["data"]
    costs = r["costs"]["nncompress"]
    groups = [g for g in char_groups(data[: limit + 4]) if g[1] <= limit]
    shown = groups[-1][1] if groups else 0
    _, top_bytes, top_p = top_predictions(data[:shown], r["nncompress"]["level"] or DEFAULT_LEVEL, params)
    out = []
    for start, end, kind, text in groups:
        total = float(costs[start:end].sum())
        if end - start == 1:
            tip = f"{byte_label(data[start])}: {total:.2f} bits"
        else:
            tip = (f"{total:.2f} bits (" + " + ".join(
                f"{byte_label(data[k])} {costs[k]:.2f}" for k in range(start, end)) + ")")
        tip += "\ntop-5: " + ", ".join(f"{byte_label(int(b))} {_pct(float(p))}"
                                       for b, p in zip(top_bytes[start], top_p[start]))
        tip = html.escape(tip, quote=True)
        cls = f"c{cost_bin(total)}"
        if kind == "newline":
            out.append(f'<i class="{cls} nl" title="{tip}">↵</i>\n')
        elif kind == "escape":
            out.append(f'<i class="{cls} e" title="{tip}">{html.escape(text)}</i>')
        else:
            out.append(f'<i class={cls} title="{tip}">{text}</i>')
    cut = (f"Showing the first {shown:,} of {r['bytes']:,} bytes; the numbers above cover the "
           f"whole file." if shown < r["bytes"] else f"Showing all {r['bytes']:,} bytes.")
    return (f"<h2>{html.escape(r['name'])}</h2>\n{_numbers_table(r)}\n"
            f'<p class="note">{html.escape(HIGH_ORDER_NOTE)}</p>\n'
            f'<p class="note">{cut} Each character is coloured by its cost −log2 P under '
            f"nncompress -{r['nncompress']['level']} as it compresses the file (the model learns "
            f"as it goes); a multi-byte UTF-8 character by the sum of its bytes. Hover for the "
            f"cost and the model's five most likely bytes before it. ↵ marks a line end, "
            f"\\xNN a byte that is a control code or not valid UTF-8.</p>\n"
            f'<div class="text">{"".join(out)}</div>\n')


def write_html(results: list[dict], out: str, limit: int = DEFAULT_HTML_LIMIT) -> str:
    sections = [surprisal_html(r, limit) for r in results]
    title = "nncompress surprisal: " + ", ".join(r["name"] for r in results)
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{_PAGE_CSS}{_css_bins()}</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{_legend()}\n" + "".join(sections)
        + "</body></html>\n"
    )
    Path(out).write_text(page, encoding="utf-8")
    return out

