"""Panel 2, the n-gram pool: the entries under the current key, this step's insertions and evictions.

The record lists the entries under the key as they stood before this step's insertions (each
marked with the guess it became, if the plan verified it), the n-grams added (from the window's
columns and the committed output), what was evicted, and the pool's size before and after. The
entries are shown in the order verification tried them (guess 1 first, as the verification panel
numbers them), then those not picked, oldest first: one numbering across both panels.
"""

from __future__ import annotations

from lookahead_core.records import GuessReason, GuessSource, StepKind, StepRecord

from .markup import escape
from .palette import KINDS
from .tokens import chip, chips


def source_badge(source: GuessSource) -> str:
    hue, _, meaning = KINDS[source.value]
    return f'<span class="ll-badge" style="--k:{hue}" title="{escape(meaning)}">{escape(source.value)}</span>'


def pick_mark(guess: int, reason: GuessReason) -> str:
    """'guess 2' on a picked entry; the reason shows on hover, and inline for the stronger two-token key."""
    inline = " · 2-token key" if reason == GuessReason.TWO_TOKEN_KEY else ""
    title = f"picked for verification: {reason.value}"
    return f'<span class="ll-pick" title="{escape(title)}">guess {guess + 1}{inline}</span>'


def ngram_html(vocab: dict, key: int, continuation: list[int], source: str | None = None) -> str:
    """A key and its continuation: `key ▸ a b c`."""
    return (
        f'<span class="ll-ngram">{chip(vocab, key, "current" if source is None else None)}'
        f'<span class="ll-arrow">▸</span>{chips(vocab, continuation, source)}</span>'
    )


def size_words(record: StepRecord) -> str:
    """The pool's size and this step's change, told so that its parts add up: of the n-grams added, those new to
    the pool grew it and each eviction shrank it; the rest were there already (moved to newest). The split follows
    from the recorded sizes, since the pool grows by one for each new entry and shrinks by one for each eviction."""
    pool = record.pool
    evicted, added = len(pool.evicted), len(pool.added)
    new = pool.size - pool.size_before + evicted
    parts = [f"{new} new", f"{evicted} evicted"] if evicted else [f"{new} new"] if new else []
    if added > new:
        parts.append(f"{added - new} of the {added} added already there")
    change = pool.size - pool.size_before
    return f"{pool.size} n-grams in the pool, {change:+d} this step" + (f": {', '.join(parts)}" if parts else "")


def shown_entries(record: StepRecord) -> list:
    """The entries under the key as the panel lists them: the guesses by their recorded number, then the rest in
    the record's order (oldest first)."""
    entries = record.pool.entries
    picked = sorted((e for e in entries if e.guess is not None), key=lambda e: e.guess)
    return picked + [e for e in entries if e.guess is None]


def entries_html(record: StepRecord, vocab: dict) -> str:
    """The entries under the key, guesses first; the ones verified as guesses are marked and say why."""
    if not record.pool.entries:
        fed = record.window is not None and record.window.fed
        rest = (
            "only the window's own Jacobi trajectories can add tokens this step"
            if fed
            else "this step can commit only the guaranteed token"
        )
        return (
            '<p class="ll-empty">No n-gram in the pool starts with this key yet: there is no guess to verify, '
            f"so {rest}.</p>"
        )
    reasons = {c.lane: c.reason for c in record.verification.candidates if c.source != GuessSource.TRAJECTORY}
    rows = []
    for entry in shown_entries(record):
        picked = entry.guess is not None
        mark = (
            pick_mark(entry.guess, reasons[entry.guess]) if picked else '<span class="ll-pick ll-dim">not picked</span>'
        )
        rows.append(
            f'<li class="ll-entry{" ll-chosen" if picked else ""}">'
            f"{chips(vocab, entry.continuation, entry.source.value)}{source_badge(entry.source)}{mark}</li>"
        )
    return f'<ol class="ll-entries">{"".join(rows)}</ol>'


def pool_html(record: StepRecord, vocab: dict[str, str], guesses: int) -> str:
    """The whole pool panel for one step; `guesses` is the run's G (0 leaves the pool idle)."""
    if record.kind == StepKind.PREFILL or record.pool is None:
        return (
            '<p class="ll-empty">Before the first step, every n-gram of the prompt is put in the pool, so '
            "text that quotes the prompt can be guessed from step 1.</p>"
        )
    pool = record.pool
    parts = [
        f'<div class="ll-poolhead">key {chip(vocab, pool.key, "current", "the current token c")}'
        f'<span class="ll-dim">the current token · {escape(size_words(record))}</span></div>',
        '<h3>Under this key, before this step <span class="ll-dim">(the guesses in the order verification tried '
        "them, then the rest, oldest first)</span></h3>",
        entries_html(record, vocab),
    ]
    if guesses == 0:
        parts.append(
            '<p class="ll-note">G = 0: the pool keeps no n-grams and no guess is verified; only the window\'s '
            "own Jacobi trajectories can add tokens.</p>"
        )
    for source, title in (
        (GuessSource.WINDOW, "Added from the window's columns"),
        (GuessSource.OUTPUT, "Added from the committed output"),
    ):
        added = [ngram for ngram in pool.added if ngram.source == source]
        if added:
            shown = "".join(ngram_html(vocab, g.key, g.continuation, source.value) for g in added)
            parts.append(
                f'<h3>{title} <span class="ll-dim">({len(added)})</span></h3><div class="ll-ngrams">{shown}</div>'
            )
    if pool.evicted:
        gone = "".join(ngram_html(vocab, g.key, g.continuation) for g in pool.evicted)
        parts.append(
            f'<h3>Evicted <span class="ll-dim">(the oldest under a full key)</span></h3>'
            f'<div class="ll-ngrams ll-evicted">{gone}</div>'
        )
    return "".join(parts)
