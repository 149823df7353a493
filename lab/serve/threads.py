"""How many torch threads the server's model work runs on: chosen for this machine, again before each request.

torch starts one intra-op thread per core, and its threads meet at a barrier in every kernel, so beside a busy
program each step waits for the thread that lost its core: on this 2-core CPU beside one busy process 16 greedy
tokens took 10.4-17.5 s on two threads and 1.2-1.4 s on one (issue 44). So a request runs on the cores that other
programs left free just before it (/proc/stat, busy.CpuWatch), never on more than the count that ran
a plain step fastest when the model loaded. torch keeps the count per OS thread and a Gradio worker may resume a
request's generator on another thread: `running_on` sets it for every resumption.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import torch

from lab.measure.busy import CpuWatch

# A reading shorter than this says little (the kernel counts CPU time in 10 ms ticks): it is waited out.
SHORTEST_READING = 0.25
# A reading longer than this may average a quiet past with a busy present: a Run beside two CPU burners started a
# second before it, its reading taken since the previous request 21 s earlier, read 0.08 cores busy and took both
# threads (2026-12-07, the 2-core AMD EPYC (Zen 3); in a make test run that morning the same test's Run held the
# model 9.9 s of its 5). Older than this, the reading starts again: the request reads the last SHORTEST_READING alone.
LONGEST_READING = 1.0

Item = TypeVar("Item")
Result = TypeVar("Result")


def counts_to_try(cores: int) -> list[int]:
    """The thread counts timed at load: one, half the cores, all of them."""
    return sorted({1, max(cores // 2, 1), cores})


@dataclass
class ThreadChoice:
    """The torch threads model work runs on here: `best` is what ran a plain step fastest at load (every core
    until measured), `threads` what the latest request got, and `others` the cores other programs used then."""

    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    best: int = 0  # 0: not measured yet (every core)
    timed: dict[int, float] = field(default_factory=dict)  # seconds of a plain step at each count tried, at load
    threads: int = 0
    others: float | None = None
    _watch: CpuWatch = field(default_factory=lambda: CpuWatch(), repr=False)  # looked up when made: a test stands in

    def measure(self, steps: Callable[[], Iterable[float]]) -> None:
        """Time a few plain steps (`steps` runs them and says what each took) at each count of `counts_to_try`
        and keep the fastest count as `best`. Beside other busy programs the figures say only what that moment
        allowed: then every core stays allowed and the free cores decide. The calling thread's count is left as
        it was (each request sets its own: `running_on`)."""
        watch, timed, before = CpuWatch(), {}, torch.get_num_threads()
        try:
            for count in counts_to_try(self.cores):
                torch.set_num_threads(count)
                list(steps())  # the first steps at a new count start its threads
                timed[count] = min(steps())
        finally:
            torch.set_num_threads(before)
        self.timed = timed
        self.best = self.cores if watch.reading().heavy else min(timed, key=timed.get)
        self.choose()

    def choose(self) -> int:
        """The threads for the request that starts now: the cores other programs left free since the previous
        reading, or over the last SHORTEST_READING where that was more than LONGEST_READING ago (rounded, at least
        one), at most `best`."""
        if self._watch.seconds() > LONGEST_READING:
            self._watch = CpuWatch()
        wait = SHORTEST_READING - self._watch.seconds()
        if wait > 0:
            time.sleep(wait)
        reading, self._watch = self._watch.reading(), CpuWatch()
        self.others = reading.other_cores
        free = self.cores - (reading.other_cores or 0.0)
        self.threads = max(1, min(self.best or self.cores, int(free + 0.5)))
        return self.threads


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """This OS thread on `count` torch threads, and back to its own count on leaving."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def running_on(threads: int, work: Generator[Item, None, Result]) -> Generator[Item, None, Result]:
    """`work`, each of its resumptions on `threads` torch threads in whichever OS thread resumes it, that thread's
    own count given back after each (what the server does between passes, such as reading a step-cost curve cached
    per count, keeps the count the curve was measured on); closing this generator closes `work` (a visitor who
    cancels stops the work between two passes)."""
    try:
        while True:
            try:
                with torch_threads(threads):
                    item = next(work)
            except StopIteration as done:
                return done.value
            yield item
    finally:
        work.close()
