"""The colours of Lookahead Lab, and the legends that explain them.

One colour-blind-safe palette (Okabe and Ito, 2008) with one meaning per colour across panels;
shapes (✓ ✗ ★) repeat what colour says, so no panel depends on telling two hues apart.
"""

from __future__ import annotations

from .markup import escape

BLUE = "#0072B2"
SKY = "#56B4E9"
GREEN = "#009E73"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
YELLOW = "#F0E442"
GREY = "#9A9A9A"

# kind -> (colour, label, what it means)
KINDS: dict[str, tuple[str, str, str]] = {
    "guaranteed": (
        BLUE,
        "guaranteed",
        "the next token from the current token's row: exactly what greedy decoding emits",
    ),
    "accepted": (GREEN, "accepted", "a guess token the model's own prediction confirmed"),
    "bonus": (ORANGE, "bonus", "the model's prediction after the last accepted token, free in the same pass"),
    "sampled": (BLUE, "sampled", "drawn from P, or from what remained of P after every candidate here was rejected"),
    "rejected": (VERMILLION, "rejected", "a candidate token whose draw fell at or above its probability"),
    "mismatch": (VERMILLION, "first mismatch", "the first guess token that differs from the model's prediction"),
    "unchecked": (GREY, "not checked", "after a mismatch nothing more of this guess can be accepted"),
    "current": (BLUE, "current token c", "the last committed token: its row gives the guaranteed next token"),
    "fill": (YELLOW, "initial fill", "level 0 starts as random prompt tokens"),
    "earlier": (SKY, "earlier Jacobi update", "a level produced by the Jacobi update of an earlier step"),
    "new": (PURPLE, "this step's new level", "the Jacobi update: argmax of the top level's rows in this pass"),
    "prompt": (YELLOW, "from the prompt", "an n-gram of the prompt, put in the pool before decoding"),
    "window": (SKY, "from the window", "an n-gram harvested from a column of the Jacobi window"),
    "output": (BLUE, "from the output", "an n-gram of the tokens committed so far"),
    "lookahead": (SKY, "lookahead branch", "rows of the Jacobi window"),
    "verification": (GREEN, "verification branch", "rows of the guesses from the n-gram pool"),
}

LEGENDS: dict[str, tuple[str, ...]] = {
    "window": ("current", "fill", "earlier", "new"),
    "pool": ("prompt", "window", "output"),
    "verification": ("accepted", "mismatch", "unchecked", "bonus"),
    "output": ("guaranteed", "accepted", "bonus", "sampled"),
    "mask": ("current", "lookahead", "verification"),
}

# panel -> the outlines it draws around tokens, as (swatch class, label, what it means)
OUTLINES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "window": (
        ("ll-swatch-outline", "harvested column", "each outlined column became an n-gram in the pool"),
        (
            "ll-swatch-path",
            "accepted trajectory",
            "cells of the window's own Jacobi trajectory whose tokens verification accepted this step",
        ),
    ),
}


def colour(kind: str) -> str:
    return KINDS[kind][0]


def legend_item(label: str, meaning: str, hue: str | None = None, css: str = "") -> str:
    """One legend entry: a swatch filled with `hue`, or drawn by the swatch class `css`."""
    style = f' style="--k:{hue}"' if hue else ""
    return (
        f'<span class="ll-legend-item" title="{escape(meaning)}">'
        f'<span class="ll-swatch{f" {css}" if css else ""}"{style}></span>{escape(label)}</span>'
    )


def legend_html(panel: str) -> str:
    """A one-line legend of the colours and outlines `panel` uses, each with its meaning as a tooltip."""
    items = [legend_item(label, meaning, hue) for hue, label, meaning in (KINDS[kind] for kind in LEGENDS[panel])]
    items += [legend_item(label, meaning, css=css) for css, label, meaning in OUTLINES.get(panel, ())]
    return f'<div class="ll-legend">{"".join(items)}</div>'
