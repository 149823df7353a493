"""The colours of Lookahead Lab, and the legends that explain them.

One colour-blind-safe palette (Okabe and Ito, 2008) with one meaning per colour across panels;
marks and borders (✓ ✗ + ~, dashed, dotted, double) repeat what colour says on every chip and legend
swatch, so no panel depends on telling two hues apart (MARKS, drawn by the CSS of `marks_css`).
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
BLACK = "#000000"  # Okabe and Ito's eighth colour: Medusa in the race and the bench
# The smallest text a chart or a drawing may hold, in CSS pixels as drawn: the page is read on a projector from the
# back row (assets/style.css floors its own text at the same 14 px, and the high-contrast view raises both to 16)
SMALLEST_TEXT = 14

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

# kind -> (the mark drawn before its chip, its border style): what tells the kinds of one legend apart
# without their colour (tests/test_visuals_palette.py checks them under three colour-blindness simulations).
MARKS: dict[str, tuple[str, str]] = {
    "guaranteed": ("", "solid"),
    "accepted": ("✓", "solid"),
    "bonus": ("+", "double"),
    "sampled": ("~", "solid"),
    "rejected": ("✗", "solid"),
    "mismatch": ("✗", "solid"),
    "unchecked": ("", "dashed"),
    "current": ("", "double"),
    "fill": ("", "dotted"),
    "earlier": ("", "solid"),
    "new": ("", "dashed"),
    "prompt": ("", "dotted"),
    "window": ("", "dashed"),
    "output": ("", "solid"),
}

# kind -> the pattern over its bars' colour in a chart (visuals.progress: '/' hatched, 'x' cross-hatched, '.' dotted)
PATTERNS: dict[str, str] = {"guaranteed": "", "accepted": "/", "bonus": "x", "sampled": "."}

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


def marked_label(kind: str) -> str:
    """A kind's label with its mark, as a chart's legend names it: '✓ accepted'."""
    return f"{MARKS[kind][0]} {KINDS[kind][1]}".strip()


# What a chip is drawn on (the theme's card background) and how much of its hue fills it (style.css: 22%)
CARD = "#F8FAFC"
CHIP_FILL = 0.22
BORDER_CONTRAST = 3.0  # WCAG 2.1 AA for a graphical object: a chip's border against its own fill


def rgb(hue: str) -> tuple[float, float, float]:
    return tuple(int(hue[i : i + 2], 16) / 255 for i in (1, 3, 5))


def hex_colour(channels) -> str:
    return "#" + "".join(f"{round(min(max(c, 0.0), 1.0) * 255):02X}" for c in channels)


def mixed(hue: str, other: str, share: float) -> str:
    """`share` of `hue` over `other`, as CSS's color-mix in sRGB draws it."""
    return hex_colour(share * a + (1 - share) * b for a, b in zip(rgb(hue), rgb(other), strict=True))


def luminance(hue: str) -> float:
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb(hue)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """The WCAG contrast ratio of two colours, from 1 to 21."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def chip_fill(hue: str) -> str:
    return mixed(hue, CARD, CHIP_FILL)


def border(hue: str) -> str:
    """`hue` darkened (mixed with black, 5% at a time) until it stands 3:1 against its own chip fill."""
    for black in range(0, 101, 5):
        shade = mixed(hue, "#000000", 1 - black / 100)
        if contrast(shade, chip_fill(hue)) >= BORDER_CONTRAST:
            return shade
    return "#000000"


def marks_css() -> str:
    """The CSS that draws each kind's MARKS and 3:1 border on its chips (`.ll-tok.ll-KIND`) and legend swatch."""
    rules = []
    for kind, (mark, style) in MARKS.items():
        both = f".ll-tok.ll-{kind}, .ll-swatch.ll-{kind}"
        width = " border-width: 3px;" if style == "double" else ""
        rules.append(f"{both} {{ border-color: {border(colour(kind))}; border-style: {style};{width} }}")
        if mark:
            rules.append(f'.ll-tok.ll-{kind}::before, .ll-swatch.ll-{kind}::before {{ content: "{mark}"; }}')
    return "\n".join(rules) + "\n"


def legend_item(label: str, meaning: str, hue: str | None = None, css: str = "") -> str:
    """One legend entry: a swatch filled with `hue` (marked as its chips are by the kind class in `css`), or
    drawn by the swatch class `css` alone."""
    style = f' style="--k:{hue}"' if hue else ""
    return (
        f'<span class="ll-legend-item" title="{escape(meaning)}">'
        f'<span class="ll-swatch{f" {css}" if css else ""}"{style}></span>{escape(label)}</span>'
    )


def legend_html(panel: str) -> str:
    """A one-line legend of the colours and outlines `panel` uses, each with its meaning as a tooltip."""
    items = [legend_item(KINDS[kind][1], KINDS[kind][2], KINDS[kind][0], f"ll-{kind}") for kind in LEGENDS[panel]]
    items += [legend_item(label, meaning, css=css) for css, label, meaning in OUTLINES.get(panel, ())]
    return f'<div class="ll-legend">{"".join(items)}</div>'
