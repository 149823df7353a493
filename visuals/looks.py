"""How each method and peer looks wherever it is drawn: one entry per bench entrant (BenchMethod, whose values
include every Method), read by the race's lanes, the bench's bars and the tune map's markers alike, so a new
method is given its look in one place.

Hues are the Okabe-Ito palette's (palette.py); two entrants of one family share a hue and the second is told apart
by its hatching and its name, never by colour alone. Every engine method also has a marker and a line dash of its
own, so that the race's lines and points are told apart by shape as well as hue.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookahead_core.records import BenchMethod, Method

from .palette import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION


@dataclass(frozen=True)
class Look:
    """An entrant's hue; its hatching where another entrant has its hue ("": none); its marker (the tune map's, the
    race's points and line ends) and its line's dash (Plotly's names)."""

    hue: str
    pattern: str = ""
    marker: str = "circle"
    dash: str = "solid"


LOOKS: dict[BenchMethod, Look] = {
    BenchMethod.GREEDY: Look(BLUE, marker="x"),
    BenchMethod.LOOKAHEAD: Look(SKY, marker="circle", dash="dash"),
    BenchMethod.PROMPT_LOOKUP: Look(GREEN, marker="square", dash="dot"),
    BenchMethod.SPECULATIVE: Look(PURPLE, marker="diamond", dash="dashdot"),
    BenchMethod.MEDUSA: Look(BLACK, marker="triangle-up", dash="longdash"),
    # speculative decoding too, its draft an EAGLE layer (a race runs one of the two)
    BenchMethod.EAGLE: Look(PURPLE, pattern="/", marker="triangle-down", dash="dashdot"),
    BenchMethod.SUFFIX: Look(VERMILLION, marker="star", dash="longdashdot"),
    BenchMethod.HF_GREEDY: Look(GREY),
    BenchMethod.HF_STATIC: Look(GREY, pattern="x"),  # plain generate too, with a static cache
    BenchMethod.HF_PROMPT_LOOKUP: Look(ORANGE),
    BenchMethod.HF_ASSISTED: Look(PURPLE, pattern="x"),  # speculative decoding too, by transformers, the same draft
}


def look(method: Method | BenchMethod | str) -> Look:
    """The look of `method` (an engine method, a bench entrant or its value)."""
    return LOOKS[BenchMethod(method)]
