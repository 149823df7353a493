"""The input of one lookahead step, laid out as a token tree.

Rows, in order: the current token c, the lookahead branch (level 0 columns 1.., then each level
above), the verification branch (each guess's tokens). Every row names its parent: the token
before it in the chain it belongs to. A row attends to the committed prefix, itself and its
ancestors, and sits at position p + depth. So parents alone define the attention mask and the
position ids; this module is pure Python and is shared by the engine and the trace readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class StepLayout:
    """Structure of one step's input: parents[i] is the row that row i extends (-1 for c)."""

    parents: tuple[int, ...]
    depths: tuple[int, ...]
    window_rows: tuple[tuple[int, ...], ...]  # window_rows[l][j]: row of level l, column j
    guess_rows: tuple[tuple[int, ...], ...]  # guess_rows[i][k]: row of guess i, token k
    trajectory_rows: tuple[tuple[int, ...], ...]  # trajectory_rows[j]: the chain after c ending atop column j

    @property
    def size(self) -> int:
        return len(self.parents)


@lru_cache(maxsize=256)
def step_layout(levels: int, width: int, guesses: int, guess_length: int) -> StepLayout:
    """Layout for `levels` window levels of `width` columns and `guesses` guesses of `guess_length` tokens.

    Window row (l, j) extends (l-1, j), or (0, j-1) on level 0: its chain is level-0 columns 0..j
    then column j of levels 1..l, a Jacobi trajectory, at depth l + j. Guess token k extends token
    k-1, or c for k = 0, at depth k + 1. The two branches never share a row beyond c.
    """
    parents: list[int] = [-1]
    depths: list[int] = [0]
    window_rows: list[list[int]] = [[0]]
    for j in range(1, width):
        window_rows[0].append(len(parents))
        parents.append(window_rows[0][j - 1])
        depths.append(j)
    for level in range(1, levels):
        row = []
        for j in range(width):
            row.append(len(parents))
            parents.append(window_rows[level - 1][j])
            depths.append(level + j)
        window_rows.append(row)
    guess_rows = []
    for _ in range(guesses):
        row = []
        for k in range(guess_length):
            row.append(len(parents))
            parents.append(row[k - 1] if k else 0)
            depths.append(k + 1)
        guess_rows.append(row)
    trajectory_rows = [
        window_rows[0][1 : j + 1] + [window_rows[lv][j] for lv in range(1, levels)] for j in range(width)
    ]
    return StepLayout(
        tuple(parents),
        tuple(depths),
        tuple(map(tuple, window_rows)),
        tuple(map(tuple, guess_rows)),
        tuple(map(tuple, trajectory_rows)),
    )


def visible_rows(parents: list[int] | tuple[int, ...]) -> list[list[int]]:
    """For each row, the rows of this step it may attend to (its ancestors and itself), ascending."""
    seen: list[list[int]] = []
    for i, parent in enumerate(parents):
        seen.append((seen[parent] if parent >= 0 else []) + [i])
    return seen
