"""A Run and a race timed in interleaved rounds within a deadline, on tiny models.

A slow model shows the deadline at work: every forward pass advances the deadline's clock by PAUSE
(a fake clock, so the figures hold on a loaded machine too), the decodings stop at their next step,
and the result is partial and says so; a quick model gets its full rounds, exact.
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from lab.measure.race import ROUNDS, race, raced, racing, same_as_far_as_both_wrote
from lab.measure.timed_run import RUN_ROUNDS, timed_run
from lab.measure.timing import SHORTEST_ROUND
from lab.serve.budget import Deadline
from lookahead_core.config import LookaheadConfig, SuffixConfig
from lookahead_core.costs import StepCosts
from lookahead_core.records import METHODS, Method, Progress, RaceRecord, StopReason
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import RUN_PARTS
from visuals.race import NOISE, cost_figure, exact_words, playback_html, race_figure, race_html
from visuals.summary import summary_html
from visuals.timing import FEWEST_COMPARED

from .conftest import drained
from .tiny import cost_table, tiny_draft, tiny_runtime

PROMPT = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6]
SMALL_TREE = SuffixConfig(tree_size=16)  # 200 new tokens and a 48-node reach would not fit the tiny model's 256
REQUEST = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=48)
PAUSE = 0.01  # seconds every forward pass of the slow model takes on the deadline's clock


class SlowClock:
    """The deadline's clock: it advances by PAUSE with every forward pass of the model it watches."""

    def __init__(self, model) -> None:
        self.now = 0.0
        self.passes = 0
        self.hook = model.register_forward_pre_hook(self.tick)

    def tick(self, *_) -> None:
        self.now += PAUSE
        self.passes += 1

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def slow_clock(tiny_lm, monkeypatch):
    """The slow clock, which every step is timed on too (time.perf_counter): a step's real seconds, asked by the
    deadline before the next step, grew under load and stopped a race's lanes a few tokens in, where a quiet machine
    compared eight or more (CI's make test, 2026-11-28). On it what each decoding needs is the same on any machine."""
    clock = SlowClock(tiny_lm.model.base_model)  # the engine may call the base model and the head apart
    monkeypatch.setattr(time, "perf_counter", clock)
    yield clock
    clock.hook.remove()


def finished_run(lm, prompt, request, deadline, learn=None):
    progress, run = drained(timed_run(lm, prompt, request, Runtime(deadline=deadline, learn=learn)))
    assert all(isinstance(p, Progress) for p in progress)
    return run


def test_a_run_that_reaches_its_deadline_stops_partial_and_says_so(tiny_lm, slow_clock):
    deadline = Deadline(0.6, clock=slow_clock)
    run = finished_run(
        tiny_lm,
        PROMPT,
        DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), suffix=SMALL_TREE, max_new_tokens=200),
        deadline,
    )
    assert slow_clock.now <= 0.6 + PAUSE + 1e-9  # at most one pass past the deadline
    assert run.trace.summary.stop == run.greedy.summary.stop == StopReason.DEADLINE
    assert run.timing.partial and run.timing.rounds == 1 and run.timing.budget_seconds == 0.6
    assert 0 < run.greedy.summary.tokens < 200
    html = summary_html(run)
    assert "the request&#x27;s 1 s; lookahead and greedy reached the end of their shares" in html
    assert "greedy decoding is the baseline every speed is divided by, so the comparison is void" in html
    assert "no verdict" in html and "void (greedy was cut short)" in html  # the big figure withheld


@pytest.mark.heavy  # seconds: three Runs
def test_on_a_busy_machine_a_runs_later_rounds_decode_what_fits_and_it_still_gives_a_verdict(tiny_lm, slow_clock):
    """Beside CPU burners a Run's recorded round took most of its time, so no second whole round fitted and the
    page gave no verdict. Now the later rounds decode the first new tokens they all fit, and every figure counts
    that many. Where one whole round more would fit but not two, both are cut (the page
    says "rounds 2-3"). Controls: with room every round is whole; with too little, one round."""
    decoded = {}  # (round, method) -> the most new tokens its Progress showed

    def timed(seconds):
        start = slow_clock.now
        decoded.clear()
        runtime = Runtime(deadline=Deadline(seconds, clock=slow_clock))
        progress, run = drained(timed_run(tiny_lm, PROMPT, REQUEST, runtime))
        for p in progress:  # parts after RUN_PARTS: the later rounds, two decodings each
            if p.part > RUN_PARTS:
                key = ((p.part - RUN_PARTS - 1) // 2 + 2, p.method)
                decoded[key] = max(decoded.get(key, 0), p.tokens)
        return run, slow_clock.now - start

    roomy, took = timed(3600.0)
    assert roomy.timing.rounds == RUN_ROUNDS and roomy.timing.later_tokens == 0
    assert decoded[2, Method.GREEDY] == decoded[3, Method.GREEDY] == REQUEST.max_new_tokens
    lean = sum(t.seconds[1] for t in roomy.timing.methods)  # a round after the first: both decodings, whole
    first = took - (RUN_ROUNDS - 1) * lean  # the warm-ups and the recorded round
    busy, _ = timed(first + 1.5 * lean)  # one whole round more would fit (ROUND_MARGIN x lean), two would not
    timing = busy.timing
    assert timing.rounds == RUN_ROUNDS and SHORTEST_ROUND <= timing.later_tokens < REQUEST.max_new_tokens
    assert decoded[2, Method.GREEDY] == decoded[3, Method.GREEDY] == timing.later_tokens  # round 2 was cut too
    assert timing.compared_tokens == timing.later_tokens == timing.of(Method.GREEDY).tokens[0]
    assert busy.trace.summary.tokens == busy.greedy.summary.tokens == REQUEST.max_new_tokens  # the replay's round
    html = summary_html(busy)
    assert f"rounds 2–3 decoded only the first {timing.later_tokens} new tokens" in html and "no verdict" not in html
    starved, _ = timed(first + 0.5 * lean)
    assert starved.timing.rounds == 1 and "Only one round fitted" in summary_html(starved)


@pytest.mark.heavy  # seconds: two races
def test_on_a_busy_machine_a_races_later_rounds_decode_what_fits(tiny_lm, slow_clock):
    """The race's rounds as a Run's (above): cut to fit where a whole one no longer does, the whole first round
    shown (control: with room, every round is whole)."""
    costs = StepCosts.of(cost_table(0.1))

    def timed(seconds):
        start = slow_clock.now
        result = race(tiny_lm, PROMPT, REQUEST, Runtime(deadline=Deadline(seconds, clock=slow_clock)), costs)
        return result, slow_clock.now - start

    roomy, took = timed(3600.0)
    assert roomy.timing.rounds == ROUNDS and roomy.timing.later_tokens == 0
    lean = sum(t.seconds[1] for t in roomy.timing.methods)
    busy, _ = timed(took - (ROUNDS - 2) * lean)  # room for the first round and one more, not two
    timing = busy.timing
    assert timing.rounds == ROUNDS and SHORTEST_ROUND <= timing.later_tokens < REQUEST.max_new_tokens
    assert timing.shown_round == 0 and all(lane.tokens[-1] == REQUEST.max_new_tokens for lane in busy.lanes)
    assert f"decoded only the first {timing.later_tokens} new tokens" in race_html(busy)


def test_a_quick_run_gets_its_rounds_and_stays_exact(tiny_lm):
    learned = []
    run = finished_run(
        tiny_lm, PROMPT, REQUEST, Deadline(3600.0), learn=lambda steps, method: learned.extend(steps)
    )  # room on a loaded machine
    timing = run.timing
    assert timing.rounds == RUN_ROUNDS and not timing.partial and timing.order == [Method.LOOKAHEAD, Method.GREEDY]
    assert run.trace.summary.new_token_ids == run.greedy.summary.new_token_ids
    assert all(t.tokens == [48] * RUN_ROUNDS for t in timing.methods)
    assert len(learned) >= RUN_ROUNDS * 2 * 10  # every step of every round priced
    assert "ran 3 interleaved rounds (lookahead, greedy, then again)" in summary_html(run)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_race_runs_interleaved_rounds_and_shows_one(tiny_lm):
    draft = tiny_draft("llama")
    result = race(tiny_lm, PROMPT, REQUEST, Runtime(draft=draft), StepCosts.of(cost_table(0.1)))
    timing = result.timing
    assert timing.rounds == ROUNDS and timing.order == [lane.method for lane in result.lanes]
    assert all(lane.exact for lane in result.lanes) and not timing.partial
    assert [lane.speedup for lane in result.lanes] == [t.speedup.median for t in timing.methods]
    html = race_html(result)
    assert (
        f"ran {ROUNDS} interleaved rounds" in html
        and f"the table&#x27;s passes: round {timing.shown_round + 1}." in html
    )


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_race_out_of_time_measures_every_method_in_its_share(tiny_lm, slow_clock):
    draft = tiny_draft("llama")
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), suffix=SMALL_TREE, max_new_tokens=200)
    deadline = Deadline(1.0, clock=slow_clock)
    result = race(tiny_lm, PROMPT, request, Runtime(draft=draft, deadline=deadline), StepCosts.of(cost_table(0.1)))
    timing = result.timing
    assert slow_clock.now <= 1.0 + PAUSE + 1e-9
    assert timing.rounds == 1 and timing.partial
    assert all(lane.tokens[-1] > 0 for lane in result.lanes)  # every method was measured
    # over the same tokens: each rate stops at the first step that reached the shortest lane's length
    assert all(timing.compared_tokens <= t.tokens[0] < timing.compared_tokens + 4 for t in timing.methods)
    # each lane wrote a prefix of greedy's output, cut where the deadline came: the same output, and said so
    assert len({len(lane.new_token_ids) for lane in result.lanes}) > 1 and all(lane.exact for lane in result.lanes)
    html = race_html(result)
    assert "✗ differs" not in html and "tokens both wrote" in html


def test_a_lane_that_differs_within_what_both_wrote_is_said_to_differ():
    greedy = SimpleNamespace(new_token_ids=[1, 2, 3, 4], exact=True)
    longer, other = SimpleNamespace(new_token_ids=[1, 2, 3, 4, 5, 6]), SimpleNamespace(new_token_ids=[1, 2, 9])
    assert same_as_far_as_both_wrote(longer, greedy) and not same_as_far_as_both_wrote(other, greedy)
    result = SimpleNamespace(lanes=[greedy])
    said = [
        exact_words(result, SimpleNamespace(new_token_ids=ids, exact=exact))
        for ids, exact in (([1, 2, 3, 4, 5, 6], True), ([1, 2, 9], False), ([1, 2, 3, 4], True), ([1, 2, 3, 5], False))
    ]
    assert said == [
        "✓ same as greedy over the first 4 tokens both wrote",
        "✗ differs from greedy over the first 3 tokens both wrote",
        "✓ same as greedy",
        "✗ differs from greedy",
    ]


@pytest.mark.heavy
def test_a_step_timed_below_a_one_token_step_is_marked_as_noise(tiny_lm):
    costs = cost_table(0.1)
    costs.seconds[1] = costs.seconds[0] * 0.9  # a 2-token pass timed cheaper than a 1-token pass
    result = race(tiny_lm, PROMPT, REQUEST, Runtime(draft=tiny_draft("llama")), StepCosts.of(costs))
    lookahead = result.lane(Method.LOOKAHEAD)
    lookahead.decode_step_seconds = result.lane(Method.GREEDY).decode_step_seconds * 0.8
    names = [trace.name for trace in cost_figure(result).data]
    assert NOISE in names and any(name.endswith("(its step time: noise)") for name in names)
    assert "this difference is timing noise" in race_html(result)
    steady = race(tiny_lm, PROMPT, REQUEST, Runtime(draft=tiny_draft("llama")), StepCosts.of(cost_table(0.1)))
    for lane in steady.lanes[1:]:  # every guessing lane, as a quiet machine times it: a wide step costs more
        lane.decode_step_seconds = steady.lane(Method.GREEDY).decode_step_seconds * 1.5
    assert not any("noise" in trace.name for trace in cost_figure(steady).data)  # the negative control


def test_a_race_of_one_round_says_it_is_no_verdict(tiny_lm, slow_clock):
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), suffix=SMALL_TREE, max_new_tokens=200)
    deadline = Deadline(1.0, clock=slow_clock)
    result = race(
        tiny_lm, PROMPT, request, Runtime(draft=tiny_draft("llama"), deadline=deadline), StepCosts.of(cost_table(0.1))
    )
    assert result.timing.rounds == 1 and len(result.timing.leaders) == len(result.lanes)
    whole = [replace(t, partial=t.partial and t.method != Method.GREEDY) for t in result.timing.methods]  # greedy's
    # lap whole: not a void comparison
    result.timing = replace(result.timing, methods=whole)
    assert "Only one round fitted in the time" in race_html(result) and " won on " not in race_html(result)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_round_cut_to_a_few_tokens_gives_no_speedup(tiny_lm, slow_clock):
    """Beside CPU burners a partial round once compared its methods over a few tokens and showed speedups of
    0.04x to 3.65x: the prefill's noise. Under FEWEST_COMPARED tokens none is shown, in the race or a Run;
    at FEWEST_COMPARED they are (the negative control)."""
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), suffix=SMALL_TREE, max_new_tokens=200)
    runtime = Runtime(draft=tiny_draft("llama"), deadline=Deadline(1.0, clock=slow_clock))
    race_result = race(tiny_lm, PROMPT, request, runtime, StepCosts.of(cost_table(0.1)))
    run = finished_run(tiny_lm, PROMPT, request, Deadline(0.6, clock=slow_clock))
    assert race_result.timing.partial and run.timing.partial
    for timing in (race_result, run):  # greedy's lap whole, so that the cut baseline's rule does not act here
        whole = [replace(t, partial=t.partial and t.method != Method.GREEDY) for t in timing.timing.methods]
        timing.timing = replace(timing.timing, methods=whole)
    for tokens, shown in [(FEWEST_COMPARED - 1, False), (FEWEST_COMPARED, True)]:
        race_result.timing = replace(race_result.timing, compared_tokens=tokens)
        run.timing = replace(run.timing, compared_tokens=tokens)
        html, summary = race_html(race_result), summary_html(run)
        assert ("not compared" not in html + summary) == shown
        assert "best: " not in html and "no verdict" in html  # one round: no verdict either way
        assert ("too few to tell the methods&#x27; speeds apart" in html + summary) != shown
        assert ("as fast as greedy" in summary) == shown


@pytest.mark.heavy
@pytest.mark.usefixtures("one_round")  # the warm-ups come before the rounds: three took the test 13 s of make test
def test_the_warm_ups_stop_at_their_share_of_the_deadline(tiny_lm, slow_clock):
    """Beside CPU burners the warm-ups (never timed) once took a 60 s race past 140 s: they now get one
    decoding's share of the time, and the race still measures every method (negative control: without a
    deadline every warm-up runs whole)."""
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), suffix=SMALL_TREE, max_new_tokens=200)
    costs = StepCosts.of(cost_table(0.1))
    deadline = Deadline(1.0, clock=slow_clock)
    progress, result = drained(
        racing(tiny_lm, PROMPT, request, Runtime(draft=tiny_draft("llama"), deadline=deadline), costs)
    )
    assert slow_clock.now <= 1.0 + PAUSE + 1e-9
    assert all(lane.tokens[-1] > 0 for lane in result.lanes)
    untimed, _ = drained(racing(tiny_lm, PROMPT, request, Runtime(draft=tiny_draft("llama")), costs))
    assert sum(p.warming_up for p in progress) < sum(p.warming_up for p in untimed)


def test_on_a_gpu_the_race_drafts_with_the_eagle_layer_in_place_of_a_same_size_draft(tiny_lm):
    """A same-size draft costs a full step per drafted token on a GPU: there EAGLE races instead (and on a CPU
    the draft model, as before). Each device's lanes are the negative control of the other's."""
    runtime = tiny_runtime(tiny_lm, "llama")
    cpu, gpu = raced(runtime, "cpu"), raced(runtime, "cuda")
    assert Method.SPECULATIVE in cpu and Method.EAGLE not in cpu
    assert Method.EAGLE in gpu and Method.SPECULATIVE not in gpu and len(cpu) == len(gpu)
    no_layer = replace(runtime, layer=None)
    assert Method.EAGLE not in raced(no_layer, "cuda") and Method.SPECULATIVE not in raced(no_layer, "cuda")


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_race_without_the_draft_model_records_no_draft(tiny_lm):
    """On a GPU the draft model does not race (EAGLE does in its place) and the runtime holds none: an H200's
    race once failed reading its settings. Its record says None, reads back, and its summary names no draft (a
    race with the draft is the control)."""
    costs = StepCosts.of(cost_table(0.1))
    request = replace(REQUEST, max_new_tokens=8)
    alone = race(tiny_lm, PROMPT, request, Runtime(), costs)
    assert Method.SPECULATIVE not in [lane.method for lane in alone.lanes] and alone.settings.speculative is None
    assert RaceRecord.from_json(alone.to_json()) == alone and "Speculative decoding:" not in race_html(alone)
    drafted = race(tiny_lm, PROMPT, request, Runtime(draft=tiny_draft("llama")), costs)
    assert drafted.settings.speculative is not None and "Speculative decoding: draft" in race_html(drafted)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_race_with_a_gpus_lanes_records_the_eagle_layer_in_the_drafts_place(tiny_lm, monkeypatch):
    """On a GPU the race runs EAGLE's layer where a CPU runs the draft model: the record keeps the layer's settings
    and no draft's, and the summary names the layer (the CPU's lanes, here with the same runtime, are the control)."""
    import lab.measure.race
    from lookahead_core.records import raced_on

    runtime, costs = tiny_runtime(tiny_lm, "llama"), StepCosts.of(cost_table(0.1))
    request = replace(REQUEST, max_new_tokens=8)
    on_cpu = race(tiny_lm, PROMPT, request, runtime, costs)
    assert on_cpu.settings.eagle is None and on_cpu.settings.speculative is not None
    monkeypatch.setattr(lab.measure.race, "raced_on", lambda device: raced_on("cuda"))
    on_gpu = race(tiny_lm, PROMPT, request, runtime, costs)
    assert Method.EAGLE in [lane.method for lane in on_gpu.lanes] and on_gpu.settings.speculative is None
    layer = on_gpu.settings.eagle
    assert layer == runtime.layer.settings() and f"EAGLE draft layer: {layer.model}, k = 4" in race_html(on_gpu)
    assert RaceRecord.from_json(on_gpu.to_json()) == on_gpu
    for drawn in (race_figure(on_gpu), cost_figure(on_gpu)):  # every view of the race draws the EAGLE lane
        assert any(METHODS[Method.EAGLE].short in (trace.name or "") for trace in drawn.data)
    assert METHODS[Method.EAGLE].name in playback_html(on_gpu)
