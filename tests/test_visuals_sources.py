"""Where a run's tokens came from: the breakdown by the source of each matched guess, per run and per step, read
from the records (the winner's recorded source, its matched tokens, the committed tokens' sources)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from lookahead_core.records import GuessSource, Run, TokenSource
from tests.older import older_run
from tests.visual_checks import example
from visuals import library, sources, summary, verification
from visuals.replay import panels

FIRST_VIEW = library.load_presets()[0]["id"]  # the preset the page opens on (ui/player.py)


def test_every_committed_token_has_one_origin(run):
    origins = sources.run_origins(run.trace)
    assert origins.tokens == run.trace.summary.tokens
    for record in run.trace.steps:
        step = sources.step_origins(record)
        assert step.tokens == len(record.committed)
        assert len(step.matched) <= 1 and sum(step.own.values()) <= 1


def test_a_step_credits_its_winners_matched_tokens_to_the_winners_source(run):
    for record in run.trace.steps[1:]:
        verification_ = record.verification
        step = sources.step_origins(record)
        if verification_.winner is None:
            assert not step.matched and step.own == Counter(record.sources)
            continue
        winner = verification_.candidates[verification_.winner]
        assert step.matched == Counter({sources.origin(winner): min(verification_.accepted, len(record.committed))})


def test_the_summary_and_the_verification_panel_show_the_breakdown(run):
    words = sources.run_sources_words(run.trace)
    assert f"Where the {run.trace.summary.tokens} new tokens came from" in words
    assert summary.escape(words) in summary.summary_html(run)
    step = next(i for i, r in enumerate(run.trace.steps) if r.verification is not None)
    line = sources.step_sources_words(run.trace.steps[step])
    assert line.startswith("Where this step's") and summary.escape(line) in panels(run, step)["verification"]
    assert sources.step_sources_html(run.trace.steps[0]) == ""  # the prefill verifies nothing


def test_the_breakdowns_guaranteed_tokens_are_those_of_passes_no_guess_matched_and_it_says_how_the_chart_counts():
    """A walk found "7 guaranteed tokens" in the summary and "26 guaranteed" in the tokens-per-step chart of one run:
    every pass's first token is guaranteed, and the breakdown credits it to the guess that matched it. The summary
    now names its own as those of passes no guess matched, and says so; a sampled run (no guaranteed token) does
    not."""
    from visuals.progress import chart_words

    run = example(FIRST_VIEW)
    passes = sum(1 for step in run.trace.steps if step.committed)
    unmatched = sum(1 for step in run.trace.steps if step.committed and not sources.step_origins(step).guessed)
    words = sources.run_sources_words(run.trace)
    assert f"{unmatched} guaranteed tokens of passes no guess matched" in words
    assert f"{passes} guaranteed" in chart_words(run) and sources.FIRST_TOKEN_WORDS in words
    assert sources.FIRST_TOKEN_WORDS not in sources.run_sources_words(example("story-sampled").trace)


def test_a_run_whose_gain_is_all_the_prompts_n_grams_says_so():
    run = example("spelling")
    origins = sources.run_origins(run.trace)
    assert origins.guessed and set(origins.matched) == {"prompt"}
    assert "Every matched guess was one of the prompt's n-grams: none came from the window's harvest." in (
        sources.run_sources_words(run.trace)
    )


def test_the_window_harvest_is_named_with_its_count():
    run = example("pencils")
    window = sources.run_origins(run.trace).matched["window"]
    assert window > 0
    words = sources.run_sources_words(run.trace)
    assert f"n-grams the window harvested {window}" in words
    assert f"{window} of them came from n-grams the Jacobi window had guessed and harvested" in words


def test_a_sampled_step_names_its_own_token_as_sampled_or_bonus():
    run = example("story-sampled")
    for record in run.trace.steps[1:]:
        own = sources.step_origins(record).own
        assert set(own) <= {TokenSource.SAMPLED, TokenSource.BONUS}


def test_a_step_cut_short_by_the_stop_rule_has_no_token_of_its_own():
    run = example("spelling")
    record = next(r for r in run.trace.steps[1:] if r.verification.accepted >= 2)
    cut = dataclasses.replace(record, committed=record.committed[:2], sources=record.sources[:2])
    step = sources.step_origins(cut)
    assert step.guessed == 2 and not step.own
    assert sources.step_sources_words(cut) == "Where this step's 2 tokens came from: 2 matched an n-gram of the prompt."


def test_a_prompt_lookup_match_is_a_copy_and_a_draft_a_chain():
    assert "copies from the prompt" in sources.run_sources_words(example("spelling-lookup").trace)
    assert "the draft's chains" in sources.run_sources_words(example("study-tips-speculative").trace)
    assert "Medusa's heads" in sources.run_sources_words(example("study-tips-medusa").trace)


def test_the_first_view_shows_tokens_from_n_grams_the_window_harvested():
    """The page's first view (the first preset) shows the Jacobi window at work: guesses the window harvested into
    the pool were later accepted, as its records say (the winner's source), and its summary says how many."""
    run = example(FIRST_VIEW)
    accepted = [
        r
        for r in run.trace.steps[1:]
        if r.verification.winner is not None
        and r.verification.candidates[r.verification.winner].source == GuessSource.WINDOW
        and r.verification.accepted > 0
    ]
    assert accepted
    window = sources.run_origins(run.trace).matched["window"]
    assert window >= len(accepted)
    assert f"n-grams the window harvested {window}" in summary.summary_html(run)
    step = run.trace.steps.index(accepted[0])
    assert "an n-gram the window harvested" in verification.verification_html(accepted[0], run.trace.vocab)
    assert "an n-gram the window harvested" in panels(run, step)["verification"]


def test_a_run_of_an_older_schema_version_reads_and_shows_its_breakdown():
    """The breakdown reads only facts every schema version kept (a winner's source, its matched tokens, the
    committed tokens' sources): a version 3 file of the first view reads and says where its tokens came from."""
    data = json.loads(example(FIRST_VIEW).to_json())
    old = Run.from_json(json.dumps(older_run(data, 3, without=("sliding",))))
    assert sources.run_sources_words(old.trace) == sources.run_sources_words(example(FIRST_VIEW).trace)
