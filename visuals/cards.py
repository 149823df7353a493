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
