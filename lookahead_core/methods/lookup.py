"""Prompt lookup: guess that text repeats, by copying what followed an earlier occurrence of the last tokens.

Each step looks for the last n tokens of the sequence (n = the setting, then fewer, down to 1)
earlier in the prompt and the output so far, most recent occurrence first, and proposes the
tokens that followed it. Distinct continuations from several occurrences become parallel
guesses of one step, verified like lookahead's pool guesses. It needs no model and no pool:
the sequence itself is the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config import LookupConfig
from ..method_spec import Guessing, MakeProposer, MethodSpec, Swept, same_runtime
from ..records import METHODS, GuessReason, GuessSource, LookupSettings, Method
from ..step.proposers import Candidate, Outcome, Proposal, ProposedBranch, ProposerReport, StepContext, chain_branch
from . import lookup_on_device


@dataclass(frozen=True)
class Match:
    """An earlier occurrence of the sequence's last `key_length` tokens; `start` is where its continuation begins."""

    start: int
    key_length: int
    continuation: tuple[int, ...]


def find_matches(sequence: list[int], config: LookupConfig) -> list[Match]:
    """Up to `config.candidates` matches with distinct continuations: longest key first, then most recent."""
    matches: list[Match] = []
    seen: set[tuple[int, ...]] = set()
    for n in range(min(config.ngram, len(sequence) - 1), 0, -1):
        key = sequence[-n:]
        for start in range(len(sequence) - 1, n - 1, -1):  # continuation start, latest first
            if sequence[start - n : start] != key:
                continue
            continuation = tuple(sequence[start : start + config.tokens])
            if continuation in seen:
                continue
            seen.add(continuation)
            matches.append(Match(start, n, continuation))
            if len(matches) == config.candidates:
                return matches
    return matches


def match_branch(match: Match, lane: int, prompt_length: int) -> ProposedBranch:
    """A match's continuation as a chain after c: one candidate, from the prompt or from the output."""
    rows = tuple(range(len(match.continuation)))
    source = GuessSource.PROMPT if match.start < prompt_length else GuessSource.OUTPUT
    candidate = Candidate(
        match.continuation,
        rows,
        source,
        GuessReason.SUFFIX_MATCH,
        lane,
        found_at=match.start,
        key_length=match.key_length,
    )
    return chain_branch(candidate)


class PromptLookupProposer:
    """Prompt lookup decoding's proposer: continuations of earlier occurrences of the last tokens."""

    def __init__(self, config: LookupConfig, prompt_length: int) -> None:
        self.config, self.prompt_length = config, prompt_length

    def propose(self, context: StepContext) -> Proposal:
        matches = find_matches(context.sequence, self.config)
        return Proposal(None, [match_branch(m, lane, self.prompt_length) for lane, m in enumerate(matches)])

    def observe(self, outcome: Outcome) -> None:
        """Prompt lookup keeps no state: the sequence it searches is the committed one."""

    def report(self, outcome: Outcome) -> ProposerReport:
        """Nothing of its own for the record: its matches are the candidates verified."""
        return ProposerReport()


# ----------------------------------------------------------------------------------------------
# Its spec


def lookup_settings(request) -> LookupSettings:
    lookup = request.lookup
    return LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates)


def prompt_lookup(model, prompt_ids: list[int], request, runtime) -> MakeProposer:
    """Prompt lookup: earlier occurrences of the last few tokens in the prompt and the output."""
    return lambda sequence: PromptLookupProposer(request.lookup, len(prompt_ids))


SPEC = MethodSpec(
    entry=METHODS[Method.PROMPT_LOOKUP],
    guessing=Guessing(
        prompt_lookup,
        lambda request, runtime: request.lookup.tokens,
        lambda request, runtime: lookup_settings(request),
        lambda request, runtime: 1 + request.lookup.tokens * request.lookup.candidates,
    ),
    resident=lookup_on_device.RESIDENT,
    swept=Swept(
        lambda g: [{"ngram": n, "tokens": k} for n, k in g.lookups],
        lambda r, s: replace(r, method=Method.PROMPT_LOOKUP, lookup=LookupConfig(ngram=s["ngram"], tokens=s["tokens"])),
        same_runtime,
    ),
)
