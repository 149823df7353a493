"""The race: greedy, then lookahead, on the same prompt, each timed end to end with nothing drawn.

Each run keeps only what its curve needs: the tokens committed and the wall time after every
step. The result also carries the step costs of this hardware, so a slow result can be
explained by what a wide step costs here.
"""

from __future__ import annotations

import time

from .config import LookaheadConfig
from .costs import StepCosts
from .forward import synchronize
from .models import LoadedModel
from .trace import decode_steps, machine_facts


def timed_run(lm: LoadedModel, prompt_ids, method: str, config, max_new_tokens: int, planner=None) -> dict:
    """Decode once; the cumulative tokens and seconds after each step, and per-step tokens fed."""
    tokens, seconds, fed, committed = [0], [0.0], [], []
    synchronize(lm.device)
    start = time.perf_counter()
    for record in decode_steps(lm, prompt_ids, method, config, max_new_tokens, planner):
        synchronize(lm.device)
        tokens.append(tokens[-1] + len(record["committed"]))
        seconds.append(time.perf_counter() - start)
        fed.append(record["tokens_fed"])
        committed += record["committed"]
    return {"tokens": tokens, "seconds": seconds, "tokens_fed": fed, "new_token_ids": committed}


def race(
    lm: LoadedModel, prompt_ids: list[int], config: LookaheadConfig, max_new_tokens: int, costs: StepCosts, auto=None
) -> dict:
    """Greedy then lookahead (with `auto`'s settings and planner if given), and how they compare.

    Speedup is greedy's total seconds over lookahead's; the step figures leave out the prefill,
    which both methods share.
    """
    config = auto.config if auto is not None else config
    greedy = timed_run(lm, prompt_ids, "greedy", config, max_new_tokens)
    planner = auto.make_planner() if auto is not None else None
    lookahead = timed_run(lm, prompt_ids, "lookahead", config, max_new_tokens, planner)
    for run in (greedy, lookahead):
        steps = len(run["tokens_fed"]) - 1
        decode_seconds = run["seconds"][-1] - run["seconds"][1]
        run["steps"] = len(run["tokens_fed"])
        run["tokens_per_step"] = run["tokens"][-1] / run["steps"]
        run["decode_step_seconds"] = decode_seconds / steps if steps else 0.0
        run["mean_tokens_fed"] = sum(run["tokens_fed"][1:]) / steps if steps else 0.0
        run["decode_tokens_per_step"] = (run["tokens"][-1] - run["tokens"][1]) / steps if steps else 0.0
    greedy_step = greedy["decode_step_seconds"]
    return {
        "greedy": greedy,
        "lookahead": lookahead,
        "exact": lookahead["new_token_ids"] == greedy["new_token_ids"],
        "speedup": greedy["seconds"][-1] / lookahead["seconds"][-1],
        "step_cost_ratio": lookahead["decode_step_seconds"] / greedy_step if greedy_step else 0.0,
        "settings": {**config.as_dict(), "planner": auto.planner if auto is not None else "full"},
        "why": auto.why if auto is not None else None,
        "step_costs": costs.as_dict(),
        "machine": machine_facts(lm),
        "max_new_tokens": max_new_tokens,
        "ran_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
