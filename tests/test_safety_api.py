"""The library under attack (issue 14): work bounded by max_length, hostile headers refused
before decoding, objects that must not be copied, open() that validates first, the exception
room, and listing an archive as a stream."""

import copy
import gc
import io
import pickle
import random
import sys
import warnings

import numpy as np
import pytest

import nncompress
from nncompress import api, errors
from nncompress import format as fmt
from nncompress import segments
from nncompress.api import NNCompressor, NNDecompressor
from nncompress.model.params import ModelParams, fit_to_input
from nncompress.model.predictor import Predictor
from nncompress.presets import params_for_level

TEXT = b"".join(b"line %d: the quick brown fox jumps over the lazy dog\n" % k for k in range(1500))


@pytest.fixture(scope="module")
def big_archive():
    """~80 KB of text in 16 KiB blocks at level 1."""
    return nncompress.compress(TEXT, 1, block_size=1 << 14)


# -- errors.py (issue 10 item 5) ------------------------------------------------------------

def test_one_exception_class_importable_from_every_old_place():
    from nncompress import coder

    assert nncompress.NNCError is errors.NNCError is fmt.NNCError is api.NNCError
    assert coder.NNCError is errors.NNCError
    assert issubclass(errors.NNCError, Exception)


# -- item 5: max_length bounds the work -----------------------------------------------------

def test_max_length_decodes_only_what_is_asked(big_archive, decoded_nibbles):
    d = NNDecompressor()
    assert d.decompress(big_archive, max_length=1) == TEXT[:1]
    assert decoded_nibbles["n"] == 2  # one byte is two nibbles, not the 80 KB archive
    assert d.decompress(b"", max_length=1000) == TEXT[1:1001]
    assert decoded_nibbles["n"] == 2 + 2000
    rest = d.decompress(b"")
    assert TEXT[:1001] + rest == TEXT and d.eof


def test_file_read_decodes_only_what_is_asked(big_archive, decoded_nibbles):
    with nncompress.open(io.BytesIO(big_archive)) as f:
        assert f.read(3) == TEXT[:3]
        assert decoded_nibbles["n"] == 6
        assert f.read() == TEXT[3:]


def test_unbounded_calls_release_only_verified_blocks(big_archive):
    """A damaged block: without max_length nothing of it comes out; with max_length its first
    bytes may (as liblzma), and the call that reaches its end raises."""
    header, pos = fmt.parse_header(big_archive)
    frame, payload_at = fmt.parse_block_frame(big_archive, pos, header.block_size, header.version)
    damaged = bytearray(big_archive)
    damaged[payload_at + frame.payload_len - 9] ^= 0x40  # late in the first block's payload
    damaged = bytes(damaged)
    with pytest.raises(nncompress.NNCError):
        NNDecompressor().decompress(damaged)
    d = NNDecompressor()
    first = d.decompress(damaged, max_length=10)
    assert first == TEXT[:10]  # released before the block's checksum could be checked
    with pytest.raises(nncompress.NNCError, match="checksum|undecodable"):
        d.decompress(b"", max_length=frame.raw_len)


# -- item 10: no copies -----------------------------------------------------------------------

@pytest.mark.parametrize("make", [NNCompressor, NNDecompressor])
@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, pickle.dumps])
def test_copy_and_pickle_refused_like_lzma(make, how):
    with pytest.raises(TypeError) as refused:
        how(make(1) if make is NNCompressor else make())
    assert str(refused.value) == f"cannot pickle {make.__name__!r} object"


def test_compressor_still_works_after_a_refused_copy():
    c = NNCompressor(1, block_size=64)
    first = c.compress(TEXT[:100])
    with pytest.raises(TypeError):
        copy.copy(c)
    assert nncompress.decompress(first + c.compress(TEXT[100:300]) + c.flush()) == TEXT[:300]


# -- item 7: open() validates before touching the file ----------------------------------------

@pytest.mark.parametrize("mode, kwargs, error", [
    ("wb", {"preset": 0}, ValueError),
    ("wb", {"preset": 10}, ValueError),
    ("xb", {"preset": 0}, ValueError),
    ("ab", {"preset": -1}, ValueError),
    ("wt", {"encoding": "no-such-codec"}, LookupError),
    ("wz", {}, ValueError),
])
def test_open_refuses_before_touching_the_file(tmp_path, mode, kwargs, error):
    path = tmp_path / "precious.nnc"
    path.write_bytes(b"precious")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # a leaked handle warns when collected
        with pytest.raises(error):
            nncompress.open(path, mode, **kwargs)
        gc.collect()
    assert path.read_bytes() == b"precious"


def test_open_text_mode_closes_the_file_when_the_wrapper_fails(tmp_path):
    path = tmp_path / "t.nnc"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(ValueError):
            nncompress.open(path, "wt", newline="bogus")
        gc.collect()


# -- item 11: a hostile header costs nothing before its lie is found --------------------------

def _hostile(level: int, raw_len: int, payload: bytes, version: int = fmt.FORMAT_VERSION) -> bytes:
    header = fmt.Header(version, level, tuple(params_for_level(level).to_ints()),
                        fmt.MAX_BLOCK_SIZE).encode()
    return (header + fmt.encode_block_frame(raw_len, len(payload), 0, version=version, last=True)
            + payload + (fmt.encode_end(raw_len, 0) if version == 1 else b""))  # one last block: no trailer


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("raw_len", [1 << 16, 1 << 20, fmt.MAX_BLOCK_SIZE])
def test_block_claiming_more_than_its_payload_can_hold_is_refused_undecoded(raw_len, version, decoded_nibbles):
    blob = _hostile(1, raw_len, b"\x55" * 8, version)
    assert len(blob) < 120
    with pytest.raises(nncompress.NNCError, match="payload too short"):
        nncompress.decompress(blob)
    with pytest.raises(nncompress.NNCError, match="payload too short"):
        list(api.list_streams(io.BytesIO(blob)))
    assert decoded_nibbles["n"] == 0


def test_the_bound_is_what_format_states():
    def limit(payload_len):
        return (8 * payload_len + fmt.PAYLOAD_BITS_SLACK) * fmt.MAX_RAW_PER_PAYLOAD_BIT

    for payload_len in (0, 4, 100, 4096):
        ok = fmt.encode_block_frame(limit(payload_len), payload_len, 0)
        bad = fmt.encode_block_frame(limit(payload_len) + 1, payload_len, 0)
        if limit(payload_len) <= fmt.MAX_BLOCK_SIZE and payload_len % 4 == 0:
            assert fmt.parse_block_frame(ok, 0, fmt.MAX_BLOCK_SIZE)[0].raw_len == limit(payload_len)
        with pytest.raises(nncompress.NNCError):
            fmt.parse_block_frame(bad, 0, fmt.MAX_BLOCK_SIZE)


@pytest.mark.parametrize("level", [1, 9])
def test_model_never_more_certain_than_the_bound_assumes(level):
    """The payload bound rests on the model's clamp: no nibble more probable than
    (4095/4096)^4, or (65535/65536)^4 with 16-bit probabilities (level 9 since round 21).  Feed
    the most predictable input there is and check."""
    params = params_for_level(level)
    predictor = Predictor(params)
    one = 1 << params.probability_bits
    clamp = ((one - 1) / one) ** 4
    probabilities = predictor.predict_known(bytes(6000))
    worst = float((probabilities / probabilities.sum(axis=1, keepdims=True)).max())
    assert worst <= clamp * (1 + 1e-12)
    if params.probability_bits == 16:  # and it does go past what 12 bits allow
        assert worst > (4095 / 4096) ** 4
    # a payload bit carries at most 1 / min_bits_per_byte raw bytes; the bound allows more,
    # with a margin, so it never refuses a genuine archive
    min_bits_per_byte = -2 * np.log2(clamp)
    assert fmt.raw_per_payload_bit(params.probability_bits) * min_bits_per_byte >= 1.3


def test_a_block_past_the_12_bit_bound_decodes_under_16_bit_probabilities():
    """Round 21: a 16-bit model codes a run of zeros in fewer payload bits than the 12-bit bound
    (MAX_RAW_PER_PAYLOAD_BIT) allows; its decoder, lister and seeker take its own bound."""
    params = ModelParams(contexts=(1, 2), match_min=0, rnn_hidden=0, table_bits=16,
                         history_bits=16, probability_bits=16, path_coding=1)
    data = bytes(150000)
    blob = nncompress.compress(data, params=params)
    header, pos = fmt.parse_header(blob)
    frame, _ = fmt.parse_block_frame(blob, pos, header.block_size, header.version,
                                     fmt.MAX_RAW_PER_PAYLOAD_BIT_FINE)
    assert frame.raw_len > (8 * frame.payload_len + fmt.PAYLOAD_BITS_SLACK) * fmt.MAX_RAW_PER_PAYLOAD_BIT
    assert nncompress.decompress(blob) == data
    assert [s.uncompressed_size for s in api.list_streams(io.BytesIO(blob))] == [len(data)]
    assert [e.raw_size for e in segments.index_segments(io.BytesIO(blob))] == [len(data)]
    # the same frame under a 12-bit model's header is refused
    with pytest.raises(nncompress.NNCError, match="payload too short"):
        fmt.parse_block_frame(blob, pos, header.block_size, header.version)


def test_most_compressible_input_passes_the_bound():
    data = bytes(1 << 17)
    blob = nncompress.compress(data, 1, block_size=1 << 17)
    assert nncompress.decompress(blob) == data


# -- item 4 (library side): listing reads frames, not payloads --------------------------------

class CountingFile(io.RawIOBase):
    def __init__(self, data: bytes, seekable: bool):
        self._f = io.BytesIO(data)
        self._seekable = seekable
        self.bytes_read = 0
        self.largest_read = 0

    def readable(self):
        return True

    def seekable(self):
        return self._seekable

    def read(self, n=-1):
        data = self._f.read(n)
        self.bytes_read += len(data)
        self.largest_read = max(self.largest_read, len(data))
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def seek(self, offset, whence=0):
        if not self._seekable:
            raise io.UnsupportedOperation("seek")
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()


def _framing_only_archive(blocks: int, block: int = 1 << 20) -> bytes:
    """Valid framing around random payloads: listing never decodes, so they need not decode."""
    rng = random.Random(5)
    header = fmt.Header(fmt.FORMAT_VERSION, 0, (), block, preset=1).encode()
    out = bytearray(header)
    for k in range(blocks):
        out += fmt.encode_block_frame(block, block, 0, version=2, last=k == blocks - 1) + rng.randbytes(block)
    out += fmt.encode_trailer(blocks * block, 0x1234, version=2, blocks=blocks)
    return bytes(out)


def test_list_streams_seeks_over_payloads():
    blob = _framing_only_archive(6)
    f = CountingFile(blob + blob, seekable=True)
    listing = list(api.list_streams(f))
    assert [s.uncompressed_size for s in listing] == [6 << 20, 6 << 20]
    assert [s.compressed_size for s in listing] == [len(blob), len(blob)]
    assert listing[0].ratio == pytest.approx(len(blob) / (6 << 20))
    assert listing[0].level == 1 and listing[0].blocks == 6 and listing[0].crc32 == 0x1234
    assert f.bytes_read < 300_000  # frames and read-ahead, not 12 MiB of payloads


def test_list_streams_on_a_pipe_reads_in_bounded_pieces():
    blob = _framing_only_archive(3)
    f = CountingFile(blob, seekable=False)
    assert [s.uncompressed_size for s in api.list_streams(f)] == [3 << 20]
    assert f.largest_read <= 1 << 16


@pytest.mark.parametrize("cut", [10, 100, 1 << 19, -3])
def test_list_streams_reports_truncation(cut):
    blob = _framing_only_archive(2)
    with pytest.raises(nncompress.NNCError, match="truncated"):
        list(api.list_streams(io.BytesIO(blob[:cut])))


def test_list_streams_refuses_garbage_and_empty_input():
    with pytest.raises(nncompress.NNCError, match="bad magic"):
        list(api.list_streams(io.BytesIO(bytes(1 << 20))))
    with pytest.raises(nncompress.NNCError, match="empty"):
        list(api.list_streams(io.BytesIO(b"")))
    blob = nncompress.compress(b"x")
    with pytest.raises(nncompress.NNCError, match="trailing garbage"):
        list(api.list_streams(io.BytesIO(blob + b"junk")))


def test_verify_api(tmp_path):
    blob = nncompress.compress(TEXT[:500], 1)
    assert api.verify(io.BytesIO(blob), io.BytesIO(TEXT[:500]))
    assert not api.verify(io.BytesIO(blob), io.BytesIO(TEXT[:499]))
    assert not api.verify(io.BytesIO(blob + blob), io.BytesIO(TEXT[:500]))
    assert not api.verify(io.BytesIO(blob[:-1]), io.BytesIO(TEXT[:500]))
    assert b"".join(api.iter_decompress(io.BytesIO(blob + blob), chunk_size=7)) == TEXT[:500] * 2


class _Trickle(io.RawIOBase):
    """A binary file that hands out at most 7 bytes a read (a pipe, a slow device)."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)
        self.asked = []

    def readable(self):
        return True

    def read(self, size=-1):
        self.asked.append(size)
        return self._data.read(7 if size is None or size < 0 else min(size, 7))


def test_verify_compares_every_byte_across_short_reads():
    """Length and CRC are accumulated over every read of both files: the same length with other
    content, or a difference before the last read, is no match; a damaged archive raises."""
    original = TEXT[:300]
    blob = nncompress.compress(original, 1, block_size=100)
    packed, raw = _Trickle(blob), _Trickle(original)
    assert api.verify(packed, raw)
    # both files are read in bounded pieces, never whole (an input of any size may be verified)
    for asked in (packed.asked, raw.asked):
        assert all(size is not None and 0 < size <= 1 << 20 for size in asked)
    changed_first = b"L" + original[1:]
    changed_last = original[:-1] + b"?"
    for other in (changed_first, changed_last, original[:-7], original + b"x" * 7):
        assert not api.verify(_Trickle(blob), _Trickle(other))
        assert not api.verify(_Trickle(nncompress.compress(other, 1, block_size=100)),
                              _Trickle(original))
    damaged = bytearray(blob)
    damaged[len(damaged) // 2] ^= 0x10
    with pytest.raises(nncompress.NNCError):
        api.verify(_Trickle(bytes(damaged)), _Trickle(original))


def test_list_streams_reads_the_header_fields():
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    blob = nncompress.compress(b"abc", 3) + nncompress.compress(b"defg", params=custom)
    first, second = api.list_streams(io.BytesIO(blob))
    # format 2 records the model fitted to the input's size (model.params.fit_to_input)
    assert (first.level, first.params, first.format_version) == (
        3, fit_to_input(params_for_level(3), 3), fmt.FORMAT_VERSION)
    assert first.params != params_for_level(3)
    assert (second.level, second.params, second.format_version) == (
        None, fit_to_input(custom, 4), fmt.FORMAT_VERSION)
    # framing intact, parameters not: named as a header problem (a format-1 stream)
    bad = fmt.Header(1, 0, (1, 2, 3), 100).encode() + fmt.encode_end(0, 0)
    with pytest.raises(nncompress.NNCError) as refused:
        list(api.list_streams(io.BytesIO(bad)))
    assert str(refused.value) == "corrupt archive header: model parameter block is too short"


def test_iter_decompress_reads_bounded_pieces_and_reports_progress():
    blob = nncompress.compress(TEXT[:2000], 1, block_size=500) * 2
    source = _Trickle(blob)
    progress = []
    out = b"".join(api.iter_decompress(source, chunk_size=100, progress=progress.append))
    assert out == TEXT[:2000] * 2 and sum(progress) == 4000
    assert set(source.asked) == {100}


def test_decompressor_max_length_none_means_no_limit():
    blob = nncompress.compress(TEXT[:300], 1, block_size=100)
    decompressor = NNDecompressor()
    assert decompressor.decompress(blob, max_length=None) == TEXT[:300]
    assert decompressor.eof and not decompressor.needs_input
    halves = NNDecompressor()
    first = halves.decompress(blob[: len(blob) // 2], max_length=None)
    assert len(first) % 100 == 0 and not halves.eof and halves.needs_input  # whole blocks only
    assert first + halves.decompress(blob[len(blob) // 2 :], None) == TEXT[:300] and halves.eof


# -- which engine does the work: threads / client route compress() and decompress() ----------
# The bytes are the same on every path by design (test_segments.py), so only recording the
# engine that was made, and the jobs it ran, shows that threads=N or a client was obeyed.

@pytest.fixture
def engines(monkeypatch):
    """parallel.make_engine recorded: each engine remembers the threads and client it was made
    for and counts the jobs it ran (here, in this process)."""
    from nncompress import parallel

    made = []

    class Recording(parallel.SerialEngine):
        def __init__(self, threads, client, options):
            self.made_for = (threads, client)
            self.options, self.jobs, self.closed = options, 0, False

        def submit(self, fn, *args):
            self.jobs += 1
            return super().submit(fn, *args)

        def close(self):
            self.closed = True

    def make_engine(threads=1, client=None, **options):
        made.append(Recording(threads, client, options))
        return made[-1]

    monkeypatch.setattr(parallel, "make_engine", make_engine)
    return made


ROUTED = TEXT[:10_000]  # three 4 KiB segments at level 1
CLIENT = object()  # stands for a distributed.Client; the recording engine never touches it


@pytest.mark.parametrize("threads, client", [(3, None), (0, None), (2, CLIENT), (1, CLIENT)])
def test_threads_or_a_client_send_the_work_to_that_engine(engines, threads, client):
    serial = nncompress.compress(ROUTED, 1, block_size=3000, segment_size=4096)
    assert engines == []  # threads=1 and no client: no engine at all
    routed = nncompress.compress(ROUTED, 1, block_size=3000, segment_size=4096,
                                 threads=threads, client=client)
    assert routed == serial
    [engine] = engines
    assert engine.made_for == (threads, client) and engine.jobs == 3 and engine.closed
    assert engine.options == dict(params=params_for_level(1), segment_size=4096)

    engines.clear()
    assert nncompress.decompress(serial) == ROUTED and engines == []
    assert nncompress.decompress(serial, threads=threads, client=client) == ROUTED
    [engine] = engines
    assert engine.made_for == (threads, client) and engine.jobs == 3 and engine.closed


def test_parameters_reach_the_parallel_path(engines):
    custom = params_for_level(1)  # given as parameters: a level-0 header, unlike preset 1
    serial = nncompress.compress(ROUTED, params=custom, block_size=3000, segment_size=4096)
    assert serial != nncompress.compress(ROUTED, 1, block_size=3000, segment_size=4096)
    assert nncompress.compress(ROUTED, params=custom, block_size=3000, segment_size=4096,
                               threads=2) == serial
    assert engines[-1].options == dict(params=custom, segment_size=4096)
    assert nncompress.compress(ROUTED, model="cm", params=custom, block_size=3000,
                               segment_size=4096, threads=2) == serial


def test_model_or_params_but_not_both():
    from nncompress.presets import parse_model

    custom, small = params_for_level(2), "rnnme,hidden=8,me=16,orders=1-4"
    assert api.model_params(None, None) is None and api.model_params(None, custom) is custom
    assert api.model_params("cm", None) is None and api.model_params("cm", custom) is custom
    assert api.model_params(small, None) == parse_model(small) != params_for_level(6)
    for model in (small, "rnnme"):
        with pytest.raises(ValueError) as refused:
            api.model_params(model, custom)
        assert str(refused.value) == "give either model or params, not both"
    # compress() asks it before anything else, on either path
    for threads in (1, 2):
        with pytest.raises(ValueError, match="^give either model or params, not both$"):
            nncompress.compress(b"abc", model="rnnme", params=custom, threads=threads)
        with pytest.raises(ValueError, match="^unknown model 'lstm'"):
            nncompress.compress(b"abc", model="lstm", threads=threads)


def test_streaming_objects_take_their_options():
    """NNCompressor's and NNDecompressor's keyword options reach the stream: progress both ways,
    a registered preset id in the header, the model choice; a new decompressor needs input."""
    import io

    data = TEXT[:3000]
    counted = []
    compressor = NNCompressor(1, block_size=1000, progress=counted.append, preset_id=2)
    blob = compressor.compress(data) + compressor.flush()
    assert sum(counted) == len(data) and len(counted) == 3
    [stream] = api.list_streams(io.BytesIO(blob))
    assert (stream.preset, stream.level) == (2, 2)  # level 2's preset, level 1's parameters
    counted.clear()
    decompressor = NNDecompressor(progress=counted.append)
    assert decompressor.needs_input is True and decompressor.eof is False
    assert decompressor.decompress(blob) == data and sum(counted) == len(data)
    with pytest.raises(ValueError, match="^unknown model 'lstm'"):
        NNCompressor(1, model="lstm")
    with pytest.raises(ValueError, match="^give either model or params, not both$"):
        NNCompressor(model="rnnme", params=params_for_level(1))


def test_a_failed_open_leaves_nothing_for_the_finaliser(tmp_path):
    """IOBase.__del__ calls close() even when __init__ failed (its errors are shown only under
    -X dev): the object must count as closed until it is fully open, or close() trips over
    attributes that were never set."""
    half_made = api.NNCFile.__new__(api.NNCFile)
    with pytest.raises(FileNotFoundError):
        half_made.__init__(tmp_path / "missing.nnc", "r")
    half_made.close()  # what the finaliser does
    assert half_made.closed is True


def test_tell_counts_uncompressed_bytes_both_ways(tmp_path):
    path = tmp_path / "t.nnc"
    with nncompress.open(path, "wb", preset=1) as f:
        assert f.tell() == 0
        f.write(b"abc")
        f.write(bytearray(b"defg"))
        assert f.tell() == 7
    with nncompress.open(path) as f:
        assert f.tell() == 0
        assert f.read(2) == b"ab" and f.read(3) == b"cde" and f.tell() == 5
        assert f.read() == b"fg" and f.tell() == 7


def test_a_trickling_file_is_decoded_only_as_far_as_asked(decoded_nibbles):
    """Input arriving 7 bytes a read: each refill asks the decoder only for what is still
    missing, so read(n) decodes exactly 2n nibbles however the input came."""
    blob = nncompress.compress(TEXT[:3000], 1, block_size=1000)
    with nncompress.open(_Trickle(blob)) as f:
        assert f.read(100) == TEXT[:100] and decoded_nibbles["n"] == 200
        assert f.read(1500) == TEXT[100:1600] and decoded_nibbles["n"] == 3200
