"""A method added through its spec alone: "repeat the last n-gram" (guess that the text's last N tokens come again),
registered with `lookahead_core.spec.registered` from this file, with no other edit anywhere, runs in a Run (its own
step report read back as its type) and
its replay's panels, in the race, in the bench and in the tune map, exact as every method is; and is gone from every
table after.

The proof that a method is one spec (issue 62): were any table still kept by hand, the method would be missing from
it here, and the test would fail where that table is read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from lab.measure.bench import run_bench
from lab.measure.race import race
from lab.measure.timed_run import timed_run
from lab.measure.tune import TuneGrid, TuneOptions, tuning
from lab.serve.budget import Deadline
from lookahead_core.method_spec import Guessing, MethodSpec, Swept, same_runtime
from lookahead_core.records import (
    METHODS,
    BenchMethod,
    Branch,
    GuessReason,
    GuessSource,
    Look,
    Method,
    MethodEntry,
    Needs,
    Run,
)
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.spec import GUESSING, SWEPT, registered
from lookahead_core.step.proposers import Candidate, Proposal, ProposerReport, chain_branch
from lookahead_core.tuning import choose_settings
from lookahead_core.working_state import RESIDENT
from visuals import replay
from visuals.looks import look
from visuals.methods import recorded_words
from visuals.summary import summary_html
from visuals.tune import method_figure

from .conftest import drained
from .tiny import cost_table

REPEATED = 3  # the tokens repeated: a guess is the sequence's last three tokens
TEXT = "The cat sat on the mat. The cat sat on the mat. The cat"  # the app's 2-layer model ends in ",  and" again
REQUEST = DecodeRequest(max_new_tokens=40)


@dataclass(kw_only=True)
class RepeatSettings:
    """What the method records of its settings: the tokens it repeats."""

    tokens: int


@dataclass(kw_only=True)
class RepeatReport:
    """What the method records of each step (its StepRecord.method_report): the n-gram it repeated, and its time."""

    repeated: list[int]
    seconds: float

    def token_ids(self) -> set[int]:
        return set(self.repeated)


class RepeatProposer:
    """Guesses that the sequence's last REPEATED tokens come again, as one chain after c."""

    def __init__(self) -> None:
        self.repeated: tuple[int, ...] = ()

    def propose(self, context) -> Proposal:
        self.repeated = tuple(context.sequence[-REPEATED:])
        if len(self.repeated) < REPEATED:
            return Proposal(None)
        reason = GuessReason.add("last n-gram again")
        candidate = Candidate(self.repeated, tuple(range(REPEATED)), GuessSource.OUTPUT, reason, 0)
        return Proposal(None, [chain_branch(candidate)])

    def observe(self, outcome) -> None:
        """Nothing to learn: the next guess is read off the sequence."""

    def report(self, outcome) -> ProposerReport:
        return ProposerReport(method_report=RepeatReport(repeated=list(self.repeated), seconds=0.0))


def repeat_spec() -> MethodSpec:
    """The whole of the new method: its entry (names, words, needs, look) and how the engine runs it."""
    entry = MethodEntry(
        method=Method.add("repeat-ngram"),
        name="Repeat the last n-gram",
        short="repeat",
        needs=Needs.NOTHING,
        branch=Branch.GUESS,
        look=Look("yellow", pattern=".", marker="hexagon", dash="dot"),
        settings=RepeatSettings,
        report=RepeatReport,
        proposes="Repeat has no Jacobi window: it guesses that the last three tokens come again.",
        no_pool="Repeat keeps no n-gram pool: its one guess is the sequence's last three tokens.",
        prefill="Repeat reads nothing from the prompt.",
    )
    guessing = Guessing(
        proposer=lambda model, prompt_ids, request, runtime: lambda sequence: RepeatProposer(),
        reach=lambda request, runtime: REPEATED,
        recorded=lambda request, runtime: RepeatSettings(tokens=REPEATED),
        rows=lambda request, runtime: 1 + REPEATED,
    )
    swept = Swept(  # one cell, where the grid names it: the method has no settings to sweep
        settings=lambda grid: [{}] if entry.method in grid.named else [],
        request=lambda base, settings: replace(base, method=entry.method),
        runtime=same_runtime,
    )
    return MethodSpec(entry=entry, guessing=guessing, swept=swept)


@pytest.fixture
def repeat():
    with registered(repeat_spec()) as spec:
        yield spec.method
    assert spec.method not in Method and spec.method not in BenchMethod
    assert all(spec.method not in table for table in (METHODS, GUESSING, RESIDENT, SWEPT))


def test_a_run_of_the_added_method_is_exact_and_its_replay_draws_every_panel(app_model, repeat):
    prompt = app_model.tokenizer.encode(TEXT)
    _, run = drained(timed_run(app_model, prompt, replace(REQUEST, method=repeat), Runtime(deadline=Deadline(60))))
    assert run.trace.meta.method == repeat
    assert run.trace.summary.new_token_ids == run.greedy.summary.new_token_ids
    accepted = sum(step.verification.accepted for step in run.trace.steps[1:] if step.verification)
    assert accepted > 0, "the output repeats: some guess should have been accepted (else exactness proves nothing)"
    again = Run.from_json(run.to_json())
    assert again.trace.meta.settings.of(repeat) == RepeatSettings(tokens=REPEATED)
    reports = [step.report(RepeatReport) for step in again.trace.steps[1:]]  # its own report, read back as its type
    assert reports == [step.method_report for step in run.trace.steps[1:]] and all(reports)
    guessed = [step.verification.candidates[0].tokens for step in again.trace.steps[1:]]
    assert [report.repeated for report in reports] == guessed
    assert recorded_words(again.trace.meta.settings) == f"tokens={REPEATED}"
    for index in range(len(again.trace.steps)):
        panels = replay.panels(again, index)
        assert not any(replay.UNDRAWABLE in html for html in panels.values()), index
    assert "Repeat the last n-gram" in summary_html(again)
    assert look(repeat).pattern == "."


@pytest.mark.usefixtures("one_round")  # a lane's exactness, not its timing: three rounds took 13 s of make test
def test_the_race_and_the_bench_take_the_added_method(app_model, repeat):
    record = race(app_model, app_model.tokenizer.encode(TEXT), REQUEST, Runtime(deadline=Deadline(60)), cost_table(0.1))
    lane = record.lane(repeat)
    assert lane.exact and lane.acceptance and lane.new_token_ids == record.lane(Method.GREEDY).new_token_ids
    prompts = [{"id": "repeats", "prompt": TEXT, "chat": False}]
    report = run_bench(app_model, prompts, ["greedy", repeat.value], REQUEST, Runtime(), repeats=2)
    assert report.summary[BenchMethod(repeat.value)].exact


def test_the_tune_map_sweeps_the_added_method_and_draws_its_map(app_model, repeat):
    grid = TuneGrid(windows=(), ngrams=(), lookups=(), draft_tokens=(), tree_sizes=(), suffixes=(), named=(repeat,))
    prompts = [("repeats", app_model.tokenizer.encode(TEXT))]
    options = TuneOptions(dataset="repeats", rounds=1, best=1, sample=0)
    auto = choose_settings(cost_table(0.1))
    _, report = drained(tuning(app_model, prompts, grid, REQUEST, Runtime(), auto, options))
    (cell,) = report.cells
    assert cell.method == repeat and cell.exact and cell.measured_speedup is not None
    assert report.chosen == {repeat: 0}
    assert method_figure(report, repeat).layout.title.text.startswith("repeat-ngram")
