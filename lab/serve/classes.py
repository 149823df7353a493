"""Classes: a teacher's page drives what every student's page of the class shows.

A class is opened with two unguessable strings: its id, which the students' link carries (`?class=ID`), and
its secret, which only the driving link carries (`&key=SECRET`). Only a page holding the secret can change the
class's board (what it shows: a run kept on the shelf or a preset's example at a step, and the last race);
students read the board and follow it. A class ends by itself `seconds` after its driving page last changed
anything, and at most `capacity` are kept (the one idle longest goes first), so memory stays bounded.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Shown:
    """What the replay shows: a run kept on the shelf (`run`, its id) or else a preset's example (`preset`), at
    `step`."""

    run: str = ""
    preset: str = ""
    step: int = 0

    def same_run(self, other: Shown | None) -> bool:
        """Whether `other` shows the same run or example (at any step)."""
        return other is not None and (other.run, other.preset) == (self.run, self.preset)


@dataclass(frozen=True)
class Board:
    """What a class shows now: the replay (None until the driving page shows something) and the id of the last race
    shown ("" for none); `version` grows by one with each change, so a follower asks only "newer than mine?"."""

    version: int = 0
    shown: Shown | None = None
    race: str = ""


@dataclass
class _Class:
    secret: bytes
    board: Board
    touched: float  # when the driving page last opened or changed the class


class Classes:
    """Open classes by id, each kept `seconds` after its driving page last changed it; at most `capacity` of them.
    Thread-safe."""

    def __init__(self, capacity: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.seconds, self._clock = capacity, seconds, clock
        self._classes: OrderedDict[str, _Class] = OrderedDict()  # the longest idle first
        self._lock = threading.Lock()

    def open_class(self) -> tuple[str, str]:
        """A new class: its id (12 URL-safe characters, 72 random bits) and its secret (32 characters, 192 bits)."""
        class_id, secret = secrets.token_urlsafe(9), secrets.token_urlsafe(24)
        with self._lock:
            self._classes[class_id] = _Class(secret.encode(), Board(), self._clock())
            self._forget_old()
        return class_id, secret

    def drives(self, class_id, secret) -> bool:
        """Whether `secret` drives the open class `class_id` (compared in constant time)."""
        with self._lock:
            self._forget_old()
            return self._driven(class_id, secret) is not None

    def show(self, class_id, secret, shown: Shown) -> bool:
        """The class's replay set to `shown`, if `secret` drives it; whether it does."""
        return self._change(class_id, secret, shown=shown)

    def race(self, class_id, secret, race_id: str) -> bool:
        """The class's last race set to `race_id`, if `secret` drives it; whether it does."""
        return self._change(class_id, secret, race=race_id)

    def latest(self, class_id) -> Board | None:
        """What class `class_id` shows now, or None when it ended, was pushed out, or never was."""
        with self._lock:
            self._forget_old()
            kept = self._classes.get(class_id) if isinstance(class_id, str) else None
            return kept.board if kept is not None else None

    def _change(self, class_id, secret, **fields) -> bool:
        with self._lock:
            self._forget_old()
            kept = self._driven(class_id, secret)
            if kept is None:
                return False
            board = replace(kept.board, **fields)
            if board != kept.board:
                kept.board = replace(board, version=kept.board.version + 1)
            kept.touched = self._clock()
            self._classes.move_to_end(class_id)
            return True

    def _driven(self, class_id, secret) -> _Class | None:
        kept = self._classes.get(class_id) if isinstance(class_id, str) else None
        if kept is None or not isinstance(secret, str):
            return None
        return kept if hmac.compare_digest(kept.secret, secret.encode(errors="replace")) else None

    def _forget_old(self) -> None:
        oldest = self._clock() - self.seconds
        while self._classes and (
            len(self._classes) > self.capacity or next(iter(self._classes.values())).touched < oldest
        ):
            self._classes.popitem(last=False)
