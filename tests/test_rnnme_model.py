"""The RNNME expert as part of the model (branch neural2): the pure-RNNME mode through the API and
the command line, the expert inside context mixing, its header fields, and their errors.
Small inputs and small experts; the twin comparison is in tests/test_reference.py."""

import dataclasses

import numpy as np
import json

import pytest

import nncompress
from nncompress import api
from nncompress.cli import main
from nncompress.model.params import ModelParams
from nncompress.presets import params_for_level, parse_model, rnnme_fields, rnnme_params

SMALL_RNNME = "rnnme,hidden=8,me=16,orders=1-4"


def stream_params(archive: bytes) -> ModelParams:
    import io

    (stream,) = list(api.list_streams(io.BytesIO(archive)))
    return stream.params


def test_pure_rnnme_round_trips_through_the_api(sample_text):
    data = sample_text[:6000]
    archive = nncompress.compress(data, model=SMALL_RNNME)
    assert nncompress.decompress(archive) == data
    params = stream_params(archive)
    assert params.rnnme_pure == 1 and params.rnnme_hidden == 8 and params.rnnme_me_bits == 16
    # it learned: well below 8 bits a byte, and below what an order-0 coder would need (~4.5)
    assert 8 * len(archive) / len(data) < 4.0
    # the streaming compressor gives the same bytes
    comp = nncompress.NNCompressor(model=SMALL_RNNME)
    assert comp.compress(data[:1000]) + comp.compress(data[1000:]) + comp.flush() == archive


def test_pure_rnnme_is_deterministic_and_differs_from_context_mixing(sample_text):
    data = sample_text[:3000]
    first = nncompress.compress(data, model=SMALL_RNNME)
    assert nncompress.compress(data, model=SMALL_RNNME) == first
    assert nncompress.compress(data, 1) != first
    assert nncompress.compress(data, model="cm") == nncompress.compress(data)


def test_pure_rnnme_round_trips_through_the_cli(tmp_path, sample_text, capsys):
    path = tmp_path / "doc.txt"
    path.write_bytes(sample_text[:4000])
    assert main(["-k", f"--model={SMALL_RNNME}", str(path)]) == 0
    archive = tmp_path / "doc.txt.nnc"
    assert stream_params(archive.read_bytes()).rnnme_pure == 1
    capsys.readouterr()
    assert main(["-l", str(archive)]) == 0
    assert "rnnme" in capsys.readouterr().out
    assert main(["-l", "--json", str(archive)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["model"] == "rnnme" and row["level"] is None
    path.unlink()
    assert main(["-d", str(archive)]) == 0
    assert path.read_bytes() == sample_text[:4000]


def test_pure_rnnme_with_the_lstm_cell_round_trips(sample_text):
    spec = "rnnme,hidden=8,me=12,cell=lstm"
    params = parse_model(spec)
    assert params.rnnme_cell == 1 and params.rnnme_adam == 1 and params.rnnme_hidden == 8
    assert parse_model("rnnme,hidden=8,me=12,cell=tanh").rnnme_cell == 0
    data = sample_text[:3000]
    archive = nncompress.compress(data, model=spec)
    assert stream_params(archive).rnnme_cell == 1
    assert nncompress.decompress(archive) == data
    assert archive != nncompress.compress(data, model="rnnme,hidden=8,me=12")


@pytest.mark.parametrize("spec", ["lstm", "rnnme,hidden", "rnnme,colour=3", "rnnme,orders=0-3",
                                  "rnnme,hidden=0", "rnnme,me=5", "cm,hidden=3",
                                  "rnnme,cell=gru", "rnnme,cell=1"])
def test_bad_model_specs_are_rejected(spec, tmp_path, capsys):
    with pytest.raises(ValueError):
        parse_model(spec)
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    with pytest.raises(SystemExit) as exit_:  # a usage error, like an unknown option
        main([f"--model={spec}", str(path)])
    assert exit_.value.code == 1
    assert "--model" in capsys.readouterr().err
    assert not (tmp_path / "x.nnc").exists()


def test_model_and_params_together_are_rejected():
    with pytest.raises(ValueError):
        nncompress.compress(b"abc", model="rnnme", params=params_for_level(1))


def test_expert_inside_context_mixing_round_trips_and_helps(sample_text):
    """Level 3 with a small expert (input, selector and APM): exact round trip, a header that says
    so, and a smaller archive than level 3 alone on repetitive English."""
    from nncompress.model.kinds import Selector, selector_mask

    base = dataclasses.replace(params_for_level(3), table_bits=16, history_bits=16, match_bits=12)
    with_expert = dataclasses.replace(
        base, **rnnme_fields(hidden=8, me_bits=18), rnnme_inputs=1, rnnme_apm_weight=4,
        mixer_select=base.mixer_select | selector_mask(Selector.RNNME))
    data = sample_text[:20000]
    archive = nncompress.compress(data, params=with_expert)
    assert nncompress.decompress(archive) == data
    assert stream_params(archive) == with_expert
    assert len(archive) < len(nncompress.compress(data, params=base))


def test_expert4_fields_change_the_model_and_round_trip(sample_text):
    """branch expert4: the direct-connection rate schedule and the match features are header
    fields that change the predictions (so they are not silently ignored) and round-trip."""
    from nncompress.model.kinds import Selector, selector_mask

    base = dataclasses.replace(params_for_level(3), table_bits=16, history_bits=16, match_bits=12)
    expert = dataclasses.replace(
        base, **rnnme_fields(hidden=4, me_bits=16), rnnme_inputs=1,
        mixer_select=base.mixer_select | selector_mask(Selector.RNNME))
    data = sample_text[:10000] * 2  # a repeat: the match model predicts the second half
    plain = nncompress.compress(data, params=expert)
    sizes = {len(plain)}
    for changes in (dict(rnnme_match_feature=1), dict(rnnme_match_feature=2),
                    dict(rnnme_context_features=0b110), dict(rnnme_context_features=1 << 9),
                    dict(rnnme_me_min_milli=150), dict(rnnme_me_lr_milli=200),
                    dict(rnnme_me_decay_milli=10)):
        params = dataclasses.replace(expert, **changes)
        archive = nncompress.compress(data, params=params)
        assert nncompress.decompress(archive) == data
        assert stream_params(archive) == params
        assert archive != plain, changes
        sizes.add(len(archive))
    assert len(sizes) > 2
    with pytest.raises(ValueError):
        dataclasses.replace(expert, rnnme_match_feature=4).validate()
    with pytest.raises(ValueError):  # level 3 has 10 contexts
        dataclasses.replace(expert, rnnme_context_features=1 << 10).validate()
    with pytest.raises(ValueError):  # the pure expert has no contexts to borrow
        dataclasses.replace(rnnme_params(hidden=4, me_bits=12), rnnme_context_features=1).validate()
    with pytest.raises(ValueError):  # an expert setting without an expert
        dataclasses.replace(base, rnnme_me_min_milli=100).validate()
    # room for 24 features: level 9's 6 byte orders, the word, the word pair (round 25) and 2
    # match features leave 14 for its contexts; one more used to reach the kernel and fail there
    # with numpy's broadcasting message
    top = params_for_level(9)
    dataclasses.replace(top, rnnme_context_features=(1 << 14) - 1).validate()
    with pytest.raises(ValueError, match="at most 24 direct-connection features"):
        dataclasses.replace(top, rnnme_context_features=(1 << 15) - 1).validate()


def test_expert_fields_off_leave_the_header_unchanged():
    """An archive without the expert carries no trace of its fields (old readers, golden files)."""
    p = dataclasses.replace(params_for_level(1), path_coding=0)  # every extension off (level 1
    # codes down the path since round 9)
    assert p.rnnme_hidden == 0
    assert ModelParams.from_ints(p.to_ints()) == p
    names = ModelParams.extension_names()
    assert all(getattr(p, n) == 0 for n in names if n.startswith("rnnme_"))
    on = rnnme_params(hidden=4, me_bits=12)
    assert len(on.to_ints()) > len(dataclasses.replace(p, contexts=on.contexts).to_ints())
    assert ModelParams.from_ints(on.to_ints()) == on


@pytest.mark.parametrize("changes", [
    dict(rnnme_bptt=8),  # an expert setting without an expert
    dict(rnnme_hidden=8),  # an expert without its settings
    dict(rnnme_hidden=8, rnnme_bptt=8, rnnme_me_bits=4, rnnme_features=1, rnnme_lr_micro=1,
         rnnme_lr_half=1, rnnme_inputs=1),  # a table too small
    dict(rnnme_hidden=8, rnnme_bptt=8, rnnme_me_bits=12, rnnme_features=3 << 8, rnnme_lr_micro=1,
         rnnme_lr_half=1, rnnme_inputs=1),  # word feature 3 does not exist
])
def test_invalid_expert_settings_are_rejected(changes):
    with pytest.raises(ValueError):
        dataclasses.replace(params_for_level(1), **changes).validate()


@pytest.mark.parametrize("field, bad", [("rnnme_cell", 2), ("rnnme_adam", 2), ("rnnme_input2", 2),
                                        ("rnnme_word_input_bits", 25), ("rnnme_word_input_bits", -1)])
def test_invalid_lstm_settings_are_rejected(field, bad):
    top = params_for_level(9)
    good = {"rnnme_cell": 1, "rnnme_adam": 1, "rnnme_input2": 1, "rnnme_word_input_bits": 24}[field]
    dataclasses.replace(top, **{field: good}).validate()
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(top, **{field: bad}).validate()
    with pytest.raises(ValueError):  # an expert setting without an expert
        dataclasses.replace(params_for_level(1), **{field: good}).validate()


@pytest.mark.parametrize("field, bad", [("rnnme_word_input_prev", 2), ("rnnme_word_rows_zero", 2)])
def test_invalid_round25_settings_are_rejected(field, bad):
    top = params_for_level(9)
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(top, **{field: bad}).validate()
    with pytest.raises(ValueError):  # an expert setting without an expert
        dataclasses.replace(params_for_level(1), **{field: 1}).validate()
    # the previous word's row lives in the word-input table: none, no previous word
    with pytest.raises(ValueError, match="rnnme_word_input_prev"):
        dataclasses.replace(top, rnnme_word_input_bits=0).validate()


def test_round25_word_inputs_change_the_model_and_round_trip(sample_text):
    """Round 25: the previous word's input row and word rows that start at zero are header
    fields that change the predictions and round-trip; the rows really start at zero."""
    from nncompress.model import rnnme_config
    from nncompress.model.params import fit_to_input

    base = dataclasses.replace(params_for_level(3), table_bits=16, history_bits=16, match_bits=12)
    expert = dataclasses.replace(base, **dict(rnnme_fields(hidden=4, me_bits=14, cell=1),
                                              rnnme_word_input_bits=8), rnnme_inputs=1)
    data = sample_text[:8000]
    plain = nncompress.compress(data, params=expert)
    archives = {plain}
    for changes in (dict(rnnme_word_input_prev=1), dict(rnnme_word_rows_zero=1),
                    dict(rnnme_word_input_prev=1, rnnme_word_rows_zero=1)):
        params = dataclasses.replace(expert, **changes)
        archive = nncompress.compress(data, params=params)
        assert nncompress.decompress(archive) == data
        assert stream_params(archive) == fit_to_input(params, len(data))
        archives.add(archive)
    assert len(archives) == 4  # each setting changed the bytes
    rows = rnnme_config.initial_arrays(rnnme_config.from_model(
        dataclasses.replace(expert, rnnme_word_rows_zero=1)))["uw"]
    assert rows.shape[0] == 256 and not rows.any()
    assert rnnme_config.initial_arrays(rnnme_config.from_model(expert))["uw"].any()


def test_round28_context_feature_cap_changes_the_model_and_round_trips(sample_text):
    """Round 28: the cap on the summed rates of the context features' rows is a header field;
    0 (older headers) means none, a cap that binds changes the bytes, and both round-trip."""
    from nncompress.model import rnnme_config
    from nncompress.model.params import fit_to_input

    top = params_for_level(9)
    with pytest.raises(ValueError, match="rnnme_me_ctx_total_milli"):
        dataclasses.replace(top, rnnme_me_ctx_total_milli=100_001).validate()
    with pytest.raises(ValueError):  # an expert setting without an expert
        dataclasses.replace(params_for_level(1), rnnme_me_ctx_total_milli=1000).validate()
    base = dataclasses.replace(params_for_level(3), table_bits=16, history_bits=16, match_bits=12)
    expert = dataclasses.replace(base, **rnnme_fields(hidden=4, me_bits=14, cell=1),
                                 rnnme_inputs=1, rnnme_context_features=0b111)
    assert rnnme_config.from_model(expert).me_ctx_total_milli == 100000  # 0: no cap of its own
    from nncompress.analysis import code_lengths

    data = sample_text[:8000]
    costs = []
    for cap in (0, 100000, 500):
        params = dataclasses.replace(expert, rnnme_me_ctx_total_milli=cap)
        archive = nncompress.compress(data, params=params)
        assert nncompress.decompress(archive) == data
        assert stream_params(archive) == fit_to_input(params, len(data))
        costs.append(code_lengths(data, params=params))
    np.testing.assert_array_equal(costs[0], costs[1])  # 0 and 100 (never binding) predict alike
    assert not np.array_equal(costs[0], costs[2])  # a cap of 0.5 binds


def test_rnnme_selector_needs_the_expert():
    from nncompress.model.kinds import Selector, selector_mask

    with pytest.raises(ValueError):
        dataclasses.replace(params_for_level(1), mixer_select=selector_mask(Selector.RNNME)).validate()
