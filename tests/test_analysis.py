"""`nncompress analyze`: code lengths agree with real archives, entropies with a slow reference,
and the report files (JSON, PNG, HTML) are complete and safe."""

import base64
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

import nncompress
from nncompress import analysis
from nncompress import format as fmt
from nncompress.model.predictor import Predictor
from nncompress.presets import params_for_level

SMALL_CORPUS_FILES = ["grammar.lsp", "xargs.1", "fields.c"]




def check_code_lengths(data, level):
    bits = analysis.code_lengths(data, level)
    assert bits.shape == (len(data),)
    assert np.all(bits > 0) and np.all(np.isfinite(bits))
    blob = nncompress.compress(data, level)
    ideal = bits.sum() / 8
    # Container bytes: the header and one block frame (data < 1 MiB; one block: no trailer).
    container = fmt.parse_header(blob)[1] + len(
        fmt.encode_block_frame(len(data), len(blob), 0, version=2, last=True))
    assert abs(ideal - len(blob)) <= 0.001 * len(blob) + 16 + container
    # The range coder's payload alone is within 0.1% + 16 bytes of the ideal code length.
    assert abs(ideal - (len(blob) - container)) <= 0.001 * len(blob) + 16
    # And the size the analysis reports is the archive's, byte for byte.
    assert analysis.nncompress_size(data, level) == len(blob)


@pytest.mark.parametrize("name", SMALL_CORPUS_FILES)
def test_code_lengths_match_real_archive_on_corpus(corpora, name):
    check_code_lengths((corpora / name).read_bytes(), 6)


@pytest.mark.parametrize("level", [1, 6])
def test_code_lengths_match_real_archive_on_sample_text(sample_text, level):
    check_code_lengths(sample_text, level)


def test_code_lengths_follow_block_boundaries(sample_text):
    data = sample_text[:5000]
    params = params_for_level(1)
    costs, size = analysis.model_pass(data, params=params, block_size=1500)
    assert size == len(nncompress.compress(data, params=params, block_size=1500))
    # The model's state carries over blocks, so the costs do not depend on block size.
    assert np.allclose(costs, analysis.code_lengths(data, params=params))


def test_byte_distributions_agree_with_code_lengths(sample_text):
    data = sample_text[:1500]
    costs, top, top_p = analysis.top_predictions(data, 1)
    assert np.allclose(costs, analysis.code_lengths(data, 1), rtol=1e-9, atol=1e-9)
    assert top.shape == (len(data), 5) and np.all(np.diff(top_p, axis=1) <= 0)
    _, dists = Predictor(params_for_level(1)).byte_distributions(data[:200])
    assert np.allclose(dists.sum(axis=1), 1.0)


def slow_entropy(data, k):
    """H(X | k previous bytes) over positions k..n-1, by dictionary counting."""
    joint, ctx = Counter(), Counter()
    for i in range(k, len(data)):
        c = bytes(data[i - k : i])
        joint[c, data[i]] += 1
        ctx[c] += 1
    total = sum(ctx.values())
    if not total:
        return None
    return -sum(n * math.log2(n / ctx[c]) for (c, _), n in joint.items()) / total


ENTROPY_INPUTS = [
    b"",
    b"a",
    b"abracadabra",
    b"aaaaaaaaaaaaaaaa",
    b"the cat sat on the mat; the cat ate the rat.\r\n" * 3,
    bytes(np.random.default_rng(7).integers(0, 256, 3000, dtype=np.uint8)),
    bytes(np.random.default_rng(8).integers(0, 3, 2000, dtype=np.uint8)),
]


@pytest.mark.parametrize("data", ENTROPY_INPUTS)
def test_entropy_table_matches_slow_reference(data):
    table = analysis.entropy_table(data, max_order=5)
    assert sorted(table) == list(range(6))
    for k, h in table.items():
        ref = slow_entropy(data, k)
        if ref is None:
            assert h is None
        else:
            assert h == pytest.approx(ref, abs=1e-9)


def test_entropy_details_counts():
    data = b"abcabcabd"
    rows = analysis.entropy_details(data, 2)
    assert rows[0]["contexts"] == 1 and rows[0]["positions"] == 9
    assert rows[2]["positions"] == 7
    # contexts of order 2: ab bc ca ab bc ca ab -> 3 distinct, none seen once
    assert rows[2]["contexts"] == 3 and rows[2]["single_context_fraction"] == 0.0


def slow_order2(data, alpha=0.5):
    joint, ctx = Counter(), Counter()
    out = []
    padded = b"\0\0" + data
    for i, x in enumerate(data):
        c = padded[i : i + 2]
        out.append(-math.log2((joint[c, x] + alpha) / (ctx[c] + 256 * alpha)))
        joint[c, x] += 1
        ctx[c] += 1
    return np.array(out)


@pytest.mark.parametrize("data", ENTROPY_INPUTS)
def test_order2_code_lengths_match_slow_reference(data):
    got = analysis.order2_code_lengths(data)
    assert got.shape == (len(data),)
    assert np.allclose(got, slow_order2(data))


NASTY = ("<script>alert('x')</script> & \"q\" é€😀 \u202eevil\u202c\n".encode()
         + b"ctl:\x00\x07\x1b\x7f| bad:\xff\xfe\xc3( |lone\rcr|crlf\r\nend\t.\xe2\x82")


def page_sections(page):
    """The data of every file in a surprisal page, decoded as page.js decodes it."""
    out = []
    for blob in re.findall(r'<script type="application/json" class="nnc-data" data-target="([^"]+)">(.*?)</script>',
                           page):
        data = json.loads(blob[1])
        raw = base64.b64decode(data["bytes"])
        out.append({"target": blob[0], "raw": raw, "kinds": data["kinds"],
                    "costs": np.frombuffer(base64.b64decode(data["costs"]), dtype="<u2"),
                    "top": np.frombuffer(base64.b64decode(data["top"]), dtype=np.uint8).reshape(-1, 5),
                    "pct": np.frombuffer(base64.b64decode(data["pct"]), dtype=np.uint8).reshape(-1, 5)})
    return out


def kind_width(code):
    return int(code) if code in "1234" else "ABCD".index(code) + 1 if code in "ABCD" else 2 if code == "r" else 1


def expected_view(section):
    """What page.js draws, per character: (text shown, colour bin, tooltip) - the page's contract,
    written out in Python so that the browser test can compare the real drawing with it."""
    raw, costs, view, pos = section["raw"], section["costs"], [], 0
    edges = [round(e * 100) for e in analysis.page.BIN_EDGES]
    for g, code in enumerate(section["kinds"]):
        end = pos + kind_width(code)
        chunk, total = raw[pos:end], int(costs[pos:end].sum())
        if code in "nr":
            text = "↵"
        elif code == "t":
            text = "\t"
        elif code in "1234":
            text = chunk.decode("utf-8")
        else:
            text = f"\\x{chunk[0]:02x}" if len(chunk) == 1 else f"\\u{ord(chunk.decode()):04x}"
        if end - pos == 1:
            tip = f"{analysis.page.byte_label(raw[pos])}: {total / 100:.2f} bits"
        else:
            tip = f"{total / 100:.2f} bits (" + " + ".join(
                f"{analysis.page.byte_label(raw[k])} {costs[k] / 100:.2f}" for k in range(pos, end)) + ")"
        tip += "\ntop-5: " + ", ".join(f"{analysis.page.byte_label(b)} {analysis.page.PCT_LABELS[i]}"
                                       for b, i in zip(section["top"][g], section["pct"][g]))
        view.append((text, sum(total >= e for e in edges), tip))
        pos = end
    assert pos == len(raw)
    return view


@pytest.fixture(scope="module")
def nasty_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "nasty.html"
    r = analysis.analyze_file(NASTY, 1, name="nasty<&>.txt", keep_costs=True)
    analysis.write_html([r], str(out))
    return r, out


def test_html_page_is_compact_data_that_cannot_inject(nasty_page):
    r, out = nasty_page
    page = out.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    for ch in "\x00\x07\x1b\x7f\u202e\u202c\r":
        assert ch not in page
    # the input's markup never reaches the page as markup: our four scripts only (the numbers, the
    # percentage table, the colour edges and the drawing code), the name escaped
    assert page.lower().count("<script") == 4 and "alert(" not in page
    assert "nasty&lt;&amp;&gt;.txt" in page
    (section,) = page_sections(page)
    assert section["raw"] == NASTY
    groups = analysis.char_groups(NASTY)
    assert len(section["kinds"]) == len(groups) == section["top"].shape[0]
    costs = r["costs"]["nncompress"]
    assert np.array_equal(section["costs"], np.round(costs * 100).astype(np.uint16))
    _, top_bytes, top_p = analysis.top_predictions(NASTY, 1)
    starts = [g[0] for g in groups]
    assert np.array_equal(section["top"], top_bytes[starts])
    assert [[analysis.page.PCT_LABELS[i] for i in row] for row in section["pct"]] == [
        [analysis.page._pct(p) for p in row] for row in top_p[starts]]
    view = expected_view(section)
    # every byte drawn once, as the text char_groups chose (escapes included)
    shown = [text for text, _, _ in view]
    assert shown == ["↵" if kind == "newline" else html.unescape(text) for _, _, kind, text in groups]
    for esc in ["\\x00", "\\x07", "\\x1b", "\\x7f", "\\xff", "\\xfe", "\\xc3", "\\x0d", "\\u202e",
                "\\xe2", "\\x82"]:
        assert esc in shown, esc
    # the multi-byte emoji is one character, coloured by the summed cost of its four bytes
    g = next(i for i, t in enumerate(shown) if t == "😀")
    start = NASTY.index("😀".encode())
    total = int(np.round(costs[start:start + 4] * 100).sum())
    assert view[g][1] == analysis.cost_bin(total / 100)
    assert view[g][2].startswith(f"{total / 100:.2f} bits (\\xf0 ") and "\ntop-5: " in view[g][2]


def test_html_is_light(sample_text, tmp_path):
    r = analysis.analyze_file(sample_text[:3000], 1, references=False, keep_costs=True)
    out = tmp_path / "p.html"
    analysis.write_html([r], str(out), limit=2000)
    page = out.read_text(encoding="utf-8")
    assert "first 2,000 of 3,000 bytes" in page
    (section,) = page_sections(page)
    assert len(section["raw"]) == 2000
    # about 19 bytes a character on top of a fixed ~7 KB (style, script, numbers): the old page
    # spent ~110 per character on one element and tooltip each
    assert len(page.encode()) < 8_000 + 22 * 2000


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian package `chromium`)")
def test_html_drawn_by_a_real_browser(nasty_page, tmp_path):
    """page.js in headless Chromium draws what the data says, and its tooltip shows the cost and
    the top-5 (opened through the page's `#hover=G` hook, as a pointer would)."""
    r, out = nasty_page
    section = page_sections(out.read_text(encoding="utf-8"))[0]
    view = expected_view(section)
    g = next(i for i, (text, _, _) in enumerate(view) if text == "😀")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", f"{out.as_uri()}#hover={g}"],
                          capture_output=True, timeout=120)
    dom = done.stdout.decode("utf-8")
    assert f'data-groups="{len(view)}"' in dom, done.stderr.decode(errors="replace")[-2000:]
    box = dom[dom.index('id="nnc-text-0"'):]
    drawn = re.findall(r'<i class="c(\d)( nl| e)?( on)?" data-g="(\d+)">(.*?)</i>', box, flags=re.S)
    assert [int(d[3]) for d in drawn] == list(range(len(view)))
    assert [(html.unescape(d[4]), int(d[0])) for d in drawn] == [(text, colour) for text, colour, _ in view]
    assert [d[2] for d in drawn].count(" on") == 1 and drawn[g][2] == " on"
    tip = re.search(r'<div id="nnc-tip"[^>]*>(.*?)</div>', dom, flags=re.S)
    assert tip and html.unescape(tip.group(1)) == view[g][2]


def test_char_groups_cover_every_byte():
    groups = analysis.char_groups(NASTY)
    assert groups[0][0] == 0 and groups[-1][1] == len(NASTY)
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))


def test_cli_json_plot_html(corpora, tmp_path, capsys):
    # a directory is a set: one summary with totals
    d = tmp_path / "set"
    d.mkdir()
    for name in ["grammar.lsp", "xargs.1"]:
        (d / name).write_bytes((corpora / name).read_bytes())
    (d / "empty").write_bytes(b"")
    js, png, page = tmp_path / "out.json", tmp_path / "out.png", tmp_path / "out.html"
    rc = analysis.main([str(d), "--level", "2", "--json", str(js), "--plot", str(png),
                        "--html", str(page), "--html-limit", "300", "--window", "100", "-q"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "grammar.lsp" in out and "H5" in out and "[" + str(d) + "]" in out
    report = json.loads(js.read_text())
    assert report["level"] == 2
    files = {r["name"]: r for r in report["files"]}
    assert set(files) == {"grammar.lsp", "xargs.1", "empty"}
    r = files["grammar.lsp"]
    for key in ["bytes", "distinct_bytes", "entropy", "order2_adaptive", "nncompress", "reference"]:
        assert key in r
    assert [e["order"] for e in r["entropy"]] == list(range(6))
    assert r["nncompress"]["compressed_bytes"] == len(
        nncompress.compress((corpora / "grammar.lsp").read_bytes(), 2))
    assert r["nncompress"]["code_length_bpc"] < r["order2_adaptive"]["bpc"]
    assert set(r["reference"]) == {"gzip", "xz", "paq"}
    assert files["empty"]["bytes"] == 0 and files["empty"]["nncompress"]["code_length_bpc"] is None
    (s,) = report["sets"]
    assert s["bytes"] == sum(f["bytes"] for f in report["files"])
    assert s["methods"]["nncompress"]["bytes"] == sum(
        f["nncompress"]["compressed_bytes"] for f in report["files"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sections = page_sections(page.read_text(encoding="utf-8"))
    assert [len(x["raw"]) for x in sections] == [0, 300, 300]  # empty, grammar.lsp, xargs.1 (sorted)


def test_cli_errors(tmp_path, capsys):
    assert analysis.main([str(tmp_path / "missing"), "-q"]) == 1
    assert "no such file" in capsys.readouterr().err


def test_cli_corpus_set_name(corpora, tmp_path, monkeypatch):
    """A catalog name (a set, or one file of it) is resolved by nncompress.corpora."""
    corpora_module = pytest.importorskip("nncompress.corpora")
    if not corpora_module.is_set("grammar.lsp"):
        pytest.skip("grammar.lsp is not in the corpus catalog")
    monkeypatch.chdir(tmp_path)
    js = tmp_path / "set.json"
    assert analysis.main(["grammar.lsp", "--corpora", str(corpora), "--level", "1",
                          "--no-reference", "--json", str(js), "-q"]) == 0
    report = json.loads(js.read_text())
    assert [r["name"] for r in report["files"]] == ["grammar.lsp"]
    assert report["sets"][0]["name"] == "grammar.lsp"


def test_plot_without_matplotlib_fails_before_the_work(tmp_path, monkeypatch, capsys):
    """`--plot` with matplotlib missing: a clear message at once, no analysis, no other output."""
    import sys

    from nncompress.analysis import command

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setattr(command, "analyze_paths", lambda *a, **k: pytest.fail("analysed before refusing"))
    src = tmp_path / "in.txt"
    src.write_bytes(b"hello hello hello\n")
    js, page = tmp_path / "out.json", tmp_path / "out.html"
    assert analysis.main([str(src), "--plot", str(tmp_path / "p.png"), "--html", str(page),
                          "--json", str(js), "-q"]) == 1
    err = capsys.readouterr().err
    assert "--plot" in err and "matplotlib is not installed" in err and "Traceback" not in err
    assert not js.exists() and not page.exists()


def test_learning_curve_plot_has_a_cumulative_panel(tmp_path):
    """Issue 15 item 16: beside the moving average, the cost so far against the comparators."""
    pytest.importorskip("matplotlib")
    from nncompress.analysis.plot import cumulative_average, write_plot

    x, y = cumulative_average(np.array([2.0, 4.0, 6.0]))
    assert x.tolist() == [1, 2, 3] and y.tolist() == [2.0, 3.0, 4.0]
    rng = np.random.default_rng(0)
    result = {"name": "synthetic", "bytes": 3000,
              "nncompress": {"level": 6, "code_length_bpc": 2.5},
              "costs": {"nncompress": rng.uniform(1, 4, 3000), "order2": rng.uniform(2, 5, 3000)},
              "reference": {"gzip": {"bpc": 3.1}, "xz": {"bpc": 2.9}}}
    out = write_plot([result], str(tmp_path / "curve.png"))
    import matplotlib.image

    height, width = matplotlib.image.imread(out).shape[:2]
    assert width > 3 * height  # two panels side by side in one row


def test_the_text_report_shows_each_files_own_figures():
    """Round 6 of the mutation review (bench/MUTATION.md 2f): the distinct byte count and the
    entropy of each order, as computed, in the file's row of the text report; line and paragraph
    separators are among the characters the page escapes."""
    from nncompress.analysis import page
    from nncompress.analysis.report import fmt_number

    data = b"abracadabra, " * 40 + bytes(range(200, 210))
    r = analysis.analyze_file(data, 1, name="x.txt", references=False)
    assert r["distinct_bytes"] == len(set(data))
    text = analysis.format_report({"files": [r], "sets": [], "level": 1})
    row = next(line for line in text.splitlines() if line.startswith("x.txt "))
    cells = row.split()
    assert cells[1:3] == [f"{len(data):,}", str(len(set(data)))]
    assert cells[3:3 + len(r["entropy"])] == [fmt_number(e["bits_per_byte"]) for e in r["entropy"]]
    assert all(page._unsafe_char(ch) for ch in ("\u2028", "\u2029", "\u202e", "\x07"))
    assert not page._unsafe_char("a")


# -- round 7 of the mutation review (bench/MUTATION.md 2g) -------------------------------------------

NUMBERS = {"bytes": 12345, "distinct_bytes": 42,
           "entropy": [{"order": 0, "bits_per_byte": 4.5, "single_context_fraction": 0.0},
                       {"order": 1, "bits_per_byte": 3.25, "single_context_fraction": 0.5},
                       {"order": 2, "bits_per_byte": 2.0, "single_context_fraction": 0.125},
                       {"order": 3, "bits_per_byte": 1.0, "single_context_fraction": 0.0}],
           "order2_adaptive": {"bpc": 3.5},
           "reference": {"gzip": {"bpc": 3.0, "bytes": 4630}, "xz": None, "paq": {"bpc": 2.25, "bytes": 3472}},
           "nncompress": {"level": 6, "code_length_bpc": 2.1, "code_length_bits": 25925.0,
                          "compressed_bpc": 2.2, "compressed_bytes": 3395}}


def test_the_pages_numbers_table_word_for_word():
    """Every row of the page's table, the PAQ reference among them (shown when the `paq` package
    is installed, which it is not here)."""
    from nncompress.analysis import page

    cells = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", page._numbers_table(NUMBERS))
    assert page._numbers_table(NUMBERS).startswith("<table><tr><th>measure (whole file)</th><th>value</th></tr>")
    assert cells == [
        ("size", "12,345 bytes"), ("distinct byte values", "42"),
        ("H(X | 0 previous bytes)", "4.500 bpc"), ("H(X | 1 previous bytes)", "3.250 bpc"),
        ("H(X | 2 previous bytes)", "2.000 bpc (12.5% of bytes have a context seen once)"),
        ("H(X | 3 previous bytes)", "1.000 bpc"),
        ("adaptive order-2 (KT estimator)", "3.500 bpc"),
        ("gzip -9 (zlib)", "3.000 bpc (4,630 bytes)"), ("xz -9e (lzma)", "not run"),
        ("PAQ (paq9a)", "2.250 bpc (3,472 bytes)"),
        ("nncompress -6, ideal code length", "2.100 bpc (3,241 bytes)"),
        ("nncompress -6, real .nnc file", "2.200 bpc (3,395 bytes)")]
    assert page._numbers_table(dict(NUMBERS, name="<b>")).endswith("</td></tr></table>")
    escaped = dict(NUMBERS, nncompress=dict(NUMBERS["nncompress"], level="<&>"))
    assert "nncompress -&lt;&amp;&gt;, ideal code length" in page._numbers_table(escaped)


def test_a_paq_reference_is_measured_reported_and_totalled_when_paq_is_installed(monkeypatch):
    """The `paq` package is simulated: its compressor's size is the file's PAQ row everywhere."""
    import zlib

    from nncompress.analysis import report

    real = report.reference_codecs

    def with_paq(keys):
        codecs = real([k for k in keys if k != "paq9a"])
        codecs["paq9a"] = lambda d: zlib.compress(d, 1)[:-3]
        return codecs

    monkeypatch.setattr(report, "reference_codecs", with_paq)
    data = b"paq would do better than this. " * 30
    r = analysis.analyze_file(data, 1, name="p.txt")
    size = len(zlib.compress(data, 1)) - 3
    assert r["reference"]["paq"] == {"bytes": size, "bpc": 8 * size / len(data)}
    assert r["reference"]["gzip"]["bytes"] == len(zlib.compress(data, 9))
    assert not any("PAQ skipped" in note for note in r["notes"])
    s = analysis.set_summary("s", [r, r])
    assert s["methods"]["paq"] == {"bytes": 2 * size, "bpc": 8 * size / len(data),
                                   "mean_file_bpc": pytest.approx(8 * size / len(data))}
    text = analysis.format_report({"files": [r], "sets": [s], "level": 1})
    row = next(line for line in text.splitlines() if line.startswith("p.txt ") and "bpc" not in line
               and len(line.split()) == 9)
    assert row.split()[5] == f"{8 * size / len(data):.3f}"
    assert "paq9a skipped" not in text
    monkeypatch.setattr(report, "reference_codecs", lambda keys: dict(real(keys), paq9a=None))
    r = analysis.analyze_file(data, 1, name="p.txt")
    assert r["reference"]["paq"] is None
    assert r["notes"][1:] == ["PAQ skipped: the 'paq' package (paq9a) is not installed."]
    assert "  paq9a skipped: install the 'paq' package to include it." in analysis.format_report(
        {"files": [r], "sets": [], "level": 1}).splitlines()
    assert "paq" not in analysis.set_summary("s", [r])["methods"]


def _entropy(values, fracs):
    return [{"order": k, "bits_per_byte": h, "positions": 10 - k, "contexts": 3,
             "single_context_fraction": f} for k, (h, f) in enumerate(zip(values, fracs))]


def _sample_analysis():
    """Two files of a set and a lone one: a PAQ row missing, an entropy of None, a long name."""
    a = {"name": "a.txt", "bytes": 1000, "distinct_bytes": 40,
         "entropy": _entropy([4.5, 3.25, 2.0], [0.0, 0.015, 0.5]),
         "order2_adaptive": {"bpc": 3.5}, "reference": {"gzip": {"bpc": 3.0}, "xz": {"bpc": 2.75}, "paq": {"bpc": 2.0}},
         "nncompress": {"level": 3, "code_length_bpc": 2.125, "compressed_bpc": 2.25, "compressed_bytes": 281}}
    b = {"name": "b-with-a-long-name.bin", "bytes": 12345, "distinct_bytes": 256,
         "entropy": _entropy([7.9, None, None], [0.0, None, None]),
         "order2_adaptive": {"bpc": 8.1}, "reference": {"gzip": {"bpc": 8.0}, "xz": {"bpc": 7.95}, "paq": None},
         "nncompress": {"level": 3, "code_length_bpc": 7.5, "compressed_bpc": 7.625, "compressed_bytes": 11767}}
    s = {"name": "s", "bytes": 13345, "methods": {
            "order2_adaptive": {"bpc": 7.75, "mean_file_bpc": 5.8}, "gzip": {"bpc": 7.625, "mean_file_bpc": 5.5},
            "xz": {"bpc": 7.5, "mean_file_bpc": 5.35},
            "nncompress_code_length": {"bpc": 7.125, "mean_file_bpc": 4.8125},
            "nncompress": {"bpc": 7.25, "bytes": 12048, "mean_file_bpc": 4.9375}},
         "entropy": [{"order": 0, "bits_per_byte": 7.6}, {"order": 1, "bits_per_byte": 3.25},
                     {"order": 2, "bits_per_byte": None}]}
    return {"level": 3, "files": [a, b], "sets": [s]}


ANALYSIS_REPORT = """Empirical conditional entropy H(X | k previous bytes), bits per byte (lower bounds; optimistic for high k on small files)
file                        bytes distinct     H0     H1     H2  once@2
a.txt                       1,000       40  4.500  3.250  2.000   50.0%
b-with-a-long-name.bin     12,345      256  7.900      -      -       -
[s]                        13,345           7.600  3.250      -
  once@2: share of bytes whose order-2 context occurs only once in the file (they count as 0 bits in H2).

Code length, bits per byte (adaptive: what a decoder could actually do)
file                        bytes   order-2 KT      gzip -9       xz -9e        paq9a nnc -3 ideal  nnc -3 .nnc  nnc bytes
a.txt                       1,000        3.500        3.000        2.750        2.000        2.125        2.250        281
b-with-a-long-name.bin     12,345        8.100        8.000        7.950            -        7.500        7.625     11,767
[s]                        13,345        7.750        7.625        7.500            -        7.125        7.250     12,048
  mean of files                          5.800        5.500        5.350            -        4.812        4.938
  nnc ideal: sum of -log2 P(byte) under the model (the compressor's own code path); nnc .nnc: the real file, header and framing included.
  paq9a skipped: install the 'paq' package to include it.
  [set] rows: total compressed bits / total bytes; 'mean of files': unweighted average of the files' bpc."""


def test_the_analysis_text_report_word_for_word():
    """Round 7 of the mutation review: every column, set row, mean row and note of the text report."""
    assert analysis.format_report(_sample_analysis()) == ANALYSIS_REPORT
    one = _sample_analysis()
    one["files"][1]["reference"]["paq"] = {"bpc": 7.0}
    one["sets"] = []
    text = analysis.format_report(one)
    assert "paq9a skipped" not in text and "[set] rows" not in text and "mean of files" not in text
    assert text.splitlines()[1] == f"{'file':<22} {'bytes':>10} {'distinct':>8}     H0     H1     H2  once@2"
    one["files"][0]["reference"] = {}  # --no-reference: no note about PAQ either
    one["files"][1]["reference"] = {}
    assert "paq9a skipped" not in analysis.format_report(one)


def test_every_figure_of_a_files_analysis(tmp_path, monkeypatch):
    import lzma
    import zlib

    from nncompress.analysis import report

    data = b"to be or not to be, that is the question. " * 12
    monkeypatch.setattr(report, "reference_codecs", lambda keys: {"gzip": lambda d: zlib.compress(d, 9),
                                                                   "xz": lambda d: lzma.compress(d), "paq9a": None})
    r = analysis.analyze_file(data, 1, max_order=3)
    assert list(r) == ["name", "path", "bytes", "distinct_bytes", "entropy", "order2_adaptive", "nncompress",
                       "reference", "notes"]
    assert r["name"] == "<bytes>" and r["path"] is None and r["bytes"] == len(data)
    assert r["entropy"] == analysis.entropy_details(data, 3)
    o2 = analysis.order2_code_lengths(data)
    assert r["order2_adaptive"] == {"bits": float(o2.sum()), "bpc": pytest.approx(o2.sum() / len(data)),
                                    "estimator": "Krichevsky-Trofimov (alpha=1/2), counts learned online"}
    costs = analysis.code_lengths(data, 1)
    nnc = r["nncompress"]
    assert nnc["level"] == 1 and nnc["params"] == params_for_level(1).describe()
    assert nnc["code_length_bits"] == pytest.approx(costs.sum()) and nnc["code_length_bpc"] == pytest.approx(
        costs.sum() / len(data))
    assert nnc["compressed_bytes"] == len(nncompress.compress(data, 1))
    assert nnc["compressed_bpc"] == 8 * nnc["compressed_bytes"] / len(data) and 0 <= nnc["seconds"] < 60
    assert r["reference"] == {"gzip": {"bytes": len(zlib.compress(data, 9)),
                                       "bpc": 8 * len(zlib.compress(data, 9)) / len(data)},
                              "xz": {"bytes": len(lzma.compress(data)), "bpc": 8 * len(lzma.compress(data)) / len(data)},
                              "paq": None}
    assert r["notes"] == [analysis.entropy.HIGH_ORDER_NOTE, "PAQ skipped: the 'paq' package (paq9a) is not installed."]
    src = tmp_path / "file.txt"
    src.write_bytes(data)
    kept = analysis.analyze_file(src, 1, references=False, keep_costs=True)
    assert kept["name"] == "file.txt" and kept["path"] == str(src) and kept["reference"] == {}
    assert kept["notes"] == [analysis.entropy.HIGH_ORDER_NOTE] and len(kept["entropy"]) == 6
    assert kept["data"] == data and np.array_equal(kept["costs"]["nncompress"], costs)
    assert np.array_equal(kept["costs"]["order2"], o2)
    assert analysis.report.json_ready(kept) == {k: v for k, v in kept.items() if k not in ("costs", "data")}
    assert analysis.analyze_file(src, 1, name="given", references=False)["name"] == "given"
    params = params_for_level(2)
    custom = analysis.analyze_file(data, 1, params=params, references=False)
    assert custom["nncompress"]["level"] == 0
    assert custom["nncompress"]["compressed_bytes"] == len(nncompress.compress(data, params=params))
    empty = analysis.analyze_file(b"", 1, references=False)
    assert empty["distinct_bytes"] == 0 and empty["order2_adaptive"]["bpc"] is None


def test_a_sets_summary_weights_by_bytes():
    def result(name, size, o2_bits, cl_bits, nnc, gzip, paq):
        return {"name": name, "bytes": size, "order2_adaptive": {"bits": o2_bits},
                "nncompress": {"code_length_bits": cl_bits, "compressed_bytes": nnc},
                "reference": {"gzip": {"bytes": gzip}, "xz": None, "paq": {"bytes": paq} if paq else None},
                "entropy": [{"bits_per_byte": 4.0, "positions": size}, {"bits_per_byte": 2.0, "positions": size - 1}]}

    a, b = result("a", 100, 400, 300, 40, 50, 30), result("b", 300, 1200, 600, 80, 150, None)
    s = analysis.set_summary("both", [a, b])
    assert s["name"] == "both" and s["files"] == ["a", "b"] and s["bytes"] == 400
    assert list(s["methods"]) == ["order2_adaptive", "nncompress_code_length", "nncompress", "gzip"]
    assert s["methods"]["order2_adaptive"] == {"bytes": 200, "bpc": 4.0, "mean_file_bpc": 4.0}
    assert s["methods"]["nncompress_code_length"] == {"bytes": 112.5, "bpc": 2.25, "mean_file_bpc": 2.5}
    assert s["methods"]["nncompress"] == {"bytes": 120, "bpc": 2.4, "mean_file_bpc": pytest.approx((3.2 + 8 * 80 / 300) / 2)}
    assert s["methods"]["gzip"] == {"bytes": 200, "bpc": 4.0, "mean_file_bpc": 4.0}
    assert s["entropy"] == [{"order": 0, "bits_per_byte": 4.0, "note": "per-file entropies, position-weighted"},
                            {"order": 1, "bits_per_byte": 2.0, "note": "per-file entropies, position-weighted"}]
    c = result("c", 1, 8, 8, 1, 1, None)
    c["entropy"] = [{"bits_per_byte": 8.0, "positions": 1}, {"bits_per_byte": None, "positions": 0}]
    s = analysis.set_summary("odd", [a, c])
    assert s["entropy"][0]["bits_per_byte"] == pytest.approx((400 + 8) / 101)
    assert s["entropy"][1]["bits_per_byte"] == 2.0
    z = result("z", 0, 0, 0, 20, 20, None)
    z["entropy"] = [{"bits_per_byte": None, "positions": 0}] * 2
    s = analysis.set_summary("zero", [z])
    assert s["methods"]["nncompress"] == {"bytes": 20, "bpc": None, "mean_file_bpc": None}
    assert [e["bits_per_byte"] for e in s["entropy"]] == [None, None]
    assert analysis.set_summary("none", [])["entropy"] == []


def test_analyze_paths_sets_single_files_a_cluster_and_the_log(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "x.txt").write_bytes(b"xx xx xx " * 20)
    (folder / "y.txt").write_bytes(b"yes " * 30)
    lone = tmp_path / "lone.txt"
    lone.write_bytes(b"lone " * 10)
    lines = []
    report = analysis.analyze_paths([str(lone), str(folder)], 1, references=False, log=lines.append)
    assert report["level"] == 1
    assert [(r["name"], r.get("set")) for r in report["files"]] == [
        ("lone.txt", None), ("x.txt", str(folder)), ("y.txt", str(folder))]
    assert [s["name"] for s in report["sets"]] == [str(folder)] and report["sets"][0]["files"] == ["x.txt", "y.txt"]
    assert report["files"][1]["reference"] == {} and "costs" not in report["files"][1]
    assert lines == [f"analyzing {lone} (50 bytes) ...", f"analyzing {folder / 'x.txt'} (180 bytes) ...",
                     f"analyzing {folder / 'y.txt'} (120 bytes) ..."]

    class Client:
        def __init__(self):
            self.calls = []

        def submit(self, fn, *args, **kwargs):
            self.calls.append((fn, args, kwargs))
            done = fn(*args, **{k: v for k, v in kwargs.items() if k != "pure"})
            return type("Future", (), {"result": lambda self: done})()

    kept = analysis.analyze_paths([str(folder / "y.txt")], 2, keep_costs=True)["files"][0]  # one process
    assert kept["nncompress"]["level"] == 2 and "costs" in kept and kept["data"] == b"yes " * 30
    assert set(kept["reference"]) == {"gzip", "xz", "paq"} and kept["reference"]["gzip"]["bytes"] > 0

    client, lines = Client(), []
    remote = analysis.analyze_paths([str(folder), str(folder / "x.txt")], 1, references=False, keep_costs=True,
                                    log=lines.append, client=client)
    assert [(args, kwargs) for _, args, kwargs in client.calls] == [
        ((b"xx xx xx " * 20, 1), {"name": "x.txt", "references": False, "keep_costs": True, "pure": False}),
        ((b"yes " * 30, 1), {"name": "y.txt", "references": False, "keep_costs": True, "pure": False})]
    assert client.calls[0][0] is analysis.report.analyze_file
    assert [r["path"] for r in remote["files"]] == [str(folder / "x.txt"), str(folder / "y.txt"), str(folder / "x.txt")]
    assert [r.get("set") for r in remote["files"]] == [str(folder), str(folder), None]
    assert remote["files"][0]["data"] == b"xx xx xx " * 20 and len(remote["sets"]) == 1
    assert lines[0] == f"analyzing {folder / 'x.txt'} (180 bytes) on the cluster ..."


def test_entropies_up_to_order_7_and_the_order_bounds():
    rng = np.random.default_rng(5)
    data = bytes(rng.integers(0, 4, 400, dtype=np.uint8)) + bytes(range(250, 256)) * 3
    rows = analysis.entropy_details(np.frombuffer(data, dtype=np.uint8).astype(np.int64), 7)
    assert [row["order"] for row in rows] == list(range(8))
    for k, row in enumerate(rows):
        assert row["bits_per_byte"] == pytest.approx(slow_entropy(data, k), abs=1e-9)
        contexts = Counter(data[i - k:i] for i in range(k, len(data)))
        assert row["positions"] == len(data) - k and row["contexts"] == len(contexts)
        assert row["single_context_fraction"] == sum(n == 1 for n in contexts.values()) / (len(data) - k)
    assert analysis.entropy_details(b"ab", 0) == [{"order": 0, "bits_per_byte": 1.0, "positions": 2, "contexts": 1,
                                                   "single_context_fraction": 0.0}]
    assert analysis.entropy_details(b"ab", 3)[2:] == [
        {"order": k, "bits_per_byte": None, "positions": 0, "contexts": 0, "single_context_fraction": None}
        for k in (2, 3)]
    for bad in (-1, 8):
        with pytest.raises(ValueError, match=r"^max_order must be in 0\.\.7$"):
            analysis.entropy_details(b"abc", bad)
    assert analysis.entropy_table(b"aaaa", 1) == {0: 0.0, 1: 0.0}


def test_model_costs_progress_top_predictions_and_parameters():
    from nncompress.analysis import costs

    data = b"progress of the model pass, " * 50
    seen = []
    got, size = analysis.model_pass(data, 1, block_size=500, progress=seen.append)
    assert size == len(nncompress.compress(data, 1, block_size=500)) and got.shape == (len(data),)
    assert seen and sum(seen) in (len(data), 2 * len(data))  # bytes or nibbles, every one reported
    assert costs.resolve_params(3, None) == (3, params_for_level(3))
    params = params_for_level(2)
    assert costs.resolve_params(3, params) == (0, params)
    with pytest.raises(ValueError):
        costs.resolve_params(1, __import__("dataclasses").replace(params, table_bits=99))
    assert analysis.nncompress_size(data, 1) == len(nncompress.compress(data, 1))
    assert np.array_equal(analysis.code_lengths(data, params=params), analysis.model_pass(data, 0, params)[0])
    c, top, p = analysis.top_predictions(b"", 1)
    assert c.shape == (0,) and top.shape == (0, 5) and p.shape == (0, 5)
    c, top, p = analysis.top_predictions(data[:300], 1, top=3)
    assert top.shape == (300, 3) and p.shape == (300, 3) and np.all(p[:, 0] >= p[:, 1])
    _, top5, p5 = analysis.top_predictions(data[:300], 1)
    assert np.array_equal(top5[:, :3], top) and np.allclose(p5[:, :3], p)
    _, top_params, _ = analysis.top_predictions(data[:300], 9, params=params_for_level(1), top=3)
    assert np.array_equal(top_params, top)


def test_the_analyze_command_line_in_process(tmp_path, monkeypatch, capsys):
    """`nncompress analyze`'s options reach the analysis, its outputs go where asked, its refusals
    are one line each (round 7 of the mutation review: analysis/command.py)."""
    import contextlib

    from nncompress import cluster
    from nncompress.analysis import command
    from nncompress.corpora import CorpusError
    from nncompress.errors import NNCError

    src = tmp_path / "in.txt"
    src.write_bytes(b"analysed on the command line\n" * 8)
    js = tmp_path / "out.json"
    monkeypatch.delenv("NNC_CLUSTER", raising=False)
    assert command.main([str(src), "--level", "1", "--no-reference", "--json", str(js)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Empirical conditional entropy") and "\nin.txt " in out
    assert err == f"analyzing {src} (232 bytes) ...\n"
    report = json.loads(js.read_text(encoding="utf-8"))
    assert js.read_text().endswith("}\n") and list(report) == ["level", "files", "sets"]
    assert report["level"] == 1 and report["files"][0]["reference"] == {} and "costs" not in report["files"][0]
    assert command.main([str(src), "-l", "1", "--no-reference", "--json", "-", "-q"]) == 0
    out, err = capsys.readouterr()
    again = json.loads(out)  # only the JSON on standard output
    for r in (again, report):
        del r["files"][0]["nncompress"]["seconds"]
    assert err == "" and again == report
    # what reaches the analysis
    seen = {}

    def analyze_paths(inputs, level, **kw):
        seen.update(inputs=inputs, level=level, **kw)
        return {"level": level, "files": [], "sets": []}

    monkeypatch.setattr(command, "analyze_paths", analyze_paths)
    assert command.main(["a", "b", "-q"]) == 1
    assert capsys.readouterr().err == "nncompress analyze: no files to analyse\n"
    assert seen == {"inputs": ["a", "b"], "level": command.DEFAULT_LEVEL, "references": True, "keep_costs": False,
                    "corpora_dir": None, "log": None, "client": None}
    assert command.main(["a", "--corpora", "C", "--html", str(tmp_path / "p.html")]) == 1
    assert seen["corpora_dir"] == "C" and seen["keep_costs"] is True and seen["log"] is not None
    seen["log"]("a message")
    assert capsys.readouterr().err.endswith("a message\n")
    assert command.main(["a", "--plot", str(tmp_path / "p.png"), "-q"]) == 1 and seen["keep_costs"] is True

    class Client:
        pass

    client = Client()

    @contextlib.contextmanager
    def connected(address):
        seen["address"] = address
        yield client if address else None

    monkeypatch.setattr(cluster, "connected", connected)
    monkeypatch.setenv("NNC_CLUSTER", "tcp://127.0.0.1:1")
    command.main(["a", "-q"])
    assert seen["client"] is client and seen["address"] == "tcp://127.0.0.1:1"
    command.main(["a", "--cluster", "tcp://127.0.0.1:2", "-q"])
    assert seen["address"] == "tcp://127.0.0.1:2"
    capsys.readouterr()
    # every refusal: one line, exit 1
    for exc, message in [(CorpusError("no set x"), "nncompress analyze: no set x\n"),
                         (NNCError("cannot reach"), "nncompress analyze: cannot reach\n"),
                         (FileNotFoundError(2, "No such file or directory", "gone.txt"),
                          "nncompress analyze: gone.txt: No such file or directory\n"),
                         (PermissionError("denied"), "nncompress analyze: : denied\n")]:
        monkeypatch.setattr(command, "analyze_paths", lambda *a, exc=exc, **k: (_ for _ in ()).throw(exc))
        assert command.main(["a", "-q"]) == 1
        assert capsys.readouterr() == ("", message)
    for argv in (["a", "--html-limit", "0"], ["a", "--window", "-1"]):
        assert command.main(argv) == 1
        assert capsys.readouterr().err == "nncompress analyze: --html-limit must be >= 1 and --window >= 0\n"
    assert command.main(["a", "--html-limit", "1", "--window", "0", "-q"]) == 1  # the bounds are allowed:
    assert capsys.readouterr().err == "nncompress analyze: : denied\n"  # the analysis ran


def test_the_analyze_command_writes_its_page_and_plot_and_stops_quietly_on_a_broken_pipe(tmp_path, monkeypatch,
                                                                                          capsys):
    from nncompress.analysis import command

    src = tmp_path / "in.txt"
    src.write_bytes(b"page and plot " * 30)
    page, png = tmp_path / "p.html", tmp_path / "p.png"
    written = {}
    monkeypatch.setattr(command, "write_html", lambda files, out, limit: written.update(html=(files, out, limit)))
    monkeypatch.setattr(command, "write_plot", lambda files, out, window: written.update(plot=(files, out, window)))
    assert command.main([str(src), "-l", "1", "--no-reference", "--html", str(page), "--plot", str(png),
                         "--html-limit", "77", "--window", "9"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == [f"wrote {page}", f"wrote {png}"]
    files, out, limit = written["html"]
    assert out == str(page) and limit == 77 and files[0]["name"] == "in.txt" and "costs" in files[0]
    assert written["plot"][1:] == (str(png), 9) and written["plot"][0] is files
    assert command.main([str(src), "-l", "1", "--no-reference", "--plot", str(png), "--html", str(page), "-q"]) == 0
    assert written["plot"][2] is None and written["html"][2] == command.DEFAULT_HTML_LIMIT
    assert capsys.readouterr().err == ""

    def broken(*args, **kwargs):
        raise BrokenPipeError

    monkeypatch.setattr(command, "format_report", broken)
    saved = sys.stdout
    try:
        assert command.main([str(src), "-l", "1", "--no-reference", "-q"]) == 1
        assert sys.stdout is not saved and sys.stdout.name == os.devnull and sys.stdout.mode == "w"
    finally:
        sys.stdout.close()
        sys.stdout = saved


def test_the_pages_small_parts_word_for_word():
    """Round 7 of the mutation review (analysis/page.py): colour bins, labels, widths, percentages,
    the style and legend, the kind codes and the script-safe JSON."""
    from nncompress.analysis import page

    assert [page.cost_bin(c) for c in (0, 0.2499, 0.25, 0.5, 0.99, 1, 2, 3, 4, 5.9, 6, 8, 11.9, 12, 99)] == [
        0, 0, 1, 2, 2, 3, 4, 5, 6, 6, 7, 8, 8, 9, 9]
    assert [page.byte_label(b) for b in (0x20, 0x21, 0x41, 0x7E, 0x7F, 0x0A, 0x0D, 0x09, 0x00, 0x1F, 0xFF)] == [
        "␣", "!", "A", "~", "\\x7f", "\\n", "\\r", "\\t", "\\x00", "\\x1f", "\\xff"]
    cases = {b"a": 1, b"\x7f": 1, "é".encode(): 2, "€".encode(): 3, "😀".encode(): 4, b"\xc1\xbf": 0, b"\xc2\x80": 2,
             b"\xdf\xbf": 2, b"\xe0\xa0\x80": 3, b"\xef\xbf\xbd": 3, b"\xf4\x8f\xbf\xbf": 4, b"\xf5\x80\x80\x80": 0,
             b"\x80": 0, b"\xe2\x82": 0, b"\xed\xa0\x80": 0, b"\xf0\x9f\x98": 0}
    for data, width in cases.items():
        assert page._utf8_len(data, 0) == width, data
    assert page._utf8_len(b"x\xc3\xa9", 1) == 2 and page._utf8_len(b"x\xc3", 1) == 0
    assert [page._pct(p) for p in (1.0, 0.5, 0.1, 0.0996, 0.0994, 0.05, 0.00096, 0.00094, 0.0)] == [
        "100%", "50%", "10%", "10%", "9.9%", "5.0%", "0.1%", "<0.1%", "<0.1%"]
    assert len(page.PCT_LABELS) == 191 and page.PCT_LABELS[:3] == ["<0.1%", "0.1%", "0.2%"]
    assert page.PCT_LABELS[99:102] == ["9.9%", "10%", "11%"] and page.PCT_LABELS[-1] == "100%"
    assert page._css_bins().splitlines() == [
        ".c0{background:#ffffff;color:#000}", ".c1{background:#fff7bc;color:#000}",
        ".c2{background:#fee391;color:#000}", ".c3{background:#fec44f;color:#000}",
        ".c4{background:#fe9929;color:#000}", ".c5{background:#ec7014;color:#000}",
        ".c6{background:#cc4c02;color:#fff}", ".c7{background:#993404;color:#fff}",
        ".c8{background:#662506;color:#fff}", ".c9{background:#3f007d;color:#fff}"]
    assert page._legend() == (
        '<p class="legend">Cost in bits per character: <span class="c0">0–0.25</span><span class="c1">0.25–0.5</span>'
        '<span class="c2">0.5–1</span><span class="c3">1–2</span><span class="c4">2–3</span><span class="c5">3–4</span>'
        '<span class="c6">4–6</span><span class="c7">6–8</span><span class="c8">8–12</span><span class="c9">≥ 12</span></p>')
    assert [page._kind_code(kind, 0, w) for kind, w in [("newline", 1), ("newline", 2), ("tab", 1), ("char", 1),
                                                          ("char", 2), ("char", 3), ("char", 4), ("escape", 1),
                                                          ("escape", 2), ("escape", 3), ("escape", 4)]] == list("nrt1234ABCD")
    assert page._kind_code("char", 5, 7) == "2"
    assert page._script_json({"a": "</script><b>", "n": [1, 2]}) == '{"a":"\\u003c/script>\\u003cb>","n":[1,2]}'
    assert page._b64(np.array([1, 2], dtype="<u2")) == "AQACAA=="
    groups = page.char_groups(b"a\r\nb\rc\td\xe2\x80\xa8\x85\xc2\x85")
    assert groups == [(0, 1, "char", "a"), (1, 3, "newline", ""), (3, 4, "char", "b"), (4, 5, "escape", "\\x0d"),
                      (5, 6, "char", "c"), (6, 7, "tab", "\t"), (7, 8, "char", "d"), (8, 11, "escape", "\\u2028"),
                      (11, 12, "escape", "\\x85"), (12, 14, "escape", "\\u0085")]
    assert page.char_groups(b"<&'\"") == [(0, 1, "char", "&lt;"), (1, 2, "char", "&amp;"), (2, 3, "char", "&#x27;"),
                                         (3, 4, "char", "&quot;")]
    assert page.char_groups(b"") == [] and page.char_groups(b"\r") == [(0, 1, "escape", "\\x0d")]


def test_the_pages_section_and_whole_page(tmp_path):
    from nncompress.analysis import page

    data = "héllo\n".encode() * 5
    r = analysis.analyze_file(data, 1, name="a<b>.txt", references=False, keep_costs=True)
    d = page.page_data(r, limit=9)
    assert base64.b64decode(d["bytes"]) == data[:8]  # cut at a character boundary, never inside é
    assert d["kinds"] == "12111n1"
    assert np.frombuffer(base64.b64decode(d["costs"]), dtype="<u2").tolist() == np.minimum(
        np.round(r["costs"]["nncompress"][:8] * 100), 65535).astype(int).tolist()
    assert len(base64.b64decode(d["top"])) == len(base64.b64decode(d["pct"])) == 7 * 5
    empty = page.page_data(dict(r, data=b"", costs={"nncompress": np.zeros(0)}), limit=5)
    assert empty == {"bytes": "", "kinds": "", "costs": "", "top": "", "pct": ""}
    section = page.surprisal_html(r, limit=9, index=3)
    assert section.startswith("<h2>a&lt;b&gt;.txt</h2>\n<table>")
    assert "Showing the first 8 of 35 bytes; the numbers above cover the whole file." in section
    assert "under nncompress -1 as it compresses" in section
    assert 'id="nnc-text-3"' in section and 'data-target="nnc-text-3"' in section
    assert "Showing all 35 bytes." in page.surprisal_html(r, limit=100)
    out = tmp_path / "p.html"
    assert page.write_html([r, dict(r, name="second")], str(out), limit=8) == str(out)
    html_text = out.read_text(encoding="utf-8")
    assert html_text.startswith('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                                "<title>nncompress surprisal: a&lt;b&gt;.txt, second</title>\n<style>\n")
    assert "<h1>nncompress surprisal: a&lt;b&gt;.txt, second</h1>" in html_text
    assert '<script type="application/json" id="nnc-edges">[25,50,100,200,300,400,600,800,1200]</script>' in html_text
    assert f'<script type="application/json" id="nnc-pct">{page._script_json(page.PCT_LABELS)}</script>' in html_text
    assert 'id="nnc-text-0"' in html_text and 'id="nnc-text-1"' in html_text
    assert page._asset("page.css") in html_text and page._asset("page.js") in html_text
    assert html_text.endswith("</script>\n</body></html>\n")


def test_order_7_contexts_keep_every_bit_of_their_oldest_byte():
    """Seven bytes of context and the byte itself fill 64 bits exactly: contexts that differ only
    in the top bit of their oldest byte are still told apart (round 7: `entropy_details` 47)."""
    pairs = [(1, 65), (1, 66), (129, 65), (129, 66)] * 10
    data = b"".join(bytes([first]) + b"\x00" * 6 + bytes([last]) for first, last in pairs)
    rows = analysis.entropy_details(data, 7)
    assert rows[7]["bits_per_byte"] == pytest.approx(slow_entropy(data, 7), abs=1e-12)
    assert analysis.entropy.as_array(np.array([1, 255], dtype=np.int64)).dtype == np.uint8
    assert analysis.entropy.as_array(b"ab").tolist() == [97, 98]


def test_top_predictions_are_the_likeliest_bytes_ties_by_byte_value():
    """Round 7 (analysis/costs.py): the five likeliest bytes, equal probabilities in byte order (the
    model's first predictions are full of ties); one byte in, one row out; the sizes of custom
    parameters."""
    from nncompress.model.params import fit_to_input

    data = b"progress of the model pass, " * 10
    _, top, p = analysis.top_predictions(data, 1)
    _, dists = Predictor(fit_to_input(params_for_level(1), len(data)), len(data)).byte_distributions(data)
    for i in range(len(data)):
        assert top[i].tolist() == sorted(range(256), key=lambda b: (-dists[i, b], b))[:5], i
        assert p[i].tolist() == dists[i, top[i]].tolist()
    assert p[0, 1] == p[0, 4]  # ties are there to be ordered
    c, top, p = analysis.top_predictions(b"a", 1)
    assert c.shape == (1,) and top.shape == (1, 5) and p.shape == (1, 5)
    c, top, p = analysis.top_predictions(b"", 1)
    assert top.dtype.kind == "i" and p.dtype == np.float64
    params = params_for_level(2)
    assert analysis.nncompress_size(data, 1, params=params) == len(nncompress.compress(data, params=params))
    assert analysis.nncompress_size(data, 1, params) != analysis.nncompress_size(data, 1)


def test_a_missing_reference_is_skipped_and_named_and_the_others_still_run(monkeypatch):
    """Round 7 (analysis/report.py): a Python without lzma has no xz; PAQ after it is still
    measured."""
    import zlib

    from nncompress.analysis import report

    monkeypatch.setattr(report, "reference_codecs", lambda keys: {"gzip": lambda d: zlib.compress(d, 9),
                                                                  "xz": None, "paq9a": lambda d: d[:7]})
    r = analysis.analyze_file(b"references " * 20, 1)
    assert r["reference"]["xz"] is None and r["reference"]["paq"] == {"bytes": 7, "bpc": 8 * 7 / 220}


def test_the_note_of_a_missing_reference_names_it(monkeypatch):
    import zlib

    from nncompress.analysis import report

    monkeypatch.setattr(report, "reference_codecs", lambda keys: {"gzip": lambda d: zlib.compress(d, 9),
                                                                  "xz": None, "paq9a": None})
    r = analysis.analyze_file(b"references " * 20, 1)
    assert r["notes"][1:] == ["xz skipped: not available.", "PAQ skipped: the 'paq' package (paq9a) is not installed."]


def test_the_model_time_is_rounded_to_the_millisecond(monkeypatch):
    import types

    from nncompress.analysis import report

    clock = iter([100.0, 101.23456])
    monkeypatch.setattr(report, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    assert analysis.analyze_file(b"timed " * 10, 1, references=False)["nncompress"]["seconds"] == 1.235


def test_analyze_paths_finds_catalog_files_in_the_folder_given(corpora, tmp_path, monkeypatch):
    monkeypatch.delenv("NNC_CORPORA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the fetch cache: empty
    report = analysis.analyze_paths(["grammar.lsp"], 1, references=False, corpora_dir=str(corpora))
    assert [r["name"] for r in report["files"]] == ["grammar.lsp"] and report["files"][0]["reference"] == {}
    assert report["files"][0]["bytes"] == (corpora / "grammar.lsp").stat().st_size
    assert analysis.analyze_paths([str(corpora / "grammar.lsp")], 1)["files"][0]["reference"]["gzip"]


def test_the_text_report_of_short_names_and_of_nothing():
    one = _sample_analysis()
    one["files"] = one["files"][:1]
    one["sets"] = []
    lines = analysis.format_report(one).splitlines()
    assert lines[1] == "file          bytes distinct     H0     H1     H2  once@2"  # names padded to 8 at least
    assert lines[2].startswith("a.txt         1,000       40  4.500")
    empty = analysis.format_report({"level": 4, "files": [], "sets": []})  # no files: headings only
    assert empty.splitlines()[5].startswith("file          bytes   order-2 KT") and "nnc -4 ideal" in empty


def test_the_text_reports_level_is_the_files_and_a_sets_paq_column():
    report = _sample_analysis()
    report["level"] = 7  # asked for; the files were coded at 3 (custom parameters say 0)
    report["sets"][0]["methods"]["paq"] = {"bpc": 6.5, "mean_file_bpc": 4.25}
    lines = analysis.format_report(report).splitlines()
    assert "nnc -3 ideal" in lines[8] and "nnc -7" not in "\n".join(lines)
    assert lines[11].split() == ["[s]", "13,345", "7.750", "7.625", "7.500", "6.500", "7.125", "7.250", "12,048"]
    assert lines[12].split() == ["mean", "of", "files", "5.800", "5.500", "5.350", "4.250", "4.812", "4.938"]


def test_a_sets_summary_totals_every_reference_all_its_files_have():
    def result(name, size, refs):
        return {"name": name, "bytes": size, "order2_adaptive": {"bits": 8.0 * size},
                "nncompress": {"code_length_bits": 8.0 * size, "compressed_bytes": size},
                "reference": refs, "entropy": []}

    both = [result("a", 100, {"gzip": {"bytes": 50}, "xz": {"bytes": 40}, "paq": {"bytes": 30}}),
            result("b", 300, {"gzip": {"bytes": 150}, "xz": {"bytes": 100}, "paq": None})]
    s = analysis.set_summary("refs", both)
    assert s["methods"]["gzip"]["bytes"] == 200 and s["methods"]["xz"] == {
        "bytes": 140, "bpc": 8 * 140 / 400, "mean_file_bpc": pytest.approx((3.2 + 8 / 3) / 2)}
    assert "paq" not in s["methods"] and s["entropy"] == []


def test_the_pages_assets_are_read_as_utf_8_whatever_the_locale(tmp_path):
    """page.css and page.js are ASCII today; one with "↵" must still load under the C locale
    (round 7: `page._asset` 1)."""
    (tmp_path / "page.js").write_text("// draws ↵ for a line end\n", encoding="utf-8")
    probe = ("import sys, locale, pathlib; from importlib import resources; from nncompress.analysis import page\n"
             "assert locale.getpreferredencoding(False).lower() in ('ascii', 'ansi_x3.4-1968')\n"
             "resources.files = lambda package: pathlib.Path(sys.argv[1])\n"
             "print(ascii(page._asset('page.js')))")
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout == ascii("// draws ↵ for a line end\n") + "\n"


def test_the_pages_boundaries_and_unsafe_categories():
    """Round 7 (analysis/page.py): the percentage labels at their exact edges (100 p = 9.95 and
    0.095), surrogates, private use and unassigned code points escaped, a bare line feed, the xz
    row and the table's exact markup."""
    from nncompress.analysis import page

    assert 100 * 0.09949999999999999 == 9.95 and 100 * 0.00095 == 0.095
    assert page._pct(0.09949999999999999) == "10%" and page._pct(0.00095) == "0.1%"
    for ch in ("\ud800", "\udfff", "\ue000", "\U000f0000", "\u0378", "\x85"):
        assert page._unsafe_char(ch), hex(ord(ch))
    assert not any(page._unsafe_char(ch) for ch in ("é", "😀", " ", "\u00a0"))
    assert page.char_groups(b"a\nb") == [(0, 1, "char", "a"), (1, 2, "newline", ""), (2, 3, "char", "b")]
    numbers = dict(NUMBERS, reference=dict(NUMBERS["reference"], xz={"bpc": 2.5, "bytes": 3858}))
    table = page._numbers_table(numbers)
    assert "<tr><td>xz -9e (lzma)</td><td>2.500 bpc (3,858 bytes)</td></tr>" in table
    assert table == ("<table><tr><th>measure (whole file)</th><th>value</th></tr>"
                     + "".join(f"<tr><td>{a}</td><td>{b}</td></tr>"
                               for a, b in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", table)) + "</table>")


def test_a_custom_models_page_shows_that_models_predictions_and_a_tiny_limit_shows_nothing():
    from nncompress.analysis import page

    data = b"custom parameters on the page. " * 4
    params = params_for_level(2)
    r = analysis.analyze_file(data, params=params, references=False, keep_costs=True)
    _, top, _ = analysis.top_predictions(data, params=params)
    expected = base64.b64encode(top.astype(np.uint8).tobytes()).decode()
    assert page.page_data(r, 1000, params)["top"] == expected
    assert f'"top":"{expected}"' in page.surprisal_html(r, 1000, params)
    first_wide = dict(r, data="é".encode() + data, costs={"nncompress": np.ones(len(data) + 2)})
    assert page.page_data(first_wide, 1)["bytes"] == ""  # half a character is never shown


def test_the_whole_pages_joins_and_its_encoding(tmp_path):
    """Round 7: the sections follow one another with nothing between, the tooltip's box is where
    page.js looks for it, a CR LF at the very end is one line end, and the page (its legend has
    "–" and "≥") is written as UTF-8 whatever the locale."""
    from nncompress.analysis import page

    assert page.char_groups(b"a\r\n") == [(0, 1, "char", "a"), (1, 3, "newline", "")]
    r = analysis.analyze_file(b"two sections\n", 1, name="one", references=False, keep_costs=True)
    out = tmp_path / "p.html"
    page.write_html([r, dict(r, name="two")], str(out))
    text = out.read_text(encoding="utf-8")
    assert "</script>\n<h2>two</h2>" in text
    assert ('</script>\n<div id="nnc-tip" hidden></div>\n<script type="application/json" id="nnc-pct">'
            in text)
    probe = ("import sys, locale; from nncompress.analysis import page\n"
             "assert locale.getpreferredencoding(False).lower() in ('ascii', 'ansi_x3.4-1968')\n"
             "page.write_html([], sys.argv[1])")
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    done = subprocess.run([sys.executable, "-c", probe, str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "0.25–0.5" in out.read_text(encoding="utf-8")


def test_the_learning_curve_helpers_exactly():
    from nncompress.analysis.plot import auto_window, cumulative_average, moving_average

    x, y = moving_average(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 2)
    assert x.tolist() == [2, 3, 4, 5] and y.tolist() == [1.5, 2.5, 3.5, 4.5]
    x, y = moving_average(np.array([1.0, 2.0, 6.0]), 10)  # the window shrinks to the file
    assert x.tolist() == [3] and y.tolist() == [3.0]
    x, y = moving_average(np.array([1.0, 2.0, 6.0]), 0)  # and grows to one byte
    assert x.tolist() == [1, 2, 3] and y.tolist() == [1.0, 2.0, 6.0]
    x, y = moving_average(np.zeros(0), 5)
    assert x.shape == (0,) and y.shape == (0,)
    assert [auto_window(n) for n in (0, 1, 5099, 5100, 123_456, 500_099, 500_100, 10**9)] == \
        [50, 50, 50, 51, 1234, 5000, 5000, 5000]
    assert type(auto_window(10**9)) is int
    x, y = cumulative_average(np.array([3.0, 1.0]))
    assert x.tolist() == [1, 2] and y.tolist() == [3.0, 2.0]


def _curve_result(name, n, refs, seed=0):
    rng = np.random.default_rng(seed)
    return {"name": name, "bytes": n, "nncompress": {"level": 6, "code_length_bpc": 2.5},
            "costs": {"nncompress": rng.uniform(1, 4, n), "order2": rng.uniform(2, 5, n)},
            "reference": {k: {"bpc": v} for k, v in refs.items()}}


def test_the_learning_curve_plot_shows_every_curve_and_reference(tmp_path, monkeypatch, capsys):
    """What each panel shows: the moving averages (every second point once there are 8,000), the costs so
    far at positions 1..n, each reference's line and value, axes, limits, labels; files without
    bytes left out; the files over the limit named; saved once at the path given, then closed."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from nncompress.analysis.plot import write_plot

    saved = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: saved.append((fig, path, kw)))
    monkeypatch.setattr(Figure, "tight_layout", lambda fig, **kw: None)  # layout only, and the slow part
    big = _curve_result("big.txt", 8003, {"gzip": 3.1, "xz": 2.9, "paq": 2.2})
    tiny = _curve_result("t", 1, {"xz": 2.0}, seed=1)
    empty = _curve_result("e", 0, {})
    assert write_plot([empty, big, tiny], "c.png", window=4) == "c.png"
    assert capsys.readouterr().err == ""
    [(fig, path, kw)] = saved
    assert path == "c.png" and kw == {"dpi": 110} and not plt.fignum_exists(fig.number)
    assert tuple(fig.get_size_inches()) == (15, 7.2)
    axes = fig.axes
    assert len(axes) == 4 and [a.get_subplotspec().get_geometry()[:2] for a in axes] == [(2, 2)] * 4
    assert axes[0].get_gridspec().get_width_ratios() == [3, 2]
    assert [(a.get_subplotspec().rowspan.start, a.get_subplotspec().colspan.start) for a in axes] == [
        (0, 0), (0, 1), (1, 0), (1, 1)]  # one row per file: the learning curve left, the cost so far right
    left, right, tiny_left, tiny_right = axes

    def moving(v, w):
        return np.array([v[i - w:i].mean() for i in range(w, len(v) + 1)])

    lines = left.get_lines()
    assert [line.get_label() for line in lines] == [
        "nncompress -6 (RNNME, online)", "adaptive order-2 (KT estimator)",
        "gzip -9 (whole file, 3.10)", "xz -9e (whole file, 2.90)", "paq9a (whole file, 2.20)"]
    for line, key in zip(lines, ("nncompress", "order2")):
        assert line.get_xdata().tolist() == list(range(4, 8004, 2))
        assert np.allclose(line.get_ydata(), moving(big["costs"][key], 4)[::2], rtol=0, atol=1e-9)
    for line, value in zip(lines[2:], (3.1, 2.9, 2.2)):
        assert list(line.get_ydata()) == [value, value] and list(line.get_xdata()) == [0, 1]
    assert [line.get_linestyle() for line in lines[2:]] == [":", "--", "-."]  # the legend's only key to them
    assert left.get_xlim() == (0, 8003) and left.get_ylim()[0] == 0
    assert left.get_xscale() == "linear"
    assert left.get_xlabel() == "position in file (bytes)"
    assert left.get_ylabel() == "bits per byte (mean of last 4 bytes)"
    assert left.get_title() == "big.txt: learning curve (8,003 bytes; nncompress 2.500 bpc overall)"
    assert [t.get_text() for t in left.get_legend().get_texts()] == [line.get_label() for line in lines]

    lines = right.get_lines()
    assert [line.get_label() for line in lines] == ["nncompress -6", "adaptive order-2", "gzip -9 (3.10)",
                                                   "xz -9e (2.90)", "paq9a (2.20)"]
    for line, key in zip(lines, ("nncompress", "order2")):
        x = line.get_xdata()
        assert x[0] == 1 and x[-1] == 8003 and np.all(np.diff(x) > 0) and 1000 < len(x) <= 2000
        so_far = np.cumsum(big["costs"][key]) / np.arange(1, 8004)
        assert np.array_equal(line.get_ydata(), so_far[x - 1])
    assert [list(line.get_ydata()) for line in lines[2:]] == [[3.1, 3.1], [2.9, 2.9], [2.2, 2.2]]
    assert [line.get_linestyle() for line in lines[2:]] == [":", "--", "-."]
    assert right.get_xscale() == "log" and right.get_xlim() == (1, 8003) and right.get_ylim() == (0, 9)
    assert right.get_xlabel() == "first bytes of the file (log scale)"
    assert right.get_ylabel() == "cumulative bits per byte"
    assert right.get_title() == "cost so far, against the whole-file comparators"
    assert [t.get_text() for t in right.get_legend().get_texts()] == [line.get_label() for line in lines]

    assert [line.get_label() for line in tiny_left.get_lines()] == [
        "nncompress -6 (RNNME, online)", "adaptive order-2 (KT estimator)", "xz -9e (whole file, 2.00)"]
    assert tiny_left.get_lines()[0].get_xdata().tolist() == [1]
    assert tiny_left.get_xlim() == (0, 1) and tiny_right.get_xlim() == (1, 2)
    assert tiny_right.get_lines()[0].get_xdata().tolist() == [1]

    saved.clear()
    write_plot([big, empty, tiny], "d.png", max_files=1)
    assert capsys.readouterr().err == "nncompress analyze: plotting the first 1 files only\n"
    [(fig, _, _)] = saved
    assert len(fig.axes) == 2 and fig.axes[0].get_ylabel() == "bits per byte (mean of last 80 bytes)"
    with pytest.raises(ValueError, match=r"^nothing to plot \(empty files\)$"):
        write_plot([empty], "e.png")
    assert len(saved) == 1
    write_plot([_curve_result("s", 10, {})], "f.png", window=4, max_files=1)  # exactly the limit: all shown
    assert capsys.readouterr().err == ""
    assert saved[-1][0].axes[0].get_lines()[0].get_xdata().tolist() == [4, 5, 6, 7, 8, 9, 10]
    write_plot([_curve_result(str(i), 1, {}) for i in range(9)], "g.png")  # eight files by default
    assert capsys.readouterr().err == "nncompress analyze: plotting the first 8 files only\n"
    assert [a.get_title().split(":")[0] for a in saved[-1][0].axes[::2]] == [str(i) for i in range(8)]
