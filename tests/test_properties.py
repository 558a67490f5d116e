"""Property tests: any bytes, any level, any split of the input or of the archive."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nncompress
from nncompress.api import NNDecompressor
from nncompress.codec import StreamDecoder

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text-like and arbitrary bytes: the model's text contexts (words, columns) get exercised too
texty = st.text(alphabet=st.sampled_from("abc def\nXYZ.,é\t0123"), max_size=300).map(
    lambda s: s.encode("utf-8"))
data_strategy = st.one_of(st.binary(max_size=300), texty)


@FAST
@given(data=data_strategy, level=st.integers(1, 9))
def test_round_trip_every_level(data, level):
    assert nncompress.decompress(nncompress.compress(data, level)) == data


@pytest.mark.parametrize("level", range(1, 10))
def test_round_trip_edge_inputs_each_level(level):
    for data in (b"", b"\0", b"\xff" * 3, bytes(range(256)), b"a" * 1000):
        assert nncompress.decompress(nncompress.compress(data, level)) == data


@FAST
@given(data=st.binary(max_size=400), block_size=st.integers(1, 200), cuts=st.lists(st.integers(0, 400)))
def test_output_does_not_depend_on_how_input_is_split(data, block_size, cuts):
    whole = nncompress.compress(data, 1, block_size=block_size)
    unknown = nncompress.NNCompressor(1, block_size=block_size)  # no size: the model is not fitted
    unknown = unknown.compress(data) + unknown.flush()
    for size, expected in ((len(data), whole), (None, unknown)):
        c = nncompress.NNCompressor(1, block_size=block_size, size=size)
        out = bytearray()
        prev = 0
        for cut in sorted(set(min(c_, len(data)) for c_ in cuts)):
            out += c.compress(data[prev:cut])
            prev = cut
        out += c.compress(data[prev:]) + c.flush()
        assert bytes(out) == expected
    assert nncompress.decompress(whole) == data and nncompress.decompress(unknown) == data


@FAST
@given(data=st.binary(max_size=300), block_size=st.integers(1, 100), step=st.integers(1, 50),
       extra=st.binary(max_size=20))
def test_decoding_does_not_depend_on_how_archive_is_split(data, block_size, step, extra):
    blob = nncompress.compress(data, 1, block_size=block_size)
    decoder = StreamDecoder()
    out = b"".join(decoder.feed(blob[k : k + step]) for k in range(0, len(blob), step))
    decoder.finish()
    assert out == data
    d = NNDecompressor()
    out = b"".join(d.decompress(blob[k : k + step] + (extra if k + step >= len(blob) else b""))
                   for k in range(0, len(blob), step))
    assert out == data and d.eof and d.unused_data == extra


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.tuples(st.binary(max_size=100), st.integers(1, 9)), min_size=1, max_size=4))
def test_concatenated_streams(parts):
    blob = b"".join(nncompress.compress(data, level) for data, level in parts)
    assert nncompress.decompress(blob) == b"".join(data for data, _ in parts)


@pytest.mark.slow
@SLOW
@given(data=st.one_of(st.binary(max_size=5000), texty), level=st.integers(1, 9),
       block_size=st.integers(1, 3000))
def test_round_trip_every_level_long(data, level, block_size):
    assert nncompress.decompress(nncompress.compress(data, level, block_size=block_size)) == data
