"""The summary: a run's settings, machine and result; the model card; the notice of a refused run."""

from __future__ import annotations

import dataclasses
from html import escape

from lab.serve import budget
from lab.serve.budget import Prices
from lookahead_core.records import Method, StepMode
from tests.test_budget import decode_step
from tests.tiny import cost_table
from tests.visual_checks import example
from visuals import summary


def test_summary_names_settings_machine_and_result(run):
    html = summary.summary_html(run)
    meta, s = run.trace.meta, run.trace.summary
    settings = meta.settings.lookahead
    if meta.method == Method.LOOKAHEAD:
        assert f"W={settings.window} N={settings.ngram} G={settings.guesses}" in html
        assert f"lookahead settings, {settings.planner.value} plan" in html
    elif meta.method == Method.SPECULATIVE:
        draft = meta.settings.speculative
        assert f"draft {draft.model} ({draft.dtype}), k={draft.tokens}" in html
        assert "Speculative decoding ran" in html and "went to drafting" in html
    elif meta.method == Method.MEDUSA:
        assert f"{meta.settings.medusa.count} heads, a tree of {meta.settings.medusa.tree_size} nodes" in html
        assert "Medusa heads ran" in html and "ms on average went to the heads" in html
    elif meta.method == Method.SUFFIX:
        assert (
            f"a tree ≤{meta.settings.suffix.tree_size} nodes" in html
            and f"a store of {len(meta.settings.suffix.store)} earlier" in html
        )
        assert "Suffix decoding ran" in html and "ms on average went to finding the match and growing its tree" in html
    else:
        assert (
            f"match ≤{meta.settings.prompt_lookup.ngram} tokens, propose {meta.settings.prompt_lookup.tokens}" in html
        )
        assert "Prompt lookup ran" in html
    assert escape(meta.machine.model) in html and escape(meta.machine.device_name) in html
    assert f"<b>{s.tokens}</b><span>new tokens" in html
    assert f"<b>{s.steps} vs {run.greedy.summary.steps}</b>" in html
    assert f"<b>{s.tokens_per_step:.2f}</b><span>tokens per step" in html


def test_model_html_names_the_machine_or_the_model_to_load():
    machine = example("python").trace.meta.machine
    html = summary.model_html(machine, "some-default")
    assert escape(machine.model) in html and escape(machine.device_name) in html and "some-default" not in html
    assert f"{machine.parameters / 1e6:.0f} M parameters" in html
    waiting = summary.model_html(None, "SmolLM2-135M-Instruct")
    assert "none yet" in waiting and "<b>SmolLM2-135M-Instruct</b> loads on the first Run" in waiting


def test_model_html_says_what_fits_at_the_latest_prices():
    machine = example("python").trace.meta.machine
    prices = Prices(cost_table(0.05))
    prices.learn([decode_step(1, 0.037)] * 3)  # plain decoding's pace here: 37 ms a token
    fit = budget.fit(
        prices, rounds=3, race_methods=(Method.GREEDY, Method.LOOKAHEAD, Method.SPECULATIVE, Method.SUFFIX)
    )
    usable = 0.9 / 1.1  # the deadline's share less its reserve, each round with a later round's margin
    assert fit.run_tokens == int(30 * usable / (3 * 2 * 0.037)) - 8
    assert fit.race_tokens == int(60 * usable / (3 * 4 * 0.037)) - 8
    html = summary.model_html(machine, "some-default", fit)
    assert "(37 ms for a 1-token step), 3 rounds of a Run fit in its 30 s with up to about 102 new tokens" in html
    assert "pace: a method that ran slower here fits fewer)" in html
    assert "3 rounds of the race in its 60 s with up to about 102 (each method at its latest pace)" in html


def test_notice_says_why_a_run_was_refused():
    assert "ll-over" not in summary.notice_html(None)
    refused = summary.notice_html("too <long>", "Refused")
    assert "<b>Refused:</b> too &lt;long&gt;" in refused and "ll-over" in refused


def test_passes_of_outputs_of_different_lengths_say_so():
    run = example("story-sampled")
    assert summary.passes_label(run) == (
        "forward passes vs plain sampling"
        if run.trace.summary.tokens == run.greedy.summary.tokens
        else f"forward passes vs plain sampling, for {run.trace.summary.tokens} vs {run.greedy.summary.tokens} "
        "tokens: different lengths"
    )
    shorter = dataclasses.replace(
        run,
        greedy=dataclasses.replace(
            run.greedy, summary=dataclasses.replace(run.greedy.summary, tokens=run.trace.summary.tokens - 5)
        ),
    )
    assert f"vs {run.trace.summary.tokens - 5} tokens: different lengths" in summary.summary_html(shorter)


def test_the_facts_say_how_the_steps_ran_and_why_not_as_asked():
    """A GPU's Run is captured by default: a reader comparing it with a CPU recording must see which step ran."""
    run = example("python")
    assert "· eager step ·" in summary.summary_html(run)
    captured = dataclasses.replace(run.trace.meta, mode=StepMode.CUDA_GRAPH)
    html = summary.summary_html(dataclasses.replace(run, trace=dataclasses.replace(run.trace, meta=captured)))
    assert "· fixed-shape step captured as a CUDA graph ·" in html and "eager step" not in html
    note = "cuda-graph needs a CUDA device, this is cpu: the fixed-shape step ran uncaptured"
    fallen = dataclasses.replace(run.trace.meta, mode=StepMode.FIXED, mode_note=note)
    html = summary.summary_html(dataclasses.replace(run, trace=dataclasses.replace(run.trace, meta=fallen)))
    assert f"· fixed-shape step, uncaptured ({note}) ·" in html


def test_a_presets_note_says_it_is_about_the_shipped_example():
    """After a live Run the preset's note still said the window "has already harvested the right n-grams" beside a
    summary saying none came from the window: the note now says it is about the example, recorded when and where."""
    run = example("python")
    note = summary.example_note("the window has <already> harvested", run)
    meta = run.trace.meta
    about = (
        f"About this preset&#x27;s example run (recorded {meta.recorded_at[:10]} on {escape(meta.machine.device_name)})"
    )
    assert note.startswith(f'<p class="ll-preset-note"><b class="ll-about">{about}, not about a Run of yours:</b>')
    assert note.endswith("the window has &lt;already&gt; harvested</p>")


def test_the_runs_summary_leads_with_three_large_figures_and_folds_the_prose():
    """Readable from the back of a classroom: tokens per step, the speed (or no verdict) and the passes saved as
    large figures; the tiles, the story and how it was timed one click away in a <details>."""
    run = example("python")
    html = summary.summary_html(run)
    headline, folded = html.split('<details class="ll-more">')
    s, g = run.trace.summary, run.greedy.summary
    assert headline.count('class="ll-big') == 3
    assert f"<b>{s.tokens_per_step:.2f}</b><span>tokens per step</span>" in headline
    assert f"<b>{g.steps - s.steps}</b><span>forward passes saved</span>" in headline
    assert "<summary>The figures in detail, and how they were measured</summary>" in folded
    assert "ll-stat" not in headline and "interleaved rounds" in folded and "Recorded " in folded
