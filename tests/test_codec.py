"""The codec room (nncompress.codec) on its own: model and coder joined block by block, the push
parser that releases only verified data, and the memory bound on a header's model."""

import random

import numpy as np
import pytest

import nncompress
from nncompress import codec
from nncompress import format as fmt
from nncompress.codec import (MAX_MODEL_MEMORY, BlockDecoder, StreamDecoder, StreamEncoder,
                              model_memory)
from nncompress.format import NNCError
from nncompress.model.params import ModelParams, fit_to_input
from nncompress.presets import params_for_level

TEXT = b"The codec joins the model and the range coder, one block at a time.\n" * 40


def encode_stream(data: bytes, block_size: int, level: int = 1) -> bytes:
    """What compress() writes for one segment: the model sized to the data, the last block marked."""
    encoder = StreamEncoder(level, block_size=block_size, size=len(data))
    out = bytearray(encoder.header())
    for start in range(0, len(data), block_size):
        out += encoder.block(data[start : start + block_size], last=start + block_size >= len(data))
    return bytes(out + encoder.end())


def block_spans(archive: bytes):
    """(frame, payload start) of every block of a one-stream archive."""
    header, pos = fmt.parse_header(archive)
    spans = []
    while True:
        frame, pos = fmt.parse_block_frame(archive, pos, header.block_size, header.version)
        if frame.raw_len:
            spans.append((frame, pos))
            pos += frame.payload_len
        if frame.last:
            return spans


def test_stream_encoder_is_the_api(sample_text):
    data = sample_text[:3000]
    assert encode_stream(data, 700) == nncompress.compress(data, 1, block_size=700)


def test_prediction_chunks_do_not_change_the_stream(monkeypatch, sample_text):
    """The encoder predicts a block in ENCODE_CHUNK pieces; they must form one range-coder
    stream, byte for byte the one a single piece gives (a block over 64 KiB at a tiny scale)."""
    data = sample_text[:5000]
    whole = nncompress.compress(data, 1)
    monkeypatch.setattr(codec, "ENCODE_CHUNK", 1000)
    assert nncompress.compress(data, 1) == whole
    monkeypatch.setattr(codec, "ENCODE_CHUNK", 333)
    chunked = nncompress.compress(data, 1)
    assert chunked == whole and nncompress.decompress(chunked) == data


def test_encoder_argument_checks():
    with pytest.raises(ValueError, match="block_size"):
        StreamEncoder(1, block_size=0)
    with pytest.raises(ValueError, match="block_size"):
        StreamEncoder(1, block_size=fmt.MAX_BLOCK_SIZE + 1)
    assert StreamEncoder(1, block_size=fmt.MAX_BLOCK_SIZE).block_size == fmt.MAX_BLOCK_SIZE
    encoder = StreamEncoder(1, block_size=10)
    for bad in (b"", b"x" * 11):
        with pytest.raises(ValueError, match="block length"):
            encoder.block(bad)
    assert encoder.block(b"x" * 10)  # exactly one block's worth is fine
    with pytest.raises(ValueError):
        StreamEncoder(params=ModelParams(table_bits=5))  # parameters are validated
    for bad in (dict(direct_order1=2), dict(direct_order2_bits=11), dict(direct_order2_bits=27),
                dict(mixer_zero_start=16), dict(mixer_zero_start=-1)):
        with pytest.raises(ValueError, match=next(iter(bad))):  # round 15's direct maps, round 16
            StreamEncoder(params=ModelParams(**bad))


def test_header_records_level_or_custom_parameters():
    from nncompress.presets import LEVEL_PRESET, header_params

    header, _ = fmt.parse_header(StreamEncoder(3).header())
    assert (header.preset, header.overrides, header.params) == (LEVEL_PRESET[3], (), ())
    assert header_params(header) == params_for_level(3)
    # a known input size: the preset with the fitted table sizes as overrides
    header, _ = fmt.parse_header(StreamEncoder(3, size=100).header())
    assert header.preset == LEVEL_PRESET[3] and [i for i, _ in header.overrides] == [0, 2, 3]
    assert header_params(header) == fit_to_input(params_for_level(3), 100)
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    header, _ = fmt.parse_header(StreamEncoder(9, params=custom, block_size=77).header())
    assert (header.preset, header.params, header.block_size) == (0, tuple(custom.to_ints()), 77)
    assert header.version == fmt.FORMAT_VERSION == 2
    # format 1 (what 0.1 wrote, kept for the golden tests): the level byte and every parameter
    header, _ = fmt.parse_header(StreamEncoder(3, size=100, format_version=1).header())
    assert (header.version, header.level, header.params) == (1, 3, tuple(params_for_level(3).to_ints()))


def test_frames_carry_lengths_and_checksums(sample_text):
    data = sample_text[:2500]
    archive = encode_stream(data, 1000)
    spans = block_spans(archive)
    assert [f.raw_len for f, _ in spans] == [1000, 1000, 500]
    for k, (frame, _) in enumerate(spans):
        assert frame.crc == fmt.crc32(data[1000 * k : 1000 * (k + 1)])
    assert [f.last for f, _ in spans] == [False, False, True]
    total_len, total_crc, end = fmt.parse_trailer(archive, spans[-1][1] + spans[-1][0].payload_len, 2, 3)
    assert (total_len, total_crc, end) == (len(data), fmt.crc32(data), len(archive))


def test_observer_and_progress_see_every_nibble(sample_text):
    data = sample_text[:3000]
    encoder = StreamEncoder(1)
    seen, progress = [], []
    encoder.block(data, progress=progress.append,
                  observe=lambda nibbles, probs: seen.append((nibbles.copy(), probs.shape)))
    nibbles = np.concatenate([n for n, _ in seen])
    assert nibbles.tolist() == [v for b in data for v in (b >> 4, b & 15)]
    assert all(shape == (len(n),) for n, shape in seen)  # bits per nibble
    assert sum(progress) == len(data)
    out, progress = [], []
    decoder = StreamDecoder(progress=progress.append)
    out = decoder.feed(nncompress.compress(data, 1))
    assert out == data and sum(progress) == len(data)
    assert all(type(count) is int for count in progress)  # whole bytes, never halves


# -- the decoder side --------------------------------------------------------------------------

def test_block_decoder_refuses_bad_parameters_and_mismatches(sample_text):
    with pytest.raises(NNCError, match="corrupt archive header"):
        BlockDecoder(fmt.Header(fmt.FORMAT_VERSION, 0, (1, 2, 3), 100))
    archive = nncompress.compress(sample_text[:500], 1)
    header, _ = fmt.parse_header(archive)
    (frame, at), = block_spans(archive)
    decoder = BlockDecoder(header)
    payload = archive[at : at + frame.payload_len]
    wrong_crc = fmt.BlockFrame(frame.raw_len, frame.payload_len, frame.crc ^ 1)
    decoder.begin(wrong_crc, payload)
    with pytest.raises(NNCError, match="block checksum mismatch"):
        decoder.read()
    decoder = BlockDecoder(header)
    decoder.begin(frame, payload)
    assert decoder.read(100) + decoder.read() == sample_text[:500]  # in pieces, resumable
    assert not decoder.in_block
    decoder.check_trailer(500, fmt.crc32(sample_text[:500]))
    for length, crc in ((499, fmt.crc32(sample_text[:500])), (500, 0)):
        with pytest.raises(NNCError, match="length or checksum mismatch"):
            decoder.check_trailer(length, crc)


def test_block_decoder_reads_exactly_what_is_asked(sample_text):
    """read(n) gives n bytes (the caller's output limit, a decompression bomb's bound), decode(n)
    n nibbles as bytes 0..15; the block is checked and closed only at its last byte."""
    data = sample_text[:500]
    archive = nncompress.compress(data, 1)
    header, _ = fmt.parse_header(archive)
    (frame, at), = block_spans(archive)
    payload = archive[at : at + frame.payload_len]
    decoder = BlockDecoder(header)
    decoder.begin(frame, payload)
    nibbles = decoder.decode(6)
    assert nibbles.dtype == np.uint8
    assert nibbles.tolist() == [v for b in data[:3] for v in (b >> 4, b & 15)]
    decoder = BlockDecoder(header)
    decoder.begin(frame, payload)
    pieces = [decoder.read(n) for n in (1, 100, 0, 250)]
    assert [len(p) for p in pieces] == [1, 100, 0, 250] and decoder.in_block
    assert b"".join(pieces) + decoder.read() == data and not decoder.in_block


def test_hostile_model_parameters_refused_without_allocating(monkeypatch):
    huge = ModelParams(contexts=tuple(range(1, 17)) + (32, 33, 34, 35, 36, 37), table_bits=30,
                       history_bits=30, match_bits=28)
    assert model_memory(huge) > MAX_MODEL_MEMORY
    monkeypatch.setattr(codec, "Predictor", lambda *args: pytest.fail("allocated"))
    with pytest.raises(NNCError, match="limit"):
        BlockDecoder(fmt.Header(fmt.FORMAT_VERSION, 0, tuple(huge.to_ints()), 100))
    with pytest.raises(ValueError, match="MiB"):  # the encoder never writes what is refused
        StreamEncoder(params=huge)


def test_hostile_expert_sizes_refused_without_allocating(monkeypatch):
    # the expert's word input rows (2^24 rows of 4 x 1024 LSTM gate weights, and two Adam
    # moments each: 768 GiB) are sized from the header too; estimating them must not build them
    import dataclasses

    huge = dataclasses.replace(params_for_level(9), rnnme_hidden=1024, rnnme_cell=1,
                               rnnme_word_input_bits=24)
    assert model_memory(huge) > 700 << 30
    monkeypatch.setattr(codec, "Predictor", lambda *args: pytest.fail("allocated"))
    with pytest.raises(NNCError, match="limit"):
        BlockDecoder(fmt.Header(fmt.FORMAT_VERSION, 0, tuple(huge.to_ints()), 100))


def test_expert_context_features_beyond_its_reach_refused_when_encoding():
    # The expert takes the first 22 contexts as features; a mask bit above them was silently
    # ignored.  The encoder now refuses to write one; a decoder keeps reading such headers.
    import dataclasses

    from nncompress.model import rnnme_config

    level9 = params_for_level(9)
    assert len(level9.contexts) > rnnme_config.MAX_CONTEXT_FEATURES
    beyond = dataclasses.replace(level9, rnnme_context_features=level9.rnnme_context_features
                                 | 1 << rnnme_config.MAX_CONTEXT_FEATURES)
    with pytest.raises(ValueError, match="first 22 contexts"):
        StreamEncoder(params=beyond)
    BlockDecoder(fmt.Header(fmt.FORMAT_VERSION, 0, tuple(beyond.to_ints()), 100))


def test_largest_preset_is_within_the_limit():
    assert max(model_memory(params_for_level(level)) for level in range(1, 10)) <= MAX_MODEL_MEMORY


def test_out_of_memory_while_building_the_model_is_an_nncerror(monkeypatch):
    archive = nncompress.compress(TEXT, 1)

    def no_memory(params, size=None):
        raise MemoryError

    monkeypatch.setattr(codec, "Predictor", no_memory)
    with pytest.raises(NNCError, match="memory"):
        nncompress.decompress(archive)


@pytest.mark.parametrize("level", [1, 3])
def test_model_memory_estimate_matches_the_predictor(level):
    from nncompress.model.predictor import Predictor

    params = params_for_level(level)
    actual = Predictor(params).memory_bytes
    # the dominant terms (context tables, history, match table, APMs, RNN): the model is tuned
    # independently, so allow its smaller arrays to come and go
    assert 0.75 * actual <= model_memory(params) <= actual + (1 << 20)


def test_model_memory_terms():
    small = ModelParams(contexts=(1,), table_bits=12, history_bits=12, match_bits=10, rnn_hidden=0)
    base = model_memory(small)
    import dataclasses

    def grows(**change):
        return model_memory(dataclasses.replace(small, **change)) - base

    assert grows(table_bits=13) == 1 << 12
    assert grows(contexts=(1, 2)) >= 1 << 12
    assert grows(history_bits=13) == 1 << 12
    assert grows(match_bits=11) == 8 << 10
    assert grows(match_min=0) <= 8 - (8 << 10)  # the match model's hash table (at least) goes
    # an APM row: 33 int32 points and its "initialised" flag byte (apm.apm_row)
    assert grows(rnn_hidden=2) > 0 and grows(apm1_order=1) == ((256 << 8) - 256) * (33 * 4 + 1)


def test_only_verified_blocks_are_released():
    """The push parser returns a block only after its checksum matched."""
    data = TEXT[:600]
    archive = nncompress.compress(data, 1, block_size=100)
    spans = block_spans(archive)
    assert len(spans) >= 3
    blob = bytearray(archive)
    # damage the third block at its first payload byte: the range coder's final flush bytes are
    # slack (flipping them still decodes to the right data, which the checksum then confirms)
    blob[spans[2][1]] ^= 0xFF
    decoder = StreamDecoder()
    released = bytearray()
    with pytest.raises(NNCError):
        for k in range(0, len(blob), 7):
            released += decoder.feed(bytes(blob[k : k + 7]))
    assert released == data[:200]  # the two good blocks, never a byte of the bad one


def test_push_parser_holds_at_most_one_block():
    data = random.Random(9).randbytes(20_000)
    blob = nncompress.compress(data, 1, block_size=1000)
    decoder = StreamDecoder()
    out = bytearray()
    biggest = 0
    for k in range(0, len(blob), 512):
        out += decoder.feed(blob[k : k + 512])
        biggest = max(biggest, len(decoder._buf))
    decoder.finish()
    assert out == data
    assert biggest < 1000 * fmt.MAX_PAYLOAD_PER_BYTE + fmt.PAYLOAD_SLACK + 512


def test_single_stream_mode_stops_at_the_end():
    one, two = nncompress.compress(b"first", 1), nncompress.compress(b"second", 1)
    cut = fmt.parse_header(one)[1] + 2
    decoder = StreamDecoder(multi_stream=False)
    assert decoder.feed(one[:cut]) == b"" and not decoder.eof and decoder.in_stream
    assert decoder.unused_data == b""  # nothing is unused before the end
    assert decoder.feed(one[cut:] + two) == b"first"
    assert decoder.eof and not decoder.in_stream and decoder.unused_data == two
    assert decoder.streams == 1 and decoder.last_stream_crc == fmt.crc32(b"first")
    decoder.finish()
    with pytest.raises(EOFError):
        decoder.feed(b"x")
    multi = StreamDecoder()
    assert multi.feed(one + two) == b"firstsecond" and not multi.eof and multi.streams == 2
    multi.finish()


@pytest.mark.parametrize("blob, message", [
    (b"", "empty"),
    (b"NNC", "truncated"),
    ("half", "truncated"),
    ("plus garbage", "trailing garbage"),
    ("plus NNC", "trailing data"),
])
def test_finish_names_what_is_wrong(blob, message):
    archive = nncompress.compress(TEXT[:300], 1, block_size=100)
    blob = {"half": archive[: len(archive) // 2], "plus garbage": archive + b"garbage",
            "plus NNC": archive + b"NNC"}.get(blob, blob)
    decoder = StreamDecoder()
    with pytest.raises(NNCError, match=message):
        decoder.feed(blob)
        decoder.finish()


def _message(call) -> str:
    with pytest.raises((NNCError, ValueError, EOFError)) as info:
        call()
    return str(info.value)


def test_every_codec_message_exactly(monkeypatch):
    """Word for word: the command line prints these as they are."""
    huge = ModelParams(contexts=tuple(range(1, 17)) + (32, 33, 34, 35, 36, 37), table_bits=30,
                       history_bits=30, match_bits=28)
    need, limit = model_memory(huge) >> 20, MAX_MODEL_MEMORY >> 20
    assert _message(lambda: StreamEncoder(1, block_size=0)) == \
        f"block_size must be in 1..{fmt.MAX_BLOCK_SIZE}"
    assert _message(lambda: StreamEncoder(params=huge)) == \
        f"these model parameters need {need} MiB, more than the {limit} MiB a decoder accepts"
    assert _message(lambda: StreamEncoder(1, block_size=5).block(b"123456")) == "block length out of range"
    header = fmt.Header(fmt.FORMAT_VERSION, 0, tuple(huge.to_ints()), 100)
    assert _message(lambda: BlockDecoder(header)) == (
        f"archive header asks for a {need} MiB model, more than the {limit} MiB limit "
        "(corrupt or hostile archive)")
    short = fmt.Header(fmt.FORMAT_VERSION, 0, (1, 2, 3), 100)
    assert _message(lambda: BlockDecoder(short)) == "corrupt archive header: model parameter block is too short"
    decoder = BlockDecoder(fmt.Header(fmt.FORMAT_VERSION, 1, tuple(params_for_level(1).to_ints()), 100))
    assert _message(lambda: decoder.check_trailer(1, 0)) == "corrupt archive: stream length or checksum mismatch"
    archive = nncompress.compress(TEXT[:300], 1, block_size=100)
    damaged = bytearray(archive)
    (frame, at), *_ = block_spans(archive)
    damaged[at - 1] ^= 1  # the first block's stored CRC
    assert _message(lambda: nncompress.decompress(bytes(damaged))) == \
        "corrupt archive: block checksum mismatch (data damaged)"
    assert _message(lambda: nncompress.decompress(archive + b"garbage")) == \
        "trailing garbage after the compressed stream"
    for blob, expected in ((b"", "no compressed data (empty input)"),
                           (archive[:-1], "compressed data ended before the end of the stream (truncated)"),
                           (archive + b"NNC", "trailing data after the end of the compressed stream")):
        decoder = StreamDecoder()
        assert _message(lambda: (decoder.feed(blob), decoder.finish())) == expected
    single = StreamDecoder(multi_stream=False)
    single.feed(archive)
    assert _message(lambda: single.feed(b"")) == "already at the end of the stream"
    from nncompress.presets import header_params

    small = header_params(fmt.parse_header(archive)[0])
    monkeypatch.setattr(codec, "Predictor", lambda *args: (_ for _ in ()).throw(MemoryError))
    assert _message(lambda: nncompress.decompress(archive)) == \
        f"not enough memory for this archive's model ({model_memory(small) >> 20} MiB)"


def test_an_output_limit_decodes_only_as_far_as_asked():
    data = TEXT[:600]
    archive = nncompress.compress(data, 1, block_size=200)
    header_len = fmt.parse_header(archive)[1]
    decoder = StreamDecoder(multi_stream=False)
    # limit 0 stops right after the header (as lzma does), before any block frame is read
    assert decoder.feed(archive, 0) == b"" and decoder.in_stream and not decoder.eof
    assert len(decoder._buf) == len(archive) - header_len
    sizes, out = [], bytearray()
    while not decoder.eof:
        piece = decoder.feed(max_length=150)  # no new input: data defaults to none
        sizes.append(len(piece))
        out += piece
    # the trailer is read with the last byte even though the limit is then reached
    assert out == data and sizes == [150, 150, 150, 150] and decoder.unused_data == b""
    assert decoder.streams == 1 and decoder.last_stream_crc == fmt.crc32(data) and decoder.in_stream is False
    for limit in (None, -1, -5):  # no limit
        assert StreamDecoder().feed(archive, limit) == data
    two = StreamDecoder()
    assert two.feed(archive + archive, 700) == data + data[:100]
    assert two.streams == 1 and two.in_stream
    assert two.feed(b"", 700) == data[100:] and two.streams == 2 and two.in_stream is False


def test_a_bad_first_stream_reports_the_header_error():
    """Garbage where the first stream should start gets the header's own message; after a
    complete stream it is trailing garbage."""
    with pytest.raises(NNCError) as expected:
        fmt.parse_header(b"garbage!")
    assert _message(lambda: StreamDecoder().feed(b"garbage!")) == str(expected.value)
    decoder = StreamDecoder()
    assert decoder.feed(b"NN") == b"" and not decoder.in_stream and decoder.streams == 0
    assert decoder.unused_data == b""


def test_decode_pieces_do_not_change_the_output(monkeypatch, sample_text):
    """A block is decoded DECODE_PIECE nibbles at a time (a block over 16 KiB at a tiny scale):
    the pieces join into the block, and progress comes once a piece, in whole bytes."""
    data = sample_text[:500]
    archive = nncompress.compress(data, 1)
    monkeypatch.setattr(codec, "DECODE_PIECE", 64)
    progress = []
    decoder = StreamDecoder(progress=progress.append)
    assert decoder.feed(archive) == data
    assert progress == [32] * 15 + [20]


def test_a_new_decoder_is_before_any_stream():
    decoder = StreamDecoder()
    assert decoder.eof is False and decoder.in_stream is False
    assert decoder.streams == 0 and decoder.last_stream_crc is None and decoder.unused_data == b""


def test_a_block_is_released_as_soon_as_its_payload_is_complete():
    data = TEXT[:300]
    archive = nncompress.compress(data, 1, block_size=100)
    (first, at), (second, at2), _ = block_spans(archive)
    decoder = StreamDecoder()
    assert decoder.feed(archive[: at + first.payload_len - 1]) == b""
    assert decoder.feed(archive[at + first.payload_len - 1 : at + first.payload_len]) == data[:100]
    assert decoder.feed(archive[at + first.payload_len : at2 + second.payload_len]) == data[100:200]
    assert decoder.feed(archive[at2 + second.payload_len :]) == data[200:]
    decoder.finish()


def test_one_byte_blocks_and_the_inclusive_memory_limit(monkeypatch):
    """Block size 1 and a 1-byte block are allowed; a model of exactly the limit is accepted by
    the encoder and the decoder alike."""
    archive = encode_stream(b"abc", 1)
    assert len(block_spans(archive)) == 3 and nncompress.decompress(archive) == b"abc"
    assert StreamEncoder(1, block_size=5).block(b"x")
    monkeypatch.setattr(codec, "MAX_MODEL_MEMORY", model_memory(params_for_level(1)))
    header, _ = fmt.parse_header(StreamEncoder(1).header())
    assert BlockDecoder(header).params == params_for_level(1)
