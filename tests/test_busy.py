"""What other programs used of the CPU during a measurement: read from /proc/stat minus this process's own time."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from lab.measure.busy import PROC_STAT, TICKS, CpuWatch, machine_busy_seconds


def stat_line(busy_ticks: int, idle_ticks: int) -> str:
    return f"cpu  {busy_ticks} 0 0 {idle_ticks} 0 0 0 0 0 0\ncpu0 1 2 3 4\n"


def test_others_are_the_machines_busy_time_less_this_process(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(stat_line(0, 0))
    clock = iter([100.0, 102.0])
    own = iter([5.0, 5.5])
    monkeypatch.setattr("lab.measure.busy.time.perf_counter", lambda: next(clock))
    monkeypatch.setattr("lab.measure.busy.own_seconds", lambda: next(own))
    watch = CpuWatch(stat)
    stat.write_text(stat_line(int(3.3 * TICKS), 100))  # 3.3 busy CPU seconds in 2 s, 0.5 of them ours
    busy = watch.reading()
    assert busy.other_cores == pytest.approx(1.4) and busy.heavy and busy.seconds == 2.0


def test_a_fifth_of_a_core_or_less_is_a_quiet_machine(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(stat_line(0, 0))
    clock, own = iter([0.0, 2.0]), iter([1.0, 1.0])
    monkeypatch.setattr("lab.measure.busy.time.perf_counter", lambda: next(clock))
    monkeypatch.setattr("lab.measure.busy.own_seconds", lambda: next(own))
    watch = CpuWatch(stat)
    stat.write_text(stat_line(int(0.4 * TICKS), 100))
    busy = watch.reading()
    assert busy.other_cores == pytest.approx(0.2) and not busy.heavy


def test_a_machine_whose_counters_cannot_be_read_says_so(tmp_path):
    busy = CpuWatch(tmp_path / "missing").reading()
    assert busy.other_cores is None and not busy.heavy


def burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(machine_busy_seconds(PROC_STAT) is None, reason="no /proc/stat here")
@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_real_burner_beside_us_is_seen():
    watch = CpuWatch()
    burner = multiprocessing.Process(target=burn, args=(1.0,))
    burner.start()
    burner.join()
    busy = watch.reading()
    assert busy.other_cores >= 0.5 and busy.heavy  # the burner ran for most of the reading
