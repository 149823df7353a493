"""Panel 1, the 2D Jacobi window: levels by columns, each token coloured by where it came from.

Level l, column j guesses the token at position p + l + j. The levels are drawn bottom-up (level 0
at the bottom, this step's new level on top), so each column read upwards is an n-gram of
consecutive guesses; the columns harvested into the pool this step are outlined. When one of
the window's own Jacobi trajectories won verification, its accepted cells are marked too.
"""

from __future__ import annotations

from .tokens import chip


def level_origin(step: int, levels: int, level: int) -> int:
    """The step whose Jacobi update produced `level` of the window before `step` (0: the initial fill).

    The window gains one level per step during warm-up and then shifts one level per step, so in
    both phases level l of a window with L levels before step s came from step s - L + l.
    """
    return step - levels + level


def origin_words(origin: int) -> str:
    return "the initial fill (random prompt tokens)" if origin == 0 else f"the Jacobi update of step {origin}"


def trajectory_cells(levels: int, column: int) -> list[tuple[int, int]]:
    """The (level, column) cells of column `column`'s Jacobi trajectory, in the order it is verified.

    Level 0 from column 1 rightwards to `column`, then up `column` through levels 1..levels-1: the
    chain of rows that column's top cell extends, so token k of it guesses position p + 1 + k.
    """
    return [(0, j) for j in range(1, column + 1)] + [(level, column) for level in range(1, levels)]


def trajectory_route(column: int) -> str:
    """The cells of column `column`'s trajectory in words, e.g. "level 0 from column 1 to 3, then up column 3"."""
    if column == 0:
        return "up column 0 from level 1"
    along = "level 0 column 1" if column == 1 else f"level 0 from column 1 to {column}"
    return f"{along}, then up column {column}"


def accepted_cells(record: dict) -> dict[tuple[int, int], int]:
    """The cells whose tokens were accepted from the winning trajectory, each with its index in it."""
    column = record.get("trajectory_winner")
    if column is None:
        return {}
    cells = trajectory_cells(len(record["window"]), column)
    return {place: k for k, place in enumerate(cells[: record["trajectory_matched"][column]])}


def cell(vocab: dict, token: int, kind: str, tooltip: str, classes: list[str], on_path: bool = False) -> str:
    marked = chip(vocab, token, kind, tooltip, "ll-path" if on_path else "")
    return f'<td class="{" ".join(classes)}">{marked}</td>'


def harvest_classes(harvested: bool, top: bool, bottom: bool) -> list[str]:
    if not harvested:
        return []
    return ["ll-h"] + (["ll-h-top"] if top else []) + (["ll-h-bot"] if bottom else [])


def new_level_row(record: dict, vocab: dict) -> str:
    """The Jacobi update computed by this pass, drawn above the window's top level."""
    position, top = record["position"], len(record["window"])
    harvested = bool(record["harvested"])
    cells = "".join(
        cell(
            vocab,
            token,
            "new",
            f"new level {top}, column {j} · position {position + top + j} · "
            f"argmax of level {top - 1}, column {j} in this pass",
            harvest_classes(harvested, True, False),
        )
        for j, token in enumerate(record["jacobi_update"])
    )
    return (
        f'<tr><th class="ll-rowhead" title="the Jacobi update computed by this forward pass">'
        f"new level<small>this step</small></th>{cells}</tr>"
    )


def level_row(record: dict, vocab: dict, level: int, path: dict[tuple[int, int], int]) -> str:
    """One level of the window before this step, coloured by the step that produced it."""
    position, top = record["position"], len(record["window"])
    origin = level_origin(record["step"], top, level)
    kind = "fill" if origin == 0 else "earlier"
    row_cells = []
    for j, token in enumerate(record["window"][level]):
        is_current = level == 0 and j == 0
        words = "the current token c (last committed)" if is_current else origin_words(origin)
        tooltip = f"level {level}, column {j} · position {position + level + j} · from {words}"
        if (level, j) in path:
            tooltip += f" · accepted: token {path[level, j]} of the winning trajectory"
        classes = harvest_classes(bool(record["harvested"]), False, level == 0)
        row_cells.append(cell(vocab, token, "current" if is_current else kind, tooltip, classes, (level, j) in path))
    label = f"level {level}<small>{'fill' if origin == 0 else f'from step {origin}'}</small>"
    return (
        f'<tr><th class="ll-rowhead" title="level {level}: {origin_words(origin)}">{label}</th>'
        f"{''.join(row_cells)}</tr>"
    )


def window_html(record: dict, vocab: dict[str, str], ngram: int) -> str:
    """The window before this step plus this step's new level, as a table; notes on warm-up, harvest, trajectory."""
    if record.get("kind") == "prefill":
        return (
            '<p class="ll-empty">Step 0 is the prefill: the model reads the prompt. The window appears at '
            "step 1, its level 0 filled with random prompt tokens.</p>"
        )
    position, top, width = record["position"], len(record["window"]), len(record["window"][0])
    header = "".join(
        f'<th title="column {j}: level l of this column guesses position {position}+l+{j}">{j}</th>'
        for j in range(width)
    )
    path = accepted_cells(record)
    rows = [new_level_row(record, vocab)] + [level_row(record, vocab, level, path) for level in range(top - 1, -1, -1)]
    table = (
        f'<table class="ll-window"><thead><tr><th class="ll-corner">column</th>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return f'<div class="ll-scroll">{table}</div>{window_note(record, ngram, top, width)}{path_note(record)}'


def path_note(record: dict) -> str:
    """Which trajectory the dashed cells belong to, when one won verification; empty otherwise."""
    column = record.get("trajectory_winner")
    if column is None:
        return ""
    matched = record["trajectory_matched"][column]
    text = (
        f"Dashed: the {matched} token{'s' if matched != 1 else ''} of column {column}'s Jacobi trajectory that "
        f"verification accepted. That trajectory runs {trajectory_route(column)}: a chain of rows the pass "
        "computed anyway, so checking it cost nothing."
    )
    return f'<p class="ll-note">{text}</p>'


def window_note(record: dict, ngram: int, levels: int, width: int) -> str:
    if record["warming_up"]:
        text = (
            f"Warm-up: the window has {levels} of its N−1 = {ngram - 1} levels and gains one per step; "
            "columns are harvested once it is full."
        )
    else:
        text = (
            f"Read each outlined column from level 0 up to the new level: {ngram} consecutive guesses, an "
            f"n-gram keyed by its level-0 token. All {width} went into the pool; then the window shifted down "
            "one level."
        )
    return f'<p class="ll-note">{text}</p>'
