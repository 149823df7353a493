"""How each method and peer looks wherever it is drawn: the method table's `Look` (records.METHODS, records.PEERS),
its hue's name read as the palette's colour. The race's lanes, the bench's bars and the tune map's markers all ask
`look`, so a method is given its look where it is specified, in its table entry.

Hues are the Okabe-Ito palette's (palette.py); two entrants of one family share a hue and the second is told apart
by its hatching and its name, never by colour alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookahead_core.records import BenchMethod, Method, entrant_look

from . import palette


@dataclass(frozen=True)
class Look:
    """An entrant's look as drawn: its hue as a colour, its hatching ("": none), its marker and its line's dash."""

    hue: str
    pattern: str = ""
    marker: str = "circle"
    dash: str = "solid"


def look(method: Method | BenchMethod | str) -> Look:
    """The look of `method` (an engine method, a bench entrant or its value)."""
    entry = entrant_look(method)
    return Look(getattr(palette, entry.hue.upper()), entry.pattern, entry.marker, entry.dash)
