"""How each method and peer looks wherever it is drawn: the method table's `Look` (records.METHODS, records.PEERS),
its hue's name read as the palette's colour. The race's lanes, the bench's bars and the tune map's markers all ask
`look`, so a method is given its look where it is specified, in its table entry.

Hues are the Okabe-Ito palette's (palette.py); two entrants of one family share a hue and the second is told apart
by its hatching and its name, never by colour alone.
"""

from __future__ import annotations

from dataclasses import replace

from lookahead_core.records import BenchMethod, Look, Method, entrant_look

from . import palette


def look(method: Method | BenchMethod | str) -> Look:
    """The look of `method` (an engine method, a bench entrant or its value), its hue as the palette's colour."""
    entry = entrant_look(method)
    return replace(entry, hue=getattr(palette, entry.hue.upper()))
