"""The 2D Jacobi window: N-1 levels of guesses, each a row of columns (future positions).

Level 0 column 0 is always the current token c; level l column j guesses position p + l + j.
The window starts with level 0 only, W + N - 2 columns wide, and gains a level per step while
every level drops its first column (warm-up); once N-1 levels stand W columns wide, each step's
Jacobi update goes on top, the columns are harvested as n-grams and the levels move down one.
The window holds token ids, and for each level the step whose Jacobi update produced it (0 for
the initial fill); it never touches the model. Its lists are never changed in place (every update
makes new ones), so whoever holds `levels` or `origins` holds the window as it stood then.
"""

from __future__ import annotations

import random


class JacobiWindow:
    """Levels of token ids; `levels[0][0]` is the current token c; `origins[l]` made level l."""

    def __init__(self, levels: list[list[int]], ngram: int, origins: list[int] | None = None) -> None:
        self.levels = levels
        self.ngram = ngram
        self.origins = origins if origins is not None else [0] * len(levels)

    @classmethod
    def initial(cls, current_token: int, prompt_ids: list[int], window: int, ngram: int, seed: int = 0) -> JacobiWindow:
        """Level 0 only: c followed by W + N - 3 prompt tokens drawn with a fixed seed.

        Any fill converges under Jacobi iteration; prompt tokens start it in the prompt's vocabulary.
        """
        rng = random.Random(seed)
        fill = [rng.choice(prompt_ids) for _ in range(window + ngram - 3)]
        return cls([[current_token, *fill]], ngram)

    @property
    def is_full(self) -> bool:
        """True once the window holds its N-1 levels (warm-up is over)."""
        return len(self.levels) == self.ngram - 1

    @property
    def width(self) -> int:
        return len(self.levels[0])

    def harvest(self, new_level: list[int]) -> list[list[int]]:
        """The fresh n-grams of a full window: each column read bottom to top, then the new level's token.

        Each n-gram is N consecutive guesses: key = level-0 token, value = the N-1 tokens above it.
        """
        if not self.is_full:
            return []
        return [[level[j] for level in self.levels] + [new_level[j]] for j in range(self.width)]

    def advance(self, new_level: list[int], next_token: int, step: int) -> None:
        """Apply step `step`'s Jacobi update `new_level` (argmax of the last level); re-anchor on `next_token`.

        Warm-up: keep every level, add the new one, all drop their first column.
        Full: level 0 is dropped, the others move down one, the new level goes on top.
        Either way, the new level 0 column 0 is the next current token.
        """
        if self.is_full:
            levels, origins = self.levels[1:] + [list(new_level)], self.origins[1:]
        else:
            levels, origins = [level[1:] for level in self.levels] + [list(new_level[1:])], list(self.origins)
        levels[0] = [next_token, *levels[0][1:]]
        self.levels, self.origins = levels, [*origins, step]

    def reanchor(self, next_token: int) -> None:
        """A step that did not feed the window: keep its levels, put the new current token in column 0."""
        self.levels = [[next_token, *self.levels[0][1:]], *self.levels[1:]]
