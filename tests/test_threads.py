"""The server's torch threads follow the cores other programs leave free, in whichever OS thread resumes the work;
the one gate renews stale prices with a probe before it judges a request, so a busy moment passes."""

from __future__ import annotations

import threading

import pytest
import torch

from lab.serve import budget, holding, threads
from lab.serve.budget import BudgetError, Prices, TooBusy, first_token_seconds
from lab.serve.holding import Held
from lookahead_core.records import Busy

from .clock import FakeClock
from .test_budget import decode_step
from .tiny import cost_table


class FakeWatch:
    """A CpuWatch whose reading says other programs used `others` cores over a long enough interval."""

    others = 0.0

    def seconds(self) -> float:
        return 10.0

    def reading(self) -> Busy:
        return Busy(other_cores=FakeWatch.others, cores=2, seconds=10.0, heavy=FakeWatch.others > 0.2)


@pytest.fixture
def watched(monkeypatch):
    monkeypatch.setattr(threads, "CpuWatch", FakeWatch)
    yield FakeWatch
    FakeWatch.others = 0.0


def test_the_counts_tried_at_load_are_one_half_and_all_cores():
    assert threads.counts_to_try(1) == [1] and threads.counts_to_try(2) == [1, 2]
    assert threads.counts_to_try(16) == [1, 8, 16]


def test_a_request_gets_the_cores_other_programs_left_free_at_most_the_fastest_count(watched):
    choice = threads.ThreadChoice(cores=2, best=2)
    watched.others = 0.05  # quiet: a browser and an editor
    assert choice.choose() == 2
    watched.others = 1.9  # two burners on two cores: two threads would wait on each other at every barrier
    assert choice.choose() == 1 and choice.others == 1.9
    watched.others = 0.9  # one burner
    assert choice.choose() == 1
    watched.others = 0.0  # and quiet again
    assert choice.choose() == 2
    assert threads.ThreadChoice(cores=2, best=1).choose() == 1  # one thread ran fastest at load: never more


CLOCK = FakeClock()  # the test's clock, which the thread choice sleeps on and its watches read


BUSY_FROM = 100.0  # on the test's clock: the machine quiet until then, two cores busy from then on


class WindowWatch:
    """A CpuWatch on the test's clock: what other programs used over its window, quiet before BUSY_FROM."""

    def __init__(self) -> None:
        self.made = CLOCK.now

    def seconds(self) -> float:
        return CLOCK.now - self.made

    def reading(self) -> Busy:
        wall = CLOCK.now - self.made
        others = 2.0 * max(0.0, CLOCK.now - max(self.made, BUSY_FROM)) / wall
        return Busy(other_cores=others, cores=2, seconds=wall, heavy=others > 0.2)


def test_a_request_after_a_quiet_while_reads_the_load_of_its_last_moment_alone(monkeypatch):
    """The previous reading 101 s ago, two burners started a second ago: read since then, the machine was 2% busy and
    the request would take both cores (the negative control, with no longest reading); read afresh, both are busy."""
    monkeypatch.setattr(threads, "CpuWatch", WindowWatch)
    monkeypatch.setattr(threads, "time", CLOCK)
    for longest, chosen in ((float("inf"), 2), (threads.LONGEST_READING, 1)):
        monkeypatch.setattr(threads, "LONGEST_READING", longest)
        CLOCK.now = 0.0
        choice = threads.ThreadChoice(cores=2, best=2)  # its reading starts now: the previous request's
        CLOCK.now = BUSY_FROM + 1.0
        assert choice.choose() == chosen, choice.others
    assert choice.others == pytest.approx(2.0)


def test_the_fastest_count_at_load_is_kept_unless_the_machine_was_busy_then(watched):
    pace = {1: 0.030, 2: 0.020}  # seconds of a plain step at each count

    def steps():
        return [pace[torch.get_num_threads()]] * 3

    before = torch.get_num_threads()
    try:
        choice = threads.ThreadChoice(cores=2)
        choice.measure(steps)
        assert choice.best == 2 and choice.timed == pace
        pace[1] = 0.010
        choice.measure(steps)
        assert choice.best == 1
        watched.others = 1.5  # measured beside busy programs: the figures say only what that moment allowed
        choice.measure(steps)
        assert choice.best == 2 and choice.threads == 1
    finally:
        torch.set_num_threads(before)


def counts(n: int):
    for _ in range(n):
        yield torch.get_num_threads()
    return "done"


def resumed_in_other_threads(work, times: int) -> list[int]:
    """Resume `work` `times` times, each time from a fresh OS thread whose torch count was set to 2 first."""
    seen = []

    def resume():
        torch.set_num_threads(2)
        seen.append(next(work))

    for _ in range(times):
        worker = threading.Thread(target=resume)
        worker.start()
        worker.join()
    return seen


def test_work_runs_on_the_chosen_threads_whichever_os_thread_resumes_it():
    """torch keeps the count per OS thread and Gradio may resume a generator on any worker thread; the bare
    generator (the negative control) runs on whatever count the resuming thread had. Between resumptions the
    thread has its own count back: a step-cost curve read there is the one cached for that count."""
    assert resumed_in_other_threads(threads.running_on(1, counts(3)), 3) == [1, 1, 1]
    assert resumed_in_other_threads(counts(3), 3) == [2, 2, 2]
    before = torch.get_num_threads()
    work = threads.running_on(before + 1, counts(2))
    assert next(work) == before + 1 and torch.get_num_threads() == before


def test_running_on_returns_the_works_value_and_closing_it_closes_the_work():
    work = threads.running_on(1, counts(2))
    with pytest.raises(StopIteration) as done:
        while True:
            next(work)
    assert done.value.value == "done"
    inner = counts(5)
    outer = threads.running_on(1, inner)
    next(outer)
    outer.close()
    assert inner.gi_frame is None  # closed, not left suspended


def test_the_gate_renews_a_busy_moments_prices_with_a_probe_and_admits_the_request(tiny_lm, monkeypatch):
    """Beside two burners the prices reached 6x; after the burners stopped every request was refused, since a
    refused request runs no step to learn from. The gate probes the machine as it is and admits it; judged on the
    stale prices (the negative control) the same request is refused."""
    monkeypatch.setattr(budget, "encode_prompt", lambda tokenizer, text, chat: [1, 2, 3, 4])  # a char tokenizer
    now = [0.0]
    costs = cost_table(0.05)
    costs.seconds = [s / 10 for s in costs.seconds]  # near what the tiny model's steps take
    prices = Prices(costs, clock=lambda: now[0])
    prices.learn([decode_step(1, 50 * prices.costs.seconds_for(1))] * 128)  # the worst moment: 50x
    now[0] = 60.0  # a minute later, the burners gone
    # 20x the quiet price: under the stale 50x, over what a probe measures beside make test-quick's other worker (at 5x
    # the probe's step was once refused there, 2026-11-28)
    seconds = 20 * first_token_seconds(Prices(costs), 4, 2)
    with pytest.raises(BudgetError, match="busy now"):
        budget.check_budget(prices, 4, 2, seconds)
    held = Held(tiny_lm, prices=prices, threads=threads.ThreadChoice(cores=2, best=1))
    before = torch.get_num_threads()
    assert held.admit(4, decodings=2, seconds=seconds) == 1
    assert prices.age() == 0.0 and prices.scale < 50
    assert torch.get_num_threads() == before  # the work runs on the count returned (running_on), not this thread


@pytest.mark.parametrize("stalls", [1, 2], ids=["a stall in one probe: admitted", "both probes slow: refused"])
def test_a_refusal_for_load_is_said_only_when_a_second_probe_agrees(tiny_lm, monkeypatch, stalls):
    """A probe's few steps can catch a stall that is not the machine's pace: beside two CPU burners and a second
    test worker one read 14.3x and a Run was refused (the 2-core AMD EPYC (Zen 3), 2026-12-07). The gate probes again
    before it refuses for load: a stall in one probe admits the request at the second's prices; two probes that agree
    refuse it."""
    monkeypatch.setattr(budget, "encode_prompt", lambda tokenizer, text, chat: [1, 2, 3, 4])
    costs = cost_table(0.05)
    costs.seconds = [s / 10 for s in costs.seconds]
    prices = Prices(costs)
    seconds = 20 * first_token_seconds(Prices(costs), 4, 2)
    probes = []
    real_probe = holding.probe

    def probe(lm, priced, settled):
        probes.append(len(probes))
        if len(probes) <= stalls:  # a stalled moment: 50x the quiet price
            priced.learn([decode_step(1, 50 * costs.seconds_for(1))] * 3, renew=True)
        else:
            real_probe(lm, priced, settled)

    monkeypatch.setattr(holding, "probe", probe)
    held = Held(tiny_lm, prices=prices, threads=threads.ThreadChoice(cores=2, best=1))
    if stalls == 1:
        assert held.admit(4, decodings=2, seconds=seconds) == 1
        assert prices.scale < 20
    else:
        with pytest.raises(TooBusy, match="busy now"):
            held.admit(4, decodings=2, seconds=seconds)
    assert len(probes) == 2  # the stale prices' probe, then the second before any refusal
