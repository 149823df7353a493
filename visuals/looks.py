"""How each method and peer looks wherever it is drawn: one entry per bench entrant (BenchMethod, whose values
include every Method), read by the race's lanes, the bench's bars and the tune map's markers alike, so a new
method is given its look in one place.

Hues are the Okabe-Ito palette's (palette.py); two entrants of one family share a hue and the second is told apart
by its hatching and its name, never by colour alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookahead_core.records import BenchMethod, Method

from .palette import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION


@dataclass(frozen=True)
class Look:
    """An entrant's hue; its hatching where another entrant has its hue ("": none); its marker on the tune map."""

    hue: str
    pattern: str = ""
    marker: str = "circle"


LOOKS: dict[BenchMethod, Look] = {
    BenchMethod.GREEDY: Look(BLUE),
    BenchMethod.LOOKAHEAD: Look(SKY, marker="circle"),
    BenchMethod.PROMPT_LOOKUP: Look(GREEN, marker="square"),
    BenchMethod.SPECULATIVE: Look(PURPLE, marker="diamond"),
    BenchMethod.MEDUSA: Look(BLACK, marker="triangle-up"),
    BenchMethod.EAGLE: Look(PURPLE, pattern="/"),  # speculative decoding too, its draft an EAGLE layer
    BenchMethod.SUFFIX: Look(VERMILLION, marker="star"),
    BenchMethod.HF_GREEDY: Look(GREY),
    BenchMethod.HF_STATIC: Look(GREY, pattern="x"),  # plain generate too, with a static cache
    BenchMethod.HF_PROMPT_LOOKUP: Look(ORANGE),
    BenchMethod.HF_ASSISTED: Look(PURPLE, pattern="x"),  # speculative decoding too, by transformers, the same draft
}


def look(method: Method | BenchMethod | str) -> Look:
    """The look of `method` (an engine method, a bench entrant or its value)."""
    return LOOKS[BenchMethod(method)]
