"""The pure replay logic behind the app: step arithmetic, panels, presets and example runs."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math

import pytest

from lab.serve.requests import MAX_NEW_TOKENS
from lookahead_core.config import LookaheadConfig
from lookahead_core.records import SCHEMA_VERSION, LookaheadSettings, Method, MethodSettings, Run, SchemaError, to_data
from visuals import library, replay

PRESETS = library.load_presets()


@pytest.fixture(scope="module")
def run() -> Run:
    return library.load_run(library.example_path(PRESETS[0]))


# ----------------------------------------------------------------------------------------------
# Steps


def test_clamp_step_keeps_any_value_inside_the_run(run):
    last = replay.last_step(run)
    assert last == len(run.trace.steps) - 1
    cases = {None: 0, "3": 0, True: 0, math.nan: 0, math.inf: 0, -5: 0, 2.0: 2, 2.6: 3, 10**9: last}
    for value, expected in cases.items():
        assert replay.clamp_step(run, value) == expected, value


def test_step_by_stops_at_both_ends(run):
    last = replay.last_step(run)
    assert replay.step_by(run, 0, -1) == 0
    assert replay.step_by(run, 0, 1) == 1
    assert replay.step_by(run, last, 1) == last


def test_play_runs_to_the_end_then_restarts_from_the_beginning(run):
    last = replay.last_step(run)
    assert replay.play_tick(run, 0) == (1, True)
    assert replay.play_tick(run, last - 1) == (last, False)
    assert replay.play_start(run, 3) == 3
    assert replay.play_start(run, last) == 0


def test_play_interval_is_bounded():
    assert replay.play_interval(2) == 0.5
    assert replay.play_interval(100) == 0.1
    assert replay.play_interval(0) == 4.0
    assert replay.play_interval(None) == 1.0
    assert replay.play_interval(math.nan) == 1.0


def test_panel_values_follow_the_panel_order(run):
    values = replay.panel_values(run, 2)
    shown = replay.panels(run, 2)
    assert values == [shown[name] for name in replay.PANELS]
    assert "Step 2 of" in shown["caption"]


# ----------------------------------------------------------------------------------------------
# Bad input: an expired session, an empty prompt, settings that are not whole numbers or too large


@pytest.mark.parametrize(
    "value",
    [None, {}, [], "run", {"lookahead": {"steps": []}, "greedy": {"steps": []}}, {"lookahead": {"steps": [{}]}}],
)
def test_an_expired_or_broken_session_is_not_taken_for_a_run(value):
    assert not replay.is_run(value)


def test_a_run_without_steps_is_not_taken_for_a_run(run):
    empty = dataclasses.replace(run.trace, steps=[])
    assert not replay.is_run(Run(trace=empty, greedy=run.greedy))
    assert not replay.is_run(Run(trace=run.trace, greedy=dataclasses.replace(run.greedy, steps=[])))
    assert not replay.is_run(to_data(run))  # the plain data of a run is not a run


def test_a_recorded_run_is_accepted(run):
    assert replay.is_run(run)


# ----------------------------------------------------------------------------------------------
# Presets and example runs


def test_presets_cover_the_required_kinds():
    ids = [p["id"] for p in PRESETS]
    assert {"python", "study-tips", "pencils", "spelling", "german"} <= set(ids)
    assert len(ids) == len(set(ids))
    with pytest.raises(KeyError, match="no preset 'nope'"):
        library.preset(PRESETS, "nope")


@pytest.mark.parametrize("item", PRESETS, ids=[p["id"] for p in PRESETS])
def test_each_preset_is_valid_and_its_example_matches_it(item):
    assert isinstance(item["chat"], bool) and item["prompt"].strip() and item["caption"].strip()
    LookaheadConfig(window=item["window"], ngram=item["ngram"], guesses=item["guesses"])
    assert 1 <= item["max_new_tokens"] <= MAX_NEW_TOKENS
    path = library.example_path(item)
    assert path.stat().st_size < 64 * 1024, "keep example runs small"
    example = library.load_run(path)
    assert replay.is_run(example)
    meta = example.trace.meta
    assert meta.prompt_text == item["prompt"]
    method = Method(item.get("method", Method.LOOKAHEAD))
    assert meta.method == method and example.greedy.meta.method == Method.GREEDY
    if method == Method.LOOKAHEAD and item.get("auto"):  # the recording hardware's choice, with its measured costs
        settings = meta.settings.lookahead
        assert (settings.window, settings.ngram, settings.guesses) == (item["window"], item["ngram"], item["guesses"])
        assert settings.regime is not None and settings.step_costs is not None
        assert example.timing is not None and not example.timing.busy.heavy
    elif method == Method.LOOKAHEAD:
        assert meta.settings.lookahead == LookaheadSettings(
            window=item["window"], ngram=item["ngram"], guesses=item["guesses"]
        )
    if method == Method.PROMPT_LOOKUP:
        assert meta.settings.prompt_lookup.tokens == item["lookup_tokens"] and meta.settings.lookahead is None
    if method == Method.SPECULATIVE:
        draft = meta.settings.speculative
        assert (draft.model, draft.tokens) == ("bf16-self", item["draft_tokens"]) and meta.settings.lookahead is None
    assert meta.max_new_tokens == item["max_new_tokens"]
    assert meta.machine.model == "SmolLM2-135M-Instruct"
    assert example.greedy.meta.settings == MethodSettings()
    sampling = item.get("sampling")
    assert to_data(meta.sampling) == sampling and to_data(example.greedy.meta.sampling) == sampling
    if sampling is None:  # greedy: the same text; sampled: the same distribution, not the same draws
        assert example.trace.summary.new_token_ids == example.greedy.summary.new_token_ids


def test_one_preset_is_sampled():
    assert any("sampling" in item for item in PRESETS)


def test_the_low_gain_preset_gains_little():
    example = library.load_run(library.example_path(library.preset(PRESETS, "german")))
    assert example.trace.summary.tokens_per_step < 1.2


def test_runs_round_trip_through_json_and_gzip(tmp_path, run):
    for name in ("run.json", "run.json.gz"):
        library.save_run(run, tmp_path / name)
        assert library.load_run(tmp_path / name) == run
    first = (tmp_path / "run.json.gz").read_bytes()
    library.save_run(run, tmp_path / "run.json.gz")
    assert (tmp_path / "run.json.gz").read_bytes() == first
    assert json.loads(gzip.decompress(first)) == to_data(run)
    assert Run.from_json(run.to_json()) == run


def old_trace(run: Run) -> dict:
    """`run` as a trace from before versioned records: plain dicts, no schema_version anywhere."""
    data = to_data(run)
    del data["schema_version"]
    for method in ("trace", "greedy"):
        del data[method]["schema_version"]
    return data


@pytest.mark.parametrize("name", ["old.json", "old.json.gz"])
def test_an_old_trace_is_refused_with_the_schema_version(tmp_path, run, name):
    data = json.dumps(old_trace(run)).encode()
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    refusal = f"no schema version .* reads schema version {SCHEMA_VERSION}: record it again"
    with pytest.raises(SchemaError, match=refusal):
        library.load_run(tmp_path / name)


def test_a_trace_of_another_version_or_shape_is_refused(tmp_path, run):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**to_data(run), "schema_version": 1}))
    with pytest.raises(SchemaError, match=f"version 1; this lab reads schema version {SCHEMA_VERSION}"):
        library.load_run(path)
    damaged = to_data(run)
    del damaged["trace"]["steps"][1]["rows"][0]["sees"]
    path.write_text(json.dumps(damaged))
    with pytest.raises(SchemaError, match=r"run\.trace\.steps\[1\]\.rows\[0\]: missing field 'sees'"):
        library.load_run(path)
    path.write_bytes(b"{not json")
    with pytest.raises(SchemaError, match="not JSON"):
        library.load_run(path)


def test_a_step_named_in_a_link_is_read_as_a_number_inside_the_run(run):
    last = replay.last_step(run)
    cases = {"3": 3, "2.6": 3, "-4": 0, "999": last, "seven": 0, None: 0, "nan": 0}
    for text, expected in cases.items():
        assert replay.linked_step(run, text) == expected, text
