"""How long one request may hold the model, which requests are worth starting, and the deadline that holds.

One model serves every visitor in turn, so no request may hold it for long. A request's time
(RUN_SECONDS, or RACE_SECONDS for the methods of a race) is enforced while it works: a Deadline
shares the time left among the decodings still to come, and a decoding that reaches its share
stops at its next step, partial and labelled so. So how wide a method's steps are, or how many
tokens it asks for, is the deadline's business: a request that cannot finish its tokens in time
runs what fits (a Run or a race whose rounds would not fit at the latest prices first asks for fewer
tokens, fitted_tokens, each decoding priced at its method's latest pace, so that its rounds give a
verdict). It is refused only when not even a first new token fits (after every decoding's warm-up: a
prefill and a step each), and the refusal names the cause: the prompt, where it would not fit on this
machine when quiet either, else the machine's load. The prices are the measured step-cost curve, scaled
by what the latest steps really took, and each method's pace (Prices.learn); evidence older than
FRESH_SECONDS, or taken on another count of threads, is renewed by a probe of a few plain steps before a
request is judged by it, so prices follow the machine both ways: up when it gets busy, down again when
it is quiet. On a ZeroGPU Space the platform's quota rules (space.py) decide instead.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace

from lab.measure.timing import ROUND_MARGIN, SHORTEST_ROUND
from lookahead_core.costs import SettledMode, StepCosts, settled_mode
from lookahead_core.methods.draft import Draft
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import METHODS, Fit, Method, StepKind, StepRecord
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import WARM_UP_TOKENS, decode_steps, warm_up

RUN_SECONDS = 30.0  # a Run: the method and greedy decoding, each warmed up
RACE_SECONDS = 60.0  # a race: every method, each warmed up
# The share of a request's time its decodings are not given: what no deadline check can stop (each decoding's
# prefill and the step after it, priced as the prefill) is paid from it. Beside two CPU burners a race whose
# last lanes started with their shares spent held the model 1.13x its time without it.
RESERVE = 0.1
LEARNED_STEPS = 128  # the prices follow the median of the last this many steps' measured/priced ratios
# A method's pace follows the median of its last this many timed decodings. Beside two CPU burners (2026-11-27) a
# race priced every lane at plain decoding's pace fitted one round in 1 race of 3: its drafting lanes ran slower.
PACED_DECODINGS = 8
# Evidence older than this may describe another machine: a busy moment that passed, or a quiet one that did not
# last. Beside two CPU burners a price left by their worst moment once refused every request after they stopped,
# since a refused request runs no step to learn from.
FRESH_SECONDS = 5.0
# Plain steps of the warm-up prompt that renew stale prices: a probe took 0.21-0.27 s on the quiet 2-core CPU
# (2026-11-27, prefill included).
PROBE_TOKENS = 4


class BudgetError(ValueError):
    """A request not worth starting in the time a request may hold the model; the message says what would help."""


class TooBusy(BudgetError):
    """A request refused for the machine's load at the latest prices (it would fit on the quiet machine)."""


class Prices:
    """What a forward pass of any width costs on this hardware: the measured curve, scaled by what the latest
    steps really took."""

    def __init__(self, costs: StepCosts, clock: Callable[[], float] = time.monotonic) -> None:
        self.costs = costs
        self._ratios: deque[float] = deque(maxlen=LEARNED_STEPS)
        self._paces: dict[Method, deque[float]] = {}
        self._learned = -math.inf  # when the latest evidence came in
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def scale(self) -> float:
        """The latest steps' median of measured over priced seconds (1.0 before any step was seen)."""
        with self._lock:
            return statistics.median(self._ratios) if self._ratios else 1.0

    def step(self, width: int) -> float:
        return self.costs.seconds_for(width) * self.scale

    def age(self) -> float:
        """Seconds since the latest evidence came in (infinite before any)."""
        with self._lock:
            return self._clock() - self._learned

    def pace(self, method: Method) -> float:
        """The plain steps' time a new token of `method` took in its latest decodings here (the median), at least 1:
        a method slower than plain decoding on this machine is priced as slow as it ran, one that pays as plain
        decoding (its gain left as room); 1 before any decoding of it was seen."""
        with self._lock:
            paces = self._paces.get(method)
            return max(1.0, statistics.median(paces)) if paces else 1.0

    def learn(self, records: list[StepRecord], method: Method | None = None, renew: bool = False) -> None:
        """Take in what these decoding steps took (a draft's passes apart): the prices follow this machine's load.
        With `method` (the decoding's, whole: all its steps), its pace too: its seconds per new token over a 1-token
        step's price. With `renew` they replace the evidence kept so far (a probe's: the machine as it is now)."""
        with self._lock:
            if renew:
                self._ratios.clear()
            self._learned = self._clock()
            # a prefill's width is the prompt's: the curve is priced after it
            decode = [record for record in records if record.kind == StepKind.DECODE]
            for record in decode:
                if record.drafted_inside:
                    continue  # its draft's passes are in its seconds: not what a pass of its width costs
                drafting = record.draft_seconds
                self._ratios.append((record.step_seconds - drafting) / self.costs.seconds_for(record.tokens_fed))
            tokens = sum(len(record.committed) for record in decode)
            one = self.costs.seconds_for(1) * (statistics.median(self._ratios) if self._ratios else 1.0)
            if method is not None and tokens and one > 0:
                paces = self._paces.setdefault(method, deque(maxlen=PACED_DECODINGS))
                paces.append(sum(record.step_seconds for record in decode) / tokens / one)


class Deadline:
    """The time one request may hold the model, counted from its start and shared out among its decodings;
    `reserve` (a fraction of `seconds`) is kept back from them, for what no check can stop."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.perf_counter, reserve: float = 0.0) -> None:
        self.seconds, self.reserve = seconds, reserve
        self._clock = clock
        self._started = clock()

    def elapsed(self) -> float:
        return self._clock() - self._started

    def left(self) -> float:
        """The time left to share out: the request's time, less the reserve, less what has passed."""
        return self.seconds * (1 - self.reserve) - self.elapsed()

    def passed(self, upcoming: float = 0.0) -> bool:
        """Whether the time is up, or would be after `upcoming` seconds more (a step, and its consumer's turn)."""
        return self.left() <= upcoming

    def share(self, decodings_left: int) -> Callable[..., bool]:
        """A deadline for the decoding that starts now: an equal share of the time left among `decodings_left`
        (a fast decoding leaves its unused time to those after it). Asked with the seconds the next step and its
        consumer's turn are expected to take (trace.lapses), it says True when they would end past the share."""
        end = self._clock() + max(self.left(), 0.0) / max(decodings_left, 1)
        return lambda upcoming=0.0: self._clock() + upcoming >= end

    def shares(self, methods) -> Callable[..., bool]:
        """`until(method, upcoming)` for decodings of `methods`, one after another: each method's share is fixed
        the first time it is asked."""
        ends: dict[Method, Callable[..., bool]] = {}

        def until(method: Method, upcoming: float = 0.0) -> bool:
            if method not in ends:
                ends[method] = self.share(len(methods) - len(ends))
            return ends[method](upcoming)

        return until


WARM_UP_PROMPT = "def fibonacci(n):\n"


def warmed_prices(lm: LoadedModel, draft: Draft, settled: SettledMode) -> tuple[Prices, SettledMode]:
    """Warm a freshly loaded model up once (a few tokens of every method, the draft's too, in its `settled` step
    mode) and price its work; returns the prices and the settled mode they price (the same, or measured again).

    The step-cost curve is measured once per model, device and dtype, then read from the cache. It may have
    been measured on a busier machine than this one is now (or a busier moment): the prices learn at once from
    a few plain steps decoded here, and when those ran BUSY_SCALE times faster than the curve, the curve is
    measured again. Without that, a curve measured beside other work would refuse every request before any
    step could teach the prices otherwise.
    """
    prompt_ids = encode_prompt(lm.tokenizer, WARM_UP_PROMPT, chat=False)
    runtime = Runtime.in_settled(settled, draft=draft)
    methods = [method for method, entry in METHODS.items() if runtime.has(entry.needs)]
    request = DecodeRequest(max_new_tokens=WARM_UP_TOKENS)
    warm_up(lm, prompt_ids, request, runtime, methods)
    plain = replace(request, method=Method.GREEDY)
    prices = Prices(settled.costs)
    prices.learn(list(decode_steps(lm, prompt_ids, plain, runtime)))
    if prices.scale * BUSY_SCALE < 1:
        settled = settled_mode(lm, settled.mode, refresh=True)
        prices = Prices(settled.costs)
        renewed = Runtime.in_settled(settled, draft=draft)
        prices.learn(list(decode_steps(lm, prompt_ids, plain, renewed)))
    return prices, settled


def probe(lm: LoadedModel, prices: Prices, settled: SettledMode) -> None:
    """Renew the prices from PROBE_TOKENS plain steps of the warm-up prompt in the `settled` step mode, timed now:
    a fraction of a second that keeps a request from being judged by a moment that has passed."""
    prompt_ids = encode_prompt(lm.tokenizer, WARM_UP_PROMPT, chat=False)
    plain = DecodeRequest(max_new_tokens=PROBE_TOKENS, method=Method.GREEDY)
    runtime = Runtime.in_settled(settled)
    prices.learn(list(decode_steps(lm, prompt_ids, plain, runtime)), renew=True)


def prefill_seconds(prices: Prices, prompt_tokens: int) -> float:
    """One prefill of the prompt. The curve prices `prompt_tokens` rows at its own context (256 tokens); a longer
    prompt's attention grows with the square of its length, so its price is scaled by how far it is past that."""
    return max(1.0, prompt_tokens / prices.costs.context) * prices.step(prompt_tokens)


def first_token_seconds(prices: Prices, prompt_tokens: int, decodings: int) -> float:
    """The least a request of `decodings` decodings does before its first new token: every decoding's warm-up
    (a prefill and a step at least: each stops at the end of its share) and the first decoding's prefill and
    step. Past that the deadline stops the work with what fitted (a race's later lanes, partial or empty)."""
    return (decodings + 1) * (prefill_seconds(prices, prompt_tokens) + prices.step(1))


def check_budget(prices: Prices, prompt_tokens: int, decodings: int, seconds: float, load: str = "") -> None:
    """Refuse (BudgetError) work of which not even a first new token fits in `seconds` at the latest prices
    (first_token_seconds); past that the deadline stops it with what fitted. The message names the cause: the
    prompt, where it would not fit at the curve's (quiet) prices either, else the machine's load (TooBusy; `load`:
    words on what other programs use, or empty)."""
    if first_token_seconds(prices, prompt_tokens, decodings) <= seconds:
        return
    quiet = first_token_seconds(Prices(prices.costs), prompt_tokens, decodings)
    if quiet > seconds:
        raise BudgetError(
            f"The prompt is {prompt_tokens:,} tokens: reading it takes this machine about {quiet:.0f} s even when "
            f"it is quiet (once for each of the {decodings} decodings' warm-ups, then for the first one), over the "
            f"{seconds:.0f} s a request may hold the model. Shorten the prompt."
        )
    raise TooBusy(
        f"This machine is busy now: its latest steps took {prices.scale:.1f}× their time on the quiet machine{load}, "
        f"so not even a first new token would fit in the {seconds:.0f} s a request may hold the model (after the "
        f"warm-ups of its {decodings} decodings). Try again in a minute: the pace is measured again before every "
        "request."
    )


BUSY_SCALE = 1.5  # the latest steps this many times their price at load: the machine is busier than it was


def round_seconds(prices: Prices, methods: Sequence[Method], tokens: int) -> float:
    """A round of decodings of `methods` (one each) of `tokens` new tokens, each at its method's latest pace here."""
    return tokens * prices.step(1) * sum(prices.pace(method) for method in methods)


def fitting_tokens(prices: Prices, methods: Sequence[Method], seconds: float, rounds: int) -> int:
    """The new tokens for which `rounds` rounds of decodings of `methods` (each warmed up first) fit in `seconds`,
    each at its method's latest pace here (Prices.pace): in the time the deadline gives them (less its RESERVE), each
    round with the margin a later round starts with (ROUND_MARGIN)."""
    usable = seconds * (1 - RESERVE) / ROUND_MARGIN
    return max(int(usable / max(rounds * round_seconds(prices, methods, 1), 1e-9)) - WARM_UP_TOKENS, 0)


def fitted_tokens(prices: Prices | None, asked: int, methods: Sequence[Method], seconds: float, rounds: int) -> int:
    """The new tokens a timed request of `methods` decodes: `asked`, or where its `rounds` rounds would not fit its
    time at the latest prices (a busy machine), the most that do, SHORTEST_ROUND at least: its rounds then give a
    verdict on a shorter text, where the asked length would have run out of time in the first round and given none."""
    if prices is None:
        return asked
    return min(asked, max(fitting_tokens(prices, methods, seconds, rounds), SHORTEST_ROUND))


def fit(prices: Prices, rounds: int, race_methods: Sequence[Method]) -> Fit:
    """The new tokens for which `rounds` rounds of a Run (plain decoding's pace for its method, which is not known
    yet) and of a race of `race_methods` fit their time, at the latest paces here (what the page suggests)."""
    return Fit(
        step_seconds=prices.step(1),
        rounds=rounds,
        run_seconds=RUN_SECONDS,
        run_tokens=fitting_tokens(prices, (Method.GREEDY, Method.GREEDY), RUN_SECONDS, rounds),
        race_seconds=RACE_SECONDS,
        race_tokens=fitting_tokens(prices, race_methods, RACE_SECONDS, rounds),
    )
