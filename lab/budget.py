"""How long one request may hold the model, which requests are worth starting, and the deadline that holds.

One model serves every visitor in turn, so no request may hold it for long. A request's time
(RUN_SECONDS, or RACE_SECONDS for the four methods of a race) is enforced while it works: a
Deadline shares the time left among the decodings still to come, and a decoding that reaches
its share stops at its next step, partial and labelled so. Before any decoding, a request is
priced from this hardware's step costs at its worst (every decoding commits one token per step,
so a step of its full width and a draft's passes are paid once per new token, and each decoding
prefills the prompt twice): it is refused only when not even MIN_TOKENS new tokens would fit,
saying what would. The prices learn from every step the server runs (Prices.learn), so a curve
measured on a busy machine, or a machine that became busy, is corrected within a request. On a
ZeroGPU Space the platform's quota rules (space.py) decide instead.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.costs import StepCosts, step_costs
from lookahead_core.draft import Draft
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import Fit, Method, StepKind, StepRecord
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import WARM_UP_TOKENS, decode_steps, warm_up

RUN_SECONDS = 30.0  # a Run: the method and greedy decoding, each warmed up
RACE_SECONDS = 60.0  # a race: four methods, each warmed up
PREFILL_SHARE = 0.5  # the prompt's prefills may take at most this share of a request's time
# A prefill of a long prompt costs more than the curve's straight line (measured at a 256-token
# context) says: attention grows with the square of its length.
PREFILL_MARGIN = 2.0
# A request is worth starting when this many new tokens (or all it asks for, if fewer) fit at worst;
# past what fits, the deadline stops it with what it did.
MIN_TOKENS = 16
LEARNED_STEPS = 128  # the prices follow the median of the last this many steps' measured/priced ratios


class BudgetError(ValueError):
    """A request that would hold the model longer than a request may; the message says what fits."""


class Prices:
    """What model work costs on this hardware: a step of any width (the measured curve, scaled by what the
    latest steps really took), and one pass of the draft."""

    def __init__(self, costs: StepCosts, draft_pass: float) -> None:
        self.costs = costs
        self.draft_pass = draft_pass
        self._ratios: deque[float] = deque(maxlen=LEARNED_STEPS)
        self._draft_passes: deque[float] = deque(maxlen=LEARNED_STEPS)
        self._lock = threading.Lock()

    @property
    def scale(self) -> float:
        """The latest steps' median of measured over priced seconds (1.0 before any step was seen)."""
        with self._lock:
            return statistics.median(self._ratios) if self._ratios else 1.0

    def step(self, width: int) -> float:
        return self.costs.seconds_for(width) * self.scale

    def draft(self) -> float:
        """One pass of the draft: the latest passes' median, or the one measured at load."""
        with self._lock:
            return statistics.median(self._draft_passes) if self._draft_passes else self.draft_pass

    def learn(self, records: list[StepRecord]) -> None:
        """Take in what these decoding steps took (a draft's passes apart): the prices follow this machine's load."""
        with self._lock:
            for record in records:
                if record.kind != StepKind.DECODE:
                    continue  # a prefill's width is the prompt's: the curve is priced after it
                drafting = record.draft.seconds if record.draft is not None else 0.0
                if record.draft is not None and record.draft.forward_passes:
                    self._draft_passes.append(record.draft.seconds / record.draft.forward_passes)
                self._ratios.append((record.step_seconds - drafting) / self.costs.seconds_for(record.tokens_fed))


class Deadline:
    """The time one request may hold the model, counted from its start and shared out among its decodings."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = seconds
        self._clock = clock
        self._started = clock()

    def elapsed(self) -> float:
        return self._clock() - self._started

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def passed(self) -> bool:
        return self.left() <= 0

    def share(self, decodings_left: int) -> Callable[[], bool]:
        """A deadline for the decoding that starts now: an equal share of the time left among `decodings_left`
        (a fast decoding leaves its unused time to those after it)."""
        end = self._clock() + max(self.left(), 0.0) / max(decodings_left, 1)
        return lambda: self._clock() >= end

    def shares(self, methods) -> Callable[[Method], bool]:
        """`until(method)` for decodings of `methods`, one after another: each method's share is fixed the
        first time it is asked."""
        ends: dict[Method, Callable[[], bool]] = {}

        def until(method: Method) -> bool:
            if method not in ends:
                ends[method] = self.share(len(methods) - len(ends))
            return ends[method]()

        return until


@dataclass(frozen=True)
class Decoding:
    """One decoding a request makes: the tokens each of its steps feeds, and the draft's one-token passes."""

    method: Method
    width: int
    draft_passes: int = 0


WARM_UP_PROMPT = "def fibonacci(n):\n"


def warmed_prices(lm: LoadedModel, draft: Draft) -> Prices:
    """Warm a freshly loaded model up once (a few tokens of every method) and price its work here.

    The step-cost curve is measured once per model, device and dtype, then read from the cache;
    the draft's pass is timed on a second speculative warm-up, after the first has paid its cold start.
    The curve, measured once, may have been measured on a busy machine: the prices learn from every step
    after it (Prices.learn).
    """
    prompt_ids = encode_prompt(lm.tokenizer, WARM_UP_PROMPT, chat=False)
    methods = (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE)
    warm_up(lm, prompt_ids, DecodeRequest(max_new_tokens=WARM_UP_TOKENS), methods, draft=draft)
    steps = decode_steps(
        lm, prompt_ids, DecodeRequest(method=Method.SPECULATIVE, max_new_tokens=WARM_UP_TOKENS), draft=draft
    )
    drafts = [record.draft for record in steps if record.draft is not None and record.draft.forward_passes]
    draft_pass = sum(d.seconds for d in drafts) / max(sum(d.forward_passes for d in drafts), 1)
    return Prices(step_costs(lm), draft_pass)


def decodings(
    methods, config: LookaheadConfig, lookup: LookupConfig, draft_tokens: int, cost_aware: bool = False
) -> list[Decoding]:
    """The decodings of `methods` at their widest: lookahead's full step, every prompt-lookup match, k drafts.

    A cost-aware plan feeds more than c only where it measured that the tokens it adds outgrow their cost,
    so its lookahead is priced as plain decoding's 1-token steps, not at W, N, G's full width.
    """
    widths = {
        Method.GREEDY: Decoding(Method.GREEDY, 1),
        Method.LOOKAHEAD: Decoding(Method.LOOKAHEAD, 1 if cost_aware else config.tokens_per_step),
        Method.PROMPT_LOOKUP: Decoding(Method.PROMPT_LOOKUP, 1 + lookup.tokens * lookup.candidates),
        Method.SPECULATIVE: Decoding(Method.SPECULATIVE, 1 + draft_tokens, draft_tokens),
    }
    return [widths[Method(method)] for method in methods]


def prefill_seconds(prices: Prices, prompt_tokens: int, work: list[Decoding]) -> float:
    """The prompt's prefills: two per decoding (its warm-up and its timed run)."""
    return 2 * len(work) * PREFILL_MARGIN * prices.step(prompt_tokens)


def token_seconds(prices: Prices, work: list[Decoding]) -> float:
    """What one more new token costs at worst: one full step of every decoding, and a draft's passes."""
    return sum(prices.step(d.width) + d.draft_passes * prices.draft() for d in work)


def request_seconds(prices: Prices, prompt_tokens: int, new_tokens: int, work: list[Decoding]) -> float:
    """The worst case of a request: the prefills, the warm-ups' tokens and the new tokens, one per step."""
    per_token = token_seconds(prices, work)
    return prefill_seconds(prices, prompt_tokens, work) + (WARM_UP_TOKENS + new_tokens) * per_token


def longest_prompt(prices: Prices, work: list[Decoding], seconds: float) -> int:
    """The most prompt tokens whose prefills fit in PREFILL_SHARE of `seconds`."""
    low, high = 1, 1 << 20
    while low < high:  # a step's cost grows with its width: bisect for the last size that fits
        middle = (low + high + 1) // 2
        if prefill_seconds(prices, middle, work) <= PREFILL_SHARE * seconds:
            low = middle
        else:
            high = middle - 1
    return low


def most_new_tokens(prices: Prices, prompt_tokens: int, work: list[Decoding], seconds: float) -> int:
    """The most new tokens a request on this prompt can ask for within `seconds` (0: none fit)."""
    left = seconds - prefill_seconds(prices, prompt_tokens, work)
    return max(math.floor(left / token_seconds(prices, work)) - WARM_UP_TOKENS, 0)


def check_budget(
    prices: Prices, prompt_tokens: int, new_tokens: int, work: list[Decoding], seconds: float, auto: bool = False
) -> None:
    """Refuse (BudgetError) a request whose prompt's prefills exceed their share of `seconds`, or whose first
    MIN_TOKENS new tokens (all it asks for, if fewer) could not fit at worst. Past that, the deadline stops it."""
    longest = longest_prompt(prices, work, seconds)
    if prompt_tokens > longest:
        raise BudgetError(
            f"The prompt is {prompt_tokens:,} tokens; a request may hold the model for {seconds:.0f} s here, "
            f"which leaves room for at most {longest:,} prompt tokens. Shorten the prompt." + busy_advice(prices)
        )
    fitting = most_new_tokens(prices, prompt_tokens, work, seconds)
    needed = min(new_tokens, MIN_TOKENS)
    if needed > fitting:
        widest = max(work, key=lambda d: d.width)
        worst = request_seconds(prices, prompt_tokens, needed, work)
        raise BudgetError(
            f"Even {needed} new tokens could hold the model for up to {worst:.0f} s here, over the {seconds:.0f} s "
            f"a request may take while others wait ({widest.method.value} steps of {widest.width} tokens cost "
            f"{prices.step(widest.width) * 1000:.0f} ms each on this hardware, measured on its latest steps). "
            + advice(prompt_tokens, widest, auto)
            + busy_advice(prices)
        )


BUSY_SCALE = 1.5  # the latest steps this many times their price at load: the machine is busier than it was


def busy_advice(prices: Prices) -> str:
    """When the latest steps ran well over their measured price, the machine is busy: waiting would help."""
    scale = prices.scale
    if scale < BUSY_SCALE:
        return ""
    return (
        f" This machine is busy now: its latest steps took {scale:.1f}× the time measured when the model loaded; "
        "trying again when it is quieter would help too."
    )


def advice(prompt_tokens: int, widest: Decoding, auto: bool) -> str:
    """What would help a request that does not fit: a shorter prompt, or narrower steps where they are wide
    (lookahead's W, N, G only when the request set them: auto chooses its own)."""
    if widest.method == Method.LOOKAHEAD and not auto:
        return "Lower W, N or G (or choose auto settings), or shorten the prompt."
    if widest.method == Method.PROMPT_LOOKUP:
        return "Lower Prompt lookup tokens, or shorten the prompt."
    if widest.method == Method.SPECULATIVE:
        return "Lower Draft tokens k, or shorten the prompt."
    return f"Shorten the prompt ({prompt_tokens:,} tokens now)."


def fit(prices: Prices, rounds: int) -> Fit:
    """The new tokens for which `rounds` rounds of a Run and of a race fit their time, at plain decoding's
    latest pace here (what the page suggests; a guessing method that pays leaves room for more)."""
    step = prices.step(1)

    def tokens(decodings: int, seconds: float) -> int:
        return max(int(seconds / (rounds * decodings * step)) - WARM_UP_TOKENS, 0)

    return Fit(
        step_seconds=step,
        rounds=rounds,
        run_seconds=RUN_SECONDS,
        run_tokens=tokens(2, RUN_SECONDS),
        race_seconds=RACE_SECONDS,
        race_tokens=tokens(4, RACE_SECONDS),
    )
