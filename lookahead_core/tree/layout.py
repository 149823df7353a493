"""The input of one step, laid out as a token tree: the geometry of its branches, the mask and positions.

Row 0 is the current token c. Every other row names its parent: the token before it in the
chain it belongs to. A row attends to the committed prefix, itself and its ancestors, and sits
at position p + depth. So parents alone define the attention mask and the position ids. A
branch (the Jacobi window, a guess) is laid out in local row numbers, -1 standing for c; a
step's layout is its branches side by side. Pure Python, shared by the engine's parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

CURRENT = -1  # a branch row whose parent is c


@dataclass(frozen=True)
class StepLayout:
    """Structure of one step's input: parents[i] is the row that row i extends (-1 for c).

    `seen[i]` lists the rows of this step row i may attend to: its ancestors and itself, ascending.
    """

    parents: tuple[int, ...]
    depths: tuple[int, ...]
    seen: tuple[tuple[int, ...], ...]

    @property
    def size(self) -> int:
        return len(self.parents)


@lru_cache(maxsize=256)
def tree_layout(parents: tuple[int, ...]) -> StepLayout:
    """The layout of a tree given each row's parent (row 0, c, has none); depths and visibility follow.

    Cached: a step of the same shape reuses its layout, and so its mask.
    """
    depths: list[int] = []
    for parent in parents:
        depths.append(depths[parent] + 1 if parent >= 0 else 0)
    return StepLayout(parents, tuple(depths), tuple(map(tuple, visible_rows(parents))))


def chain_layout(size: int) -> StepLayout:
    """c followed by `size - 1` tokens, each extending the one before: a plain causal chain."""
    return tree_layout((-1, *range(size - 1)))


@dataclass(frozen=True)
class WindowGeometry:
    """The window's rows in local numbers: level 0 columns 1.., then each level above, W columns each.

    `places[i]` is row i's (level, column); `trajectories[j]` the rows of column j's Jacobi
    trajectory (level-0 columns 1..j, then column j of levels 1..), the chain its top row extends.
    `rows[l][j]` is the row of (level l, column j), CURRENT for (0, 0), which is c itself.
    """

    parents: tuple[int, ...]
    places: tuple[tuple[int, int], ...]
    rows: tuple[tuple[int, ...], ...]
    trajectories: tuple[tuple[int, ...], ...]


@lru_cache(maxsize=256)
def window_geometry(levels: int, width: int) -> WindowGeometry:
    """Row (l, j) extends (l-1, j), or (0, j-1) on level 0: its chain is a Jacobi trajectory at depth l + j."""
    rows = [[CURRENT]]
    parents: list[int] = []
    places: list[tuple[int, int]] = []
    for level in range(levels):
        for column in range(1 if level == 0 else 0, width):
            parents.append(rows[0][column - 1] if level == 0 else rows[level - 1][column])
            places.append((level, column))
            if level == len(rows):
                rows.append([])
            rows[level].append(len(parents) - 1)
    trajectories = tuple(
        tuple(rows[0][1 : column + 1]) + tuple(rows[level][column] for level in range(1, levels))
        for column in range(width)
    )
    return WindowGeometry(tuple(parents), tuple(places), tuple(map(tuple, rows)), trajectories)


def visible_rows(parents: list[int] | tuple[int, ...]) -> list[list[int]]:
    """For each row, the rows of this step it may attend to (its ancestors and itself), ascending."""
    seen: list[list[int]] = []
    for i, parent in enumerate(parents):
        seen.append((seen[parent] if parent >= 0 else []) + [i])
    return seen
