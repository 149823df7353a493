"""The race: greedy, then lookahead, on the same prompt, each timed end to end with nothing drawn.

Each run keeps only what its curve needs: the tokens committed and the wall time after every
step. The result (records.RaceRecord) also carries the step costs of this hardware, so a slow
result can be explained by what a wide step costs here.
"""

from __future__ import annotations

import time

from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import StepCosts
from lookahead_core.forward import synchronize
from lookahead_core.models import LoadedModel
from lookahead_core.records import Method, RaceLane, RaceRecord, Settings
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import decode_steps, machine_facts
from lookahead_core.tuning import AutoSettings


def timed_run(
    lm: LoadedModel, prompt_ids, method: Method, config, max_new_tokens: int, planner=None, sampling=GREEDY
) -> RaceLane:
    """Decode once; the cumulative tokens and seconds after each step, and per-step tokens fed.

    The step figures leave out the prefill, which both methods share.
    """
    tokens, seconds, fed, committed = [0], [0.0], [], []
    synchronize(lm.device)
    start = time.perf_counter()
    for record in decode_steps(lm, prompt_ids, method, config, max_new_tokens, planner, sampling):
        synchronize(lm.device)
        tokens.append(tokens[-1] + len(record.committed))
        seconds.append(time.perf_counter() - start)
        fed.append(record.tokens_fed)
        committed += record.committed
    steps = len(fed) - 1
    return RaceLane(
        tokens,
        seconds,
        fed,
        committed,
        len(fed),
        tokens[-1] / len(fed),
        (seconds[-1] - seconds[1]) / steps if steps else 0.0,
        sum(fed[1:]) / steps if steps else 0.0,
        (tokens[-1] - tokens[1]) / steps if steps else 0.0,
    )


def race(
    lm: LoadedModel,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    costs: StepCosts,
    auto: AutoSettings | None = None,
    sampling: SamplingConfig = GREEDY,
) -> RaceRecord:
    """Plain decoding then lookahead (with `auto`'s settings and planner if given), and how they compare.

    Speedup is lookahead's tokens per second over plain decoding's (sampled runs may stop at
    different lengths). Sampled, both draw with the same settings and seed, so their outputs are
    not compared (`exact` is None).
    """
    config = auto.config if auto is not None else config
    greedy = timed_run(lm, prompt_ids, Method.GREEDY, config, max_new_tokens, sampling=sampling)
    planner = auto.make_planner() if auto is not None else None
    lookahead = timed_run(lm, prompt_ids, Method.LOOKAHEAD, config, max_new_tokens, planner, sampling)
    greedy_step = greedy.decode_step_seconds
    return RaceRecord(
        greedy,
        lookahead,
        lookahead.new_token_ids == greedy.new_token_ids if sampling.is_greedy else None,
        (lookahead.tokens[-1] / lookahead.seconds[-1]) / (greedy.tokens[-1] / greedy.seconds[-1]),
        lookahead.decode_step_seconds / greedy_step if greedy_step else 0.0,
        auto.settings() if auto is not None else Settings(config.window, config.ngram, config.guesses),
        costs.curve(),
        machine_facts(lm),
        max_new_tokens,
        time.strftime("%Y-%m-%dT%H:%M:%S"),
        sampling.record(),
    )
