"""The guessing methods in words: their names, their settings, and what a method without a window or pool has instead.

Pure functions of the records' TraceMeta (method, lookahead's LookaheadSettings, LookupSettings,
DraftSettings) and StepRecord (a draft's DraftRecord, a match's place).
"""

from __future__ import annotations

from lookahead_core.records import (
    BenchMethod,
    CandidateRecord,
    GuessReason,
    GuessSource,
    Method,
    StepRecord,
    StopReason,
    TraceMeta,
)

from .markup import escape
from .plans import triple

NAMES = {
    Method.LOOKAHEAD: "Lookahead",
    Method.PROMPT_LOOKUP: "Prompt lookup",
    Method.SPECULATIVE: "Speculative decoding",
    Method.MEDUSA: "Medusa heads",
    Method.GREEDY: "Greedy",
}
SHORT_NAMES = {
    Method.LOOKAHEAD: "lookahead",
    Method.PROMPT_LOOKUP: "prompt lookup",
    Method.SPECULATIVE: "speculative",
    Method.MEDUSA: "medusa",
    Method.GREEDY: "greedy",
}
STOP_WORDS = {  # why decoding stopped after a step, as the caption and the verification panel say it
    StopReason.EOS: "an end-of-sequence token was committed",
    StopReason.MAX_NEW_TOKENS: "max new tokens was reached",
    StopReason.DEADLINE: "the request's time ran out, so this run is partial",
}
WHERE_GUESSES_COME_FROM = {
    Method.PROMPT_LOOKUP: (
        "Prompt lookup has no Jacobi window: each step looks for the last few tokens earlier in the prompt "
        "and the output, and guesses that what followed them there comes again. See Verification."
    ),
    Method.SPECULATIVE: (
        "Speculative decoding has no Jacobi window: a draft (a smaller model, or an EAGLE layer on the model's "
        "own features) writes k tokens, one small forward pass each, and the target checks them all in one "
        "pass. See Verification."
    ),
    Method.MEDUSA: (
        "Medusa has no Jacobi window: small heads read the model's own last hidden state and guess the next few "
        "tokens, a tree of their top guesses is checked in one pass. See Verification."
    ),
}
NO_POOL = {
    Method.PROMPT_LOOKUP: (
        "Prompt lookup keeps no n-gram pool: the prompt and the output so far are searched afresh every step."
    ),
    Method.SPECULATIVE: "Speculative decoding keeps no n-gram pool: its guesses come from the draft model.",
}


def entrant_name(entrant: BenchMethod) -> str:
    """A method as Run offers it: its name, or for speculative decoding with an EAGLE layer, that layer's."""
    return "EAGLE draft layer" if entrant == BenchMethod.EAGLE else NAMES[entrant.method]


def method_settings(meta: TraceMeta) -> str:
    """A trace's method settings in a few characters, e.g. "W=7 N=5 G=7" or "draft bf16-self, k=4"."""
    if meta.method == Method.LOOKAHEAD and meta.settings is not None:
        return triple(meta.settings)
    if meta.method == Method.PROMPT_LOOKUP and meta.lookup is not None:
        return f"match ≤{meta.lookup.ngram} tokens, propose {meta.lookup.tokens}"
    if meta.method == Method.SPECULATIVE and meta.draft is not None:
        return f"draft {meta.draft.model} ({meta.draft.dtype}), k={meta.draft.tokens}"
    if meta.method == Method.MEDUSA and meta.medusa is not None:
        return f"{meta.medusa.count} heads, a tree of {meta.medusa.tree_size} nodes"
    return ""


def no_window_html(method: Method) -> str:
    return f'<p class="ll-empty">{escape(WHERE_GUESSES_COME_FROM[method])}</p>'


def no_pool_html(method: Method) -> str:
    return f'<p class="ll-empty">{escape(NO_POOL[method])}</p>'


def candidate_kind(candidate: CandidateRecord) -> str:
    """What kind of path it is: a pool guess, a prompt match, the draft chain, a window trajectory."""
    if candidate.source == GuessSource.TRAJECTORY:
        return "trajectory"
    kinds = {GuessReason.DRAFT_MODEL: "draft chain", GuessReason.SUFFIX_MATCH: "match", GuessReason.TREE_PATH: "path"}
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
    if candidate.reason == GuessReason.SUFFIX_MATCH:
        start = candidate.found_at - candidate.key_length
        return (
            f"the last {candidate.key_length} token{'s' if candidate.key_length != 1 else ''} also occur at "
            f"token {start} of the text (in the {candidate.source.value}); these tokens followed them there"
        )
    return f"picked by its {candidate.reason.value}, an n-gram from the {candidate.source.value}"


def draft_words(record: StepRecord) -> str:
    """What the draft model did before this step's pass, e.g. "draft: 4 passes, 96 ms"."""
    if record.draft is None:
        return ""
    passes = record.draft.forward_passes
    return f"draft: {passes} pass{'es' if passes != 1 else ''}, {record.draft.seconds * 1000:.0f} ms"
