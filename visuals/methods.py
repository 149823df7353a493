"""The guessing methods in words: their settings, their candidates, and what a method without a window or pool has
instead (their names and sentences are the method table's: records.METHODS).

Pure functions of the records' MethodSettings (each method's settings) and StepRecord (a draft's DraftRecord, a
match's place).
"""

from __future__ import annotations

import dataclasses

from lookahead_core.records import (
    METHODS,
    CandidateRecord,
    DraftRecord,
    DraftSettings,
    GuessReason,
    GuessSource,
    Method,
    MethodSettings,
    StepRecord,
    StopReason,
    SuffixSettings,
)

from .markup import escape
from .plans import settings_words, triple

STOP_WORDS = {  # why decoding stopped after a step, as the caption and the verification panel say it
    StopReason.EOS: "an end-of-sequence token was committed",
    StopReason.MAX_NEW_TOKENS: "max new tokens was reached",
    StopReason.DEADLINE: "the request's time ran out, so this run is partial",
}
SETTINGS_WORDS = {  # each method's settings as records hold them (MethodSettings), in a few characters
    Method.LOOKAHEAD: triple,
    Method.PROMPT_LOOKUP: lambda lookup: f"match ≤{lookup.ngram} tokens, propose {lookup.tokens}",
    Method.SPECULATIVE: lambda draft: drafted_words(draft),
    Method.MEDUSA: lambda medusa: f"{medusa.count} heads, a tree of {medusa.tree_size} nodes",
    Method.EAGLE: lambda layer: drafted_words(layer),
    Method.SUFFIX: lambda suffix: (
        f"a tree ≤{suffix.tree_size} nodes (alpha {suffix.alpha:g}, p ≥ {suffix.min_probability:g}), "
        f"a store of {plural_words(len(suffix.store), 'earlier output')}"
    ),
}


def drafted_words(draft: DraftSettings) -> str:
    """A draft's settings (a draft model's, or an EAGLE layer's) in a few characters, e.g. "draft bf16-self
    (bfloat16), k=4"."""
    return f"draft {draft.model} ({draft.dtype}), k={draft.tokens}"


def suffix_words(suffix: SuffixSettings) -> str:
    """Suffix decoding's settings in a sentence's words, with what its store held when it began."""
    store = plural_words(len(suffix.store), "earlier output")
    return (
        f"a tree of at most {suffix.tree_size} nodes and at most alpha = {suffix.alpha:g} x the match's length, "
        f"each node at least {suffix.min_probability:g} probable, matches up to {suffix.longest_match} tokens long, "
        f"a store of {store} ({suffix.store_tokens} tokens)"
    )


def plural_words(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


SENTENCE_WORDS = {  # each method's settings in a sentence's words, after its name (the race's card)
    Method.LOOKAHEAD: settings_words,
    Method.PROMPT_LOOKUP: lambda lookup: f"match up to {lookup.ngram} tokens, copy {lookup.tokens}",
    Method.SPECULATIVE: lambda draft: f"draft {draft.model} ({draft.dtype}), k = {draft.tokens} tokens drafted a step",
    Method.MEDUSA: lambda medusa: (
        f"{plural_words(medusa.count, 'head')} ({medusa.heads}), a tree of {medusa.tree_size} nodes, "
        f"{medusa.tree_depth} deep"
    ),
    Method.EAGLE: lambda layer: f"{layer.model}, k = {layer.tokens} tokens drafted a step",
    Method.SUFFIX: lambda suffix: suffix_words(suffix),
}


def sentence_words(settings: MethodSettings, names: dict[Method, str] | None = None) -> str:
    """Every method's settings that `settings` holds, one sentence each, e.g. "Prompt lookup: match up to 3 tokens,
    copy 10.", each named as `names` names it (default: the method's name)."""
    names = names or {}
    return " ".join(
        f"{names.get(method, METHODS[method].name)}: {SENTENCE_WORDS.get(method, field_words)(settings.of(method))}."
        for method in METHODS
        if settings.of(method)
    )


def recorded_words(settings: MethodSettings) -> str:
    """The methods' settings in a few characters, e.g. "W=7 N=5 G=7" or "draft bf16-self, k=4" (a trace holds its
    own method's alone; "" for greedy's)."""
    return ", ".join(
        SETTINGS_WORDS.get(method, field_words)(settings.of(method)) for method in METHODS if settings.of(method)
    )


def field_words(settings) -> str:
    """A method's settings with no words of their own here (a method a spec added), each field as name=value."""
    return " ".join(f"{field.name}={getattr(settings, field.name)}" for field in dataclasses.fields(settings))


def no_window_html(method: Method) -> str:
    return f'<p class="ll-empty">{escape(METHODS[method].proposes)}</p>'


def no_pool_html(method: Method) -> str:
    return f'<p class="ll-empty">{escape(METHODS[method].no_pool)}</p>'


def candidate_kind(candidate: CandidateRecord) -> str:
    """What kind of path it is: a pool guess, a prompt match, the draft chain, a window trajectory."""
    if candidate.source == GuessSource.TRAJECTORY:
        return "trajectory"
    kinds = {
        GuessReason.DRAFT_MODEL: "draft chain",
        GuessReason.SUFFIX_MATCH: "match",
        GuessReason.TREE_PATH: "path",
        GuessReason.FOLLOWED_MATCH: "path",
    }
    return kinds.get(candidate.reason, "guess")


def candidate_label(candidate: CandidateRecord) -> str:
    """A verified path's name in the verification panel, e.g. "guess 2", "match 1", "draft chain"."""
    kind = candidate_kind(candidate)
    return kind if candidate.reason == GuessReason.DRAFT_MODEL else f"{kind} {candidate.lane + 1}"


def candidate_why(candidate: CandidateRecord) -> str:
    """Why the path was verified, in a sentence fragment."""
    if candidate.reason == GuessReason.DRAFT_MODEL:
        return "the draft model's own continuation, one draft pass per token"
    if candidate.reason == GuessReason.TREE_PATH:
        return "a root-to-leaf path of the heads' sparse tree: one head's choice per place, head 1's first"
    if candidate.reason == GuessReason.FOLLOWED_MATCH:
        where = {GuessSource.PROMPT: "this prompt", GuessSource.OUTPUT: "this output"}.get(
            candidate.source, "an earlier run's output"
        )
        return (
            f"a root-to-leaf path of the tree of what followed the last {candidate.key_length} "
            f"token{'s' if candidate.key_length != 1 else ''} where they occurred before (the latest such occurrence "
            f"along it: in {where})"
        )
    if candidate.reason == GuessReason.SUFFIX_MATCH:
        start = candidate.found_at - candidate.key_length
        return (
            f"the last {candidate.key_length} token{'s' if candidate.key_length != 1 else ''} also occur at "
            f"token {start} of the text (in the {candidate.source.value}); these tokens followed them there"
        )
    return f"picked by its {candidate.reason.value}, an n-gram from the {candidate.source.value}"


def draft_words(record: StepRecord) -> str:
    """What the draft model did before this step's pass, e.g. "draft: 4 passes, 96 ms"."""
    draft = record.report(DraftRecord)
    if draft is None:
        return ""
    passes = draft.forward_passes
    return f"draft: {passes} pass{'es' if passes != 1 else ''}, {draft.seconds * 1000:.0f} ms"
