"""Each method's own part of a step record (`StepRecord.method_report`): what it did before the step's pass, beyond
the candidates it proposed. A report is a record with `seconds` (what it took) and `token_ids()` (every token id it
mentions); a method's entry names its type (records.methods.MethodEntry.report), and a step's report is read back
as the type its method's entry names. A method a spec registers reports in a record of its own the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .names import GuessSource


class MethodReport(Protocol):
    """What every method's report holds: its time before the pass, and the token ids it mentions (what a trace's
    vocabulary must cover)."""

    seconds: float

    def token_ids(self) -> set[int]: ...


@dataclass(kw_only=True)
class DraftRecord:
    """What a draft model did before this step's pass: the tokens it drafted, its passes and their time."""

    tokens: list[int]
    forward_passes: int
    seconds: float

    def token_ids(self) -> set[int]:
        return set(self.tokens)


@dataclass(kw_only=True)
class HeadGuesses:
    """One Medusa head's top choices this step, best first, with the probabilities its softmax gave them.
    Head k guesses the token k places after c (head 1: the one right after c)."""

    head: int
    tokens: list[int]
    probabilities: list[float]


@dataclass(kw_only=True)
class HeadsRecord:
    """What Medusa's heads did before this step's pass: each head's top choices, read off the hidden state
    of the row behind c, the sparse tree they filled (each node a path of choice ranks, head 1's first:
    [0, 1] is head 1's first choice then head 2's second), and the heads' time."""

    heads: list[HeadGuesses]
    tree: list[list[int]]
    seconds: float

    def token_ids(self) -> set[int]:
        return {t for head in self.heads for t in head.tokens}


@dataclass(kw_only=True)
class SuffixOccurrence:
    """Where the matched suffix occurred: in this run's prompt or output (`position`, where what followed it
    starts in the sequence), or in an earlier run's output (`text` names it, `position` counts in it)."""

    source: GuessSource
    text: str
    position: int


@dataclass(kw_only=True)
class SuffixNode:
    """A node of suffix decoding's tree: `token` followed the node `parent` (-1: followed the match itself)
    `count` times among the occurrences, `probability` its chance of being accepted as the run estimated it (each
    share down from the match, trusted as far as such nodes were accepted: suffix.Trust; what the tree was grown
    by), `source` where the latest occurrence through it was."""

    token: int
    parent: int
    count: int
    probability: float
    source: GuessSource


@dataclass(kw_only=True)
class SuffixRecord:
    """What suffix decoding did before this step's pass: the longest suffix of the sequence found before
    (`match`, its tokens), the `found` occurrences of it (up to a few of them listed, latest first), the tree
    grown from what followed them (nodes in row order after c, at most `budget`: alpha x the match's length,
    capped by the tree size), its `score` (the tokens it expects accepted: the sum of its nodes' probabilities),
    what the store of earlier outputs held, and the time it took."""

    match: list[int]
    found: int
    occurrences: list[SuffixOccurrence]
    budget: int
    nodes: list[SuffixNode]
    score: float
    store_texts: int
    store_tokens: int
    seconds: float

    def token_ids(self) -> set[int]:
        return set(self.match) | {node.token for node in self.nodes}
