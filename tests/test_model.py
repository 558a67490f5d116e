from pathlib import Path

import numpy as np
import pytest

import nncompress
from nncompress import compress
from nncompress.model.kinds import Context, Selector, selector_mask
from nncompress.model.params import ModelParams
from nncompress.model.predictor import Predictor, bytes_to_nibbles
from nncompress.model.state import FIELDS, model_memory
from nncompress.presets import LEVELS


def code_length_bits(probs: np.ndarray, nibbles: np.ndarray) -> float:
    chosen = probs[np.arange(len(nibbles)), nibbles] / probs.sum(axis=1)
    return float(-np.log2(chosen).sum())


@pytest.mark.parametrize("level", [1, 6, 9])
def test_batch_and_stepwise_predictions_agree(level, sample_text):
    """The encoder's in-kernel loop and the decoder's nibble-by-nibble calls see the same model."""
    data = sample_text[:1500]
    batch = Predictor(LEVELS[level]).predict_known(data)
    stepper = Predictor(LEVELS[level])
    for k, nibble in enumerate(bytes_to_nibbles(data)):
        np.testing.assert_array_equal(stepper.predict_next(), batch[k])
        stepper.learn(int(nibble))


def test_predictions_are_valid_distributions(sample_text):
    probs = Predictor(LEVELS[6]).predict_known(sample_text[:2000])
    assert np.all(probs > 0) and np.all(np.isfinite(probs))
    assert np.all(probs == np.floor(probs)) and probs.max() <= 2.0**48  # exact integers


def test_model_learns(sample_text):
    """Second half costs much less than an order-0 model would: the model adapts online."""
    nibbles = bytes_to_nibbles(sample_text)
    probs = Predictor(LEVELS[6]).predict_known(sample_text)
    half = len(nibbles) // 2
    late = code_length_bits(probs[half:], nibbles[half:]) / (half / 2)
    assert late < 3.0, late


def test_alice_beats_bzip2(corpora):
    """A broken model can't do this: bzip2 -9 takes 2.272 bpc on alice29.txt."""
    data = (corpora / "alice29.txt").read_bytes()
    bpc = 8 * len(compress(data)) / len(data)
    assert bpc < 2.15, bpc


def test_rnn_part_contributes(sample_text):
    """The recurrent part is wired in: turning it off changes the predictions."""
    base = LEVELS[6]
    off = ModelParams(**{**base.describe(), "rnn_hidden": 0})
    a = Predictor(base).predict_known(sample_text[:3000])
    b = Predictor(off).predict_known(sample_text[:3000])
    assert not np.array_equal(a, b)


def test_model_memory_is_what_the_predictor_allocates():
    """model_memory (what the decoder checks a header against) comes from the same declaration
    as the allocation, so it cannot drift from it."""
    small = ModelParams(contexts=(2,), match_min=0, rnn_hidden=0, table_bits=12, history_bits=16,
                        match_bits=10)
    for params in (LEVELS[1], small):
        assert model_memory(params) == Predictor(params).memory_bytes


def test_every_state_field_has_an_owning_component():
    model = Path(nncompress.__file__).parent / "model"
    names = [f.name for f in FIELDS]
    assert len(names) == len(set(names))
    for field in FIELDS:
        assert (model / f"{field.owner}.py").is_file(), field


def test_presets_name_their_mixers():
    """Level 9 runs every first-layer mixer but the byte-2-back one and two of round 13's (the
    RNNME expert's, the column and word-state ones and round 18's follower included), levels 7 and
    8 the same without the expert's, round 13's and round 18's (round 9), level 6 also without
    the recurrent signs; 1 a subset of 3..5, and those a subset of 6."""
    unused = (Selector.BYTE2, Selector.ABOVE_BYTE, Selector.LINE_CLASSES)
    assert LEVELS[9].selectors == tuple(s for s in Selector if s not in unused)
    assert set(LEVELS[1].selectors) < set(LEVELS[3].selectors) <= set(LEVELS[6].selectors)
    assert LEVELS[8].selectors == LEVELS[7].selectors == tuple(
        s for s in LEVELS[9].selectors
        if s not in (Selector.RNNME, Selector.COLUMN_ABOVE, Selector.WORD_STATE, Selector.FOLLOWER))
    assert LEVELS[6].selectors == tuple(s for s in LEVELS[8].selectors if s != Selector.RNN_SIGNS)
    assert selector_mask(Selector.PARTIAL_BYTE, Selector.CLASS_RUNS) == 0b10000001
    assert all(isinstance(k, int) and not isinstance(k, Context) for k in LEVELS[9].contexts)
