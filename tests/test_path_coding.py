"""Path coding (ModelParams.path_coding): a nibble's interval is cut down the nibble tree, so the
encoder and the decoder compute only the four nodes of its path.  The model must run exactly as
it does when all 15 nodes are computed; only the coder's cut differs."""

import dataclasses

import numpy as np
import pytest

import nncompress
from nncompress import coder, rangecoder
from nncompress import format as fmt
from nncompress.codec import BlockDecoder, StreamDecoder, StreamEncoder, nibble_costs, path_costs
from nncompress.format import NNCError
from nncompress.model.params import ModelParams
from nncompress.model.predictor import Predictor, bytes_to_nibbles
from nncompress.presets import params_for_level

TEXT = (b"Path coding asks the model for four nodes of each nibble, not fifteen. "
        b"The decoder descends the tree towards the point.\n") * 30


def small(level: int) -> ModelParams:
    """The level's model with small tables (fast to allocate), path coding on."""
    params = params_for_level(level)
    return dataclasses.replace(params, table_bits=16, history_bits=16, match_bits=14,
                               path_coding=1,
                               **({"rnnme_me_bits": 16} if params.rnnme_me_bits else {}))


@pytest.mark.parametrize("level", [1, 6, 9])
def test_the_levels_code_down_the_path(level):
    assert params_for_level(level).path_coding == 1


@pytest.mark.parametrize("level", [1, 6, 9])
def test_path_nodes_are_the_nodes_the_full_tree_computes(level, sample_text):
    """Every nibble's cost from its 4 path nodes equals its cost from the 16-way distribution of
    all 15 nodes: lazy evaluation changes no prediction and no learning (a node skipped on the
    path that changed state, or a path node that read another node's work, would drift)."""
    data = sample_text[:6000]
    params = small(level)
    nibbles = bytes_to_nibbles(data)
    full = nibble_costs(nibbles, Predictor(dataclasses.replace(params, path_coding=0)).predict_known(data))
    path = path_costs(nibbles, Predictor(params).predict_known_path(data))
    assert np.abs(full - path).max() < 1e-9
    assert path.sum() / len(data) < 4.5  # a model that learns nothing pays 8 bits per byte


def test_tree_split_gives_every_nibble_room_and_the_path_its_share():
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = rng.integers(1, 65536, size=15)
        p[rng.integers(0, 15, size=3)] = rng.choice([1, 65535], size=3)  # the extremes too
        widths = []
        for v in range(16):
            width = rangecoder._TOTAL
            j = 1
            for d in range(4):
                left = rangecoder.tree_split(width, p[j - 1], d)
                bit = (v >> (3 - d)) & 1
                width = np.uint64(width - left if bit else left)
                j = 2 * j + bit
            widths.append(int(width))
        assert min(widths) >= 1 and sum(widths) == 1 << 24
    # a node at even odds splits exactly in half
    assert rangecoder.tree_split(rangecoder._TOTAL, 32768, 0) == 1 << 23
    assert rangecoder.tree_split(np.uint64(9), 65535, 2) == 2  # room for the 2 nibbles below


def test_a_12_bit_probability_splits_as_before_round_21():
    """Probabilities arrive at 16 bits since round 21; a 12-bit model's p arrives as 16p, and
    the split must then be the one the coder made from p of 4096, or older archives would not
    decode (the golden archives check it end to end)."""
    rng = np.random.default_rng(21)
    for _ in range(3000):
        width = np.uint64(rng.integers(1 << 20, 1 << 24))
        p = int(rng.integers(1, 4096))
        d = int(rng.integers(0, 4))
        room = 8 >> d
        old = min(max((int(width) * (4096 - p)) >> 12, room), int(width) - room)
        assert int(rangecoder.tree_split(width, np.uint64(16 * p), d)) == old
    path_p = Predictor(small(6)).predict_known_path(b"a 12-bit model: " * 40)
    assert (path_p % 16 == 0).all() and path_p.max() <= 4095 * 16


def test_the_coded_size_is_the_model_cost(sample_text):
    data = sample_text[:8000]
    params = small(6)
    path_p = Predictor(params).predict_known_path(data)
    ideal_bits = path_costs(bytes_to_nibbles(data), path_p).sum()
    encoder = coder.NibbleEncoder("twin")
    encoder.encode_paths(bytes_to_nibbles(data), path_p)
    payload_bits = 8 * len(encoder.finish())
    assert ideal_bits <= payload_bits <= ideal_bits + 96  # the seal's two words and rounding


@pytest.mark.parametrize("level", [1, 9])
def test_round_trip_in_pieces(level, sample_text):
    data = sample_text[:5000]
    params = small(level)
    encoder = StreamEncoder(params=params, block_size=1500, size=len(data))
    archive = encoder.header()
    for start in range(0, len(data), 1500):
        archive += encoder.block(data[start : start + 1500], last=start + 1500 >= len(data))
    archive += encoder.end()
    assert nncompress.decompress(archive) == data
    decoder = StreamDecoder()
    out = b"".join(decoder.feed(archive[k : k + 7], max_length=333) for k in range(0, len(archive), 7))
    while not decoder.eof and len(out) < len(data):
        out += decoder.feed(b"", max_length=333)
    assert out == data


def test_levels_round_trip_through_the_api(sample_text):
    data = sample_text[:3000]
    for level in (1, 3, 6):
        assert nncompress.decompress(nncompress.compress(data, level)) == data


def test_constriction_choice_still_round_trips(monkeypatch, sample_text):
    """NNC_CODER=constriction picks constriction where it can: path-coded streams are coded by
    the twin anyway (constriction's Python API takes float rows only), nibble-coded ones by it."""
    if "constriction" not in coder.BACKENDS:
        pytest.skip("constriction is not installed here")
    monkeypatch.setattr(coder, "BACKEND", "constriction")
    monkeypatch.setattr(coder, "DECODER", "constriction")
    data = sample_text[:2000]
    for params in (small(1), dataclasses.replace(small(1), path_coding=0)):
        archive = nncompress.compress(data, params=params)
        assert nncompress.decompress(archive) == data
    with pytest.raises(ValueError, match="twin"):
        coder.NibbleEncoder("constriction").encode_paths(np.zeros(1, np.int64), np.full((1, 4), 9))


def test_encoder_refuses_bad_rows():
    encoder = coder.NibbleEncoder("twin")
    for nibbles, path_p in [(np.zeros(2, np.int64), np.full((2, 3), 9)),
                            (np.zeros(1, np.int64), np.zeros((1, 4))),
                            (np.zeros(1, np.int64), np.full((1, 4), 65536)),
                            (np.full(1, 16), np.full((1, 4), 9))]:
        with pytest.raises(ValueError):
            encoder.encode_paths(nibbles, path_p)


def test_damage_is_reported(sample_text):
    data = sample_text[:4000]
    archive = nncompress.compress(data, params=small(1))
    with pytest.raises(NNCError):
        nncompress.decompress(archive[:-9])
    for pos in (len(archive) // 2, len(archive) - 12):
        damaged = bytearray(archive)
        damaged[pos] ^= 0x55
        with pytest.raises(NNCError):
            nncompress.decompress(bytes(damaged))


def test_garbage_payload_is_invalid_data_not_a_hang():
    params = small(1)
    header = StreamEncoder(params=params, size=100).header()
    parsed, _ = fmt.parse_header(header)
    decoder = BlockDecoder(parsed)
    decoder.begin(fmt.BlockFrame(100, 16, 0, True), b"\xff" * 16)
    with pytest.raises(NNCError, match="undecodable"):
        decoder.read()


def test_path_coding_is_validated():
    with pytest.raises(ValueError, match="path_coding"):
        dataclasses.replace(params_for_level(1), path_coding=2).validate()
    pure = dataclasses.replace(ModelParams(), rnnme_hidden=8, rnnme_bptt=4,
                               rnnme_lr_micro=1000, rnnme_lr_half=1000, rnnme_pure=1, path_coding=1)
    with pytest.raises(ValueError, match="path_coding"):
        pure.validate()
