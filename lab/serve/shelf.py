"""Recorded runs kept on the server for a while, so that a link can name one: `?run=ID&step=K` (and races, so that
a class can show its students the teacher's: lab.serve.classes).

A visitor's run lives in their session; a link must outlive it and open in another browser. The
shelf keeps each run gzipped under an unguessable id for `seconds` after it was put, and at most
`capacity` runs (the oldest goes first), so memory stays bounded however many visitors record.
"""

from __future__ import annotations

import gzip
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from lookahead_core.records import Document, Run


class Shelf:
    """Runs (or other records of `kind`) by id, each kept `seconds` after it was put; at most `capacity` of them.
    Thread-safe."""

    def __init__(
        self, capacity: int, seconds: float, clock: Callable[[], float] = time.monotonic, kind: type[Document] = Run
    ) -> None:
        self.capacity, self.seconds, self._clock, self._kind = capacity, seconds, clock, kind
        self._runs: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, run: Document) -> str:
        """Keep `run`; its id (12 URL-safe characters, 72 random bits: not guessable from another's)."""
        key = secrets.token_urlsafe(9)
        packed = gzip.compress(run.to_json().encode(), compresslevel=6)
        with self._lock:
            self._runs[key] = (self._clock(), packed)
            self._forget_old()
        return key

    def get(self, key) -> Document | None:
        """The run kept under `key`, or None when it expired, was pushed out, or never was."""
        with self._lock:
            self._forget_old()
            kept = self._runs.get(key) if isinstance(key, str) else None
        return self._kind.from_json(gzip.decompress(kept[1])) if kept is not None else None

    def _forget_old(self) -> None:
        oldest = self._clock() - self.seconds
        while self._runs and (len(self._runs) > self.capacity or next(iter(self._runs.values()))[0] < oldest):
            self._runs.popitem(last=False)
