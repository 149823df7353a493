"""A clock a test moves by hand, for code that reads time: its `now` in seconds, read by calling it or as
`time.perf_counter` and `time.monotonic` are, and moved on by `sleep`. A test passes it where the code takes a clock,
or sets it in place of the module `time` the code reads."""

from __future__ import annotations


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    monotonic = perf_counter

    def sleep(self, seconds: float) -> None:
        self.now += seconds
