"""The lean path (what timed lanes run: `lean_steps`, each step tallied) and the recorded path (the stepper's:
`decode_steps`, each step recorded) decide alike, and only the recorded one builds records.

Every method, greedy and sampled, in the eager and the fixed-shape step, gives the same steps (rows fed, tokens
committed, candidate tokens verified and accepted, stop) either way, on a tiny random model; lookahead's cost-aware
planner, which learns from each verdict, plans the same steps too. The lean path builds no record of a step (no
StepRecord, no rows, window, pool, plan, verification, draft or heads record: a spy counts every record class
built); the recorded path, the negative control, builds them under the same spy. The Jacobi proposer holds the
window it proposed from by reference, never a copy, and the window never changes a list it handed out.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.methods.lookahead import JacobiProposer
from lookahead_core.methods.window import JacobiWindow
from lookahead_core.records import Method, StepMode, StepRecord, StepTally
from lookahead_core.records import reports as step_reports
from lookahead_core.records import step as step_records
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.step.planning import CostAwarePlanner
from lookahead_core.step.proposers import StepContext
from lookahead_core.trace import decode_steps, lean_steps

from .conftest import heavy_but
from .tiny import cost_table, tiny_model, tiny_runtime

PROMPTS = [([5, 6, 7, 8, 9] * 8)[:23], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]]
SAMPLED = SamplingConfig(temperature=0.8, top_k=20, seed=7)
MODES = [StepMode.EAGER, StepMode.FIXED]
# Built by sampled verification itself: the draws it made are its verdict's facts (StepVerdict.positions).
VERDICT_FACTS = {"Draw", "SampledPosition"}


def request(method: Method, sampling: SamplingConfig) -> DecodeRequest:
    return DecodeRequest(
        method=method,
        lookahead=LookaheadConfig(window=4, ngram=4, guesses=3),
        lookup=LookupConfig(ngram=2, tokens=4, candidates=2),
        max_new_tokens=24,
        sampling=sampling,
    )


@pytest.fixture(scope="module")
def lm():
    return tiny_model("llama")


def runtimes(lm, mode: StepMode) -> dict[str, Runtime]:
    """Every method's runtime, and lookahead once more with a cost-aware planner (it learns from every verdict)."""
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=mode)
    planned = dataclasses.replace(runtime, plan=lambda: CostAwarePlanner(cost_table(0.02)))
    return {"table": runtime, "cost-aware": planned}


def decided(step) -> tuple:
    """What a step decided, as a record and a tally both say it (no wall times)."""
    return (
        step.step,
        step.kind,
        step.tokens_fed,
        step.committed,
        step.stop,
        step.verified_tokens,
        step.accepted_tokens,
    )


def cases():
    """Every method greedy and sampled, lookahead once more with its planner; the draft model's and EAGLE's cases
    take seconds each (kept out of make test-quick's minute)."""
    for method in Method:
        for sampling in (GREEDY, SAMPLED):
            heavy = method in (Method.SPECULATIVE, Method.EAGLE)
            yield pytest.param(method, sampling, "table", marks=[pytest.mark.heavy] * heavy)
    yield Method.LOOKAHEAD, GREEDY, "cost-aware"
    yield Method.LOOKAHEAD, SAMPLED, "cost-aware"


@pytest.mark.parametrize("mode", heavy_but(MODES, StepMode.EAGER))
@pytest.mark.parametrize(("method", "sampling", "runtime"), list(cases()))
def test_the_lean_and_the_recorded_path_decide_the_same_steps(lm, mode, method, sampling, runtime):
    chosen = runtimes(lm, mode)[runtime]
    for prompt in PROMPTS:
        recorded = list(decode_steps(lm, prompt, request(method, sampling), chosen))
        lean = list(lean_steps(lm, prompt, request(method, sampling), chosen))
        assert all(type(s) is StepRecord for s in recorded) and all(type(s) is StepTally for s in lean)
        assert [decided(s) for s in lean] == [decided(s) for s in recorded], (method, sampling, prompt)


def test_the_steps_decide_something_worth_comparing(lm):
    """The comparison above is not vacuous: guesses are accepted, in both modes, greedy and sampled."""
    for mode in MODES:
        chosen = runtimes(lm, mode)["table"]
        for sampling in (GREEDY, SAMPLED):
            lean = list(lean_steps(lm, PROMPTS[0], request(Method.LOOKAHEAD, sampling), chosen))
            assert sum(s.accepted_tokens for s in lean) > 0 and len(lean) < 24, (mode, sampling)


RECORD_CLASSES = [
    c
    for module in (step_records, step_reports)
    for c in vars(module).values()
    if dataclasses.is_dataclass(c) and c.__module__ == module.__name__
]


def counted(init, name: str, counts: Counter):
    """`init`, counting each call under `name`."""

    def counting(self, *args, **kwargs):
        counts[name] += 1
        init(self, *args, **kwargs)

    return counting


@pytest.fixture
def built(monkeypatch) -> Counter:
    """Every record class of a step (records/step.py, records/reports.py) spied on: how many of each were built."""
    counts = Counter()
    for cls in RECORD_CLASSES:
        monkeypatch.setattr(cls, "__init__", counted(cls.__init__, cls.__name__, counts))
    return counts


@pytest.mark.parametrize("sampling", heavy_but([GREEDY, SAMPLED], GREEDY), ids=["greedy", "sampled"])
def test_the_lean_path_builds_no_record_and_the_recorded_path_does(lm, built, sampling):
    chosen = runtimes(lm, StepMode.EAGER)["table"]
    for method in Method:
        list(lean_steps(lm, PROMPTS[0], request(method, sampling), chosen))
    assert {name for name, count in built.items() if count} <= VERDICT_FACTS, built
    for method in Method:
        steps = list(decode_steps(lm, PROMPTS[0], request(method, sampling), chosen))
        assert built["StepRecord"] >= len(steps)
    wanted = {"StepRecord", "InputRow", "PlanRecord", "VerificationRecord", "CandidateRecord", "WindowRecord"}
    wanted |= {"PoolRecord", "NGram", "DraftRecord", "HeadsRecord", "HeadGuesses"}
    assert wanted <= {name for name, count in built.items() if count}, built


def test_the_proposer_holds_the_window_it_proposed_from_by_reference():
    prompt = [7, 1, 2, 3, 9, 1, 4, 5]
    proposer = JacobiProposer(LookaheadConfig(window=2, ngram=3, guesses=2), [*prompt, 1], prompt)
    proposer.propose(StepContext([*prompt, 1], 1))
    assert proposer.before.levels is proposer.window.levels  # no copy made to propose
    assert proposer.before.origins is proposer.window.origins


def test_the_window_never_changes_a_list_it_handed_out():
    window = JacobiWindow([[1, 50, 51, 52], [60, 61, 62, 63]], ngram=4)
    levels, origins = window.levels, window.origins
    held = [list(level) for level in levels]
    window.reanchor(9)
    assert window.levels[0][0] == 9 and levels == held  # a new level 0, the old one as it was
    window.advance([70, 71, 72, 73], 8, step=1)
    assert levels == held and origins == [0, 0]
