"""The panels' cards: the title, hint and legend above each per-step panel, shared by the app and the export.

The app lays the cards out with Gradio; the standalone export (visuals/export.py) with plain HTML.
Both show the same heads over the same panel HTML (replay.panels), so a step reads the same in each.
"""

from __future__ import annotations

from .markup import escape
from .palette import LEGENDS, legend_html

PANEL_TITLES = {
    "window": ("1 · The 2D Jacobi window", "levels × columns; hover a token for its id and position"),
    "pool": (
        "2 · The n-gram pool, Medusa's heads, or suffix decoding's tree",
        "entries under the current key; Medusa: each head's guesses; suffix: what followed the longest match",
    ),
    "verification": ("3 · Verification", "each guess and window trajectory against the model's own predictions"),
    "output": ("4 · The output so far", "each token coloured by how it was produced"),
    "mask": ("5 · Attention mask and position ids", "the real mask of this forward pass"),
    "progress": ("6 · Progress against greedy", "the same output, in fewer forward passes"),
}
# The cards in reading order, two to a row: (wider, narrower)
CARD_ROWS = (("window", "pool"), ("verification", "output"), ("mask", "progress"))
# Panels whose colours only lookahead's run uses: their legends are drawn in the panel (replay.panels), so a
# Medusa or a suffix run's card does not explain the colours of a pool it does not have.
LEGEND_IN_PANEL = ("window", "pool")


def card_head_html(name: str) -> str:
    """A card's title with its hint, and the legend of the colours its panel uses (for every run: the window's
    and the pool's come with their panels, LEGEND_IN_PANEL)."""
    title, hint = PANEL_TITLES[name]
    legend = legend_html(name) if name in LEGENDS and name not in LEGEND_IN_PANEL else ""
    return f"<h2>{escape(title)}<small>{escape(hint)}</small></h2>{legend}"


# The terms the panels, the summary and the race use without stopping to explain them, one line each: shown under
# the run's summary (whose own words stay as they are), where a student reading either finds them.
TERMS = (
    ("c", "the current token: the last one committed, fed first in every step"),
    ("W, N, G", "lookahead's window: W columns, n-grams of N tokens (N−1 levels), at most G guesses verified a step"),
    (
        "k",
        "the tokens a method proposes a step, all checked in one pass of the model: copied after a match (prompt "
        "lookup; its N is the longest match it looks for) or written by a draft (a draft model, an EAGLE layer)",
    ),
    ("row", "one token fed to a step's forward pass: a 64-row step feeds 64 tokens in one pass"),
    ("guess N", "the Nth path verification tried this step; the pool lists its entries by the same numbers"),
    ("P from row N", "when sampling: the model's probabilities for a position, computed at row N of the pass"),
)


def terms_html() -> str:
    """The glossary line: each term in bold with what it means."""
    items = "".join(f"<li><b>{escape(term)}</b>: {escape(words)}</li>" for term, words in TERMS)
    return f'<details class="ll-terms" open><summary>Terms on this page</summary><ul>{items}</ul></details>'
