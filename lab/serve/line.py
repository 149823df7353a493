"""The line for the one model: first come, first served, each waiting request told its place and how long.

Every card's model work (a Run, a race, a sweep) holds the model alone: it joins the line, waits for its turn
(`Ticket.wait`, a fraction of a second at a time, so its visitor's page hears its place after each), holds the
model while it measures, and leaves. The line holds a class: CAPACITY requests waiting past the one measuring; one
more is refused with a message that says so. A waiting request whose visitor left (its page stopped asking, so its
ticket was not renewed for STALE_SECONDS) is skipped when its turn comes: work nobody will read is not run.

Estimates come from the measured pace: the median seconds per new token the latest requests of each kind held the
model here, times a request's new tokens, at most its budget (what a request may take); before any request of its
kind was measured, the budget.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import statistics
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field

CAPACITY = 48  # waiting past the one measuring: a class of thirty, each with a Run and a race, fits
STALE_SECONDS = 6.0  # a waiting ticket not renewed for this long belongs to a visitor who left
PACE_MEMORY = 7  # the latest requests of a kind whose seconds per token the estimate's median takes


class LineFull(Exception):
    """More requests wait for the model than the line holds."""


@dataclass(eq=False)
class Ticket:
    """One request's place in the line: what kind of work it is, when its page last asked, and whether it holds
    the model."""

    line: Line
    kind: str
    tokens: int  # the new tokens its work decodes at most
    budget: float  # the seconds its work may take at most
    renewed: float = field(default_factory=time.monotonic)
    started: float | None = None  # when it took the model

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for this ticket's turn (renewing it: its page still asks); True once it holds the
        model, which it keeps until `leave`."""
        return self.line.wait_turn(self, seconds)

    def place(self) -> int:
        """1 for the next to take the model, 2 behind it...; 0 while it holds the model."""
        return self.line.place_of(self)

    def estimate(self) -> float:
        """Seconds until its turn at the measured pace: what the request measuring has left, and the expected
        seconds of every request ahead of it."""
        return self.line.seconds_before(self)

    def left(self) -> float:
        """Seconds until its work ends at the measured pace: its wait, and its own expected seconds less what it has
        held the model so far."""
        return self.line.seconds_left(self)

    def leave(self) -> None:
        """Out of the line, or done with the model: the next waiting request's turn."""
        self.line.leave(self)


class Line:
    """The model's one slot and the tickets waiting for it, in the order they came, at most `capacity` waiting."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._paces: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=PACE_MEMORY))
        self._waiting: list[Ticket] = []
        self._holder: Ticket | None = None
        self._changed = threading.Condition()

    def join(self, kind: str, budget: float, tokens: int = 1) -> Ticket:
        """A new ticket for work of `kind` (`tokens` new tokens, `budget` seconds at most) at the end of the line;
        LineFull where `capacity` already wait."""
        with self._changed:
            self._drop_stale()
            if len(self._waiting) >= self.capacity:
                raise LineFull(f"{len(self._waiting)} requests are waiting for the model")
            ticket = Ticket(self, kind, max(1, tokens), budget)
            self._waiting.append(ticket)
            return ticket

    def wait_turn(self, ticket: Ticket, seconds: float) -> bool:
        with self._changed:
            ticket.renewed = time.monotonic()
            if self._holder is ticket:
                return True
            self._changed.wait_for(lambda: self._take(ticket), timeout=seconds)
            ticket.renewed = time.monotonic()
            return self._holder is ticket

    def _take(self, ticket: Ticket) -> bool:
        """Under the lock: give `ticket` the model if it is free and `ticket` is first among the live ones."""
        if self._holder is not None:
            return self._holder is ticket
        self._drop_stale()
        if not self._waiting or self._waiting[0] is not ticket:
            return False
        self._holder = self._waiting.pop(0)
        ticket.started = time.monotonic()
        return True

    def _drop_stale(self) -> None:
        now = time.monotonic()
        self._waiting = [t for t in self._waiting if now - t.renewed < STALE_SECONDS]

    def leave(self, ticket: Ticket) -> None:
        with self._changed:
            held = self._holder is ticket
            if held:
                self._holder = None
                self._paces[ticket.kind].append((time.monotonic() - ticket.started) / ticket.tokens)
            elif ticket in self._waiting:
                self._waiting.remove(ticket)
            self._changed.notify_all()
        if held:
            give_back_freed_memory()

    def place_of(self, ticket: Ticket) -> int:
        with self._changed:
            if self._holder is ticket:
                return 0
            return self._waiting.index(ticket) + 1 if ticket in self._waiting else 0

    def expected(self, ticket: Ticket) -> float:
        """The seconds `ticket`'s work holds the model at its kind's measured pace, at most its budget (the budget
        until one of its kind was measured)."""
        paces = self._paces[ticket.kind]
        return min(ticket.budget, statistics.median(paces) * ticket.tokens) if paces else ticket.budget

    def seconds_before(self, ticket: Ticket) -> float:
        with self._changed:
            ahead = self._waiting[: self._waiting.index(ticket)] if ticket in self._waiting else []
            holder = self._holder
            left = 0.0
            if holder is not None and holder is not ticket:
                left = max(0.0, self.expected(holder) - (time.monotonic() - holder.started))
            return left + sum(self.expected(t) for t in ahead)

    def seconds_left(self, ticket: Ticket) -> float:
        held = 0.0 if ticket.started is None else time.monotonic() - ticket.started
        return self.seconds_before(ticket) + max(0.0, self.expected(ticket) - held)

    def waiting(self) -> int:
        """How many wait now (past the one measuring)."""
        with self._changed:
            return len(self._waiting)


def give_back_freed_memory() -> None:
    """Return the heap that model work freed to the operating system (glibc's malloc_trim; elsewhere nothing): glibc
    keeps freed arenas, so a server's resident memory grew 300 MB over 30 visitors' requests and stayed there
    (scripts/load_test.py); trimmed after each, it grew 116 MB. A trim took 0.2 ms (median of 5, after a 64-token
    generate, 2-core Xeon, 2026-12-06)."""
    if LIBC is not None:
        LIBC.malloc_trim(0)


def libc_with_trim():
    """The C library where it has malloc_trim (glibc), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


LIBC = libc_with_trim()
