"""Panel 2, the n-gram pool: the entries under the current key, this step's insertions and evictions.

The record lists the entries under the key as they stood before this step's insertions, the
n-grams added (from the window's columns and the committed output), what was evicted, and the
pool's size after the step. The entries picked as guesses for verification are highlighted,
with the reason each was picked.
"""

from __future__ import annotations

from html import escape

from .palette import KINDS
from .tokens import chip, chips


def source_badge(source: str) -> str:
    hue, _, meaning = KINDS[source]
    return f'<span class="ll-badge" style="--k:{hue}" title="{escape(meaning)}">{escape(source)}</span>'


def pick_mark(guess: int, reason: str) -> str:
    """'guess 2' on a picked entry; the reason shows on hover, and inline for the stronger two-token key."""
    inline = " · 2-token key" if reason == "two-token key" else ""
    return f'<span class="ll-pick" title="picked for verification: {escape(reason)}">guess {guess + 1}{inline}</span>'


def ngram_html(vocab: dict, key: int, continuation: list[int], source: str | None = None) -> str:
    """A key and its continuation: `key ▸ a b c`."""
    return (
        f'<span class="ll-ngram">{chip(vocab, key, "current" if source is None else None)}'
        f'<span class="ll-arrow">▸</span>{chips(vocab, continuation, source)}</span>'
    )


def added_ngrams(record: dict) -> list[list]:
    """This step's insertions as [key, continuation, source]; traces without `pool_added` list the harvest only."""
    if "pool_added" in record:
        return record["pool_added"]
    return [[ngram[0], ngram[1:], "window"] for ngram in record["harvested"]]


def size_words(record: dict, previous_size: int | None) -> str:
    size = record["pool_size"]
    evicted = len(record["pool_evicted"])
    change = "" if previous_size is None else f", {size - previous_size:+d} this step"
    return f"{size} n-grams in the pool{change}" + (f", {evicted} evicted" if evicted else "")


def entries_html(record: dict, vocab: dict) -> str:
    """The entries under the key (oldest first); the ones chosen as guesses are marked and say why."""
    chosen = {tuple(g): i for i, g in enumerate(record["guesses"])}
    if not record["pool_entries"]:
        return (
            '<p class="ll-empty">No n-gram in the pool starts with this key yet: there is nothing to verify, '
            "so this step can commit only the guaranteed token.</p>"
        )
    rows = []
    for number, (continuation, source) in enumerate(record["pool_entries"], start=1):
        guess = chosen.get(tuple(continuation))
        picked = guess is not None
        mark = (
            pick_mark(guess, record["guess_reasons"][guess])
            if picked
            else '<span class="ll-pick ll-dim">not picked</span>'
        )
        rows.append(
            f'<li class="ll-entry{" ll-chosen" if picked else ""}"><span class="ll-num">{number}</span>'
            f"{chips(vocab, continuation, source)}{source_badge(source)}{mark}</li>"
        )
    return f'<ol class="ll-entries">{"".join(rows)}</ol>'


def pool_html(record: dict, vocab: dict[str, str], previous_size: int | None = None) -> str:
    """The whole pool panel for one step; `previous_size` is the pool's size after the step before."""
    if record.get("kind") == "prefill":
        return (
            '<p class="ll-empty">Before the first step, every n-gram of the prompt is put in the pool, so '
            "text that quotes the prompt can be guessed from step 1.</p>"
        )
    key = record["pool_key"]
    parts = [
        f'<div class="ll-poolhead">key {chip(vocab, key, "current", "the current token c")}'
        f'<span class="ll-dim">the current token · {escape(size_words(record, previous_size))}</span></div>',
        '<h4>Under this key, before this step <span class="ll-dim">(oldest first)</span></h4>',
        entries_html(record, vocab),
    ]
    if record.get("note"):
        parts.append(f'<p class="ll-note">{escape(record["note"])}</p>')
    for source, title in (("window", "Added from the window's columns"), ("output", "Added from the committed output")):
        added = [entry for entry in added_ngrams(record) if entry[2] == source]
        if added:
            shown = "".join(ngram_html(vocab, key_id, cont, source) for key_id, cont, _ in added)
            parts.append(
                f'<h4>{title} <span class="ll-dim">({len(added)})</span></h4><div class="ll-ngrams">{shown}</div>'
            )
    evicted = record["pool_evicted"]
    if evicted:
        gone = "".join(ngram_html(vocab, key_id, cont) for key_id, cont in evicted)
        parts.append(
            f'<h4>Evicted <span class="ll-dim">(the oldest under a full key)</span></h4>'
            f'<div class="ll-ngrams ll-evicted">{gone}</div>'
        )
    return "".join(parts)
