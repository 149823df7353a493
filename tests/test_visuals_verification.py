"""The verification panel: every guess and the best trajectories as verification judged them
(`CandidateRecord`), every draw of a sampled run, and a draft chain's q and correction."""

from __future__ import annotations

import dataclasses
from html import unescape

from lookahead_core.records import GuessSource, Verdict
from tests.visual_checks import (
    PRESETS,
    check_verification,
    decode_steps,
    example,
    greedy_only,
    guesses_of,
    shown_trajectories,
)
from visuals import caption, library, methods, progress, summary, tokens, verification


def test_verification_marks_accepted_mismatch_and_the_winner(run):
    greedy_only(run)
    trace = run.trace
    for _, record in decode_steps(run):
        check_verification(record, trace.vocab)


def test_verification_shows_each_recorded_verdict():
    """The verdict tooltip is CandidateRecord.verdict, not a re-judgement: change it and the panel follows."""
    trace = example("study-tips").trace
    record = next(r for r in trace.steps[1:] if r.verification.winner is not None and len(guesses_of(r)) >= 2)
    losers = [i for i, c in enumerate(record.verification.candidates) if c.source != GuessSource.TRAJECTORY]
    losers = [i for i in losers if i != record.verification.winner]
    candidates = list(record.verification.candidates)
    for i in losers:
        candidates[i] = dataclasses.replace(candidates[i], verdict=Verdict.TIED_LATER)
    relabelled = dataclasses.replace(
        record, verification=dataclasses.replace(record.verification, candidates=candidates)
    )
    html = unescape(verification.verification_html(relabelled, trace.vocab))
    assert html.count(verification.VERDICT_WORDS[Verdict.TIED_LATER]) == len(losers)
    assert html.count(verification.VERDICT_WORDS[Verdict.WON]) == 1
    assert verification.VERDICT_WORDS[Verdict.NO_MATCH] not in html


def test_trajectory_tooltips_name_the_predictions_from_the_window(run):
    """Trajectory token k sits at the cell its input row names and is checked against the recorded prediction."""
    greedy_only(run)
    trace = run.trace
    for _, record in decode_steps(run):
        html = unescape(verification.verification_html(record, trace.vocab))
        for trajectory in shown_trajectories(record):
            cells = [(record.rows[r].lane, record.rows[r].index) for r in trajectory.rows]
            assert [record.window.levels[level][j] for level, j in cells] == trajectory.tokens
            assert trajectory.expected[0] == record.verification.guaranteed
            for k, (level, j) in enumerate(cells[: trajectory.matched]):
                said = tokens.named(trace.vocab, trajectory.expected[k])
                assert f"trajectory token {k}: level {level}, column {j}" in html
                assert f"accepted: the model also predicted {said} here" in html


def test_a_sampled_run_shows_every_draw():
    item = next(p for p in PRESETS if "sampling" in p)
    run = library.load_run(library.example_path(item))
    trace = run.trace
    for index, record in enumerate(trace.steps[1:], start=1):
        html = verification.verification_html(record, trace.vocab)
        draws = [d for p in record.verification.positions for d in p.draws]
        assert html.count('class="ll-pbar"') == len(draws)
        for d in draws:
            assert f"P = {d.probability:.3f}" in unescape(html) and f"draw was {d.uniform:.3f}" in unescape(html)
        text = caption.step_caption(trace, index)
        assert f"committed {len(record.committed)} token" in text
        assert all(f"probability {d.probability:.2f}" in unescape(text) for d in draws)
        assert "identical to greedy" not in progress.progress_html(run, index)
    assert any(d.accepted for r in trace.steps[1:] for p in r.verification.positions for d in p.draws)
    assert any(not d.accepted for r in trace.steps[1:] for p in r.verification.positions for d in p.draws)
    assert "plain sampling" in summary.summary_html(run)


def test_a_draft_chain_shows_each_tokens_q_and_the_correction():
    run = example("study-tips-speculative")
    vocab = run.trace.vocab
    steps = run.trace.steps[1:]
    for record in steps:
        html = verification.verification_html(record, vocab)
        (chain,) = record.verification.candidates
        assert all(f"<span>{q:.2f}</span>" in html for q in chain.draft_probabilities)
        if chain.verdict == Verdict.WON:
            whole = chain.matched == len(chain.tokens)
            assert ('<span class="ll-plus">+ bonus</span>' in html) == whole
            assert ('<span class="ll-plus">+ correction</span>' in html) == (not whole)
        assert methods.draft_words(record) in caption.caption_html(run.trace, record.step)
    assert any(r.verification.candidates[0].verdict == Verdict.WON for r in steps)
