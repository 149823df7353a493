"""One measurement per question, shared by every visitor of this server.

A Run or a race is a question: its figures are decided by the request (model, dtype, method and settings, prompt,
chat template, new tokens, sampling and seed: `ModelRequest` holds them all) and, where suffix decoding takes part,
by the visitor's own store of earlier outputs (its digest is part of the question). The machine answers each
question once within FRESH_SECONDS (the operator's LOOKAHEAD_SHARED_SECONDS): a later ask is answered at once
from that measurement and says so; an ask that arrives while its question is being measured waits for that
measurement instead of queueing a second; only a new question takes the model (lab.serve.line). "Measure again"
(`again`) measures once more and adds its rounds to the shared measurement (lab.measure.timing.pooled), so a class's
repeated presses tighten one interval instead of scattering many.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, replace
from functools import partial

from lab.measure.timing import pooled
from lab.serve.line import Line, LineFull, Ticket
from lab.serve.requests import InputError, ModelRequest
from lookahead_core.methods.suffix import SuffixStore

FRESH_SECONDS = float(os.environ.get("LOOKAHEAD_SHARED_SECONDS", "300"))  # the operator's freshness window
KEPT = 64  # answers held at most (the least recently asked go first): bounded memory however many questions
NEWS_SECONDS = 0.5  # how often a waiting request's page hears its place


class LabBusy(InputError):
    """The line for the model is full: the message says how many wait and what to do."""


@dataclass(frozen=True)
class Waiting:
    """A request not yet answered: its `place` in the line for the model and the `seconds` until its turn, at the
    measured pace; or (`place` 0) waiting on another visitor's measurement of the same question, which ends in about
    `seconds`."""

    place: int
    seconds: float

    def words(self) -> str:
        if self.place == 0:
            return (
                "The same question is being measured for another visitor: its answer is yours too, in about "
                f"{rounded(self.seconds)}"
            )
        return f"{ordinal(self.place)} in line for the model, about {rounded(self.seconds)}"


@dataclass(frozen=True)
class Answer:
    """A question's answer: the result (a Run or a RaceRecord) and the seconds of model work it took; where it was
    measured for another visitor (`shared`), how long ago; and how many measurements its rounds pool."""

    result: object
    seconds: float
    shared: float | None = None
    measurements: int = 1


@dataclass
class Entry:
    result: object | None = None
    seconds: float = 0.0
    measured: float = 0.0  # time.monotonic() of the latest measurement
    measurements: int = 0
    measuring: threading.Event | None = None  # set when a measurement under way ends (with or without an answer)
    ticket: Ticket | None = None  # that measurement's place in the line for the model


class Answers:
    """The questions measured on this server and those being measured, at most KEPT, each fresh for `fresh`
    seconds after its latest measurement."""

    def __init__(self, fresh: float = FRESH_SECONDS, kept: int = KEPT) -> None:
        self.fresh, self.kept = fresh, kept
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def look(self, key: Hashable) -> Answer | None:
        """A fresh answer to `key` (none while a measurement of it is under way: that one will be fresher)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.measuring is not None or entry.result is None:
                return None
            self._entries.move_to_end(key)
            age = time.monotonic() - entry.measured
            if age > self.fresh:
                return None
            return Answer(entry.result, entry.seconds, shared=age, measurements=entry.measurements)

    def begin(self, key: Hashable) -> threading.Event | None:
        """Mark `key` as being measured by the caller and return None; or, where another measurement of it is
        under way, leave it be and return that measurement's event (set when it ends) to wait for."""
        with self._lock:
            entry = self._entries.setdefault(key, Entry())
            self._entries.move_to_end(key)
            if entry.measuring is not None:
                return entry.measuring
            entry.measuring, entry.ticket = threading.Event(), None
            idle = [k for k, e in self._entries.items() if e.measuring is None]  # least recently asked first
            for old in idle[: max(0, len(self._entries) - self.kept)]:
                del self._entries[old]
            return None

    def holding(self, key: Hashable, ticket: Ticket) -> None:
        """The measurement of `key` under way has joined the line with `ticket`."""
        with self._lock:
            self._entries[key].ticket = ticket

    def left(self, key: Hashable) -> float:
        """Seconds until the measurement of `key` under way ends, at the measured pace (0: none under way)."""
        with self._lock:
            entry = self._entries.get(key)
            ticket = entry.ticket if entry is not None and entry.measuring is not None else None
        return 0.0 if ticket is None else ticket.left()

    def end(self, key: Hashable, result: object | None, seconds: float = 0.0, again: bool = False) -> Answer | None:
        """The measurement of `key` is over: `result` (None: it failed or was stopped, nothing kept) becomes the
        answer, its rounds pooled with a fresh earlier answer's where `again`. Waiters are woken either way."""
        with self._lock:
            entry = self._entries[key]
            event, entry.measuring = entry.measuring, None
            try:
                if result is None:
                    return None
                fresh = entry.result is not None and time.monotonic() - entry.measured <= self.fresh
                if again and fresh and (timing := pooled(entry.result.timing, result.timing)) is not None:
                    entry.result = replace(entry.result, timing=timing)
                    entry.seconds += seconds
                    entry.measurements += 1
                else:
                    entry.result, entry.seconds, entry.measurements = result, seconds, 1
                entry.measured = time.monotonic()
                return Answer(entry.result, entry.seconds, measurements=entry.measurements)
            finally:
                if event is not None:
                    event.set()


def question(kind: str, request: ModelRequest, store: SuffixStore | None) -> tuple:
    """What decides a card's figures: its kind ("run", "race"), the checked request, and the digest of the
    store suffix decoding matches (None where no suffix decoding takes part)."""
    return kind, request, None if store is None else store_digest(store)


def store_digest(store: SuffixStore) -> str:
    """A digest of a store's texts, their names and tokens in the order held: two visitors share a suffix
    measurement only where their stores are the same."""
    digest = hashlib.blake2b(digest_size=16)
    for text in store.texts():
        digest.update(text.name.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(b",".join(str(token).encode() for token in text.tokens) + b"\n")
    return digest.hexdigest()


def answered(
    answers: Answers, line: Line, key: tuple, budget: float, measure: Callable[[], Iterator], again: bool = False
) -> Iterator:
    """Answer question `key`: at once from a fresh measurement (unless `again`), else after the measurement of it
    already under way, else by measuring it (`measure()`, taking `budget` seconds at most, in_line). Yields
    Waiting while it waits, the work's Progress while it measures, and last the Answer. A measurement that failed
    or stopped lets the next waiter for its question measure it."""
    while True:
        found = None if again else answers.look(key)
        if found is not None:
            yield found
            return
        under_way = answers.begin(key)
        if under_way is None:
            break  # ours to measure
        while not under_way.wait(NEWS_SECONDS):  # another visitor's measurement of it: its answer, or our turn
            yield Waiting(0, answers.left(key))
    result, seconds = None, 0.0
    try:
        tokens = key[1].decode.max_new_tokens
        for item in in_line(line, key[0], (budget, tokens), measure, joined=partial(answers.holding, key)):
            if isinstance(item, tuple):
                result, seconds = item
            else:
                yield item
    finally:
        answer = answers.end(key, result, seconds, again=again)
    if answer is None:
        raise RuntimeError("model work ended without a result")
    yield answer


def in_line(
    line: Line,
    kind: str,
    size: tuple[float, int],
    work: Callable[[], Iterator],
    joined: Callable[[Ticket], None] | None = None,
) -> Iterator:
    """`work()` (model work of `kind`, `size` its budget in seconds and its new tokens) once its turn comes, holding
    the model alone:
    Waiting while it waits, then what the work yields (`joined` is told its ticket). LabBusy where the line is full.
    A consumer that stops iterating leaves the line, or, working, stops the work at its next pass."""
    try:
        ticket = line.join(kind, *size)
        if joined is not None:
            joined(ticket)
    except LineFull as full:
        raise LabBusy(
            f"The lab is busy: {full} (the most it holds). Try again in a few minutes; a question someone has just "
            "asked (a preset) is answered at once."
        ) from None
    try:
        while not ticket.wait(NEWS_SECONDS):
            yield Waiting(ticket.place(), ticket.estimate())
        yield from work()
    finally:
        ticket.leave()


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def rounded(seconds: float) -> str:
    """An estimate as a person says it, to the nearest 5 s (5 s at least) or minute: "5 s", "40 s", "3 min"."""
    if seconds < 120:
        return f"{max(5, 5 * round(seconds / 5)):.0f} s"
    return f"{round(seconds / 60):.0f} min"
