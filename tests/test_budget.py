"""The per-request budget: refused only when not even one token fits, naming the cause; past that, a deadline
that holds while it works; prices that learn from every step, and are renewed by a probe when stale."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from lab.measure.race import timed_lane
from lab.measure.timing import SHORTEST_ROUND
from lab.serve.budget import (
    BudgetError,
    Deadline,
    Prices,
    check_budget,
    first_token_seconds,
    fitted_tokens,
    fitting_tokens,
    prefill_seconds,
)
from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import StepCosts
from lookahead_core.records import DraftRecord, Method, StepKind, StepRecord, StepTally
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import NOTHING
from lookahead_core.trace import Progress, recording_run, settle, tracing, warming_up

from .conftest import drained
from .tiny import cost_table

PRICES = Prices(cost_table(0.05))
RUN = 2  # a Run's decodings: the method and plain decoding
PACED = (Method.LOOKAHEAD, Method.GREEDY)  # a Run's, priced: plain decoding's pace for both before any was seen


def test_a_request_runs_when_one_token_of_each_decoding_fits_and_is_refused_only_when_none_does():
    """A request that asks for more than fits runs (the deadline stops it with what fitted): asking for 256 tokens
    is no reason to refuse; only a request where not even one new token fits is refused."""
    seconds = first_token_seconds(PRICES, 4, RUN)
    check_budget(PRICES, 4, RUN, seconds)
    with pytest.raises(BudgetError, match="Shorten the prompt"):
        check_budget(PRICES, 4, RUN, seconds * 0.99)


def test_a_request_too_long_for_its_rounds_at_the_latest_pace_decodes_what_fits_and_no_fewer_than_the_shortest():
    """Beside two burners the default Run and race ran out of time in their first round, so they gave no verdict:
    a timed request now decodes the most new tokens whose rounds fit (SHORTEST_ROUND at least), as many as asked
    where they fit, and as asked where nothing is priced (a ZeroGPU Space's quota decides there)."""
    fits = fitting_tokens(PRICES, PACED, 30.0, 3)
    assert SHORTEST_ROUND < fits < 1000
    assert fitted_tokens(PRICES, 1000, PACED, 30.0, 3) == fits and fitted_tokens(PRICES, fits, PACED, 30.0, 3) == fits
    assert fitted_tokens(PRICES, fits - 1, PACED, 30.0, 3) == fits - 1  # asked for fewer: as asked
    assert fitting_tokens(PRICES, PACED, 60.0, 3) > fits  # more time: more tokens
    assert fitted_tokens(PRICES, 1000, PACED, 0.1, 3) == SHORTEST_ROUND
    assert fitted_tokens(None, 1000, PACED, 0.1, 3) == 1000


def test_each_lane_is_priced_at_its_methods_latest_pace_and_never_below_plain_decodings():
    """Beside two burners a race priced every lane at plain decoding's pace fitted one round in 1 race of 3: its
    drafting lanes ran slower. A method's pace is its latest decodings' seconds per new token over a 1-token step's
    price (median), at least 1; a method that pays is priced as plain decoding, its gain left as room."""
    prices = Prices(cost_table(0.05))
    one = prices.costs.seconds_for(1)
    race = (Method.GREEDY, Method.SPECULATIVE, Method.LOOKAHEAD)
    before = fitting_tokens(prices, race, 60.0, 3)
    assert prices.pace(Method.SPECULATIVE) == 1.0 and before == fitting_tokens(prices, (Method.GREEDY,) * 3, 60.0, 3)
    prices.learn([decode_step(1, one)] * 20, Method.GREEDY)
    prices.learn([decode_step(5, 3 * one, draft=(4, one))] * 10, Method.SPECULATIVE)  # 3 steps' time a token
    prices.learn([decode_step(20, one)] * 10, Method.LOOKAHEAD)  # faster than plain decoding here
    assert prices.pace(Method.GREEDY) == pytest.approx(1.0) and prices.pace(Method.SPECULATIVE) == pytest.approx(3.0)
    assert prices.pace(Method.LOOKAHEAD) == 1.0  # its gain is room, not a promise
    after = fitting_tokens(prices, race, 60.0, 3)
    assert after + 8 == pytest.approx((before + 8) * 3 / 5, abs=1)  # 5 plain steps' time a token, not 3
    prices.learn([decode_step(5, 3 * one, draft=(4, one))] * 10)  # a decoding without its method: no pace
    assert prices.pace(Method.SPECULATIVE) == pytest.approx(3.0)


def test_a_prompt_is_told_to_shorten_only_when_it_would_not_fit_on_the_quiet_machine_either():
    """The default preset's 102-token prompt was told to shorten beside two burners, and so was a 4-token one: the
    machine's load was the cause. A busy refusal names the load and never asks for a shorter prompt."""
    busy = Prices(cost_table(0.05))
    busy.learn([decode_step(1, 6 * busy.costs.seconds_for(1))] * 10)  # the machine got six times slower
    seconds = first_token_seconds(PRICES, 102, RUN) * 2  # fits when quiet, not at six times the price
    check_budget(PRICES, 102, RUN, seconds)
    with pytest.raises(BudgetError) as refused:
        check_budget(busy, 102, RUN, seconds, " (other programs used 1.9 of its 2 cores)")
    words = str(refused.value)
    assert "busy now" in words and "6.0×" in words and "1.9 of its 2 cores" in words, words
    assert "Shorten" not in words and "Try again in a minute" in words
    with pytest.raises(BudgetError, match="The prompt is 102 tokens: .* Shorten the prompt"):
        check_budget(PRICES, 102, RUN, seconds / 4)  # too long even when quiet: the prompt is the cause


def test_a_race_of_four_decodings_needs_more_time_for_its_first_tokens_than_a_run():
    """Every decoding's warm-up runs before the first timed token: a prefill and a step each, then the first
    decoding's own (a race's later lanes are the deadline's business, partial or empty)."""
    one = prefill_seconds(PRICES, 100) + PRICES.step(1)
    assert first_token_seconds(PRICES, 100, 4) == pytest.approx(5 * one)
    assert first_token_seconds(PRICES, 100, RUN) == pytest.approx(3 * one)


def test_a_prompt_past_the_curves_context_is_priced_by_the_square_of_its_length():
    """The curve prices rows at a 256-token context; attention over a longer prompt grows with its square."""
    assert prefill_seconds(PRICES, 100) == PRICES.step(100)
    assert prefill_seconds(PRICES, 1024) == pytest.approx(4 * PRICES.step(1024))


def decode_step(fed: int, seconds: float, draft: tuple[int, float] | None = None) -> StepRecord:
    """A decoding step record with only what the prices read filled in."""
    passes = DraftRecord(tokens=[], forward_passes=draft[0], seconds=draft[1]) if draft else None
    return StepRecord(
        step=1,
        method=Method.GREEDY,
        kind=StepKind.DECODE,
        position=0,
        tokens_fed=fed,
        committed=[1],
        sources=[],
        stop=None,
        forward_seconds=seconds,
        step_seconds=seconds,
        method_report=passes,
    )


def test_prices_learn_from_the_steps_the_server_runs():
    prices = Prices(cost_table(0.05))
    assert prices.scale == 1.0
    busy = [decode_step(fed, 2 * prices.costs.seconds_for(fed)) for fed in (1, 8, 30)] * 3
    prices.learn(busy)  # the machine got busy: every step took twice its price
    assert prices.scale == pytest.approx(2.0) and prices.step(8) == pytest.approx(2 * prices.costs.seconds_for(8))
    prices.learn([decode_step(1, prices.costs.seconds_for(1))] * 200)  # and quiet again
    assert prices.scale == pytest.approx(1.0)
    prices.learn([decode_step(5, prices.costs.seconds_for(5) + 0.04, draft=(4, 0.04))] * 200)
    assert prices.scale == pytest.approx(1.0)  # a draft's passes are not the target's step


def test_a_step_that_drafted_inside_itself_is_no_price_of_its_width_but_counts_in_its_methods_pace():
    """EAGLE's device step drafts inside itself: its seconds hold the draft's passes, so they would price a pass of
    its width too high; its decoding's pace counts them all."""
    prices = Prices(cost_table(0.05))
    one = prices.costs.seconds_for(1)
    prices.learn([decode_step(1, one)] * 10, Method.GREEDY)
    inside = StepTally(
        step=1, kind=StepKind.DECODE, tokens_fed=5, committed=[1], stop=None, forward_seconds=3 * one,
        step_seconds=3 * one, drafted_inside=True,
    )  # fmt: skip
    prices.learn([inside] * 50, Method.EAGLE)
    assert prices.scale == pytest.approx(1.0) and prices.pace(Method.EAGLE) == pytest.approx(3.0)


def test_the_model_lines_fit_counts_the_lanes_a_race_runs_for_the_held_model(tiny_lm):
    """A race leaves out Medusa and EAGLE where no heads or layer ship for the model (a tiny one here): the model
    line's suggestion counted them too, and suggested fewer tokens than a race decodes."""
    from lab.serve.budget import fit
    from lab.serve.holding import ModelHolder
    from lookahead_core.records import raced_on

    holder = ModelHolder(warm=False)
    holder.put(tiny_lm)
    holder._held.prices = prices = Prices(cost_table(0.05))
    prices.learn([decode_step(1, prices.costs.seconds_for(1))] * 4)
    everything = raced_on("cpu")
    ran = [m for m in everything if m not in (Method.MEDUSA, Method.EAGLE)]
    assert len(ran) < len(everything) and holder.fit(3) == fit(prices, 3, ran)
    assert fit(prices, 3, ran).race_tokens > fit(prices, 3, everything).race_tokens


def test_a_probe_renews_the_evidence_and_the_age_says_how_old_it_is():
    """A busy moment's evidence would otherwise outlive the moment: a refused request runs no step to learn from."""
    now = [100.0]
    prices = Prices(cost_table(0.05), clock=lambda: now[0])
    assert prices.age() == float("inf")
    prices.learn([decode_step(1, 6 * prices.costs.seconds_for(1))] * 128)  # the burners' worst moment
    now[0] = 130.0
    assert prices.age() == pytest.approx(30.0) and prices.scale == pytest.approx(6.0)
    prices.learn([decode_step(1, prices.costs.seconds_for(1))] * 4)  # a few quiet steps do not outvote it...
    assert prices.scale == pytest.approx(6.0)
    prices.learn([decode_step(1, prices.costs.seconds_for(1))] * 4, renew=True)  # ...a probe's replace it
    assert prices.scale == pytest.approx(1.0) and prices.age() == 0.0


def test_a_deadline_shares_the_time_left_among_the_decodings_to_come():
    now = [0.0]
    deadline = Deadline(30.0, clock=lambda: now[0])
    until = deadline.shares((Method.LOOKAHEAD, Method.GREEDY))
    assert not until(Method.LOOKAHEAD)  # lookahead's share: 15 s from now
    now[0] = 10.0
    assert not until(Method.LOOKAHEAD) and not until(Method.GREEDY)  # greedy's: all 20 s left, from 10 s
    now[0] = 15.0
    assert until(Method.LOOKAHEAD) and not until(Method.GREEDY)
    now[0] = 30.0
    assert until(Method.GREEDY) and deadline.passed() and deadline.left() == 0.0


def test_a_recording_reports_every_forward_pass_and_ends_with_its_run(tiny_lm):
    progress, run = drained(
        recording_run(tiny_lm, [1, 2, 3, 4], DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=12))
    )
    assert all(isinstance(p, Progress) for p in progress)
    timed = [p for p in progress if not p.warming_up]
    assert [p.part for p in progress if p.warming_up][0] == 1 and {p.part for p in timed} == {3, 4}
    assert len(timed) == len(run.trace.steps) + len(run.greedy.steps)
    assert timed[-1].tokens == run.greedy.summary.tokens and timed[-1].method == Method.GREEDY


def test_a_decoding_stops_before_a_step_that_would_end_past_its_share():
    now = [0.0]
    until = Deadline(10.0, clock=lambda: now[0]).share(1)
    now[0] = 6.0
    assert not until(3.0)  # a 3 s step would end at 9 s: inside
    now[0] = 8.0
    assert until(3.0) and not until(1.0)  # ending at 11 s would overrun; a 1 s step still fits


CONSUMER_TURN = 0.2  # seconds a slow consumer holds each step it is handed (a tiny model's step: milliseconds)


def last_turn_ended(work) -> float:
    """`work` run to its end by a consumer that takes CONSUMER_TURN over each item it is handed: the seconds from
    the start to the end of its last turn (what the decoding does after its last check, building its trace, is no
    step: not counted)."""
    started = ended = time.perf_counter()
    while True:
        try:
            next(work)
        except StopIteration:
            return ended - started
        time.sleep(CONSUMER_TURN)
        ended = time.perf_counter()


@pytest.mark.parametrize("decoding", ["recorded", "raced", "warming up"])
def test_a_deadline_counts_the_consumers_turn_after_each_step_and_so_stops_in_time(tiny_lm, decoding):
    """A decoding asks its deadline before each step with the seconds since the check before, the consumer's turn
    included (trace.lapses): handed on to a slow consumer, it stops before a step and its turn would end past the
    share. Negative control: asked with the step's own seconds (milliseconds here), the step at 0.4 s was taken and
    its turn ended at 0.6 s, past the 0.5 s share. Beside two CPU burners a Run so checked held the model 6.9 s of its
    5 (tests/test_app.py's burners test, a CI run). A Run's recorded decodings, a race's lanes (and a Run's later
    rounds), and the warm-ups before them (WARM_UP_TOKENS steps: 1.6 s of turns, cut by the share)."""
    share = 2.5 * CONSUMER_TURN
    request = DecodeRequest(method=Method.GREEDY, max_new_tokens=40)
    until = Deadline(share).share(1)
    if decoding == "recorded":
        work = tracing(tiny_lm, [1, 2, 3, 4], request, NOTHING, until=until)
    elif decoding == "raced":
        plan = settle(tiny_lm, [1, 2, 3, 4], request, NOTHING, recorded=False)
        work = timed_lane(tiny_lm, [1, 2, 3, 4], plan, NOTHING, 1, 1, until)
    else:
        work = warming_up(tiny_lm, [1, 2, 3, 4], request, NOTHING, (Method.GREEDY,), 1, 1, until)
    took = last_turn_ended(work)
    assert took <= share, f"the decoding's last turn ended {took:.2f} s after its start, past its {share:.2f} s share"


def test_a_reserve_is_kept_back_from_the_shares_for_what_no_check_can_stop():
    """With a 10% reserve a 60 s race shares out 54 s: a lane that starts with its share spent still runs its
    prefill and one step, and those are paid from the 6 s kept back (negative control: no reserve, no room)."""
    now = [0.0]
    kept = Deadline(60.0, clock=lambda: now[0], reserve=0.1)
    bare = Deadline(60.0, clock=lambda: now[0])
    now[0] = 54.0
    assert kept.passed() and abs(kept.left()) < 1e-9 and not bare.passed()
    assert kept.share(2)(0.1) and not bare.share(2)(0.1)


def test_a_curve_cached_on_a_busier_machine_is_measured_again_when_the_model_loads(tiny_lm, monkeypatch):
    from lab.serve import budget
    from lookahead_core.costs import SettledMode, measure_step_costs
    from lookahead_core.records import StepMode

    honest = measure_step_costs(tiny_lm, repeats=1)
    busy = cost_table(0.05)
    busy.seconds = [100 * s for s in honest.seconds]  # cached beside other work: 100x what a step takes now
    asked = []

    def settled(curve: StepCosts) -> SettledMode:
        return SettledMode(tiny_lm, StepMode.EAGER, "", curve)

    def again(lm, mode, refresh=False):
        asked.append(refresh)
        return settled(honest)

    monkeypatch.setattr(budget, "settled_mode", again)
    monkeypatch.setattr(budget, "encode_prompt", lambda tokenizer, text, chat: [1, 2, 3, 4])  # a char tokenizer
    prices, renewed = budget.warmed_prices(tiny_lm, None, settled(busy))
    assert asked == [True] and prices.costs is honest is renewed.costs  # otherwise every request would be refused
    asked.clear()
    quick = cost_table(0.05)
    quick.seconds = [s / 100 for s in honest.seconds]  # measured quieter than now: the prices learn the rest
    prices, kept = budget.warmed_prices(tiny_lm, None, settled(quick))
    assert prices.costs is quick is kept.costs and asked == [] and prices.scale > 1


def test_a_pass_wider_than_the_curve_costs_no_less_than_its_widest_size():
    """Past its widest size a curve goes on along its last two sizes, but never down: a curve measured on a busy
    moment (its widest size timed below the one before) put a 256-token pass at -1.28 one-token steps (stop 69's
    GPU check on the CPU)."""
    bent = StepCosts(
        sizes=[1, 64, 128], seconds=[0.05, 0.2, 0.1], context=256, hardware="h", model="m", dtype="d", measured_at="t"
    )
    assert bent.seconds_for(256) == bent.seconds_for(128) == 0.1 and bent.relative(1024) == pytest.approx(2.0)
    rising = replace(bent, seconds=[0.05, 0.1, 0.2])
    assert rising.seconds_for(256) == pytest.approx(0.4)
