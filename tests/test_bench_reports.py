"""The shipped bench reports (docs/bench): every one reads as a BenchReport, losing nothing, whichever
generation of the bench wrote it, reads back equal from its own JSON, and renders as a page and in the overview.
No model and no torch: a report is read and drawn on any machine.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lookahead_core.records import (
    SCHEMA_VERSION,
    UPGRADABLE,
    BenchMethod,
    BenchReport,
    Busy,
    Method,
    MethodSettings,
    PlannerKind,
    SchemaError,
    Spread,
    to_data,
    unversioned_bench_report,
)
from visuals.bench import bench_report_html, overview_figure, settings_words
from visuals.looks import look

from .conftest import assert_same_types, heavy_but


def is_tune(path: Path) -> bool:
    return "tune_version" in json.loads(path.read_text())


# The bench's reports; the tune maps beside them (docs/tune.md) are read by tests/test_tune.py
SHIPPED = sorted(
    p for p in (Path(__file__).resolve().parent.parent / "docs" / "bench").glob("*.json") if not is_tune(p)
)


def shipped(name: str) -> BenchReport:
    return BenchReport.from_json(next(path for path in SHIPPED if path.name == name).read_text())


def assert_holds(full, part, where: str = "report") -> None:
    """Every key and value of `part` is in `full` (which may hold more: fields with defaults)."""
    if isinstance(part, dict):
        for key, value in part.items():
            if value is None and where.endswith(".by_method"):
                continue  # a method that did not run: null in files until 2026-12-07, left out since
            assert key in full, f"{where}: {key!r} was lost"
            assert_holds(full[key], value, f"{where}.{key}")
    elif isinstance(part, list):
        assert len(full) == len(part), where
        for i, (a, b) in enumerate(zip(full, part, strict=True)):
            assert_holds(a, b, f"{where}[{i}]")
    elif where.endswith(".schema_version") and part in UPGRADABLE:
        assert full == SCHEMA_VERSION, f"{where}: version {part} read as {full!r}"  # re-labelled as it is read
    else:
        assert full == part, f"{where}: {part!r} read as {full!r}"


# Before schema 14 a report's settings gave each method's a field of its own (the bench wrote lookahead's and prompt
# lookup's whichever methods ran), and lookahead's auto choice one too: each old field, its key since, and the
# entrants that run with it
FLAT = {
    "lookahead": ("lookahead", {"lookahead"}),
    "prompt_lookup": ("prompt_lookup", {"prompt-lookup"}),
    "draft": ("speculative", {"speculative", "hf-assisted"}),
    "medusa": ("medusa", {"medusa"}),
    "eagle": ("eagle", {"eagle"}),
    "suffix": ("suffix", {"suffix"}),
}


def keyed(data: dict) -> dict:
    """A report's data with its entrants' settings where schema 14 keeps them (`by_method`, keyed by method): with
    auto settings lookahead ran the auto choice, whose W, N, G its own field held too."""
    if "by_method" in data["settings"]:
        return data
    flat = dict(data["settings"])
    auto = flat.pop("auto", None)
    if auto is not None:
        triple = ("window", "ngram", "guesses")
        assert [flat["lookahead"][k] for k in triple] == [auto[k] for k in triple]
        flat["lookahead"] = auto
    ran = set(flat["methods"])
    by_method = {new: flat[old] for old, (new, runs) in FLAT.items() if flat.get(old) is not None and runs & ran}
    rest = {key: value for key, value in flat.items() if key not in FLAT}
    return data | {"settings": rest | {"by_method": by_method}}


def test_a_report_keeps_only_its_entrants_settings():
    """The bench wrote lookahead's and prompt lookup's settings whichever methods ran: a report of suffix decoding
    alone reads with suffix decoding's settings only (and one that ran lookahead keeps lookahead's: the control)."""
    alone = shipped("cpu-gsm8k-float32-suffix-exactness-2026-11-27.json").settings
    assert [m.value for m in alone.methods] == ["hf-greedy", "suffix"]
    assert alone.by_method == MethodSettings(suffix=alone.by_method.suffix) and alone.by_method.suffix is not None
    assert shipped("cpu-humaneval-float32.json").settings.by_method.lookahead is not None


def test_a_borrowed_draft_is_named_by_the_entrants_that_ran_with_it():
    """hf-assisted runs with speculative decoding's draft: a bench of hf-assisted without speculative decoding named
    its draft "Speculative decoding: draft ..."; it now names the entrants that ran with it."""
    both = shipped("cpu-gsm8k-float32-2026-11-25.json").settings
    assert {BenchMethod.SPECULATIVE, BenchMethod.HF_ASSISTED} <= set(both.methods)
    assert "Speculative decoding and hf-assisted: draft " in settings_words(both)
    alone = dataclasses.replace(both, methods=[m for m in both.methods if m != BenchMethod.SPECULATIVE])
    words = settings_words(alone)
    assert "hf-assisted: draft " in words and "Speculative decoding" not in words


def test_the_reports_are_shipped():
    assert len(SHIPPED) >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.stem)
def test_a_shipped_report_reads_loses_nothing_and_reads_back_equal(path):
    text = path.read_text()
    report = BenchReport.from_json(text)
    assert report.schema_version == SCHEMA_VERSION
    assert_holds(to_data(report), keyed(unversioned_bench_report(json.loads(text))))
    assert list(report.summary) == report.settings.methods
    assert all(list(row.methods) == report.settings.methods for row in report.prompts)
    read = BenchReport.from_json(report.to_json(indent=1))
    assert read == report
    assert_same_types(report, read, "report")


@pytest.mark.parametrize("path", heavy_but(SHIPPED, *SHIPPED[-3:]), ids=lambda path: path.stem)  # the newest 3 quick
def test_a_shipped_report_renders_as_a_page(path):
    report = BenchReport.from_json(path.read_text())
    page = bench_report_html(report)
    assert page.startswith("<!doctype html>") and "Plotly.newPlot" in page
    assert all(f"<tr><td>{method}</td>" in page for method in report.summary)
    assert "None" not in page.split("<table>")[1].split("</table>")[0]


def test_every_shipped_report_draws_in_the_overview():
    reports = {path.stem: BenchReport.from_json(path.read_text()) for path in SHIPPED}
    figure = overview_figure(reports)
    assert {bar.name for bar in figure.data} == {m.value for r in reports.values() for m in r.summary}
    assert "lookahead output equal to greedy generate on" in figure.layout.title.text


def test_a_report_from_before_our_prompt_lookup_reads_its_prompt_lookup_as_transformers():
    report = shipped("h100-humaneval-float32.json")
    assert list(report.summary) == ["greedy", "lookahead", "hf-prompt-lookup", "hf-greedy"]
    assert report.summary[BenchMethod.HF_PROMPT_LOOKUP].steps == 422  # generate(prompt_lookup_num_tokens=10)'s
    assert report.settings.by_method.prompt_lookup is None and report.settings.sampling is None
    assert report.summary[BenchMethod.LOOKAHEAD].acceptance is None
    assert report.prompts[0].methods[BenchMethod.LOOKAHEAD].offered is None


def test_an_auto_choice_from_before_its_regime_was_recorded_keeps_its_words():
    report = shipped("h100-humaneval-float32.json")
    auto = report.settings.by_method.lookahead  # what lookahead ran: the auto choice
    assert auto.regime is None and auto.step_costs.context == 256 and auto.planner == PlannerKind.FULL
    assert report.settings.auto_why.startswith("on NVIDIA H100 80GB HBM3 (float32) a 64-token step costs 1.16x")
    assert "a 64-token step costs 1.16x" in bench_report_html(report)


def test_an_early_sampled_report_keeps_its_draws_apart_from_verified_candidates():
    report = shipped("cpu-humaneval-float32-sampled-T0.7.json")
    lookahead = report.prompts[0].methods[BenchMethod.LOOKAHEAD]
    assert (lookahead.draws, lookahead.accepted, lookahead.offered) == (48, 15, None)
    assert report.summary[BenchMethod.LOOKAHEAD].acceptance == pytest.approx(0.4736, abs=1e-4)
    assert report.summary[BenchMethod.LOOKAHEAD].exact is None and report.settings.sampling.temperature == 0.7
    assert "not compared" in bench_report_html(report)


def test_a_current_report_reads_as_written():
    report = shipped("cpu-humaneval-float32.json")
    benched_before = (BenchMethod.MEDUSA, BenchMethod.EAGLE, BenchMethod.HF_STATIC, BenchMethod.SUFFIX)
    assert list(report.summary) == [m for m in BenchMethod if m not in benched_before]
    by_method = report.settings.by_method
    assert by_method.prompt_lookup.tokens == 10 and by_method.speculative.model == "bf16-self"
    assert report.settings.auto_why is None and all(r.draws is None for r in report.prompts[0].methods.values())


def test_every_entrant_has_one_look_and_a_shared_hue_is_told_apart_by_its_hatching():
    """The method table's entries (records.METHODS, records.PEERS) are the one place a method is given its look:
    the race, the bench and the tune map read it through visuals.looks."""
    looks = {entrant: look(entrant) for entrant in BenchMethod}
    seen = {(drawn.hue, drawn.pattern) for drawn in looks.values()}
    assert len(seen) == len(looks), "two entrants with one hue and one hatching: told apart by colour alone, or not"
    assert all(drawn.hue.startswith("#") for drawn in looks.values())
    tuned = [look(m).marker for m in (Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SUFFIX)]
    assert len(set(tuned)) == len(tuned)
    markers = [look(method).marker for method in Method]
    assert len(set(markers)) == len(markers), "two methods' points of one shape: told apart by colour alone"
    for left_out in (Method.EAGLE, Method.SPECULATIVE):  # a race runs one of the two (lab.measure.race.raced)
        dashes = [look(method).dash for method in Method if method != left_out]
        assert len(set(dashes)) == len(dashes), "two race lines of one dash: told apart by colour alone"


def test_a_versioned_report_is_not_upgraded_and_one_of_another_version_is_refused():
    data = to_data(shipped("cpu-mtbench-float32.json"))
    assert unversioned_bench_report(data) is data
    with pytest.raises(SchemaError, match=f"version {SCHEMA_VERSION + 1}"):
        BenchReport.from_json(json.dumps(data | {"schema_version": SCHEMA_VERSION + 1}))


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "unversioned"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["summary"].update(beam=d["summary"]["lookahead"]), r"benchreport\.summary: 'beam' is not one of"),
        (lambda d: d["prompts"][0]["methods"]["lookahead"].pop("steps"), r"methods\.lookahead: missing field 'steps'"),
        (lambda d: d["settings"].update(baseline="prompt lookup"), r"settings\.baseline: 'prompt lookup' is not"),
        (lambda d: d.update(prompts={}), r"benchreport\.prompts: expected list, got dict"),
    ],
    ids=["unknown-method", "missing-field", "unknown-baseline", "wrong-shape"],
)
def test_a_report_that_does_not_fit_is_refused_naming_the_field(versioned, change, message):
    text = shipped("cpu-mtbench-float32.json").to_json() if versioned else SHIPPED[0].read_text()
    data = json.loads(text)
    change(data)
    with pytest.raises(SchemaError, match=message):
        BenchReport.from_json(json.dumps(data))


def timed_in_rounds(report: BenchReport) -> BenchReport:
    """`report` as if timed in 3 rounds on a busy machine: every method's rounds, rate spread and speedup interval."""
    summary = {
        method: dataclasses.replace(
            totals,
            round_tokens=[totals.tokens] * 3,
            round_seconds=[totals.seconds * 0.9, totals.seconds, totals.seconds * 1.2],
            rate=Spread(
                median=totals.tokens_per_second, low=totals.tokens_per_second / 1.2, high=totals.tokens_per_second / 0.9
            ),
            speedup_interval=Spread(median=totals.speedup, low=totals.speedup - 0.05, high=totals.speedup + 0.07),
        )
        for method, totals in report.summary.items()
    }
    busy = Busy(other_cores=0.6, cores=2, seconds=600.0, heavy=True)
    return dataclasses.replace(
        report, summary=summary, settings=dataclasses.replace(report.settings, repeats=3), busy=busy
    )


def test_a_report_timed_in_rounds_reads_back_equal():
    report = timed_in_rounds(shipped("cpu-humaneval-float32.json"))
    read = BenchReport.from_json(report.to_json(indent=1))
    assert read == report and read.settings.repeats == 3 and read.busy.heavy
    assert_same_types(report, read, "report")


def test_a_report_timed_in_rounds_shows_medians_intervals_and_the_machine_load():
    report = timed_in_rounds(shipped("cpu-humaneval-float32.json"))
    page = bench_report_html(report)
    lookahead = report.summary[BenchMethod.LOOKAHEAD]
    low, high = lookahead.speedup_interval.low, lookahead.speedup_interval.high
    assert f"<b>{lookahead.speedup:.2f}× ({low:.2f}–{high:.2f}×)</b>" in page
    assert f"{lookahead.rate.median:.2f} ({lookahead.rate.low:.2f}–{lookahead.rate.high:.2f})" in page
    assert "Timed in 3 interleaved rounds per prompt" in page and "timed once" not in page
    assert "about 60% of one core" in page and "less reliable" in page
    bars = overview_figure({"rounds": report}).data
    assert all(bar.error_y.array is not None for bar in bars)


def test_a_report_from_before_rounds_says_it_was_timed_once_and_draws_no_error_bars():
    report = shipped("cpu-humaneval-float32.json")
    page = bench_report_html(report)
    assert "timed once per prompt" in page and "other programs" not in page
    assert f"<b>{report.summary[BenchMethod.LOOKAHEAD].speedup:.2f}x</b>" in page
    assert all(bar.error_y.array is None for bar in overview_figure({"once": report}).data)
