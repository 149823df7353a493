"""The record schema: a recorded run reads back from JSON field for field, and a record that does
not fit the schema (a missing field, a wrong type, an unknown name, another or no schema version)
is refused with a SchemaError that says where.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from lookahead_core import records
from lookahead_core.config import LookaheadConfig
from lookahead_core.records import (
    METHODS,
    SCHEMA_VERSION,
    DraftRecord,
    HeadsRecord,
    LookupSettings,
    Method,
    MethodSettings,
    PlannerKind,
    RaceRecord,
    Run,
    SchemaError,
    StepCostCurve,
    StepMode,
    StopReason,
    Trace,
    Verdict,
    to_data,
)
from lookahead_core.records.codec import decode
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import record_run, record_trace
from lookahead_core.tuning import choose_settings
from visuals import library

from .conftest import assert_same_types
from .older import older_run
from .tiny import CharTokenizer, cost_table, tiny_model

PROMPT = ([5, 6, 7, 8] * 8)[:30]  # repetitive: guesses win, the pool fills and evicts


@pytest.fixture(scope="module")
def run() -> Run:
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer(), eos_ids=frozenset({95}))
    return record_run(
        lm,
        PROMPT,
        DecodeRequest(lookahead=LookaheadConfig(window=5, ngram=3, guesses=5), max_new_tokens=40),
        prompt_text="a prompt",
    )


def test_the_recorded_run_fills_every_part_of_the_schema(run):
    """So the round trip below carries real values in every field, not empty lists and Nones."""
    steps = run.trace.steps[1:]
    assert any(s.verification.accepted > 1 for s in steps) and any(s.verification.winner is None for s in steps)
    assert any(s.window.harvested for s in steps) and any(s.window.warming_up for s in steps)
    assert any(s.pool.evicted for s in steps) and any(e.guess is not None for s in steps for e in s.pool.entries)
    assert {c.verdict for s in steps for c in s.verification.candidates} == set(Verdict)
    assert run.greedy.meta.settings == MethodSettings() and run.trace.meta.settings.lookahead.window == 5


def test_a_recorded_run_reads_back_equal_field_for_field(run):
    read = Run.from_json(run.to_json())
    assert read == run
    assert_same_types(run, read)


def test_a_run_that_never_wrote_its_end_of_sequence_token_passes_the_shape_check(run):
    """The end-of-sequence ids are in the record (meta.eos_ids), so its vocabulary names them even when neither
    the prompt nor the output holds one (a raw completion that stops at max new tokens)."""
    assert 95 not in PROMPT + run.trace.summary.new_token_ids + run.greedy.summary.new_token_ids
    assert library.read_run(run.to_json().encode()) == run


def test_an_auto_trace_reads_back_with_its_settings_and_cost_curve(tiny_lm):
    auto = choose_settings(cost_table(0.2))
    trace = record_trace(tiny_lm, PROMPT, DecodeRequest(max_new_tokens=24), Runtime(auto=auto))
    read = Trace.from_json(trace.to_json())
    assert read == trace
    assert_same_types(trace, read, "trace")
    assert read.meta.settings.lookahead.planner == PlannerKind.COST_AWARE
    assert type(read.meta.settings.lookahead.step_costs) is StepCostCurve
    assert read.meta.settings.lookahead.step_costs.seconds == cost_table(0.2).seconds


def mutated(trace: Trace, change) -> str:
    data = json.loads(trace.to_json())
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["steps"][1].pop("committed"), r"trace\.steps\[1\]: missing field 'committed'"),
        (lambda d: d["meta"].pop("machine"), r"trace\.meta: missing field 'machine'"),
        (lambda d: d["steps"][1].update(tokens_fed="9"), r"trace\.steps\[1\]\.tokens_fed: expected int, got str"),
        (
            lambda d: d["steps"][1]["rows"][0].update(token=True),
            r"steps\[1\]\.rows\[0\]\.token: expected int, got bool",
        ),
        (lambda d: d["summary"].update(tokens=None), r"trace\.summary\.tokens: expected int, got NoneType"),
        (lambda d: d["summary"].update(seconds="1.5"), r"trace\.summary\.seconds: expected a number, got str"),
        (lambda d: d["steps"][1]["rows"].append(3), r"trace\.steps\[1\]\.rows\[\d+\]: expected dict, got int"),
        (
            lambda d: d["steps"][1]["verification"]["candidates"][0].update(verdict="maybe"),
            r"candidates\[0\]\.verdict: 'maybe' is not one of 'won', 'shorter', 'tied-later', 'no-match'",
        ),
        (lambda d: d["meta"].update(method="beam"), r"trace\.meta\.method: 'beam' is not one of"),
        (lambda d: d["meta"].update(colour="red"), r"trace\.meta: unknown field 'colour'"),
    ],
    ids=[
        "missing-field",
        "missing-part",
        "wrong-type",
        "bool-for-int",
        "null-for-int",
        "string-for-number",
        "wrong-item",
        "unknown-enum-value",
        "unknown-method",
        "unknown-field",
    ],
)
def test_a_trace_that_does_not_fit_is_refused_naming_the_field(run, change, message):
    with pytest.raises(SchemaError, match=message):
        Trace.from_json(mutated(run.trace, change))


def test_a_trace_of_another_schema_version_is_refused_naming_both_versions(run):
    text = mutated(run.trace, lambda d: d.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(SchemaError, match=f"version {SCHEMA_VERSION + 1}.*reads schema version {SCHEMA_VERSION}"):
        Trace.from_json(text)


def test_a_version_10_trace_reads_as_one_with_no_shape(run):
    data = older_run(to_data(run), 10, without=("shape_rows", "shape_needs"))["trace"]
    read = Trace.from_json(json.dumps(data))
    assert (read.meta.shape_rows, read.meta.shape_needs) == (0, 0) and read.steps == run.trace.steps
    assert read.meta.settings == run.trace.meta.settings


def test_a_version_3_run_reads_as_a_run_of_a_model_without_sliding_layers(run):
    old = older_run(to_data(run), 3, without=("sliding",))
    for trace in (old["trace"], old["greedy"]):
        for key in ("layers", "sliding_layers", "sliding_window"):
            trace["meta"]["machine"].pop(key)
    read = Run.from_json(json.dumps(old))
    assert read.schema_version == read.trace.schema_version == SCHEMA_VERSION == 15
    assert read.trace.meta.machine.layers == 0 and all(s.sliding is None for s in read.trace.steps)
    assert read.trace.steps == run.trace.steps


def test_a_version_4_run_reads_as_a_run_timed_once(run):
    old = {k: v for k, v in older_run(to_data(run), 4).items() if k != "timing"}
    read = Run.from_json(json.dumps(old))
    assert read.schema_version == SCHEMA_VERSION and read.timing is None and read.trace == run.trace


def test_method_settings_holds_each_guessing_methods_settings_named_as_the_method():
    """Records keep each method's settings keyed by method (schema 14), each of the type its entry names: `of` and
    the attribute of its name read it (greedy has none), JSON keys it by that name, and a name no method keeps
    settings under is refused, in the constructor as in a file."""
    types = {method: METHODS[method].settings for method in Method}
    assert types[Method.GREEDY] is None and all(types[m] is not None for m in Method if m != Method.GREEDY)
    held = MethodSettings(**{method.name.lower(): method.name.lower() for method in Method if method != Method.GREEDY})
    assert all(held.of(method) == method.name.lower() for method in Method if method != Method.GREEDY)
    assert held.of(Method.GREEDY) is None and held.prompt_lookup == "prompt_lookup"
    assert MethodSettings().suffix is None and held.without(Method.SUFFIX).suffix is None
    with pytest.raises(TypeError, match="'greedy'"):
        MethodSettings(greedy=1)
    lookup = LookupSettings(ngram=3, tokens=10, candidates=1)
    data = to_data(MethodSettings(prompt_lookup=lookup))
    assert data == {"prompt_lookup": {"ngram": 3, "tokens": 10, "candidates": 1}}
    assert decode(MethodSettings, data, "settings") == MethodSettings(prompt_lookup=lookup)
    with pytest.raises(SchemaError, match="settings: unknown field 'greedy'"):
        decode(MethodSettings, data | {"greedy": {}}, "settings")


@pytest.mark.parametrize("method", [Method.SPECULATIVE, Method.EAGLE])
def test_a_version_13_trace_keeps_its_draft_under_its_own_method(run, method):
    """Before schema 14 a trace's `draft` held speculative decoding's draft, and an EAGLE trace's layer (schema 8 on):
    each reads as its own method's settings."""
    draft = {"model": "eagle: eagle.safetensors" if method == Method.EAGLE else "bf16-self", "dtype": "float32"}
    old = older_run(to_data(run), 13)["trace"]
    old["meta"] |= {"method": method.value, "settings": None, "draft": draft | {"tokens": 4}}
    settings = Trace.from_json(json.dumps(old)).meta.settings
    assert settings.of(method).model == draft["model"] and settings.of(method).tokens == 4
    assert list(settings.by_name) == [method.name.lower()]


DRAFTED = {"tokens": [5, 6], "forward_passes": 2, "seconds": 0.01}


def test_a_steps_method_report_reads_back_as_its_methods_report_type(run):
    """A step's method report is one entry (schema 15), read as the type its method's entry names: a speculative
    step's as a DraftRecord; a method that reports nothing (lookahead) refuses one, naming the step."""
    data = to_data(run.trace)
    data["steps"][1] |= {"method": "speculative", "method_report": DRAFTED}
    step = Trace.from_json(json.dumps(data)).steps[1]
    assert step.method_report == DraftRecord(**DRAFTED) and step.report(DraftRecord) == step.method_report
    assert step.report(HeadsRecord) is None and step.draft_seconds == 0.01 and {5, 6} <= step.token_ids()
    data["steps"][1]["method"] = "lookahead"
    with pytest.raises(SchemaError, match=r"trace.steps\[1\].method_report: lookahead reports nothing of its own"):
        Trace.from_json(json.dumps(data))
    data["steps"][1] |= {"method": "speculative", "method_report": DRAFTED | {"tokens": ["x"]}}
    with pytest.raises(SchemaError, match=r"trace.steps\[1\].method_report.tokens\[0\]: expected int"):
        Trace.from_json(json.dumps(data))


def test_a_version_14_step_gives_its_draft_heads_or_suffix_field_as_its_method_report(run):
    """Before schema 15 a step gave a draft, Medusa's heads and suffix decoding's tree each a field of its own: the
    one it holds reads as its method report; a step holding two is refused, naming the second."""
    old = older_run(to_data(run), 14)["trace"]
    old["steps"][1] |= {"method": "speculative", "draft": DRAFTED, "heads": None, "suffix": None}
    assert "method_report" not in json.dumps(old)
    assert Trace.from_json(json.dumps(old)).steps[1].method_report == DraftRecord(**DRAFTED)
    old["steps"][1]["heads"] = {"heads": [], "tree": [], "seconds": 0.0}
    with pytest.raises(SchemaError, match=r"trace.steps\[1\]: unknown field 'draft'"):
        Trace.from_json(json.dumps(old))


RACES = sorted((Path(__file__).resolve().parent.parent / "docs" / "bench" / "races").glob("*.json"))
# Before schema 14 a race gave each method's settings a field of its own
FLAT_RACE = {"settings": "lookahead", "lookup": "prompt_lookup", "draft": "speculative"}


FLAT_RACES = [path for path in RACES if json.loads(path.read_text())["schema_version"] < 14]


@pytest.mark.parametrize("path", FLAT_RACES, ids=lambda path: path.stem)
def test_a_shipped_race_reads_its_settings_keyed_by_method_and_reads_back_equal(path):
    flat = json.loads(path.read_text())
    race = RaceRecord.from_json(path.read_text())
    for old in ("settings", "lookup", "draft", "medusa", "eagle", "suffix"):
        assert to_data(getattr(race.settings, FLAT_RACE.get(old, old))) == flat.get(old), old
    assert {lane.method for lane in race.lanes} - {Method.GREEDY} == {
        method for method in Method if race.settings.of(method) is not None
    }
    assert RaceRecord.from_json(race.to_json()) == race


def test_a_lane_that_drafted_inside_its_steps_says_so_instead_of_a_draft_share():
    """EAGLE's device steps draft inside themselves: their draft's time is in each step's, not timed apart, so the
    lane's card says so (its draft share would count only the first, host-drafted step); an older race (no such
    field) reads as drafted apart, and says its share as before."""
    from visuals.race import lane_reason

    race = RaceRecord.from_json(next(p for p in RACES if "eagle" in p.read_text()).read_text())
    lane = next(lane for lane in race.lanes if lane.method == Method.EAGLE)
    assert not lane.drafted_inside and "of its time in the draft model" in lane_reason(race, lane)
    inside = dataclasses.replace(lane, drafted_inside=True)
    words = lane_reason(race, inside)
    assert "drafts made inside its steps on the device" in words and "of its time in the draft model" not in words
    moved = dataclasses.replace(race, lanes=[inside if x is lane else x for x in race.lanes])
    assert RaceRecord.from_json(moved.to_json()) == moved


def test_a_race_says_which_methods_it_leaves_out_on_its_device_and_why():
    """A walk found no EAGLE lane in a CPU race, and no word on why, while a Run offers the layer: a CPU race names
    EAGLE as left out (the bf16 draft races in its place), a GPU race speculative decoding."""
    from visuals.race import race_html

    gpu = RaceRecord.from_json(RACES[0].read_text())
    assert gpu.machine.device.startswith("cuda")
    html = race_html(gpu)
    assert (
        "Speculative decoding is not in this race: on a GPU a draft" in html and "EAGLE draft layer is not" not in html
    )
    cpu = dataclasses.replace(gpu, machine=dataclasses.replace(gpu.machine, device="cpu"))
    html = race_html(cpu)
    assert "EAGLE draft layer is not in this race: on a CPU" in html and "Speculative decoding is not" not in html


def test_a_version_5_run_reads_as_a_run_with_no_heads(run):
    """Schema 6 added Medusa's records (a step's heads; a trace's, race's and bench's Medusa settings): a
    version 5 run, without them, reads with none."""
    read = Run.from_json(json.dumps(older_run(to_data(run), 5, without=("heads", "medusa"))))
    assert read.schema_version == SCHEMA_VERSION and read.trace.meta.settings.medusa is None
    assert read.trace.steps == run.trace.steps


def test_a_version_8_run_reads_as_one_that_ran_the_eager_step(run):
    """Schema 9 added the step mode of each trace (eager, fixed, cuda-graph, compiled): a version 8 run, without it,
    ran the only step there was, the eager one, and reads so; a mode it does not know is refused, naming it."""
    old = older_run(to_data(run), 8, without=("mode", "mode_note"))
    assert "mode" not in old["trace"]["meta"]
    read = Run.from_json(json.dumps(old))
    assert read.schema_version == SCHEMA_VERSION and read.trace.steps == run.trace.steps
    assert read.trace.meta.mode == read.greedy.meta.mode == StepMode.EAGER and read.trace.meta.mode_note == ""
    with pytest.raises(SchemaError, match="meta.mode: 'warp' is not one of 'eager'"):
        Trace.from_json(mutated(run.trace, lambda d: d["meta"].update(mode="warp")))


def test_an_old_trace_without_a_schema_version_is_refused_as_such(run):
    text = mutated(run.greedy, lambda d: d.pop("schema_version"))
    with pytest.raises(SchemaError, match="no schema version .*record it again"):
        Trace.from_json(text)
    with pytest.raises(SchemaError, match="this run has no schema version"):
        Run.from_json(json.dumps({"lookahead": {}, "greedy": {}}))


def test_text_that_is_not_json_is_refused():
    with pytest.raises(SchemaError, match="not JSON"):
        Run.from_json("{not json")


def test_stop_reasons_and_optional_parts_read_back_as_recorded(run):
    """The last step's stop, and a greedy step's absent plan, window, pool and verification."""
    read = Run.from_json(run.to_json())
    assert read.trace.steps[-1].stop in set(StopReason)
    greedy_step = read.greedy.steps[1]
    assert (greedy_step.plan, greedy_step.window, greedy_step.pool, greedy_step.verification) == (None,) * 4
    assert greedy_step.rows == []


RECORD_TYPES = [kind for kind in (getattr(records, name) for name in records.__all__) if dataclasses.is_dataclass(kind)]


@pytest.mark.parametrize("kind", RECORD_TYPES, ids=lambda kind: kind.__name__)
def test_every_record_type_resolves_its_field_types_where_it_is_defined(kind):
    """The decoder reads a field's type from its annotation, a string resolved in the module of the schema
    that defines the record: each module must import every type its records' fields name."""
    hints = typing.get_type_hints(kind)
    assert set(hints) >= {f.name for f in dataclasses.fields(kind)}


@pytest.mark.parametrize("preset", [p["id"] for p in library.load_presets()])
def test_a_shipped_preset_was_recorded_by_the_engine_that_ships(preset):
    """A Run of the preset's prompt would be timed by this engine: the recording shown beside it must be too, or the
    first view's speedup is another engine's (records.ENGINE_VERSION says when to record them again:
    python -m lab.examples)."""
    run = library.example_run(preset)
    recorded = {run.trace.meta.machine.engine, run.greedy.meta.machine.engine}
    assert recorded == {records.ENGINE_VERSION}, (
        f"{preset}: recorded by engine {recorded}, this is {records.ENGINE_VERSION}"
    )
