"""The benchmark: plain decoding, the guessing methods and their transformers peers on the same prompts, in one process.

Methods of this engine: `greedy`, `lookahead`, `prompt-lookup`, `speculative` (a draft model), `medusa`
(heads trained for the model, with a sparse tree sized from the measured step costs) and `eagle`
(speculative decoding with an EAGLE layer, trained for the model, as its draft).
Peers, what a user would otherwise run: `hf-greedy` (`model.generate(do_sample=False)`), `hf-static` (the
same with `cache_implementation="static"`, which transformers compiles with CUDA graphs on a GPU and runs eagerly
on a CPU: plain decoding at its best there; every method's rate is also given over it, `over_static`),
`hf-prompt-lookup` (`generate(prompt_lookup_num_tokens=10)`) and `hf-assisted`
(`generate(assistant_model=...)` with the same draft as `speculative`, at transformers' own
assisted-generation defaults). Every method runs once untimed to warm up; then, prompt by
prompt, R interleaved rounds: in each, every method runs once in order, timed with the device
synchronised, so a burst of load elsewhere hits every method alike. A round's rate for a method is
its tokens over its seconds, both summed over the prompts; a method's tokens per second is the
median of its rounds' rates (with their min and max), its `speedup` the ratio of that median to the
baseline's (hf-greedy when it runs, else greedy) with a bootstrap interval over the rounds
(lab.measure.timing). Its `exact` is the number of prompts whose output equals greedy `generate`; its
`acceptance` (this engine's guessing methods) is the share of candidate tokens verified that were
accepted. With sampling, `greedy` is plain sampling, the peers run `generate` with `do_sample=True`
and the same temperature, top-k and top-p, and nothing is compared token by token. What other
programs used of the CPU meanwhile is read (lab.measure.busy) and kept in the report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from lab.measure.busy import CpuWatch
from lab.measure.datasets import encode_item
from lab.measure.timing import rate, ratio_of_medians, spread_of
from lookahead_core.device.forward import synchronize
from lookahead_core.divergence import divergence
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import (
    METHODS,
    BenchMethod,
    BenchPrompt,
    BenchReport,
    BenchResult,
    BenchSettings,
    BenchTotals,
    Method,
    Needs,
    Spread,
    StepMode,
    entrant_missing,
    entrant_needs,
    entrant_settings,
)
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.spec import method_settings
from lookahead_core.step.decoding import DecodingError
from lookahead_core.trace import (
    WARM_UP_TOKENS,
    candidate_tokens,
    lean_steps,
    machine_facts,
    plan_of_any_prompt,
    settle,
    summarize,
    warm_up,
    warm_up_prompts,
)
from lookahead_core.working_state import refused

ENTRANTS = tuple(BenchMethod)
REPEATS = 3  # interleaved rounds per prompt by default: the fewest with a median between a min and a max
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


@dataclass(frozen=True)
class Timed:
    """One method's decoding of one prompt: the new tokens, the forward passes, the seconds, and for this
    engine's guessing methods the candidate tokens verified and accepted (None for the others)."""

    new_token_ids: list[int]
    steps: int
    seconds: float
    offered: int | None = None
    accepted: int | None = None

    def result(self, baseline: Timed, reference: list[int] | None) -> BenchResult:
        """As a report row: speedup over `baseline` on the same prompt, exact against `reference` (None: sampled)."""
        tokens = len(self.new_token_ids)
        return BenchResult(
            tokens=tokens,
            steps=self.steps,
            tokens_per_step=tokens / self.steps,
            seconds=self.seconds,
            tokens_per_second=tokens / self.seconds,
            exact=self.new_token_ids == reference if reference is not None else None,
            offered=self.offered,
            accepted=self.accepted,
            speedup=(tokens / self.seconds) / (len(baseline.new_token_ids) / baseline.seconds),
        )


def sampling_options(sampling: SamplingConfig) -> dict:
    """`generate`'s own arguments for the same decoding: greedy, or sampling with the same P."""
    if sampling.is_greedy:
        return {"do_sample": False}
    torch.manual_seed(sampling.seed)  # generate draws from torch's global generator
    return {"do_sample": True, "temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p}


def first_answer(lm: LoadedModel, text: str, max_new_tokens: int) -> str:
    """The model's own greedy answer to `text` as a chat turn (what a second turn follows)."""
    ids = encode_prompt(lm.tokenizer, text, chat=True)
    return lm.tokenizer.decode(run_generate(lm, ids, max_new_tokens).new_token_ids, skip_special_tokens=True)


def run_generate(
    lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int, sampling: SamplingConfig = GREEDY, **options
) -> Timed:
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
    return Timed(new_token_ids=output[0, len(prompt_ids) :].tolist(), steps=counter.count, seconds=seconds)


def run_engine(lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> Timed:
    """One of this engine's methods (the request's), timed end to end (the lean path: its steps tallied, not
    recorded).

    With the runtime's auto settings, lookahead gets a fresh planner of their kind. Guessing methods also
    count the candidate tokens they verified and the tokens accepted.
    """
    synchronize(lm.device)
    start = time.perf_counter()
    records = list(lean_steps(lm, prompt_ids, request, runtime))
    synchronize(lm.device)
    seconds = time.perf_counter() - start
    summary = summarize(records)
    offered, accepted = candidate_tokens(records) if METHODS[request.method].guesses else (None, None)
    return Timed(
        new_token_ids=summary.new_token_ids, steps=summary.steps, seconds=seconds, offered=offered, accepted=accepted
    )


# transformers' own generate as a user would run it (records.PEERS): each peer's arguments, from what the bench
# runs with
GENERATE_ARGUMENTS: dict[BenchMethod, Callable[[Runtime], dict]] = {
    BenchMethod.HF_GREEDY: lambda runtime: {},
    BenchMethod.HF_STATIC: lambda runtime: {"cache_implementation": "static"},
    BenchMethod.HF_PROMPT_LOOKUP: lambda runtime: {"prompt_lookup_num_tokens": PROMPT_LOOKUP_TOKENS},
    BenchMethod.HF_ASSISTED: lambda runtime: {"assistant_model": runtime.draft.model},
}


def run_method(
    lm: LoadedModel, method: BenchMethod, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime
) -> Timed:
    """One entrant on one prompt with the request's settings, budget and sampling: a peer's `generate`, or the
    engine's method of that name."""
    if method in GENERATE_ARGUMENTS:
        arguments = GENERATE_ARGUMENTS[method](runtime)
        return run_generate(lm, prompt_ids, request.max_new_tokens, request.sampling, **arguments)
    return run_engine(lm, prompt_ids, replace(request, method=method.method), runtime)


def warm_up_all(
    lm: LoadedModel, methods: list[BenchMethod], encoded: list[list[int]], request: DecodeRequest, runtime: Runtime
) -> None:
    """Untimed, before any round: this engine's methods by trace.warm_up, on every prompt that takes a fixed shape
    no other took (trace.warm_up_prompts: its capture is made here), and the peers on the first prompt's first
    WARM_UP_TOKENS tokens; where hf-static compiles, on the longest prompt with the whole budget instead."""
    engine = [method.method for method in methods if method.method is not None]
    for ids in warm_up_prompts(lm, encoded, request, runtime, engine) if engine else []:
        warm_up(lm, ids, request, runtime, engine)
    warming = replace(request, max_new_tokens=min(request.max_new_tokens, WARM_UP_TOKENS))
    for method in methods:
        if method == BenchMethod.HF_STATIC and compiles_static(lm):
            # transformers sizes a static cache for the largest one asked for so far and compiles the step for
            # that size: asked here for the largest the rounds will need, no round recompiles it
            run_method(lm, method, max(encoded, key=len), request, runtime)
        elif method.method is None:
            run_method(lm, method, encoded[0], warming, runtime)


def compiles_static(lm: LoadedModel) -> bool:
    """Whether transformers compiles `generate`'s step with a static cache on this device (its own rule: on
    CUDA and the like, not on a CPU, where hf-static runs eagerly)."""
    return lm.model.device.type in ("cuda", "xpu")


def check_methods(names: list[str]) -> list[BenchMethod]:
    """The methods named, in the order given; ValueError naming any that is not a bench method."""
    known = {method.value: method for method in BenchMethod}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"unknown method(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(BenchMethod)}")
    return [known[name] for name in names]


def needs(methods: list[BenchMethod]) -> set[Needs]:
    """What the entrants run with besides the model, together."""
    return {entrant_needs(method) for method in methods}


def engine_methods(methods: list[BenchMethod]) -> list[Method]:
    """The engine's methods a runtime for these entrants is built for: each engine entrant's, and speculative
    decoding's where a peer borrows its draft (hf-assisted)."""
    engine = [method.method for method in methods if method.method is not None]
    return engine + ([Method.SPECULATIVE] if Needs.DRAFT in needs(methods) and Method.SPECULATIVE not in engine else [])


def check_runtime(methods: list[BenchMethod], runtime: Runtime) -> None:
    """ValueError naming the first entrant whose needs the runtime lacks."""
    for method in methods:
        if not runtime.has(entrant_needs(method)):
            raise ValueError(f"{method}: {entrant_missing(method)}")


def baseline_of(methods: list[BenchMethod]) -> BenchMethod:
    """What every speedup is measured against: hf-greedy when it runs, else greedy, else the first method."""
    return next((m for m in (BenchMethod.HF_GREEDY, BenchMethod.GREEDY) if m in methods), methods[0])


def check_repeats(repeats: int) -> None:
    """ValueError unless at least one round is asked for."""
    if repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")


Rounds = list[dict[BenchMethod, Timed]]  # one prompt's rounds: rounds[r][method]


def timed_rounds(run: Callable[[BenchMethod, int], Timed], methods: Sequence[BenchMethod], repeats: int) -> Rounds:
    """`repeats` interleaved rounds of one prompt: round r calls `run(method, r)` for every method, in the
    order given, before round r + 1 starts."""
    return [{method: run(method, r) for method in methods} for r in range(repeats)]


def median_round(rounds: Rounds, method: BenchMethod) -> Timed:
    """`method`'s run of median seconds over the rounds (the lower middle of an even count): what a prompt's
    result shows."""
    runs = sorted((r[method] for r in rounds), key=lambda timed: timed.seconds)
    return runs[(len(runs) - 1) // 2]


def round_sums(prompts: list[Rounds], method: BenchMethod) -> tuple[list[int], list[float]]:
    """`method`'s tokens and seconds in each round, each summed over the prompts."""
    by_round = list(zip(*prompts, strict=True))
    tokens = [sum(len(runs[method].new_token_ids) for runs in one) for one in by_round]
    seconds = [sum(runs[method].seconds for runs in one) for one in by_round]
    return tokens, seconds


def speedup_over(rates: list[float], baseline_rates: list[float]) -> Spread:
    """The ratio of median rates with its interval over the rounds (0 when the baseline made no tokens)."""
    if not statistics.median(baseline_rates):
        return Spread(median=0.0, low=0.0, high=0.0)
    return ratio_of_medians(rates, baseline_rates)


def totals(
    rows: list[BenchPrompt],
    method: BenchMethod,
    sums: tuple[list[int], list[float]],
    baseline_rates: list[float],
    static_rates: list[float] | None = None,
) -> BenchTotals:
    """One method's totals over the prompts (see BenchTotals): `sums` are its tokens and seconds per round,
    `baseline_rates` the baseline's rate per round, `static_rates` hf-static's (None: it did not run)."""
    results = [row.methods[method] for row in rows]
    tokens = sum(r.tokens for r in results)
    steps = sum(r.steps for r in results)
    round_tokens, round_seconds = sums
    rates = [rate(t, s) for t, s in zip(round_tokens, round_seconds, strict=True)]
    speedup = speedup_over(rates, baseline_rates)
    return BenchTotals(
        prompts=len(rows),
        tokens=tokens,
        steps=steps,
        tokens_per_step=tokens / steps if steps else 0.0,
        seconds=statistics.median(round_seconds),
        tokens_per_second=statistics.median(rates),
        speedup=speedup.median,
        exact=None if results[0].exact is None else sum(r.exact for r in results),
        acceptance=acceptance(results),
        round_tokens=round_tokens,
        round_seconds=round_seconds,
        rate=spread_of(rates),
        speedup_interval=speedup,
        over_static=speedup_over(rates, static_rates) if static_rates is not None else None,
    )


def acceptance(results: list[BenchResult]) -> float | None:
    """A guessing method's share of verified candidate tokens that were accepted (None for the others)."""
    if any(r.offered is None for r in results):
        return None
    offered = sum(r.offered for r in results)
    return sum(r.accepted for r in results) / offered if offered else 0.0


def encoded_prompts(
    lm: LoadedModel, prompts: list[dict], methods: list[BenchMethod], request: DecodeRequest, runtime: Runtime
) -> list[list[int]]:
    """Each prompt's token ids; ValueError naming a prompt one of this engine's entrants cannot decode as asked (too
    long for the model's context with that method's reach), each entrant settled on it as its rounds will be
    (trace.settle) before any is run."""
    encoded = [encode_item(lm.tokenizer, p) for p in prompts]
    engine = [m.method for m in methods if m.method is not None]
    for item, ids in zip(prompts, encoded, strict=True):
        try:
            for method in engine:
                settle(lm, ids, replace(request, method=method), runtime, recorded=False)
        except DecodingError as refused:
            raise ValueError(f"prompt {item['id']} has {len(ids)} tokens: {refused}") from None
    return encoded


def run_bench(
    lm: LoadedModel,
    prompts: list[dict],
    methods: list[str],
    request: DecodeRequest,
    runtime: Runtime,
    progress: Callable[[int, int, str], None] | None = None,
    dataset: str = "",
    *,
    repeats: int = REPEATS,
) -> BenchReport:
    """Benchmark `methods` (BenchMethods or their names) on `prompts` ({id, prompt, chat}) in `repeats`
    interleaved rounds per prompt: a BenchReport of the figures documented in the module docstring.

    `request` holds the settings (W, N, G, prompt lookup's), the budget of new tokens and the sampling
    settings; `runtime` what the entrants run with (with auto settings, lookahead runs them and their planner
    instead of W, N, G). Sampled (temperature > 0), every method samples prompt k with seed S + k in every
    round, `generate` with the same warpers; outputs are not compared (`exact` is None). `progress` hears of
    every timed run.
    """
    methods = check_methods(methods)
    check_repeats(repeats)
    check_runtime(methods, runtime)
    encoded = encoded_prompts(lm, prompts, methods, request, runtime)
    settings = bench_settings(lm, methods, baseline_of(methods), request, runtime, (dataset, repeats))
    warm_up_all(lm, methods, encoded, request, replace(runtime, store=None))
    baseline = baseline_of(methods)
    watch = CpuWatch()
    rows, timed = [], []
    for index, (item, ids) in enumerate(zip(prompts, encoded, strict=True)):
        rounds = prompt_rounds(lm, methods, (index, item["id"], ids), request, runtime, progress, repeats, len(prompts))
        reference = bench_reference(lm, methods, ids, request, rounds)
        shown = {method: median_round(rounds, method) for method in methods}
        results = {method: t.result(shown[baseline], reference) for method, t in shown.items()}
        for method, result in results.items():
            if result.exact is False:
                result.divergence = divergence(lm, ids, reference, shown[method].new_token_ids)
        rows.append(BenchPrompt(id=item["id"], prompt_tokens=len(ids), methods=results))
        timed.append(rounds)
        if runtime.store is not None:  # a warm store: the prompts after this one match its output too
            runtime.store.add(item["id"], rounds[0][baseline].new_token_ids)
    busy = watch.reading()
    if progress is not None:
        total = len(prompts) * len(methods) * repeats
        progress(total, total, "done")
    sums = {m: round_sums(timed, m) for m in methods}
    rates = {m: [rate(t, s) for t, s in zip(*sums[m], strict=True)] for m in methods}
    static = rates.get(BenchMethod.HF_STATIC)
    return BenchReport(
        summary={m: totals(rows, m, sums[m], rates[baseline], static) for m in methods},
        prompts=rows,
        machine=machine_facts(lm),
        settings=settings,
        busy=busy,
    )


def prompt_rounds(
    lm: LoadedModel,
    methods: list[BenchMethod],
    prompt: tuple[int, str, list[int]],
    request: DecodeRequest,
    runtime: Runtime,
    progress: Callable[[int, int, str], None] | None,
    repeats: int,
    prompts: int,
) -> Rounds:
    """One prompt's interleaved rounds: `prompt` is its index, id and token ids; sampled, prompt k draws with seed
    S + k in every round. `progress` hears of every run, counted over all `prompts`."""
    index, label, ids = prompt
    seeded = replace(request, sampling=request.sampling.for_prompt(index))
    per_prompt = len(methods) * repeats

    def run(method: BenchMethod, r: int) -> Timed:
        if progress is not None:
            done = index * per_prompt + r * len(methods) + methods.index(method)
            progress(done, prompts * per_prompt, f"{label} {method} round {r + 1}/{repeats}")
        return run_method(lm, method, ids, seeded, runtime)

    return timed_rounds(run, methods, repeats)


def bench_reference(
    lm: LoadedModel, methods: list[BenchMethod], ids: list[int], request: DecodeRequest, rounds: Rounds
) -> list[int] | None:
    """What every output is compared with: greedy `generate`'s (hf-greedy's first round, or run here when
    hf-greedy is not benched); None when sampling."""
    if not request.sampling.is_greedy:
        return None
    if BenchMethod.HF_GREEDY in methods:
        return rounds[0][BenchMethod.HF_GREEDY].new_token_ids
    return run_generate(lm, ids, request.max_new_tokens).new_token_ids


def bench_settings(
    lm: LoadedModel,
    methods: list[BenchMethod],
    baseline: BenchMethod,
    request: DecodeRequest,
    runtime: Runtime,
    prompts: tuple[str, int],
) -> BenchSettings:
    """What the bench ran with, as its report keeps it: `prompts` is the prompt set's name and the rounds run; the
    settings and step mode as trace.settle settles its decodings (on a one-token prompt: no prompt changes them)."""
    dataset, repeats = prompts
    settled = plan_of_any_prompt(lm, request, runtime)
    request = settled.request
    return BenchSettings(
        dataset=dataset,
        methods=methods,
        baseline=baseline,
        max_new_tokens=request.max_new_tokens,
        by_method=method_settings(request, runtime, {entrant_settings(entrant) for entrant in methods} - {None}),
        sampling=request.sampling.record(),
        static_compiled=compiles_static(lm) if BenchMethod.HF_STATIC in methods else None,
        prompt_lookup_num_tokens=PROMPT_LOOKUP_TOKENS,
        ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        repeats=repeats,
        mode=settled.mode,
        mode_note=settled.mode_note,
        suffix_warm=runtime.store is not None if BenchMethod.SUFFIX in methods else None,
        state_on_host={
            BenchMethod(method.value): why
            for method, why in refused(lm.model).items()
            if BenchMethod(method.value) in methods and settled.mode != StepMode.EAGER  # eager keeps none on it
        },
    )
