"""The numba twin of constriction's range coder (nncompress.rangecoder) against constriction itself.

The twin must write exactly the bytes constriction writes and read back exactly the symbols
constriction reads, for any distribution the model can hand over and for the adversarial ones
it should not (tiny, zero, dominant, equal, unnormalised, subnormal entries), and must refuse
the same rows.  Real model output and the golden archives are checked with both coders.
Runs in CI on every run: the twin decodes every archive, and it is the only coder on platforms
without a constriction wheel.
"""

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import nncompress
from nncompress import coder, rangecoder
from nncompress.errors import NNCError
from nncompress.model.predictor import Predictor, bytes_to_nibbles
from nncompress.presets import params_for_level

constriction = pytest.importorskip("constriction")  # the oracle (installed wherever CI runs)

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
FAMILY = constriction.stream.model.Categorical(perfect=False)
EXTREME = [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-30, 2.0 ** -24, 1e-7,
           0.5, 1.0, 4095.0 ** 4, 1e30, 1e300]


def oracle_encode(symbols, rows) -> bytes:
    encoder = constriction.stream.queue.RangeEncoder()
    if len(symbols):
        try:
            encoder.encode(np.asarray(symbols, dtype=np.int32), FAMILY, np.asarray(rows, dtype=np.float64))
        except BaseException as exc:
            # a row whose only mass is one entry near the smallest normal float (1e-302) makes
            # constriction panic ("leakiness should guarantee nonzero probabilities") where it
            # raises ValueError for smaller ones: a refusal too (pyo3's PanicException is a
            # BaseException)
            if type(exc).__name__ == "PanicException":
                raise ValueError(f"constriction panicked: {exc}") from None
            raise
    return encoder.get_compressed().astype("<u4").tobytes()


def twin_encode(symbols, rows) -> bytes:
    encoder = coder.NibbleEncoder(backend="twin")
    encoder.encode(np.asarray(symbols, dtype=np.int64), np.asarray(rows, dtype=np.float64))
    return encoder.finish()


def decode_all(payload, rows, backend):
    decoder = coder.NibbleDecoder(payload, backend=backend)
    return [decoder.decode(row) for row in np.asarray(rows, dtype=np.float64)]


def assert_twin_matches(symbols, rows):
    """Same bytes from both encoders; both decoders read the symbols back from them."""
    expected = oracle_encode(symbols, rows)
    assert twin_encode(symbols, rows) == expected
    assert decode_all(expected, rows, "twin") == list(symbols)
    assert decode_all(expected, rows, "constriction") == list(symbols)
    return expected


# ---------------------------------------------------------------------------------------------
# distributions


def adversarial_cases():
    """(name, symbols, rows) for the shapes of distribution a coder twin can get wrong."""
    rng = np.random.default_rng(16)
    n = 3000
    cases = []
    rows = rng.random((n, 16))
    cases.append(("random", [int(rng.choice(16, p=r / r.sum())) for r in rows], rows))
    rows = rng.random((n, 16)) ** 30  # most mass on one or two symbols, the rest tiny
    cases.append(("peaked", [int(rng.choice(16, p=r / r.sum())) for r in rows], rows))
    rows = np.full((n, 16), 1e-12)
    rows[:, 7] = 1.0
    cases.append(("dominant, coding it (long run)", [7] * n, rows))
    cases.append(("dominant, coding the others", list(rng.integers(0, 16, n)), rows))
    rows = np.full((n, 16), 1.0)
    cases.append(("all equal", list(rng.integers(0, 16, n)), rows))
    rows = rng.random((n, 16))
    rows[rng.random((n, 16)) < 0.5] = 0.0
    rows[:, 3] += 1e-9  # no row is all zero
    cases.append(("zeros", list(rng.integers(0, 16, n)), rows))
    rows = np.full((n, 16), 2.0 ** -24 / 16)
    rows[:, 0] = 1.0
    cases.append(("smallest weights, rare symbols", list(rng.integers(1, 16, n)), rows))
    rows = rng.choice(EXTREME[1:4], size=(n, 16))  # subnormal entries, normal sums
    rows[:, 5] = 1e-300
    cases.append(("denormal-ish", list(rng.integers(0, 16, n)), rows))
    rows = rng.random((n, 16)) * 10.0 ** rng.integers(-300, 300, (n, 1))
    cases.append(("unnormalised scales", list(rng.integers(0, 16, n)), rows))
    rows = np.prod(rng.integers(1, 4096, (n, 16, 4)).astype(np.float64), axis=2)
    cases.append(("model-like products", list(rng.integers(0, 16, n)), rows))
    return cases


@pytest.mark.parametrize("name,symbols,rows", adversarial_cases(),
                         ids=[c[0] for c in adversarial_cases()])
def test_adversarial_distributions(name, symbols, rows):
    assert_twin_matches(symbols, rows)


def test_cases_reach_the_encoders_carry_paths():
    """The adversarial cases must exercise the held-back ("inverted") words, one and several,
    or the byte comparison above would not cover the encoder's carry handling."""
    most_held = 0
    carries = 0
    for _, symbols, rows in adversarial_cases():
        state = rangecoder.new_encoder_state()
        words = np.zeros(len(symbols) + 2, dtype=np.uint32)
        cdf = np.zeros(17, dtype=np.uint64)
        symbols = np.asarray(symbols, dtype=np.int64)
        for k in range(len(symbols)):
            held = int(state[rangecoder.ENC_INVERTED])
            lower = int(state[rangecoder.ENC_LOWER])
            rangecoder.encode_rows(state, words, symbols[k : k + 1], rows[k : k + 1], cdf)
            most_held = max(most_held, int(state[rangecoder.ENC_INVERTED]))
            if held and not state[rangecoder.ENC_INVERTED] and int(state[rangecoder.ENC_LOWER]) < lower:
                carries += 1
    assert most_held >= 2
    assert carries >= 1


row_entry = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1e300),
    st.floats(min_value=0.0, max_value=1e-300, allow_subnormal=True),
    st.sampled_from(EXTREME),
)
row = st.lists(row_entry, min_size=16, max_size=16)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 15), row), min_size=1, max_size=60))
def test_random_rows_same_bytes_or_same_refusal(pairs):
    symbols = [s for s, _ in pairs]
    rows = np.array([r for _, r in pairs], dtype=np.float64)
    try:
        expected = oracle_encode(symbols, rows)
    except ValueError:
        with pytest.raises(ValueError):
            twin_encode(symbols, rows)
        return
    assert twin_encode(symbols, rows) == expected
    assert decode_all(expected, rows, "twin") == symbols


@settings(max_examples=200, deadline=None)
@given(row)
@example([1.11484333e-302] + [0.0] * 15)  # constriction panics; the twin must refuse it too
@example([2.2250738585072014e-308] + [0.0] * 15)
def test_one_row_quantises_like_constriction(probabilities):
    """Every symbol of every row: constriction's cdf, read back through the coder itself."""
    rows = np.array([probabilities] * 16, dtype=np.float64)
    try:
        expected = oracle_encode(list(range(16)), rows)
    except ValueError:
        cdf = np.zeros(17, dtype=np.uint64)
        assert not rangecoder.quantize(rows[0], cdf)
        return
    assert twin_encode(list(range(16)), rows) == expected


@pytest.mark.parametrize("bad", [
    [0.0] * 16, [5e-324] * 16, [np.nan] + [1.0] * 15, [np.inf] + [1.0] * 15, [1e308] * 16,
])
def test_rows_constriction_refuses_are_refused(bad):
    rows = np.array([[1.0] * 16, bad])
    with pytest.raises(ValueError):
        oracle_encode([1, 2], rows)
    with pytest.raises(ValueError):
        twin_encode([1, 2], rows)
    payload = oracle_encode([1], rows[:1])
    for backend in ("twin", "constriction"):
        decoder = coder.NibbleDecoder(payload, backend=backend)
        with pytest.raises(NNCError, match="undecodable"):
            decoder.decode(rows[1])


def test_negative_entries_are_refused_by_the_twin():
    # constriction's encoder does not check signs (the model never makes negative entries);
    # the twin refuses them rather than copy undefined behaviour
    with pytest.raises(ValueError):
        twin_encode([0], [[-1e-3] + [1.0] * 15])


def test_empty_stream_is_empty():
    assert coder.NibbleEncoder(backend="twin").finish() == b"" == oracle_encode([], np.zeros((0, 16)))


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=0, max_size=48).map(lambda b: b[: len(b) // 4 * 4]),
       st.integers(0, 2 ** 32 - 1))
def test_garbage_payloads_decode_or_fail_alike(payload, seed):
    """On damaged data both decoders read the same symbols and fail at the same nibble."""
    rows = np.random.default_rng(seed).random((40, 16)) ** 8
    rows[rows.sum(axis=1) == 0, 0] = 1.0
    outcomes = []
    for backend in ("twin", "constriction"):
        decoder = coder.NibbleDecoder(payload, backend=backend)
        got = []
        try:
            for r in rows:
                got.append(decoder.decode(r))
        except NNCError:
            got.append("error")
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


def test_invalid_data_is_an_nncerror():
    decoder = coder.NibbleDecoder(b"\xff" * 64, backend="twin")
    with pytest.raises(NNCError, match="undecodable"):
        for _ in range(100):
            decoder.decode(np.full(16, 1.0 / 16))


# ---------------------------------------------------------------------------------------------
# real model output


@pytest.fixture(scope="module")
def model_predictions(sample_text):
    out = {}
    for level in (1, 6):
        data = sample_text[:3000]
        out[level] = (data, Predictor(params_for_level(level)).predict_known(data))
    return out


@pytest.mark.parametrize("level", [1, 6])
def test_real_model_output(model_predictions, level):
    data, probabilities = model_predictions[level]
    nibbles = bytes_to_nibbles(data)
    assert_twin_matches(list(nibbles), probabilities)


@pytest.mark.parametrize("level", [1, 6])
def test_in_kernel_decoder_is_resumable(model_predictions, level):
    """The fused model+coder loop decodes a block in pieces of any size, like one call would."""
    data, probabilities = model_predictions[level]
    nibbles = bytes_to_nibbles(data)
    payload = oracle_encode(nibbles, probabilities)
    for pieces in ([nibbles.shape[0]], [1, 2, 3, 500, 7], [1000] * 6):
        decoder = coder.NibbleDecoder(payload, backend="twin")
        # the same model, coded as one 16-way symbol per nibble (the oracle's coding)
        predictor = Predictor(dataclasses.replace(params_for_level(level), path_coding=0))
        out = np.empty(nibbles.shape[0], dtype=np.uint8)
        start = 0
        for size in pieces + [nibbles.shape[0]]:
            size = min(size, nibbles.shape[0] - start)
            decoder.decode_run(predictor, out, start, size)
            start += size
        assert np.array_equal(out, nibbles)


# ---------------------------------------------------------------------------------------------
# golden archives and backend selection


@pytest.mark.parametrize("backend", ["twin", "constriction"])
def test_golden_archives_decode_with_both_coders(monkeypatch, backend):
    monkeypatch.setattr(coder, "DECODER", backend)
    for entry in MANIFEST["entries"]:
        out = nncompress.decompress((GOLDEN / entry["archive"]).read_bytes())
        assert hashlib.sha256(out).hexdigest() == entry["input_sha256"], entry["archive"]


def test_twin_encoder_reproduces_golden_archives(monkeypatch):
    """Format 1 (the kept format-1 writer) and format 2 (tests/golden/v2)."""
    from nncompress.segments import compress_segment

    monkeypatch.setattr(coder, "BACKEND", "twin")
    for entry in MANIFEST["entries"]:
        data = (GOLDEN / entry["input"]).read_bytes()
        archive = compress_segment(data, entry["level"], format_version=1, preset_id=entry["level"])
        assert hashlib.sha256(archive).hexdigest() == entry["archive_sha256"], entry["archive"]
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_v2", GOLDEN / "v2" / "make_v2.py")
    make_v2 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_v2)
    for entry in json.loads((GOLDEN / "v2" / "manifest.json").read_text())["entries"]:
        if entry["input_size"] > 10_000:
            continue  # the small ones cover the coder; the long input adds time, not coverage
        archive = make_v2.compress_entry(entry, make_v2.read_input(entry["input"]))
        assert hashlib.sha256(archive).hexdigest() == entry["archive_sha256"], entry["archive"]


def selection(value):
    env = dict(os.environ, NNC_CODER=value)
    return subprocess.run(
        [sys.executable, "-c", "from nncompress import coder; "
         "print(coder.BACKEND, coder.DECODER); print(coder.coder_description())"],
        env=env, capture_output=True, text=True, timeout=300)


def test_nnc_coder_forces_a_backend():
    twin = selection("twin")
    assert twin.returncode == 0, twin.stderr
    assert twin.stdout.splitlines()[0] == "twin twin"
    assert "twin" in twin.stdout.splitlines()[1] and "constriction 0" not in twin.stdout
    oracle = selection("constriction")
    assert oracle.returncode == 0, oracle.stderr
    assert oracle.stdout.splitlines()[0] == "constriction constriction"
    default = selection("")
    assert default.stdout.splitlines()[0] == "constriction twin"
    wrong = selection("fast")
    assert wrong.returncode != 0 and "NNC_CODER" in wrong.stderr


def test_constriction_is_required_exactly_where_it_has_wheels():
    """pyproject's marker: constriction 0.5 ships wheels for CPython 3.10-3.14 on x86-64 Linux
    (glibc), macOS (x86-64, arm64) and x86-64 Windows, and no source package (checked with
    `pip download --only-binary=:all: --platform ...`); everywhere else the twin codes."""
    tomllib = pytest.importorskip("tomllib")
    requirements = pytest.importorskip("packaging.requirements")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    (dep,) = [requirements.Requirement(d) for d in deps if d.startswith("constriction")]
    assert dep.specifier.contains("0.5.0") and not dep.specifier.contains("0.6.0")

    def wanted(system, machine, python="3.12"):
        return dep.marker.evaluate(dict(sys_platform=system, platform_machine=machine,
                                        python_version=python))

    assert wanted("linux", "x86_64") and wanted("darwin", "arm64") and wanted("darwin", "x86_64")
    assert wanted("win32", "AMD64") and wanted("linux", "x86_64", "3.10")
    assert not wanted("linux", "aarch64") and not wanted("linux", "ppc64le")
    assert not wanted("linux", "s390x") and not wanted("win32", "ARM64")
    assert not wanted("linux", "x86_64", "3.15")


def test_coder_kernels_are_part_of_the_compiled_cache_key():
    """numba would reuse the fused loop's machine code after a model or coder file changed (it
    checks only the caller's own file): every kernel's cache key hashes all compiled sources."""
    from nncompress.model import jit

    names = {path.name for path in jit.compiled_sources()}
    assert {"rangecoder.py", "fused.py", "nibble.py", "mixer.py"} <= names
    assert "reference.py" not in names
