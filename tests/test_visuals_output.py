"""The output panel: the tokens committed so far, and text in every script drawn whole (on the real
default model, whose tokenizer splits characters across tokens)."""

from __future__ import annotations

import re
from html import escape

from lookahead_core.records import Run
from lookahead_core.request import DecodeRequest
from visuals import output, replay


def test_output_shows_the_committed_tokens_so_far(run):
    trace = run.trace
    produced = 0
    for index, record in enumerate(trace.steps):
        produced += len(record.committed)
        html = output.output_html(trace, index)
        assert html.count('class="ll-tok') == produced
        assert html.count("ll-this") == len(record.committed)
        assert f"step {index} · {record.sources[0].value}" in html
    assert len(trace.meta.prompt_token_ids) and 'class="ll-prompt"' in html


MANY_SCRIPTS = "翻译成英文：你好，世界。Привет, мир! مرحبا بالعالم 🎉🚀 Say it in all four."


def test_text_in_every_script_is_drawn_whole(default_model):
    """Characters split across tokens are drawn whole: the prompt as typed, the output with no U+FFFD."""
    from lookahead_core.config import LookaheadConfig
    from lookahead_core.models import encode_prompt
    from lookahead_core.trace import record_trace

    ids = encode_prompt(default_model.tokenizer, MANY_SCRIPTS)
    trace = record_trace(
        default_model,
        ids,
        DecodeRequest(lookahead=LookaheadConfig(3, 3, 3), max_new_tokens=24),
        prompt_text=MANY_SCRIPTS,
    )
    split = [trace.vocab[str(t)] for t in ids if "‹" in trace.vocab[str(t)]]
    assert split, "no token of the prompt is a split character: nothing was tested"
    assert all(re.search(r"‹[0-9a-f]{2}( [0-9a-f]{2})*›", text) for text in split)  # its bytes, marked
    last = len(trace.steps) - 1
    html = output.output_html(trace, last)
    assert escape(MANY_SCRIPTS) in html and "\ufffd" not in html
    for index in range(last + 1):  # the window, pool and verification chips show bytes, never U+FFFD
        assert not [
            name for name, panel in replay.panels(Run(trace=trace, greedy=trace), index).items() if "\ufffd" in panel
        ]
    whole = default_model.tokenizer.decode(trace.summary.new_token_ids, skip_special_tokens=True)
    assert "".join(trace.pieces) == whole.rstrip("\ufffd")
