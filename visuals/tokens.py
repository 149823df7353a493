"""Token text for display: whitespace made visible (▁ for a space, ⏎ for a newline), always escaped.

A token chip is one `<span>` whose colour comes from its kind (see palette) and whose tooltip
(a title attribute) says what the record knows about it: id, position, origin.
"""

from __future__ import annotations

from .markup import escape
from .palette import colour

# A carriage return as its escape, \r: the control picture ␍ is in no font Debian's chromium has, which drew a box
VISIBLE_WHITESPACE = {" ": "▁", "\n": "⏎", "\t": "⇥", "\r": "\\r"}


def token_text(vocab: dict[str, str], token_id: int) -> str:
    """The raw text of a token, or its id in brackets when the trace's vocab does not have it."""
    return vocab.get(str(token_id), f"[{token_id}]")


def visible(text: str) -> str:
    """`text` with whitespace drawn as symbols; an empty token is shown as ∅ so it stays clickable."""
    shown = "".join(VISIBLE_WHITESPACE.get(ch, ch) for ch in text)
    return shown or "∅"


def named(vocab: dict[str, str], token_id: int) -> str:
    """A token for a tooltip, e.g. ‘▁the’ (not escaped: `chip` escapes its tooltip)."""
    return f"‘{visible(token_text(vocab, token_id))}’"


def quoted(vocab: dict[str, str], token_id: int) -> str:
    """A token for running HTML prose, e.g. in captions: ‘▁the’, escaped."""
    return escape(named(vocab, token_id))


def chip(
    vocab: dict[str, str],
    token_id: int,
    kind: str | None = None,
    tooltip: str = "",
    classes: str = "",
    text: str | None = None,
) -> str:
    """One token as a coloured span with whitespace visible; `tooltip` starts with the token id.

    `text` replaces the token's text decoded alone (the output panel passes what the token added
    to the text decoded whole, so characters split across tokens read right).
    """
    style = f' style="--k:{colour(kind)}"' if kind else ""
    title = f"id {token_id}" + (f" · {tooltip}" if tooltip else "")
    css = "ll-tok" + (f" ll-{kind}" if kind else "") + (f" {classes}" if classes else "")
    text = escape(visible(token_text(vocab, token_id) if text is None else text))
    return f'<span class="{css}"{style} title="{escape(title)}">{text}</span>'


def chips(vocab: dict[str, str], token_ids: list[int], kind: str | None = None, tooltip: str = "") -> str:
    return "".join(chip(vocab, t, kind, tooltip) for t in token_ids)
