"""Where a run's tokens came from: the guesses that matched, by where each guess came from, and the token
each forward pass makes itself.

A pure function of the step records. Verification records its winner and the source the engine gave it
(an n-gram the window harvested into the pool, one of the prompt's or of the output's, the window's own
Jacobi trajectory, a copy from the prompt or the output (prompt lookup's, or suffix decoding's path of what
followed a match there), what followed a match in an earlier run's output, a draft's chain, Medusa's heads);
the winner's matched tokens that were committed are credited to that source, and the committed tokens after
them (the bonus token after a match, the guaranteed or sampled token when nothing matched) are the model's
own, one per pass at most.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lookahead_core.records import CandidateRecord, GuessReason, GuessSource, StepRecord, TokenSource, Trace

from .markup import escape

# Each origin of a matched guess, in the order a run's breakdown lists them (the Jacobi window's first), as a
# run's breakdown names them and as a step's names its one winner
ORIGINS = {
    "window": ("n-grams the window harvested", "an n-gram the window harvested"),
    "trajectory": ("the window's own trajectories", "a trajectory of the window"),
    "prompt": ("the prompt's n-grams", "an n-gram of the prompt"),
    "output": ("the output's n-grams", "an n-gram of the output"),
    "prompt copy": ("copies from the prompt", "a copy from the prompt"),
    "output copy": ("copies from the output", "a copy from the output"),
    "draft": ("the draft's chains", "the draft's chain"),
    "heads": ("Medusa's heads", "a path of Medusa's heads"),
    "earlier": ("what followed in earlier runs' outputs", "what followed the match in an earlier run's output"),
}
OWN_WORDS = {  # how the model made a token of its own: the committed token's recorded TokenSource
    TokenSource.GUARANTEED: ("guaranteed token", "guaranteed tokens"),
    TokenSource.BONUS: ("bonus token", "bonus tokens"),
    TokenSource.SAMPLED: ("sampled token", "sampled tokens"),
    TokenSource.ACCEPTED: ("accepted token", "accepted tokens"),  # only where a record contradicts itself
}


def origin(candidate: CandidateRecord) -> str:
    """Where a verified path came from, as a key of ORIGINS."""
    copied = candidate.reason in (GuessReason.SUFFIX_MATCH, GuessReason.FOLLOWED_MATCH)
    return {
        GuessSource.WINDOW: "window",
        GuessSource.TRAJECTORY: "trajectory",
        GuessSource.PROMPT: "prompt copy" if copied else "prompt",
        GuessSource.OUTPUT: "output copy" if copied else "output",
        GuessSource.DRAFT: "draft",
        GuessSource.HEADS: "heads",
        GuessSource.EARLIER: "earlier",
    }[candidate.source]


@dataclass(frozen=True)
class Origins:
    """Committed tokens by where they came from: `matched` per origin (a guess's tokens verification matched),
    `own` per TokenSource (the tokens the passes made themselves)."""

    matched: Counter
    own: Counter

    @property
    def guessed(self) -> int:
        return sum(self.matched.values())

    @property
    def tokens(self) -> int:
        return self.guessed + sum(self.own.values())

    def __add__(self, other: Origins) -> Origins:
        return Origins(matched=self.matched + other.matched, own=self.own + other.own)


def step_origins(record: StepRecord) -> Origins:
    """Where one step's committed tokens came from (the prefill's token, and a greedy step's, are the model's own)."""
    verification = record.verification
    won = verification is not None and verification.winner is not None
    winner = verification.candidates[verification.winner] if won else None
    matched = min(verification.accepted, len(record.committed)) if won else 0
    return Origins(
        matched=Counter({origin(winner): matched}) if matched else Counter(),
        own=Counter(record.sources[matched:]),
    )


def run_origins(trace: Trace) -> Origins:
    """Where every committed token of a trace came from."""
    total = Origins(matched=Counter(), own=Counter())
    for record in trace.steps:
        total += step_origins(record)
    return total


def count(number: int, words: tuple[str, str]) -> str:
    return f"{number} {words[0] if number == 1 else words[1]}"


def matched_words(origins: Origins) -> str:
    """e.g. "n-grams the window harvested 12, the prompt's n-grams 30" (the origins that gave any, in ORIGINS order)."""
    return ", ".join(f"{ORIGINS[key][0]} {origins.matched[key]}" for key in ORIGINS if origins.matched[key])


# A run's own guaranteed tokens are those of passes where no guess matched: every pass's first token is guaranteed,
# but where a guess matched it, the breakdown credits it to the guess (the tokens-per-step chart, by position, counts
# every pass's first token as guaranteed; a student comparing the two read 7 guaranteed here and 26 there)
RUN_OWN_WORDS = OWN_WORDS | {
    TokenSource.GUARANTEED: (
        "guaranteed token of a pass no guess matched",
        "guaranteed tokens of passes no guess matched",
    )
}

FIRST_TOKEN_WORDS = (
    " A pass's first token is guaranteed whatever was guessed: where a guess matched it, it is counted here as matched"
    " (the tokens-per-step chart counts it as guaranteed)."
)


def own_words(origins: Origins) -> str:
    """e.g. "13 bonus tokens, 2 guaranteed tokens of passes no guess matched"."""
    return ", ".join(count(number, RUN_OWN_WORDS[source]) for source, number in origins.own.most_common())


def run_sources_words(trace: Trace) -> str:
    """Where a trace's new tokens came from, in sentences: every figure a count of its committed tokens."""
    origins = run_origins(trace)
    own = sum(origins.own.values())
    words = f"Where the {count(origins.tokens, ('new token', 'new tokens'))} came from: "
    if not origins.guessed:
        return words + f"no guess matched, so the model made all {own} itself ({own_words(origins)})."
    words += (
        f"{origins.guessed} matched a guess ({matched_words(origins)}), and the model made the other {own} itself, "
        f"at most one per forward pass ({own_words(origins)})."
    )
    greedy = any(TokenSource.GUARANTEED in step.sources for step in trace.steps)
    return words + harvest_words(origins) + (FIRST_TOKEN_WORDS if greedy else "")


def harvest_words(origins: Origins) -> str:
    """Whether the window's harvest paid, where the run's guesses came from an n-gram pool ("" where none did)."""
    pooled = origins.matched["window"] + origins.matched["prompt"] + origins.matched["output"]
    if not pooled:
        return ""
    if origins.matched["prompt"] == origins.guessed:
        return " Every matched guess was one of the prompt's n-grams: none came from the window's harvest."
    if origins.matched["window"]:
        return (
            f" {origins.matched['window']} of them came from n-grams the Jacobi window had guessed and harvested "
            "before the text reached them."
        )
    return " None came from n-grams the window harvested."


def run_sources_html(trace: Trace) -> str:
    """The run's breakdown as a line of the summary."""
    return f'<div class="ll-dim ll-sources">{escape(run_sources_words(trace))}</div>'


def step_sources_words(record: StepRecord) -> str:
    """Where one step's committed tokens came from, e.g. "Where this step's 4 tokens came from: 3 matched an n-gram
    of the prompt, and the bonus token is the model's own." ("" for the prefill, which verifies nothing)."""
    if record.verification is None:
        return ""
    origins = step_origins(record)
    own = " and ".join(f"the {OWN_WORDS[source][0]}" for source in origins.own)  # one, or none when cut short
    if not origins.guessed:
        return f"Where this step's token came from: no guess matched, so {own} is the model's own."
    (key,) = origins.matched  # a step has one winner
    words = f"Where this step's {count(origins.tokens, ('token', 'tokens'))} came from: {origins.guessed} matched "
    words += ORIGINS[key][1]
    return words + (f", and {own} is the model's own." if own else ".")


def step_sources_html(record: StepRecord) -> str:
    """The step's breakdown as a line of the verification panel ("" for the prefill)."""
    words = step_sources_words(record)
    return f'<p class="ll-dim ll-sources">{escape(words)}</p>' if words else ""
