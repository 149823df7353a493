"""Suffix decoding's panel (in the n-gram pool's place): the longest match, where it occurred, and the tree of what
followed it, with the path verification accepted.

A pure function of the step's record: its SuffixRecord (the match, its occurrences, the tree's nodes with their
counts and probabilities, what the store held) and its VerificationRecord (the winner's rows and how far it
matched: the accepted nodes). Where an occurrence was reads in words and with a mark (¶ this prompt, ✎ this
output, ↺ an earlier run, named), an accepted node in words (✓ accepted) and with its chip's mark, never by
colour alone. The tree is a nested list, so a screen reader says each node's depth, count and probability.
"""

from __future__ import annotations

from lookahead_core.records import (
    Branch,
    GuessSource,
    StepKind,
    StepRecord,
    SuffixNode,
    SuffixOccurrence,
    SuffixRecord,
)

from .caption import plural
from .markup import escape, scroll_region
from .tokens import chip, chips, named

# Where an occurrence (or a node's latest occurrence) was: the mark drawn before it, and its words
WHERE = {
    GuessSource.PROMPT: ("¶", "this prompt"),
    GuessSource.OUTPUT: ("✎", "this output"),
    GuessSource.EARLIER: ("↺", "an earlier run"),
}
FIRST_STEP = (
    "The prefill gives the first token. From step 1 on, each step finds the longest stretch of the sequence's end "
    "that occurred before (in the prompt, the output, or an earlier run's output) and verifies the tree of what "
    "followed it there."
)


def where_words(source: GuessSource, text: str) -> str:
    """Where an occurrence was, in words: "this prompt", "this output" or "an earlier run: <its name>"."""
    words = WHERE[source][1]
    return f"{words}: {text}" if source == GuessSource.EARLIER and text else words


def where_html(source: GuessSource, text: str) -> str:
    """An occurrence's place: its mark (hidden from a screen reader, which reads the words) and its words, escaped."""
    mark = WHERE[source][0]
    return (
        f'<span class="ll-where ll-where-{source.value}"><span class="ll-where-mark" aria-hidden="true">{mark}</span>'
        f"{escape(where_words(source, text))}</span>"
    )


def accepted_nodes(record: StepRecord) -> tuple[int, ...]:
    """The tree's nodes that verification accepted (indices into its nodes, the one nearest the match first): the
    winner's rows as far as it matched, less the row of the tree's first node."""
    verification = record.verification
    if verification.winner is None:
        return ()
    winner = verification.candidates[verification.winner]
    first = min(i for i, row in enumerate(record.rows) if row.branch == Branch.SUFFIX)
    return tuple(row - first for row in winner.rows[: winner.matched])


def occurrence_item(occurrence: SuffixOccurrence) -> str:
    """One occurrence: where it was, and where what followed it starts there."""
    place = "of its output" if occurrence.source == GuessSource.EARLIER else "of the sequence"
    at = f"· token {occurrence.position} {place}"
    return f'<li>{where_html(occurrence.source, occurrence.text)} <span class="ll-dim">{at}</span></li>'


def node_item(record: StepRecord, vocab: dict, index: int, accepted: tuple[int, ...], nested: str) -> str:
    """A node, its count and probability, whether it was accepted, and the list of its children (`nested`)."""
    node: SuffixNode = record.report(SuffixRecord).nodes[index]
    taken = index in accepted
    state = "✓ accepted" if taken else "not accepted"
    tooltip = (
        f"followed {node.count}× · probability {node.probability:.0%} · latest in {WHERE[node.source][1]} · {state}"
    )
    token = chip(vocab, node.token, "accepted" if taken else None, tooltip)
    return (
        f'<li class="ll-node{" ll-chosen" if taken else ""}">{token}'
        f'<span class="ll-count">{node.count}×</span><span class="ll-odds">{node.probability:.0%}</span>'
        f'<span class="{"ll-pick" if taken else "ll-pick ll-dim"}">{state}</span>{nested}</li>'
    )


def tree_html(record: StepRecord, vocab: dict) -> str:
    """The tree as a nested list from the match: each node's token, count, probability and whether it was accepted.
    Built from the last node back (a node's parent comes before it), so a deep tree needs no recursion."""
    nodes, accepted = record.report(SuffixRecord).nodes, accepted_nodes(record)
    below: dict[int, list[str]] = {}
    for index in reversed(range(len(nodes))):
        children = below.pop(index, [])
        nested = f'<ul class="ll-tree">{"".join(reversed(children))}</ul>' if children else ""
        below.setdefault(nodes[index].parent, []).append(node_item(record, vocab, index, accepted, nested))
    roots = "".join(reversed(below.get(-1, [])))
    return scroll_region(f'<ul class="ll-tree ll-tree-root">{roots}</ul>', "the tree of what followed the match")


def match_words(record: StepRecord, vocab: dict) -> str:
    """The match and how often it occurred, as HTML: its tokens as chips."""
    suffix = record.report(SuffixRecord)
    if not suffix.match:
        return "<p class='ll-note'>The sequence's last token occurs nowhere before, so there is no match to follow.</p>"
    shown = len(suffix.occurrences)
    listed = f" (the latest {shown} listed)" if shown < suffix.found else ""
    return (
        f'<p class="ll-note">The longest match: the last {plural(len(suffix.match), "token")} '
        f'<span class="ll-match">{chips(vocab, suffix.match, "current")}</span> occurred '
        f"{plural(suffix.found, 'time')} before{escape(listed)}:</p>"
    )


def tree_words(record: StepRecord, vocab: dict) -> str:
    """What the tree held, what it expected and what verification accepted of it."""
    suffix = record.report(SuffixRecord)
    accepted = len(accepted_nodes(record))
    current = named(vocab, record.committed[0]) if record.committed else ""
    said = (
        f"verification accepted {plural(accepted, 'node')} along one path (marked ✓ accepted)"
        if accepted
        else "no path began with the model's own next token, so none was accepted"
    )
    return (
        f"<p class='ll-note'>What followed those occurrences grew a tree of {plural(len(suffix.nodes), 'node')} "
        f"(at most {suffix.budget}: alpha × the match's length, capped by the tree size), the likeliest first: a "
        f"node's probability is its chance of being accepted, its share of the occurrences through its parent trusted "
        f"as far as such nodes were accepted so far, multiplied down from the match. It "
        f"expected {suffix.score:.2f} tokens accepted; {escape(said)}"
        f"{escape(f'; the guaranteed token was {current}') if current else ''}.</p>"
    )


def store_words(record: StepRecord) -> str:
    """What the store of earlier outputs held, and the lookup's time."""
    suffix = record.report(SuffixRecord)
    store = (
        f"its store held {plural(suffix.store_texts, 'earlier output')} ({plural(suffix.store_tokens, 'token')})"
        if suffix.store_texts
        else "its store of earlier outputs was empty (only this run's own text was matched)"
    )
    return f"<p class='ll-dim'>The lookup took {suffix.seconds * 1000:.2f} ms; {escape(store)}.</p>"


def suffix_html(record: StepRecord, vocab: dict[str, str]) -> str:
    """The suffix panel for one step of suffix decoding: the match, its occurrences, the tree and its accepted path."""
    suffix = record.report(SuffixRecord)
    if record.kind == StepKind.PREFILL or suffix is None:
        return f'<p class="ll-empty">{escape(FIRST_STEP)}</p>'
    occurrences = "".join(occurrence_item(o) for o in suffix.occurrences)
    listed = f'<ul class="ll-occurrences">{occurrences}</ul>' if occurrences else ""
    if not suffix.nodes:
        nothing = (
            "<p class='ll-note'>Nothing followed often enough to be worth a guess, so no tree was verified: this "
            "step commits the guaranteed token alone.</p>"
        )
        return match_words(record, vocab) + listed + nothing + store_words(record)
    return (
        match_words(record, vocab) + listed + tree_words(record, vocab) + tree_html(record, vocab) + store_words(record)
    )
