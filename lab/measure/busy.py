"""What else used the CPU while the lab measured: timings taken beside other programs are less reliable.

The machine's busy time comes from /proc/stat (all cores), this process's own from os.times(); the
difference over a measurement is what other programs used, in cores. Where /proc/stat cannot be read
(not Linux), the reading says so instead of guessing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from lookahead_core.records import Busy

PROC_STAT = Path("/proc/stat")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# Other programs using more than this share of one core make a timing "less reliable": a fifth of a core
# is what a browser, an editor and the server's own idle threads together stay under on a quiet machine.
BUSY_CORES = 0.2


def machine_busy_seconds(stat: Path = PROC_STAT) -> float | None:
    """CPU seconds all cores spent on anything but idling and waiting for disks, since boot (None: unknown)."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if len(fields) < 6 or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:9]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / TICKS


def own_seconds() -> float:
    times = os.times()
    return times.user + times.system


class CpuWatch:
    """Started before a measurement; `reading()` says what other programs used since then."""

    def __init__(self, stat: Path = PROC_STAT) -> None:
        self._stat = stat
        self._wall = time.perf_counter()
        self._machine = machine_busy_seconds(stat)
        self._own = own_seconds()

    def seconds(self) -> float:
        """Wall seconds since the watch started."""
        return time.perf_counter() - self._wall

    def reading(self) -> Busy:
        wall = time.perf_counter() - self._wall
        machine = machine_busy_seconds(self._stat)
        cores = os.cpu_count() or 1
        if machine is None or self._machine is None or wall <= 0:
            return Busy(other_cores=None, cores=cores, seconds=wall, heavy=False)
        others = min(max((machine - self._machine) - (own_seconds() - self._own), 0.0) / wall, float(cores))
        return Busy(other_cores=others, cores=cores, seconds=wall, heavy=others > BUSY_CORES)
