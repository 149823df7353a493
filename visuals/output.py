"""Panel 4, the output so far: the prompt, then every committed token coloured by how it was produced.

Text is drawn as decoded whole (the record's `prompt_shown` and `pieces`), so a character split
across tokens is shown on the token that completes it, and the tokens before it are marked.

Guaranteed (the next token greedy decoding would emit), accepted from a guess, or the bonus
token; the tooltip names the step that committed it, and this step's tokens are underlined.
"""

from __future__ import annotations

from lookahead_core.records import Trace

from .markup import escape, scroll_region
from .tokens import chip

PROMPT_CHARS = 400


PART = "·"  # drawn for a token that holds only part of a character: the next token(s) complete it


def prompt_html(trace: Trace) -> str:
    """The prompt as the model saw it (chat template included), decoded whole, its tail only when it is long."""
    text = trace.meta.prompt_shown
    if len(text) > PROMPT_CHARS:
        text = "…" + text[-PROMPT_CHARS:]
    count = len(trace.meta.prompt_token_ids)
    return f'<span class="ll-prompt" title="the prompt, {count} tokens">{escape(text)}</span>'


def output_html(trace: Trace, index: int) -> str:
    """The prompt and the tokens committed by steps 0..index."""
    vocab = trace.vocab
    prompt_length = len(trace.meta.prompt_token_ids)
    produced = 0
    pieces = []
    for record in trace.steps[: index + 1]:
        current = " ll-this" if record.step == index else ""
        for token, source in zip(record.committed, record.sources, strict=True):
            tooltip = f"step {record.step} · {source.value} · position {prompt_length + produced}"
            text = trace.pieces[produced]
            if not text:
                tooltip += " · part of a character that the next token(s) complete"
            pieces.append(chip(vocab, token, source.value, tooltip, current.strip(), text or PART))
            if text.endswith("\n"):
                pieces.append("<br>")
            produced += 1
    body = f'{prompt_html(trace)}<span class="ll-generated">{"".join(pieces)}</span>'
    return scroll_region(f"<div>{body}</div>", "the output so far", "ll-output")
