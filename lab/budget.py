"""How long one request may hold the model, and which prompts and new tokens fit in that time here.

One model serves every visitor in turn, so no request may hold it for long. Before any
decoding, a Run or a race is estimated from this hardware's measured step costs (costs.py) at
its worst: every decoding commits one token per step, so a step of its full width (and a draft's
passes, at their measured cost too) is paid once per new token, and each decoding prefills the
prompt twice (warm-up and timed run). A request whose estimate exceeds its time (RUN_SECONDS, or
RACE_SECONDS for the four methods of a race) is refused, saying what would fit. On a ZeroGPU
Space the platform's quota rules (space.py) decide instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.costs import StepCosts, step_costs
from lookahead_core.draft import Draft
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import Method
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import WARM_UP_TOKENS, decode_steps, warm_up

RUN_SECONDS = 30.0  # a Run: the method and greedy decoding, each warmed up
RACE_SECONDS = 60.0  # a race: four methods, each warmed up
PREFILL_SHARE = 0.5  # the prompt's prefills may take at most this share of a request's time
# A prefill of a long prompt costs more than the curve's straight line (measured at a 256-token
# context) says: attention grows with the square of its length.
PREFILL_MARGIN = 2.0


class BudgetError(ValueError):
    """A request that would hold the model longer than a request may; the message says what fits."""


@dataclass(frozen=True)
class Prices:
    """What model work costs on this hardware, measured: a step of any width, one pass of the draft."""

    costs: StepCosts
    draft_pass: float

    def step(self, width: int) -> float:
        return self.costs.seconds_for(width)


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


def decodings(methods, config: LookaheadConfig, lookup: LookupConfig, draft_tokens: int) -> list[Decoding]:
    """The decodings of `methods` at their widest: lookahead's full step, every prompt-lookup match, k drafts."""
    widths = {
        Method.GREEDY: Decoding(Method.GREEDY, 1),
        Method.LOOKAHEAD: Decoding(Method.LOOKAHEAD, config.tokens_per_step),
        Method.PROMPT_LOOKUP: Decoding(Method.PROMPT_LOOKUP, 1 + lookup.tokens * lookup.candidates),
        Method.SPECULATIVE: Decoding(Method.SPECULATIVE, 1 + draft_tokens, draft_tokens),
    }
    return [widths[Method(method)] for method in methods]


def prefill_seconds(prices: Prices, prompt_tokens: int, work: list[Decoding]) -> float:
    """The prompt's prefills: two per decoding (its warm-up and its timed run)."""
    return 2 * len(work) * PREFILL_MARGIN * prices.step(prompt_tokens)


def token_seconds(prices: Prices, work: list[Decoding]) -> float:
    """What one more new token costs at worst: one full step of every decoding, and a draft's passes."""
    return sum(prices.step(d.width) + d.draft_passes * prices.draft_pass for d in work)


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


def check_budget(prices: Prices, prompt_tokens: int, new_tokens: int, work: list[Decoding], seconds: float) -> None:
    """Refuse (BudgetError) a request whose worst case on this hardware exceeds `seconds`."""
    longest = longest_prompt(prices, work, seconds)
    if prompt_tokens > longest:
        raise BudgetError(
            f"The prompt is {prompt_tokens:,} tokens; a request may hold the model for {seconds:.0f} s here, "
            f"which leaves room for at most {longest:,} prompt tokens. Shorten the prompt."
        )
    fitting = most_new_tokens(prices, prompt_tokens, work, seconds)
    if new_tokens > fitting:
        widest = max(work, key=lambda d: d.width)
        worst = request_seconds(prices, prompt_tokens, new_tokens, work)
        raise BudgetError(
            f"{new_tokens} new tokens could hold the model for up to {worst:.0f} s here, over the {seconds:.0f} s "
            f"a request may take while others wait: at most {fitting} fit with this prompt and these settings "
            f"({widest.method.value} steps of {widest.width} tokens cost {prices.step(widest.width) * 1000:.0f} ms "
            "each on this hardware, measured). Lower Max new tokens, or W, N, G."
        )
