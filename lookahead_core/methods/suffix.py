"""Suffix decoding (Oliaro et al., "SuffixDecoding", NeurIPS 2025): guess what followed the longest match of the
sequence's end, in the prompt, the output so far and earlier outputs, as a tree weighted by how often each
continuation followed.

Every text is indexed by the one and the two tokens before each of its positions: the occurrences of a longer
suffix are those of its last two tokens that also agree further back, so a query walks back from each of them (a
suffix index, answering what a suffix tree's node below the match would: its occurrences and what followed them).
Each step takes the occurrences of the longest suffix found (up to `longest_match` tokens), then grows a tree from
what followed them, most probable node first: a node's probability is the share of the occurrences through its
parent that went on with its token, multiplied down from the match. A tree holds at most alpha x the match's length
nodes (capped by the tree size), so a short match guesses little. A few shorter matches, with more occurrences, are
tried as well, and the tree that expects the most accepted tokens (the sum of its probabilities) is offered to the
one verifier, like Medusa's tree. A `SuffixStore` holds earlier outputs, least recently used out past a token
budget: the pool that spans runs.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..config import SuffixConfig
from ..method_spec import Guessing, MakeProposer, MethodSpec, Swept, same_runtime
from ..records import (
    METHODS,
    Branch,
    GuessReason,
    GuessSource,
    Method,
    SuffixNode,
    SuffixOccurrence,
    SuffixRecord,
    SuffixSettings,
)
from ..step.proposers import Candidate, Outcome, Proposal, ProposedBranch, ProposerReport, StepContext
from ..tree.layout import CURRENT

STORE_TOKENS = 16_384  # a store's budget: earlier outputs past it go, the least recently used first
OCCURRENCES_READ = 64  # at most this many occurrences are read a step, the latest first (this run's, then newest)
LENGTHS_TRIED = 3  # the longest match and at most this many shorter ones, each with more occurrences
OCCURRENCES_SHOWN = 6  # a step's record lists this many occurrences of its match


# ----------------------------------------------------------------------------------------------
# The index and the store


@dataclass(eq=False)
class SuffixText:
    """A text the index covers: its name ("" for the run's own prompt and output), its tokens, the largest of them,
    and where each token and each pair of tokens occurs: `ones[t]` / `twos[(s, t)]` list the positions p
    (ascending) whose one or two tokens before are t / s, t, so what followed that occurrence starts at p."""

    name: str
    tokens: list[int] = field(default_factory=list)
    largest: int = -1
    ones: dict[int, list[int]] = field(default_factory=dict)
    twos: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, tokens: Sequence[int]) -> SuffixText:
        text = cls(name)
        text.extend(tokens)
        return text

    def extend(self, tokens: Sequence[int]) -> None:
        """Append `tokens`, indexing each as it comes."""
        for token in tokens:
            self.tokens.append(token)
            self.largest = max(self.largest, token)
            end = len(self.tokens)
            self.ones.setdefault(token, []).append(end)
            if end >= 2:
                self.twos.setdefault((self.tokens[-2], token), []).append(end)


class SuffixStore:
    """Earlier outputs suffix decoding may match, each indexed once, the least recently used out past `budget`
    tokens (a text longer than the budget keeps its last `budget` tokens). Whoever holds a store decides whose
    texts it holds: the lab keeps one per visitor. Safe to use from several threads."""

    def __init__(self, budget: int = STORE_TOKENS) -> None:
        self.budget = budget
        self._texts: OrderedDict[str, SuffixText] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, name: str, tokens: Sequence[int]) -> None:
        """Hold `tokens` as the text `name` (replacing one of that name), then evict past the budget."""
        self.add_text(SuffixText.of(name, list(tokens)[-self.budget :]))

    def add_text(self, text: SuffixText) -> None:
        """Hold an indexed text (shared, never changed after), then evict past the budget."""
        with self._lock:
            self._texts.pop(text.name, None)
            self._texts[text.name] = text
            while sum(len(t.tokens) for t in self._texts.values()) > self.budget and len(self._texts) > 1:
                self._texts.popitem(last=False)

    def touch(self, names: Sequence[str]) -> None:
        """Mark texts as used now (a run's tree drew on them)."""
        with self._lock:
            for name in names:
                if name in self._texts:
                    self._texts.move_to_end(name)

    def texts(self, leaving_out: str | None = None) -> tuple[SuffixText, ...]:
        """The texts held, most recently used first, without the one named `leaving_out`."""
        with self._lock:
            return tuple(t for t in reversed(self._texts.values()) if t.name != leaving_out)

    def __getstate__(self) -> dict:
        """A store crosses to another process (a ZeroGPU Space's GPU worker) as its budget and its texts, the
        least recently used first; its lock is made anew there."""
        return {"budget": self.budget, "texts": tuple(reversed(self.texts()))}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["budget"])
        for text in state["texts"]:
            self.add_text(text)


def store_settings(config: SuffixConfig, texts: Sequence[SuffixText]) -> SuffixSettings:
    """The run's settings as its trace keeps them, with what the store held when it began."""
    return SuffixSettings(
        tree_size=config.tree_size,
        alpha=float(config.alpha),
        min_probability=float(config.min_probability),
        longest_match=config.longest_match,
        store=[t.name for t in texts],
        store_tokens=sum(len(t.tokens) for t in texts),
    )


# ----------------------------------------------------------------------------------------------
# Matching


@dataclass(frozen=True)
class Occurrence:
    """An earlier occurrence of the sequence's last `length` tokens in `text`: what followed starts at `start`."""

    text: SuffixText
    start: int
    length: int
    source: GuessSource


def matched_length(tokens: list[int], start: int, sequence: Sequence[int], longest: int) -> int:
    """How many tokens before `start` in `tokens` equal the sequence's last ones (at most `longest`)."""
    k = 0
    while k < longest and k < start and k < len(sequence) and tokens[start - 1 - k] == sequence[-1 - k]:
        k += 1
    return k


def occurrences(
    sequence: Sequence[int], texts: Sequence[SuffixText], prompt_length: int, longest: int
) -> list[Occurrence]:
    """The latest occurrences (at most OCCURRENCES_READ) of the sequence's end in `texts` (the run's own first),
    each with how long a suffix it matches: those of its last two tokens, or of its last token when no text holds
    those two. The run's own text is the sequence itself; its last position (nothing followed yet) is left out."""
    keys = [(tuple(sequence[-2:]), "twos")] if len(sequence) >= 2 else []
    keys.append((sequence[-1], "ones"))
    for key, kind in keys:
        found = []
        for text in texts:
            starts = getattr(text, kind).get(key, ())
            for start in reversed(starts):
                if start >= len(text.tokens):
                    continue
                source = text_source(text, start, prompt_length)
                found.append(Occurrence(text, start, matched_length(text.tokens, start, sequence, longest), source))
                if len(found) == OCCURRENCES_READ:
                    return found
        if found:
            return found
    return []


def text_source(text: SuffixText, start: int, prompt_length: int) -> GuessSource:
    """Where an occurrence was: an earlier output, or this run's prompt or output (by where what followed starts)."""
    if text.name:
        return GuessSource.EARLIER
    return GuessSource.PROMPT if start < prompt_length else GuessSource.OUTPUT


# ----------------------------------------------------------------------------------------------
# Growing the tree

# How far to trust what followed, by whether every occurrence through a node's parent went its way and by the
# match's length (1, 2, 3-4, 5-8, 9+ tokens): a node's chance of being accepted once its parent is, as a factor on
# its share of those occurrences. Measured on held-out prompts (humaneval-edit 100-105 and MT-Bench 70-72, in no
# bench; 2026-11-27, the 2,425 nodes of trees the counts alone grew): where all occurrences agreed, the next token
# was accepted 51% of the time after a 1-token match, 67% after 2, 82% after 3-4, 88% after 5-8, 99% after 9 or
# more; where they split, a node was accepted far less often than its share said (7% of 431 nodes with under half
# the occurrences, 30% of 106 with half or more). The counts alone grew 2.8 nodes a step on MT-Bench there for 0.47
# accepted tokens. Each run
# starts from these and learns from its own verdicts (PRIOR_WEIGHT shares' worth).
LENGTH_BUCKETS = (1, 2, 3, 5, 9)
PRIOR = {
    (True, 1): 0.51,
    (True, 2): 0.67,
    (True, 3): 0.82,
    (True, 5): 0.88,
    (True, 9): 0.99,
    (False, 1): 0.3,
    (False, 2): 0.5,
    (False, 3): 0.8,
    (False, 5): 0.8,
    (False, 9): 1.0,
}
PRIOR_WEIGHT = 8.0


def trust_key(unanimous: bool, length: int) -> tuple[bool, int]:
    """A node's key in the trust table: whether its parent's occurrences all went its way, the match's length bucket."""
    return unanimous, max(b for b in LENGTH_BUCKETS if b <= max(length, 1))


class Trust:
    """How far each kind of node is trusted: per key, the factor on a node's share that gives its chance of being
    accepted once its parent is, PRIOR's at first, then (accepted + PRIOR_WEIGHT x prior) / (shares +
    PRIOR_WEIGHT) over the nodes this run verified with their parent accepted."""

    def __init__(self) -> None:
        self.accepted = dict.fromkeys(PRIOR, 0.0)
        self.shares = dict.fromkeys(PRIOR, 0.0)

    def chance(self, key: tuple[bool, int], share: float) -> float:
        factor = (self.accepted[key] + PRIOR_WEIGHT * PRIOR[key]) / (self.shares[key] + PRIOR_WEIGHT)
        return min(1.0, share * factor)

    def learn(self, key: tuple[bool, int], share: float, accepted: bool) -> None:
        self.accepted[key] += accepted
        self.shares[key] += share


@dataclass(frozen=True)
class Node:
    """A node grown: its token, its parent's row (CURRENT: it follows the match), how many occurrences went this
    way and its share of those through its parent, its key in the trust table, its chance of being accepted (the
    product of the trusted shares down from the match), and the occurrences through it (positions of what follows
    it)."""

    token: int
    parent: int
    count: int
    share: float
    key: tuple[bool, int]
    probability: float
    through: tuple[tuple[Occurrence, int], ...]

    @property
    def source(self) -> GuessSource:
        return self.through[0][0].source


def followers(through: Sequence[tuple[Occurrence, int]]) -> list[tuple[int, list[tuple[Occurrence, int]]]]:
    """What followed the occurrences `through` (each at a position): each next token with the occurrences that
    went on with it, the most frequent first, then the latest."""
    groups: dict[int, list[tuple[Occurrence, int]]] = {}
    for occurrence, at in through:
        tokens = occurrence.text.tokens
        if at < len(tokens):
            groups.setdefault(tokens[at], []).append((occurrence, at + 1))
    return sorted(groups.items(), key=lambda item: -len(item[1]))


def grow_tree(
    found: Sequence[Occurrence], length: int, budget: int, min_probability: float, trust: Trust
) -> list[Node]:
    """At most `budget` nodes after a match of `length` tokens with occurrences `found`, the likeliest to be
    accepted first, none below `min_probability`; a node's parent comes before it."""
    nodes: list[Node] = []
    frontier: list[tuple[float, int, int, int, list, float, tuple]] = []
    order = 0

    def offer(parent: int, probability: float, through) -> None:
        nonlocal order
        total = len(through)
        for token, onward in followers(through):
            share = len(onward) / total
            key = trust_key(len(onward) == total, length)
            chance = probability * trust.chance(key, share)
            if chance >= min_probability:
                heapq.heappush(frontier, (-chance, order, parent, token, onward, share, key))
                order += 1

    offer(CURRENT, 1.0, [(o, o.start) for o in found])
    while frontier and len(nodes) < budget:
        negative, _, parent, token, onward, share, key = heapq.heappop(frontier)
        nodes.append(Node(token, parent, len(onward), share, key, -negative, tuple(onward)))
        offer(len(nodes) - 1, -negative, onward)
    return nodes


@dataclass(frozen=True)
class Speculation:
    """A step's guess: the match (its length, its occurrences), the tree's budget, its nodes and its score."""

    length: int
    found: tuple[Occurrence, ...]
    budget: int
    nodes: tuple[Node, ...]

    @property
    def score(self) -> float:
        """The tokens the tree expects accepted: the sum of its nodes' probabilities."""
        return sum(node.probability for node in self.nodes)


NOTHING_FOUND = Speculation(0, (), 0, ())


def speculate(
    sequence: Sequence[int], texts: Sequence[SuffixText], prompt_length: int, config: SuffixConfig, trust: Trust
) -> Speculation:
    """The tree to verify this step: for the longest match and up to LENGTHS_TRIED shorter ones, the tree of what
    followed (at most alpha x the length nodes, capped by the tree size), each node's chance as `trust` has it; the
    one that expects most accepted tokens (the longer match on a tie). Nothing found, or nothing likely enough: an
    empty tree."""
    found = occurrences(sequence, texts, prompt_length, config.longest_match)
    lengths = sorted({o.length for o in found}, reverse=True)[: 1 + LENGTHS_TRIED]
    best = NOTHING_FOUND
    for length in lengths:
        budget = min(config.tree_size, int(config.alpha * length))
        if budget < 1:
            continue
        matching = tuple(o for o in found if o.length >= length)
        nodes = tuple(grow_tree(matching, length, budget, config.min_probability, trust))
        tried = Speculation(length, matching, budget, nodes)
        if tried.score > best.score:
            best = tried
    return best


def suffix_branch(speculation: Speculation) -> ProposedBranch:
    """The tree's nodes as rows after c, every root-to-leaf path a candidate (verified as Medusa's tree is).
    A node's place is (its rank among its siblings, its depth - 1)."""
    nodes = speculation.nodes
    depth: list[int] = []
    rank: list[int] = []
    children: dict[int, int] = {}
    for node in nodes:
        depth.append(1 if node.parent == CURRENT else depth[node.parent] + 1)
        rank.append(children.get(node.parent, 0))
        children[node.parent] = rank[-1] + 1
    inner = {node.parent for node in nodes}
    leaves = [row for row in range(len(nodes)) if row not in inner]
    candidates = []
    for lane, leaf in enumerate(leaves):
        rows = []
        row = leaf
        while row != CURRENT:
            rows.append(row)
            row = nodes[row].parent
        rows.reverse()
        candidates.append(
            Candidate(
                tuple(nodes[r].token for r in rows),
                tuple(rows),
                nodes[leaf].source,
                GuessReason.FOLLOWED_MATCH,
                lane,
                found_at=nodes[leaf].through[0][0].start,
                key_length=speculation.length,
            )
        )
    return ProposedBranch(
        Branch.SUFFIX,
        tuple(node.token for node in nodes),
        tuple(node.parent for node in nodes),
        tuple(zip(rank, (d - 1 for d in depth), strict=True)),
        tuple(candidates),
    )


# ----------------------------------------------------------------------------------------------
# The proposer


class SuffixProposer:
    """Suffix decoding's proposer: its own text (the prompt and the output, indexed as they grow) and the store's
    texts as they stood when the run began, but any holding a token past the model's `vocabulary` (written by
    another tokenizer: its ids would mean nothing here, and one past the vocabulary could not be fed); each step,
    the tree of what followed the longest match."""

    def __init__(
        self,
        config: SuffixConfig,
        sequence: list[int],
        prompt_length: int,
        store: SuffixStore | None,
        vocabulary: int,
    ) -> None:
        self.config, self.prompt_length, self.store = config, prompt_length, store
        self.own = SuffixText.of("", sequence)
        self.earlier = tuple(t for t in store.texts() if t.largest < vocabulary) if store is not None else ()
        self.trust = Trust()

    def propose(self, context: StepContext) -> Proposal:
        start = time.perf_counter()
        self.own.extend(context.sequence[len(self.own.tokens) :])
        texts = (self.own, *self.earlier)
        self.speculation = speculate(context.sequence, texts, self.prompt_length, self.config, self.trust)
        self.match = list(context.sequence[len(context.sequence) - self.speculation.length :])
        self.seconds = time.perf_counter() - start
        if not self.speculation.nodes:
            return Proposal(None, [])
        self.branch = suffix_branch(self.speculation)
        return Proposal(None, [self.branch])

    def observe(self, outcome: Outcome) -> None:
        """Learn how far to trust each kind of node from the nodes verified with their parent accepted; the earlier
        outputs the accepted tokens followed count as used now (the store's order)."""
        nodes, verdict = self.speculation.nodes, outcome.verdict
        if not nodes:
            return
        accepted: tuple[int, ...] = ()
        if verdict.accepted:
            accepted = self.branch.candidates[outcome.candidates[verdict.winner].lane].rows[: verdict.accepted]
        for row, node in enumerate(nodes):
            if node.parent == CURRENT or node.parent in accepted:
                self.trust.learn(node.key, node.share, row in accepted)
        if self.store is not None and accepted:
            self.store.touch(sorted({o.text.name for o, _ in nodes[accepted[-1]].through if o.text.name}))

    def report(self, outcome: Outcome) -> ProposerReport:
        """The match with its occurrences, the tree with its counts, and what the store held."""
        speculation = self.speculation
        return ProposerReport(
            method_report=SuffixRecord(
                match=self.match,
                found=len(speculation.found),
                occurrences=[
                    SuffixOccurrence(source=o.source, text=o.text.name, position=o.start)
                    for o in speculation.found[:OCCURRENCES_SHOWN]
                ],
                budget=speculation.budget,
                nodes=[
                    SuffixNode(
                        token=node.token,
                        parent=node.parent,
                        count=node.count,
                        probability=round(node.probability, 4),
                        source=node.source,
                    )
                    for node in speculation.nodes
                ],
                score=round(speculation.score, 4),
                store_texts=len(self.earlier),
                store_tokens=sum(len(t.tokens) for t in self.earlier),
                seconds=self.seconds,
            )
        )


# ----------------------------------------------------------------------------------------------
# Its spec


def suffix_tree(model, prompt_ids: list[int], request, runtime) -> MakeProposer:
    """Suffix decoding: the tree of what followed the longest match, in this run's text and the runtime's store."""
    vocabulary = model.get_output_embeddings().weight.shape[0]
    return lambda sequence: SuffixProposer(request.suffix, sequence, len(prompt_ids), runtime.store, vocabulary)


def suffix_settings(request, runtime) -> SuffixSettings:
    """Suffix decoding's settings as records hold them, with what the runtime's store holds now."""
    return store_settings(request.suffix, runtime.store.texts() if runtime.store is not None else ())


SPEC = MethodSpec(
    entry=METHODS[Method.SUFFIX],
    guessing=Guessing(
        suffix_tree,
        lambda request, runtime: request.suffix.tree_size,
        suffix_settings,
        lambda request, runtime: 1 + request.suffix.tree_size,
    ),
    swept=Swept(
        lambda g: [{"tree_size": n, "alpha": a} for n, a in g.suffixes],
        lambda r, s: replace(r, method=Method.SUFFIX, suffix=SuffixConfig(tree_size=s["tree_size"], alpha=s["alpha"])),
        same_runtime,
    ),
)
