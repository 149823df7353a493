"""The methods' settings (lookahead's W, N, G; prompt lookup's; suffix decoding's; a draft's k) and their validation.

The paper writes the triple as (N, W, G) and TensorRT-LLM as (W, N, G); this code never passes
a bare triple: every setting is named.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_TOKENS_PER_STEP = 512


class SettingsError(ValueError):
    """A setting is out of range; the message says which and why."""


def check_integers(*checks: tuple[str, object, int]) -> None:
    """Each (name, value, lowest) must be an integer >= lowest, else SettingsError naming it."""
    for name, value, low in checks:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise SettingsError(f"{name} must be an integer >= {low}, got {value!r}")


@dataclass(frozen=True)
class LookaheadConfig:
    """W columns of the window, N-gram size (N-1 levels), at most G guesses verified per step."""

    window: int = 7
    ngram: int = 5
    guesses: int = 7

    def __post_init__(self) -> None:
        check_integers(("window W", self.window, 1), ("n-gram size N", self.ngram, 2), ("guesses G", self.guesses, 0))
        if self.tokens_per_step > MAX_TOKENS_PER_STEP:
            raise SettingsError(
                f"W={self.window}, N={self.ngram}, G={self.guesses} would feed {self.tokens_per_step} tokens "
                f"to one forward pass, over the budget of {MAX_TOKENS_PER_STEP}: lower W, N or G"
            )

    @property
    def tokens_per_step(self) -> int:
        """The most tokens one step feeds: the current token, the window's rows at their most and G guesses of
        N-1 tokens. A window of L levels is W + N - 1 - L columns wide (window.py), c not fed: full (L = N - 1)
        it feeds the most unless W < N - 2, when a warm-up step's fewer, wider levels feed more."""
        width = self.window + self.ngram - 1
        window_tokens = max(levels * (width - levels) for levels in range(1, self.ngram)) - 1
        return 1 + window_tokens + self.guesses * (self.ngram - 1)


MAX_PROPOSED_TOKENS = 64


@dataclass(frozen=True)
class LookupConfig:
    """Prompt lookup: match the last `ngram` tokens (then fewer, down to 1) earlier in the sequence
    and propose the `tokens` that followed, from up to `candidates` distinct matches."""

    ngram: int = 3
    tokens: int = 10
    candidates: int = 1

    def __post_init__(self) -> None:
        check_integers(("lookup n-gram", self.ngram, 1), ("lookup tokens", self.tokens, 1))
        check_integers(("lookup candidates", self.candidates, 1))
        if self.tokens * self.candidates > MAX_PROPOSED_TOKENS:
            raise SettingsError(
                f"prompt lookup would feed over {MAX_PROPOSED_TOKENS} tokens: lower its tokens or candidates"
            )


@dataclass(frozen=True)
class SuffixConfig:
    """Suffix decoding: a tree of at most `tree_size` nodes, and at most `alpha` x the match's length (a short
    match guesses little, a long one much: the paper's adaptive MAX_SPEC); a node is grown only while its chance of
    being accepted (its share of the occurrences, trusted as far as such nodes were accepted: suffix.Trust,
    multiplied down from the match) is at least `min_probability`; matches are looked for up to `longest_match`
    tokens back. The defaults: what paid on this lab's 2-core CPU (docs/methods.md)."""

    tree_size: int = 48
    alpha: float = 4.0
    min_probability: float = 0.4
    longest_match: int = 32

    def __post_init__(self) -> None:
        check_integers(("suffix tree size", self.tree_size, 1), ("suffix longest match", self.longest_match, 1))
        if self.tree_size > MAX_PROPOSED_TOKENS:
            raise SettingsError(f"the suffix tree size must be at most {MAX_PROPOSED_TOKENS}, got {self.tree_size}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not 0 < self.alpha <= 64:
            raise SettingsError(f"suffix alpha must be a number above 0 and at most 64, got {self.alpha!r}")
        probability = self.min_probability
        if isinstance(probability, bool) or not isinstance(probability, int | float) or not 0 <= probability <= 1:
            raise SettingsError(f"the suffix tree's least probability must be from 0 to 1, got {probability!r}")


# A draft's k. Measured on the 2-core CPU (3 MT-Bench prompts, 128 tokens, bf16-self, no confidence floor): k = 4 ran
# 1.23x greedy; k = 6, 8, 12 ran 1.17x, 1.14x, 1.15x.
DEFAULT_DRAFT_TOKENS = 4


def check_draft_tokens(tokens: object) -> int:
    """A draft's k: an integer from 1 to MAX_PROPOSED_TOKENS."""
    check_integers(("draft tokens k", tokens, 1))
    if tokens > MAX_PROPOSED_TOKENS:
        raise SettingsError(f"draft tokens k must be at most {MAX_PROPOSED_TOKENS}, got {tokens}")
    return tokens


PROMPT_LOOKUP = LookupConfig()
SUFFIX = SuffixConfig()
