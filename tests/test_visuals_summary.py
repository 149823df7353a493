"""The summary: a run's settings, machine and result; the model card; the notice of a refused run."""

from __future__ import annotations

from html import escape

from lookahead_core.records import Method
from tests.visual_checks import example
from visuals import summary


def test_summary_names_settings_machine_and_result(run):
    html = summary.summary_html(run)
    meta, s = run.trace.meta, run.trace.summary
    settings = meta.settings
    if meta.method == Method.LOOKAHEAD:
        assert f"W={settings.window} N={settings.ngram} G={settings.guesses}" in html
        assert f"lookahead settings, {settings.planner.value} plan" in html
    elif meta.method == Method.SPECULATIVE:
        assert f"draft {meta.draft.model} ({meta.draft.dtype}), k={meta.draft.tokens}" in html
        assert "Speculative decoding ran" in html and "went to the draft model" in html
    else:
        assert f"match ≤{meta.lookup.ngram} tokens, propose {meta.lookup.tokens}" in html
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


def test_notice_says_why_a_run_was_refused():
    assert "ll-over" not in summary.notice_html(None)
    refused = summary.notice_html("too <long>", "Refused")
    assert "<b>Refused:</b> too &lt;long&gt;" in refused and "ll-over" in refused
