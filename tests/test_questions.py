"""One measurement per question and one line for the model (lab.serve.questions, lab.serve.line): no model, threads for
visitors.

Each sharing rule has its counterpart that must come out the other way: a stale answer is measured again, another
question is not shared, a failed measurement is measured by the next waiter, and rounds that do not compare are
not pooled.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

import pytest

from lab.measure.timing import pooled, timing_of
from lab.serve import line as line_module
from lab.serve.line import Line, LineFull
from lab.serve.questions import Answer, Answers, LabBusy, Waiting, answered, in_line, question, rounded, store_digest
from lab.serve.requests import ModelRequest
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.records import Busy, Method
from lookahead_core.request import DecodeRequest

from .test_timing import rounds_of

G, L = Method.GREEDY, Method.LOOKAHEAD
QUIET = Busy(other_cores=0.1, cores=2, seconds=3.0, heavy=False)


def request(prompt: str = "Name three colours.", tokens: int = 16) -> ModelRequest:
    return ModelRequest(
        prompt=prompt, chat=True, decode=DecodeRequest(max_new_tokens=tokens), model="m", dtype="float32"
    )


@dataclass
class Result:
    """A Run's stand-in: what sharing reads of it is its timing."""

    timing: object
    label: str = ""


def timing(greedy: list[float], lookahead: list[float], tokens: int = 32):
    rounds = rounds_of({G: greedy, L: lookahead})
    for laps in rounds:
        for i, lap in enumerate(laps):
            laps[i] = replace(lap, tokens=lap.tokens[: tokens + 1], seconds=lap.seconds[: tokens + 1])
    return timing_of(rounds, 0, QUIET, 30.0)


def measuring(calls: list, seconds: float = 0.0, fails: bool = False, tokens: int = 32):
    """Model work's stand-in: counts its calls, takes `seconds`, yields a Progress-like item, then its result."""

    def work():
        calls.append(time.monotonic())
        time.sleep(seconds)
        yield "a pass"
        if fails:
            raise RuntimeError("the model failed")
        yield Result(timing([0.1, 0.1], [0.05, 0.06], tokens), label=f"measurement {len(calls)}"), seconds

    return work


def last(items) -> Answer:
    items = list(items)
    assert isinstance(items[-1], Answer), items
    return items[-1]


def test_a_question_asked_again_is_answered_from_its_measurement_and_a_stale_or_other_one_is_measured():
    answers, line, calls = Answers(fresh=60), Line(), []
    key = question("run", request(), None)
    first = last(answered(answers, line, key, 30, measuring(calls)))
    again = last(answered(answers, line, key, 30, measuring(calls)))
    assert first.shared is None and again.shared is not None and again.shared < 5 and len(calls) == 1
    assert again.result is first.result
    last(answered(answers, line, question("run", request(tokens=17), None), 30, measuring(calls)))
    assert len(calls) == 2, "another question (17 tokens) was answered from the 16-token measurement"
    answers.fresh = 0.0  # the operator's window passed
    stale = last(answered(answers, line, key, 30, measuring(calls)))
    assert stale.shared is None and len(calls) == 3


def test_presses_while_a_question_is_measured_wait_for_that_measurement_not_a_second():
    answers, line, calls = Answers(), Line(), []
    key = question("run", request(), None)
    got, seen = [], []

    def visitor():
        items = list(answered(answers, line, key, 30, measuring(calls, seconds=0.6)))
        seen.extend(item for item in items if isinstance(item, Waiting))
        got.append(items[-1])

    threads = [threading.Thread(target=visitor) for _ in range(12)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1 and len(got) == 12, (len(calls), len(got))
    assert len({id(answer.result) for answer in got}) == 1
    assert sum(answer.shared is None for answer in got) == 1  # the one who measured; the rest were told it is shared
    assert any(w.place == 0 and "same question" in w.words() and "in about" in w.words() for w in seen), seen


def test_a_measurement_that_fails_lets_the_next_waiter_measure():
    answers, line, calls = Answers(), Line(), []
    key = question("run", request(), None)
    errors, got = [], []

    def failing():
        try:
            list(answered(answers, line, key, 30, measuring(calls, seconds=0.5, fails=True)))
        except RuntimeError as error:
            errors.append(error)

    first = threading.Thread(target=failing)
    first.start()
    time.sleep(0.1)
    got.append(last(answered(answers, line, key, 30, measuring(calls))))
    first.join(5)
    assert len(errors) == 1 and len(calls) == 2 and got[0].shared is None


def test_measuring_again_pools_the_rounds_and_a_measurement_that_does_not_compare_replaces_them():
    answers, line, calls = Answers(), Line(), []
    key = question("run", request(), None)
    last(answered(answers, line, key, 30, measuring(calls)))
    pooled_answer = last(answered(answers, line, key, 30, measuring(calls), again=True))
    assert len(calls) == 2 and pooled_answer.measurements == 2 and pooled_answer.result.timing.rounds == 4
    assert pooled_answer.result.label == "measurement 1"  # the first trace stays; its timing gained the rounds
    shown = last(answered(answers, line, key, 30, measuring(calls)))
    assert shown.measurements == 2 and shown.result.timing.rounds == 4 and len(calls) == 2
    cut = last(answered(answers, line, key, 30, measuring(calls, tokens=20), again=True))  # a busy machine's cut
    assert cut.measurements == 1 and cut.result.timing.rounds == 2 and cut.result.label == "measurement 3"


def test_pooled_rounds_take_every_round_into_the_medians_and_refuse_what_does_not_compare():
    earlier, later = timing([0.1, 0.1], [0.05, 0.05]), timing([0.1, 0.1], [0.04, 0.04])
    both = pooled(earlier, later)
    assert both.rounds == 4 and both.of(L).seconds == earlier.of(L).seconds + later.of(L).seconds
    assert both.of(L).speedup.low == pytest.approx(2.0) and both.of(L).speedup.high == pytest.approx(2.5)
    assert both.busy.seconds == 6.0 and both.busy.other_cores == pytest.approx(0.1)
    assert pooled(earlier, timing([0.1, 0.1], [0.04, 0.04], tokens=20)) is None  # another length counted
    assert pooled(earlier, replace(later, partial=True)) is None


def test_the_line_serves_in_order_says_each_place_and_estimate_and_skips_a_visitor_who_left(monkeypatch):
    line = Line(capacity=3)
    first, second, third = (line.join("run", 30) for _ in range(3))
    with pytest.raises(LineFull):
        line.join("race", 60)
    assert first.wait(0) and (second.place(), third.place()) == (1, 2)
    assert 25 < second.estimate() <= 30 and 55 < third.estimate() <= 60  # the budget until a pace was measured
    assert not third.wait(0.05)
    monkeypatch.setattr(line_module, "STALE_SECONDS", 0.2)
    time.sleep(0.3)  # the second's page stopped asking; the third's asks now
    first.leave()
    assert third.wait(0.1), "the turn went to a visitor who left"
    third.leave()
    # measured: two requests of a token each held the model well under a second; one of 600 tokens, its budget
    assert line.expected(line.join("run", 30, tokens=2)) < 1 and line.expected(line.join("run", 30, tokens=600)) == 30


def test_in_line_refuses_past_the_capacity_with_a_message_and_leaves_the_line_when_its_visitor_stops():
    line = Line(capacity=1)
    holder = line.join("run", 30)
    assert holder.wait(0)
    waiting = in_line(line, "race", (60, 16), lambda: iter([("result", 1.0)]))
    assert next(waiting) == Waiting(1, pytest.approx(30, abs=1))
    with pytest.raises(LabBusy, match="The lab is busy: 1 requests are waiting"):
        next(in_line(line, "run", (30, 16), lambda: iter(())))
    waiting.close()  # Stop pressed, or the page closed
    assert line.waiting() == 0
    holder.leave()


def test_a_suffix_question_is_the_visitors_store_too():
    mine, theirs = SuffixStore(100), SuffixStore(100)
    mine.add("your run 1: hello", [1, 2, 3])
    theirs.add("your run 1: hello", [1, 2, 4])
    assert store_digest(mine) != store_digest(theirs)
    assert question("race", request(), mine) != question("race", request(), theirs)
    assert question("race", request(), mine) == question("race", request(), mine)


def test_estimates_read_as_a_person_says_them():
    assert [rounded(s) for s in (0, 2, 38, 41, 200)] == ["5 s", "5 s", "40 s", "40 s", "3 min"]
    assert Waiting(3, 41).words() == "3rd in line for the model, about 40 s"
    assert Waiting(11, 5).words().startswith("11th") and Waiting(22, 5).words().startswith("22nd")
