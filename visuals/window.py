"""Panel 1, the 2D Jacobi window: levels by columns, each token coloured by where it came from.

Level l, column j guesses the token at position p + l + j. The levels are drawn bottom-up (level 0
at the bottom, this step's new level on top), so each column read upwards is an n-gram of
consecutive guesses; the columns harvested into the pool this step are outlined. Where each
level came from and which trajectory's cells verification accepted are read from the record.
"""

from __future__ import annotations

from lookahead_core.records import GuessSource, StepKind, StepRecord, WindowRecord

from .markup import scroll_region
from .tokens import chip


def origin_words(origin: int) -> str:
    return "the initial fill (random prompt tokens)" if origin == 0 else f"the Jacobi update of step {origin}"


def trajectory_route(column: int) -> str:
    """The cells of column `column`'s trajectory in words, e.g. "level 0 from column 1 to 3, then up column 3"."""
    if column == 0:
        return "up column 0 from level 1"
    along = "level 0 column 1" if column == 1 else f"level 0 from column 1 to {column}"
    return f"{along}, then up column {column}"


def winning_trajectory(record: StepRecord):
    """The candidate that won verification when it is one of the window's trajectories, else None."""
    verification = record.verification
    if verification is None or verification.winner is None:
        return None
    winner = verification.candidates[verification.winner]
    return winner if winner.source == GuessSource.TRAJECTORY else None


def accepted_cells(record: StepRecord) -> dict[tuple[int, int], int]:
    """The (level, column) cells whose tokens were accepted from the winning trajectory, each with its index."""
    winner = winning_trajectory(record)
    if winner is None:
        return {}
    return {(record.rows[row].lane, record.rows[row].index): k for k, row in enumerate(winner.rows[: winner.matched])}


def cell(vocab: dict, token: int, kind: str, tooltip: str, classes: list[str], on_path: bool = False) -> str:
    marked = chip(vocab, token, kind, tooltip, "ll-path" if on_path else "")
    return f'<td class="{" ".join(classes)}">{marked}</td>'


def harvest_classes(harvested: bool, top: bool, bottom: bool) -> list[str]:
    if not harvested:
        return []
    return ["ll-h"] + (["ll-h-top"] if top else []) + (["ll-h-bot"] if bottom else [])


def new_level_row(record: StepRecord, window: WindowRecord, vocab: dict) -> str:
    """The Jacobi update computed by this pass, drawn above the window's top level."""
    position, top = record.position, len(window.levels)
    harvested = bool(window.harvested)
    cells = "".join(
        cell(
            vocab,
            token,
            "new",
            f"new level {top}, column {j} · position {position + top + j} · "
            f"argmax of level {top - 1}, column {j} in this pass",
            harvest_classes(harvested, True, False),
        )
        for j, token in enumerate(window.update)
    )
    return (
        f'<tr><th class="ll-rowhead" title="the Jacobi update computed by this forward pass">'
        f"new level<small>this step</small></th>{cells}</tr>"
    )


def level_row(record: StepRecord, window: WindowRecord, vocab: dict, level: int, path: dict) -> str:
    """One level of the window before this step, coloured by the step that produced it."""
    origin = window.origins[level]
    kind = "fill" if origin == 0 else "earlier"
    row_cells = []
    for j, token in enumerate(window.levels[level]):
        is_current = level == 0 and j == 0
        words = "the current token c (last committed)" if is_current else origin_words(origin)
        tooltip = f"level {level}, column {j} · position {record.position + level + j} · from {words}"
        if (level, j) in path:
            tooltip += f" · accepted: token {path[level, j]} of the winning trajectory"
        classes = harvest_classes(bool(window.harvested), False, level == 0)
        row_cells.append(cell(vocab, token, "current" if is_current else kind, tooltip, classes, (level, j) in path))
    label = f"level {level}<small>{'fill' if origin == 0 else f'from step {origin}'}</small>"
    return (
        f'<tr><th class="ll-rowhead" title="level {level}: {origin_words(origin)}">{label}</th>'
        f"{''.join(row_cells)}</tr>"
    )


def window_html(record: StepRecord, vocab: dict[str, str], ngram: int) -> str:
    """The window before this step plus this step's new level, as a table; notes on warm-up, harvest, trajectory."""
    if record.kind == StepKind.PREFILL or record.window is None:
        return (
            '<p class="ll-empty">Step 0 is the prefill: the model reads the prompt. The window appears at '
            "step 1, its level 0 filled with random prompt tokens.</p>"
        )
    window = record.window
    top, width = len(window.levels), len(window.levels[0])
    header = "".join(
        f'<th title="column {j}: level l of this column guesses position {record.position}+l+{j}">{j}</th>'
        for j in range(width)
    )
    path = accepted_cells(record)
    rows = [new_level_row(record, window, vocab)] if window.fed else []
    rows += [level_row(record, window, vocab, level, path) for level in range(top - 1, -1, -1)]
    table = (
        f'<table class="ll-window"><thead><tr><th class="ll-corner">column</th>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return f"{scroll_region(table, 'the 2D Jacobi window')}{window_note(window, ngram)}{path_note(record)}"


def path_note(record: StepRecord) -> str:
    """Which trajectory the dashed cells belong to, when one won verification; empty otherwise."""
    winner = winning_trajectory(record)
    if winner is None:
        return ""
    matched, column = winner.matched, winner.lane
    text = (
        f"Dashed: the {matched} token{'s' if matched != 1 else ''} of column {column}'s Jacobi trajectory that "
        f"verification accepted. That trajectory runs {trajectory_route(column)}: a chain of rows the pass "
        "computed anyway, so checking it cost nothing."
    )
    return f'<p class="ll-note">{text}</p>'


def window_note(window: WindowRecord, ngram: int) -> str:
    levels = len(window.levels)
    if not window.fed:
        text = (
            "The plan left the window out of this step's forward pass (it would have cost more than it was "
            "measured to add): its levels wait, re-anchored on the new current token."
        )
    elif window.warming_up:
        text = (
            f"Warm-up: the window has {levels} of its N−1 = {ngram - 1} levels and gains one per step; "
            "columns are harvested once it is full."
        )
    else:
        text = (
            f"Read each outlined column from level 0 up to the new level: {ngram} consecutive guesses, an "
            f"n-gram keyed by its level-0 token. All {len(window.harvested)} went into the pool; then the window "
            "shifted down one level."
        )
    return f'<p class="ll-note">{text}</p>'
