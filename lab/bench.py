"""The benchmark: greedy (or sampled) decoding, lookahead and their peers on the same prompts, in one process.

Methods: `greedy` and `lookahead` (this engine), `hf-greedy` (`model.generate(do_sample=False)`,
what a user would otherwise run) and `prompt-lookup` (transformers' built-in prompt lookup
decoding, 10 tokens). Every method runs once untimed to warm up; then, prompt by prompt, the
methods run one after the other, each timed with the device synchronised. A method's `exact` is
the number of prompts whose output equals greedy `generate`; its `speedup` is its tokens per
second over the baseline's (hf-greedy when it runs, else greedy), measured in the same run.
With sampling, `greedy` is plain sampling, `hf-greedy` and `prompt-lookup` run `generate` with
`do_sample=True` and the same temperature, top-k and top-p, and nothing is compared token by token.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from lookahead_core.config import LookaheadConfig
from lookahead_core.forward import synchronize
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import Method, to_data
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import decode_steps, lookahead_reach, machine_facts, summarize

METHODS = ("greedy", "lookahead", "prompt-lookup", "hf-greedy")
PROMPT_LOOKUP_TOKENS = 10  # transformers' documented default for prompt_lookup_num_tokens


class ForwardCounter:
    """Counts the model's forward passes (a public forward hook): the step count of `generate`."""

    def __init__(self, model) -> None:
        self.model, self.count = model, 0

    def __enter__(self) -> ForwardCounter:
        self.handle = self.model.register_forward_pre_hook(self.tick)
        return self

    def tick(self, *_) -> None:
        self.count += 1

    def __exit__(self, *_) -> None:
        self.handle.remove()


def sampling_options(sampling: SamplingConfig) -> dict:
    """`generate`'s own arguments for the same decoding: greedy, or sampling with the same P."""
    if sampling.is_greedy:
        return {"do_sample": False}
    torch.manual_seed(sampling.seed)  # generate draws from torch's global generator
    return {"do_sample": True, "temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p}


def run_generate(
    lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int, sampling: SamplingConfig = GREEDY, **options
) -> dict:
    """transformers' own `generate`, greedy or sampled like the engine; options select its strategy."""
    input_ids = torch.tensor([prompt_ids], device=lm.device)
    decoding = sampling_options(sampling)
    synchronize(lm.device)
    start = time.perf_counter()
    with ForwardCounter(lm.model) as counter:
        output = lm.model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            **decoding,
            max_new_tokens=max_new_tokens,
            pad_token_id=lm.tokenizer.pad_token_id or min(lm.eos_ids, default=0),
            **options,
        )
    synchronize(lm.device)
    seconds = time.perf_counter() - start
    new = output[0, len(prompt_ids) :].tolist()
    return {"new_token_ids": new, "steps": counter.count, "seconds": seconds, "draws": None, "accepted": None}


def run_engine(
    lm: LoadedModel, prompt_ids: list[int], method: str, config, max_new_tokens: int, auto=None, sampling=GREEDY
) -> dict:
    """This engine's greedy or lookahead decoding, timed end to end (step bookkeeping included).

    With `auto` (tuning.AutoSettings), lookahead gets a fresh planner of the auto settings.
    Sampled lookahead also counts its draws: candidate tokens tried, and those accepted.
    """
    planner = auto.make_planner() if auto is not None and method == "lookahead" else None
    synchronize(lm.device)
    start = time.perf_counter()
    records = list(decode_steps(lm, prompt_ids, Method(method), config, max_new_tokens, planner, sampling))
    synchronize(lm.device)
    seconds = time.perf_counter() - start
    summary = summarize(records)
    draws = [d for r in records if r.verification for p in r.verification.positions for d in p.draws]
    sampled = not sampling.is_greedy and method == "lookahead"
    return {
        "new_token_ids": summary.new_token_ids,
        "steps": summary.steps,
        "seconds": seconds,
        "draws": len(draws) if sampled else None,
        "accepted": sum(d.accepted for d in draws) if sampled else None,
    }


def run_method(
    lm: LoadedModel, method: str, prompt_ids: list[int], config, max_new_tokens: int, auto=None, sampling=GREEDY
) -> dict:
    if method == "hf-greedy":
        return run_generate(lm, prompt_ids, max_new_tokens, sampling)
    if method == "prompt-lookup":
        return run_generate(lm, prompt_ids, max_new_tokens, sampling, prompt_lookup_num_tokens=PROMPT_LOOKUP_TOKENS)
    return run_engine(lm, prompt_ids, method, config, max_new_tokens, auto, sampling)


def check_methods(methods: list[str]) -> list[str]:
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown method(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(METHODS)}")
    return methods


def totals(rows: list[dict], method: str, baseline_seconds: float, baseline_tokens: int) -> dict:
    """One method's totals over the prompts; speedup is tokens per second over the baseline's."""
    tokens = sum(r["methods"][method]["tokens"] for r in rows)
    steps = sum(r["methods"][method]["steps"] for r in rows)
    seconds = sum(r["methods"][method]["seconds"] for r in rows)
    rate = tokens / seconds if seconds else 0.0
    baseline_rate = baseline_tokens / baseline_seconds if baseline_seconds else 0.0
    return {
        "prompts": len(rows),
        "tokens": tokens,
        "steps": steps,
        "tokens_per_step": tokens / steps if steps else 0.0,
        "seconds": seconds,
        "tokens_per_second": rate,
        "speedup": rate / baseline_rate if baseline_rate else 0.0,
        "exact": None
        if rows[0]["methods"][method]["exact"] is None
        else sum(r["methods"][method]["exact"] for r in rows),
        "acceptance": acceptance(rows, method),
    }


def acceptance(rows: list[dict], method: str) -> float | None:
    """Sampled lookahead: the share of candidate tokens tried that were accepted (None for other runs)."""
    draws = [r["methods"][method]["draws"] for r in rows]
    if None in draws:
        return None
    tried = sum(draws)
    return sum(r["methods"][method]["accepted"] for r in rows) / tried if tried else 0.0


def run_bench(
    lm: LoadedModel,
    prompts: list[dict],
    methods: list[str],
    config: LookaheadConfig,
    max_new_tokens: int,
    progress: Callable[[int, int, str], None] | None = None,
    dataset: str = "",
    auto=None,
    sampling: SamplingConfig = GREEDY,
) -> dict:
    """Benchmark `methods` on `prompts` ({id, prompt, chat}); the report documented in the module docstring.

    With `auto` (tuning.AutoSettings), lookahead runs its settings and planner instead of `config`.
    Sampled (temperature > 0), every method samples prompt k with seed S + k, `generate` with the
    same warpers; outputs are not compared (`exact` is None), and lookahead's acceptance is counted.
    """
    check_methods(methods)
    config = auto.config if auto is not None else config
    encoded = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in prompts]
    reach = lookahead_reach(config)
    for item, ids in zip(prompts, encoded, strict=True):
        if lm.context_length is not None and len(ids) + max_new_tokens + reach > lm.context_length:
            raise ValueError(f"prompt {item['id']} has {len(ids)} tokens: too long for the model's context")
    for method in methods:  # warm-up: first calls allocate, load kernels and fill caches
        run_method(lm, method, encoded[0], config, min(max_new_tokens, 16), auto, sampling)
    rows = []
    total = len(prompts) * len(methods)
    for index, (item, ids) in enumerate(zip(prompts, encoded, strict=True)):
        greedy = sampling.is_greedy
        reference = (
            run_generate(lm, ids, max_new_tokens)["new_token_ids"] if greedy and "hf-greedy" not in methods else None
        )
        results = {}
        for offset, method in enumerate(methods):
            if progress is not None:
                progress(index * len(methods) + offset, total, f"{item['id']} {method}")
            results[method] = run_method(lm, method, ids, config, max_new_tokens, auto, sampling.for_prompt(index))
        if greedy and reference is None:
            reference = results["hf-greedy"]["new_token_ids"]
        rows.append(
            {
                "id": item["id"],
                "prompt_tokens": len(ids),
                "methods": {
                    method: {
                        "tokens": len(r["new_token_ids"]),
                        "steps": r["steps"],
                        "tokens_per_step": len(r["new_token_ids"]) / r["steps"],
                        "seconds": r["seconds"],
                        "tokens_per_second": len(r["new_token_ids"]) / r["seconds"],
                        "exact": r["new_token_ids"] == reference if greedy else None,
                        "draws": r["draws"],
                        "accepted": r["accepted"],
                    }
                    for method, r in results.items()
                },
            }
        )
    if progress is not None:
        progress(total, total, "done")
    baseline = "hf-greedy" if "hf-greedy" in methods else "greedy" if "greedy" in methods else methods[0]
    base_tokens = sum(r["methods"][baseline]["tokens"] for r in rows)
    base_seconds = sum(r["methods"][baseline]["seconds"] for r in rows)
    for row in rows:
        base = row["methods"][baseline]
        for result in row["methods"].values():
            result["speedup"] = result["tokens_per_second"] / base["tokens_per_second"]
    return {
        "summary": {m: totals(rows, m, base_seconds, base_tokens) for m in methods},
        "prompts": rows,
        "machine": to_data(machine_facts(lm)),
        "settings": {
            "dataset": dataset,
            "methods": methods,
            "baseline": baseline,
            "max_new_tokens": max_new_tokens,
            "lookahead": config.as_dict(),
            "auto": to_data(auto.settings()) if auto is not None else None,
            "sampling": to_data(sampling.record()),
            "prompt_lookup_num_tokens": PROMPT_LOOKUP_TOKENS,
            "ran_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        },
    }
