"""The caption: what each step committed and why, on the examples, and word for word on hand-made steps."""

from __future__ import annotations

import dataclasses
from html import escape

from lookahead_core.records import (
    CandidateRecord,
    GuessReason,
    GuessSource,
    LookaheadSettings,
    Method,
    MethodSettings,
    PlanReason,
    PlanRecord,
    PoolEntry,
    PoolRecord,
    StepKind,
    StepRecord,
    TokenSource,
    Trace,
    Verdict,
    VerificationRecord,
    WindowRecord,
)
from tests.visual_checks import check_caption, decode_steps, example, greedy_only
from visuals import caption, pool, verification


def test_caption_says_what_the_step_committed(run):
    greedy_only(run)
    trace = run.trace
    assert "Prefill" in caption.caption_html(trace, 0)
    for index, _ in decode_steps(run):
        check_caption(trace, index)


# A hand-made step: key ‘def’ with 3 n-grams; guesses [9 9], [2 3], [2 4] against the predictions [2 3].

CAPTION_VOCAB = {"1": "def", "2": " f", "3": "(", "4": "x", "5": ")", "9": "?"}


def candidate(tokens_: list[int], lane: int, verdict: Verdict, trajectory: bool = False) -> CandidateRecord:
    expected = [2, 3][: len(tokens_)]
    matched = next((k for k, (t, e) in enumerate(zip(tokens_, expected, strict=True)) if t != e), len(tokens_))
    source, reason = (
        (GuessSource.TRAJECTORY, GuessReason.JACOBI_TRAJECTORY)
        if trajectory
        else (GuessSource.PROMPT, GuessReason.ONE_TOKEN_KEY)
    )
    return CandidateRecord(
        source=source,
        reason=reason,
        lane=lane,
        tokens=tokens_,
        rows=[],
        expected=expected,
        matched=matched,
        verdict=verdict,
    )


def caption_step(candidates: list[CandidateRecord], winner: int) -> StepRecord:
    verification_ = VerificationRecord(
        guaranteed=2, candidates=candidates, winner=winner, accepted=2, bonus=4, block=[2, 3, 4]
    )
    entries = [PoolEntry(continuation=[2, 3], source=GuessSource.PROMPT, guess=lane) for lane in range(3)]
    return StepRecord(
        step=5,
        method=Method.LOOKAHEAD,
        kind=StepKind.DECODE,
        position=9,
        tokens_fed=7,
        committed=[2, 3, 4],
        sources=[TokenSource.GUARANTEED, TokenSource.ACCEPTED, TokenSource.BONUS],
        stop=None,
        forward_seconds=0.01,
        step_seconds=0.01,
        plan=PlanRecord(
            reason=PlanReason.PAPER, window_fed=True, guesses_offered=3, guesses_verified=3, guess_length=2
        ),
        window=WindowRecord(
            fed=True, warming_up=False, levels=[[1, 5], [4, 5]], origins=[3, 4], update=[5, 5], harvested=[]
        ),
        pool=PoolRecord(key=1, previous=5, entries=entries, added=[], evicted=[], size=9, size_before=9),
        verification=verification_,
    )


def hand_trace(record: StepRecord, guesses: int = 3) -> Trace:
    base = example("python").trace
    lookahead = LookaheadSettings(window=2, ngram=3, guesses=guesses)
    meta = dataclasses.replace(base.meta, settings=MethodSettings(lookahead=lookahead))
    return dataclasses.replace(base, meta=meta, steps=[*base.steps[:5], record], vocab=CAPTION_VOCAB)


def test_caption_example_wording():
    guess_won = caption_step(
        [
            candidate([9, 9], 0, Verdict.NO_MATCH),
            candidate([2, 3], 1, Verdict.WON),
            candidate([2, 4], 2, Verdict.SHORTER),
        ],
        winner=1,
    )
    assert caption.step_caption(hand_trace(guess_won), 5) == (
        "The key ‘def’ had 3 n-grams in the pool; guess 2 matched 2 tokens, so this one forward pass committed "
        "3 tokens: the guaranteed next token (the guess's first token matched it), 1 more accepted token and the "
        "bonus token."
    )
    window_won = caption_step(
        [
            candidate([9, 9], 0, Verdict.NO_MATCH),
            candidate([2, 4], 1, Verdict.SHORTER),
            candidate([2, 5], 2, Verdict.SHORTER),
            candidate([9, 3], 0, Verdict.NO_MATCH, trajectory=True),
            candidate([2, 9], 1, Verdict.SHORTER, trajectory=True),
            candidate([2, 4], 2, Verdict.SHORTER, trajectory=True),
            candidate([2, 3], 3, Verdict.WON, trajectory=True),
        ],
        winner=6,
    )
    assert caption.step_caption(hand_trace(window_won), 5) == (
        "The key ‘def’ had 3 n-grams in the pool; no guess beat the window: column 3's Jacobi trajectory matched "
        "2 tokens, so this one forward pass committed 3 tokens: the guaranteed next token (the trajectory's first "
        "token matched it), 1 more accepted token and the bonus token."
    )


def test_a_step_with_nothing_verified_says_so():
    """G = 0 and no candidate at all (a window left out): the caption leads with the G = 0 wording."""
    bare = caption_step([], winner=0)
    bare = dataclasses.replace(
        bare,
        committed=[2],
        sources=[TokenSource.GUARANTEED],
        pool=dataclasses.replace(bare.pool, entries=[]),
        window=dataclasses.replace(bare.window, fed=False, update=[]),
        verification=VerificationRecord(guaranteed=2, candidates=[], winner=None, accepted=0, bonus=None, block=[2]),
    )
    trace = hand_trace(bare, guesses=0)
    text = caption.step_caption(trace, 5)
    assert text.startswith(escape(caption.NO_GUESSES))
    assert "Nothing was verified, so this forward pass committed only the guaranteed next token ‘▁f’." in text
    assert "No guesses to verify" in verification.verification_html(bare, trace.vocab)
    pool_html = pool.pool_html(bare, trace.vocab, 0)
    assert "G = 0: the pool keeps no n-grams" in pool_html
    assert "this step can commit only the guaranteed token" in pool_html
