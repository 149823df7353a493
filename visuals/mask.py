"""Panel 5, the attention mask and position ids the engine built for this step, as a small SVG grid.

Each row is one token fed to the forward pass; it sees the committed prefix plus the rows the
engine recorded it may attend to (`InputRow.sees`: the mask it passed): the window rows see
their Jacobi trajectory, guess tokens see c and their own earlier tokens, and the two branches
never see each other. A model with sliding-window layers gets a second grid, the mask those
layers got (`StepRecord.sliding`): each row sees only the last `window` positions, so the start
of the prefix (and, in a deep window, far ancestors) drops out.
"""

from __future__ import annotations

from lookahead_core.records import Branch, StepKind, StepRecord

from .markup import escape, scroll_region
from .palette import SMALLEST_TEXT, colour
from .tokens import token_text, visible

# A detailed grid is drawn at its own size (one unit a CSS pixel, its card scrolls): scaled to fit a card, its 10-unit
# labels were drawn at 7 px (5 px on a phone). A larger grid scales to fit and holds no text at all: its branches
# are named by the card's legend, and its rows are too many to label.
CELL = 20
LABEL_WIDTH = 124
HEAD_HEIGHT = 40
PREFIX_CELLS = 2
DETAILED_ROWS = 80  # above this many rows, per-row labels would be unreadable
# A row is a rectangle per run of neighbouring columns it sees: a few for any mask the engine builds (the
# widest step its budget allows, 441 rows, takes about 2,000). A crafted record's rows can see every other
# column; past this many rectangles the rows that follow are not drawn, and the note says so.
MOST_RECTANGLES = 20_000


def runs(columns: list[int]) -> list[tuple[int, int]]:
    """Ascending column indices as (first, length) runs of neighbours, so a row is a few rectangles."""
    spans: list[tuple[int, int]] = []
    for col in columns:
        if spans and spans[-1][0] + spans[-1][1] == col:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        else:
            spans.append((col, 1))
    return spans


def row_roles(record: StepRecord) -> list[tuple[str, str, str]]:
    """(branch colour kind, short label, group) for each row in feeding order, from the rows' recorded places."""
    roles = []
    for row in record.rows:
        if row.branch == Branch.CURRENT:
            roles.append(("current", "c", "c"))
        elif row.branch == Branch.WINDOW:
            roles.append(("lookahead", f"L{row.lane}:{row.index}", f"level {row.lane}"))
        elif row.branch == Branch.DRAFT:
            roles.append(("verification", f"D:{row.index}", "draft"))
        elif row.branch == Branch.HEADS:
            roles.append(("verification", f"H{row.index + 1}.{row.lane + 1}", "tree"))
        elif row.branch == Branch.SUFFIX:  # suffix decoding's tree: depth, then rank among siblings
            roles.append(("verification", f"S{row.index + 1}.{row.lane + 1}", "tree"))
        else:
            roles.append(("verification", f"G{row.lane + 1}:{row.index}", f"guess {row.lane + 1}"))
    return roles


def group_starts(roles: list[tuple[str, str, str]]) -> list[int]:
    return [i for i in range(1, len(roles)) if roles[i][2] != roles[i - 1][2]]


def branch_spans(roles: list[tuple[str, str, str]]) -> list[tuple[str, int, int]]:
    """(branch, first row, last row + 1) for each run of rows of one branch."""
    spans: list[tuple[str, int, int]] = []
    for i, (branch, _, _) in enumerate(roles):
        if spans and spans[-1][0] == branch:
            spans[-1] = (branch, spans[-1][1], i + 1)
        else:
            spans.append((branch, i, i + 1))
    return spans


def describe_row(record: StepRecord, vocab: dict, roles: list, row: int) -> str:
    token = escape(visible(token_text(vocab, record.rows[row].token)))
    return f"row {row} {roles[row][1]} ‘{token}’ at position {record.rows[row].position}"


def prefix_svg(record: StepRecord, n: int, sliding: bool) -> list[str]:
    """The prefix column: whole for full layers; on sliding layers, per row, the part within the window.

    A row that sees the whole prefix gets both cells, one that sees only its end the right cell,
    one that sees none of it (the window ends inside this step) no cell. `n` rows are drawn.
    """
    p = record.position
    if not sliding:
        return [
            f'<rect x="{LABEL_WIDTH}" y="{HEAD_HEIGHT}" width="{PREFIX_CELLS * CELL}" height="{n * CELL}" '
            f'class="ll-mask-prefix"><title>every row sees the committed prefix: {p} tokens</title></rect>'
        ]
    parts = []
    for row, first in enumerate(record.sliding.prefix_from[:n]):
        if first >= p:
            continue
        cells = PREFIX_CELLS if first == 0 else 1
        x = LABEL_WIDTH + (PREFIX_CELLS - cells) * CELL
        parts.append(
            f'<rect x="{x}" y="{HEAD_HEIGHT + row * CELL}" width="{cells * CELL - 1}" height="{CELL - 1}" '
            f'class="ll-mask-prefix"><title>row {row} sees prefix positions {first} to {p - 1}</title></rect>'
        )
    return parts


def header_svg(record: StepRecord, roles: list, grid_x: int, font: int, detailed: bool, sliding: bool) -> list[str]:
    """The prefix column, a coloured bar and a name over each branch, and the label columns' titles."""
    n = len(roles)
    parts = [
        f'<rect x="{grid_x}" y="{HEAD_HEIGHT}" width="{n * CELL}" height="{n * CELL}" class="ll-mask-bg"/>',
        *prefix_svg(record, n, sliding),
    ]
    if detailed:
        parts.append(
            f'<text x="{LABEL_WIDTH + CELL}" y="{HEAD_HEIGHT - 6}" font-size="{font}" '
            'text-anchor="middle">prefix</text>'
        )
    for branch, first, last in branch_spans(roles):
        x, span = grid_x + first * CELL, (last - first) * CELL
        name = {"current": "c", "lookahead": "window", "verification": "guesses"}[branch]
        parts.append(f'<rect x="{x}" y="{HEAD_HEIGHT - 24}" width="{span}" height="4" fill="{colour(branch)}"/>')
        if detailed and (span >= 3 * font or branch == "current"):
            parts.append(
                f'<text x="{x + span / 2}" y="{HEAD_HEIGHT - 6}" font-size="{font}" text-anchor="middle">{name}</text>'
            )
    if detailed:
        parts.append(f'<text x="4" y="{HEAD_HEIGHT - 6}" font-size="{font}" class="ll-dimtext">row</text>')
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{HEAD_HEIGHT - 6}" font-size="{font}" text-anchor="end" '
            'class="ll-dimtext">position</text>'
        )
    return parts


def rows_svg(
    record: StepRecord, vocab: dict, roles: list, grid_x: int, font: int, detailed: bool, sliding: bool
) -> list[str]:
    """One group per row: its label and position id, and a rectangle per run of columns it sees."""
    parts = []
    seen_rows = record.sliding.sees if sliding else [r.sees for r in record.rows]
    for row, seen in enumerate(seen_rows[: len(roles)]):
        seen = [col for col in seen if col < len(roles)]
        y = HEAD_HEIGHT + row * CELL
        sees = " sees the prefix and " + ", ".join(roles[col][1] for col in seen) if detailed else ""
        tip = f"<title>{describe_row(record, vocab, roles, row)}{escape(sees)}</title>"
        cells = "".join(
            f'<rect x="{grid_x + first * CELL}" y="{y}" width="{length * CELL - 1}" height="{CELL - 1}"/>'
            for first, length in runs(seen)
        )
        label = ""
        if detailed:
            label = (
                f'<text x="4" y="{y + CELL - 3}" font-size="{font}">{escape(roles[row][1])}</text>'
                f'<text x="{LABEL_WIDTH - 6}" y="{y + CELL - 3}" font-size="{font}" text-anchor="end" '
                f'class="ll-pos">{record.rows[row].position}</text>'
            )
        parts.append(f'<g fill="{colour(roles[row][0])}">{tip}{label}{cells}</g>')
    return parts


def separators_svg(roles: list, grid_x: int) -> list[str]:
    """Thin lines between levels and between guesses, across and down."""
    end = len(roles) * CELL
    parts = []
    for start in group_starts(roles):
        offset = start * CELL
        parts.append(
            f'<line x1="{grid_x + offset}" y1="{HEAD_HEIGHT}" x2="{grid_x + offset}" '
            f'y2="{HEAD_HEIGHT + end}" class="ll-sep"/>'
        )
        parts.append(
            f'<line x1="{grid_x}" y1="{HEAD_HEIGHT + offset}" x2="{grid_x + end}" '
            f'y2="{HEAD_HEIGHT + offset}" class="ll-sep"/>'
        )
    return parts


def drawn_rows(record: StepRecord) -> int:
    """How many leading rows (and columns) of the step's masks fit in MOST_RECTANGLES rectangles."""
    masks = [[row.sees for row in record.rows]] + ([record.sliding.sees] if record.sliding is not None else [])
    spent = 0
    for row in range(len(record.rows)):
        spent += sum(len(runs(seen[row])) for seen in masks)
        if spent > MOST_RECTANGLES:
            return row
    return len(record.rows)


def mask_svg(record: StepRecord, vocab: dict[str, str], rows: int, sliding: bool = False) -> str:
    """The grid of the mask the full-attention layers got, or with `sliding` the sliding-window layers' mask:
    its first `rows` rows and columns."""
    roles = row_roles(record)[:rows]
    n = len(roles)
    detailed = n <= DETAILED_ROWS
    font = SMALLEST_TEXT
    grid_x = LABEL_WIDTH + PREFIX_CELLS * CELL + 4
    width, height = grid_x + n * CELL + 2, HEAD_HEIGHT + n * CELL + 2
    parts = header_svg(record, roles, grid_x, font, detailed, sliding)
    parts += rows_svg(record, vocab, roles, grid_x, font, detailed, sliding)
    parts += separators_svg(roles, grid_x)
    layers = f" on the sliding-window layers (window {record.sliding.window})" if sliding else ""
    branches = [kind for kind, _, _ in roles]
    words = (
        f"attention mask of step {record.step}{layers}: {n} rows: {branches.count('current')} current token, "
        f"{branches.count('lookahead')} lookahead-branch rows, "
        f"{branches.count('verification')} verification-branch rows"
    )
    drawn = f'class="ll-mask ll-mask-natural" width="{width}" height="{height}"' if detailed else 'class="ll-mask"'
    return (
        f'<svg {drawn} viewBox="0 0 {width} {height}" style="max-width:{width}px" role="img" '
        f'aria-label="{escape(words)}">{"".join(parts)}</svg>'
    )


def mask_html(record: StepRecord, vocab: dict[str, str]) -> str:
    """The mask grid with the row labels and position ids, and a sentence on how to read it."""
    if record.kind == StepKind.PREFILL or not record.rows:
        return (
            '<p class="ll-empty">The prefill uses the ordinary causal mask: each prompt token sees the tokens '
            "before it. The tree-shaped mask starts at step 1.</p>"
        )
    p = record.position
    note = (
        f"{record.tokens_fed} rows fed in one forward pass. A coloured cell means the row may attend to that "
        f"column; every row also sees the {p}-token committed prefix. Position ids: c at {p}, window level l "
        f"column j at {p}+l+j, guess token k at {p + 1}+k, so several rows share a position: they are rival "
        "guesses for it."
    )
    shown = drawn_rows(record)
    if shown < len(record.rows):
        note += f" Only the first {shown} of the {len(record.rows)} rows and columns are drawn (too many to draw)."
    full = f'{scroll_region(mask_svg(record, vocab, shown), "attention mask")}<p class="ll-note">{escape(note)}</p>'
    if record.sliding is None:
        return full
    s = record.sliding
    cut_prefix = sum(first > 0 for first in s.prefix_from)
    cut_rows = sum(seen != row.sees for seen, row in zip(s.sees, record.rows, strict=True))
    sliding_note = (
        f"The model's {s.layers} sliding-window layers got this mask instead: a row at position t sees only "
        f"positions after t - {s.window}. Here {cut_prefix} of the {len(s.prefix_from)} rows see only the end "
        f"of the prefix (one cell in the prefix column) and {cut_rows} lose ancestors of this step. The KV "
        "cache keeps every position: the mask alone hides them."
    )
    return (
        f'<p class="ll-mask-title">Full-attention layers</p>{full}'
        f'<p class="ll-mask-title">Sliding-window layers ({s.layers} of them, window {s.window})</p>'
        f"{scroll_region(mask_svg(record, vocab, shown, sliding=True), 'sliding-window attention mask')}"
        f'<p class="ll-note">{escape(sliding_note)}</p>'
    )
