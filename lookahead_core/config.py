"""Lookahead settings (W, N, G) and their validation.

The paper writes the triple as (N, W, G) and TensorRT-LLM as (W, N, G); this code never passes
a bare triple: every setting is named.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

MAX_TOKENS_PER_STEP = 512


class SettingsError(ValueError):
    """A lookahead setting is out of range; the message says which and why."""


@dataclass(frozen=True)
class LookaheadConfig:
    """W columns of the window, N-gram size (N-1 levels), at most G guesses verified per step."""

    window: int = 7
    ngram: int = 5
    guesses: int = 7

    def __post_init__(self) -> None:
        for name, value, low in (
            ("window W", self.window, 1),
            ("n-gram size N", self.ngram, 2),
            ("guesses G", self.guesses, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise SettingsError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.tokens_per_step > MAX_TOKENS_PER_STEP:
            raise SettingsError(
                f"W={self.window}, N={self.ngram}, G={self.guesses} would feed {self.tokens_per_step} tokens "
                f"to one forward pass, over the budget of {MAX_TOKENS_PER_STEP}: lower W, N or G"
            )

    @property
    def tokens_per_step(self) -> int:
        """Tokens fed to one full step: the current token, the window and G guesses of N-1 tokens."""
        window_tokens = (self.window - 1) + (self.ngram - 2) * self.window
        return 1 + window_tokens + self.guesses * (self.ngram - 1)

    def as_dict(self) -> dict:
        return asdict(self)
