"""The benchmark: plain decoding, the guessing methods and their transformers peers on the same prompts, in one process.

Methods of this engine: `greedy`, `lookahead`, `prompt-lookup`, `speculative` (a draft model), `medusa`
(heads trained for the model, with a sparse tree sized from the measured step costs) and `eagle`
(speculative decoding with an EAGLE layer, trained for the model, as its draft).
Peers, what a user would otherwise run: `hf-greedy` (`model.generate(do_sample=False)`),
`hf-prompt-lookup` (`generate(prompt_lookup_num_tokens=10)`) and `hf-assisted`
(`generate(assistant_model=...)` with the same draft as `speculative`, at transformers' own
assisted-generation defaults). Every method runs once untimed to warm up; then, prompt by
prompt, R interleaved rounds: in each, every method runs once in order, timed with the device
synchronised, so a burst of load elsewhere hits every method alike. A round's rate for a method is
its tokens over its seconds, both summed over the prompts; a method's tokens per second is the
median of its rounds' rates (with their min and max), its `speedup` the ratio of that median to the
baseline's (hf-greedy when it runs, else greedy) with a bootstrap interval over the rounds
(lab.timing). Its `exact` is the number of prompts whose output equals greedy `generate`; its
`acceptance` (this engine's guessing methods) is the share of candidate tokens verified that were
accepted. With sampling, `greedy` is plain sampling, the peers run `generate` with `do_sample=True`
and the same temperature, top-k and top-p, and nothing is compared token by token. What other
programs used of the CPU meanwhile is read (lab.busy) and kept in the report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from lookahead_core.config import PROMPT_LOOKUP, LookaheadConfig, LookupConfig
from lookahead_core.draft import Draft
from lookahead_core.eagle import EagleLayer
from lookahead_core.forward import synchronize
from lookahead_core.medusa import Medusa
from lookahead_core.models import LoadedModel, encode_prompt
from lookahead_core.records import (
    BenchMethod,
    BenchPrompt,
    BenchReport,
    BenchResult,
    BenchSettings,
    BenchTotals,
    LookaheadSettings,
    LookupSettings,
    Method,
    Spread,
)
from lookahead_core.request import DecodeRequest
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import WARM_UP_TOKENS, candidate_tokens, decode_steps, machine_facts, method_reach, summarize
from lookahead_core.tuning import AutoSettings

from .busy import CpuWatch
from .timing import rate, ratio_of_medians, spread_of

METHODS = tuple(BenchMethod)
REPEATS = 3  # interleaved rounds per prompt by default: the fewest with a median between a min and a max
NEEDS_DRAFT = (BenchMethod.SPECULATIVE, BenchMethod.HF_ASSISTED)
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


@dataclass(frozen=True)
class MethodSetup:
    """What the guessing methods of a bench run take: lookahead's W, N, G (or auto settings), prompt lookup's
    settings, the draft, Medusa's heads with their tree, and the EAGLE entrant's draft (an EAGLE layer)."""

    config: LookaheadConfig
    auto: AutoSettings | None = None
    lookup: LookupConfig = PROMPT_LOOKUP
    draft: Draft | None = None
    medusa: Medusa | None = None
    eagle: Draft | None = None

    def entrant(self, method: BenchMethod) -> MethodSetup:
        """The setup `method` runs with: the EAGLE entrant is speculative decoding with the EAGLE layer as its
        draft."""
        return replace(self, draft=self.eagle) if method == BenchMethod.EAGLE else self


def run_engine(
    lm: LoadedModel, prompt_ids: list[int], method: Method, setup: MethodSetup, max_new_tokens: int, sampling
) -> Timed:
    """One of this engine's methods, timed end to end (step bookkeeping included).

    With auto settings, lookahead gets a fresh planner of their kind. Guessing methods also count
    the candidate tokens they verified and the tokens accepted.
    """
    auto = setup.auto
    planner = auto.make_planner() if auto is not None and method == Method.LOOKAHEAD else None
    synchronize(lm.device)
    start = time.perf_counter()
    request = DecodeRequest(
        method=method, lookahead=setup.config, lookup=setup.lookup, sampling=sampling, max_new_tokens=max_new_tokens
    )
    records = list(decode_steps(lm, prompt_ids, request, planner, setup.draft, setup.medusa))
    synchronize(lm.device)
    seconds = time.perf_counter() - start
    summary = summarize(records)
    offered, accepted = candidate_tokens(records) if method != Method.GREEDY else (None, None)
    return Timed(
        new_token_ids=summary.new_token_ids, steps=summary.steps, seconds=seconds, offered=offered, accepted=accepted
    )


def run_method(
    lm: LoadedModel,
    method: BenchMethod,
    prompt_ids: list[int],
    setup: MethodSetup,
    max_new_tokens: int,
    sampling=GREEDY,
) -> Timed:
    if method == BenchMethod.HF_GREEDY:
        return run_generate(lm, prompt_ids, max_new_tokens, sampling)
    if method == BenchMethod.HF_PROMPT_LOOKUP:
        return run_generate(lm, prompt_ids, max_new_tokens, sampling, prompt_lookup_num_tokens=PROMPT_LOOKUP_TOKENS)
    if method == BenchMethod.HF_ASSISTED:
        return run_generate(lm, prompt_ids, max_new_tokens, sampling, assistant_model=setup.draft.model)
    return run_engine(lm, prompt_ids, method.method, setup.entrant(method), max_new_tokens, sampling)


def check_methods(names: list[str]) -> list[BenchMethod]:
    """The methods named, in the order given; ValueError naming any that is not a bench method."""
    known = {method.value: method for method in BenchMethod}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"unknown method(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(METHODS)}")
    return [known[name] for name in names]


def needs_draft(methods: list[BenchMethod]) -> bool:
    return any(m in NEEDS_DRAFT for m in methods)


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
    rows: list[BenchPrompt], method: BenchMethod, sums: tuple[list[int], list[float]], baseline_rates: list[float]
) -> BenchTotals:
    """One method's totals over the prompts (see BenchTotals): `sums` are its tokens and seconds per round,
    `baseline_rates` the baseline's rate per round."""
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
    )


def acceptance(results: list[BenchResult]) -> float | None:
    """A guessing method's share of verified candidate tokens that were accepted (None for the others)."""
    if any(r.offered is None for r in results):
        return None
    offered = sum(r.offered for r in results)
    return sum(r.accepted for r in results) / offered if offered else 0.0


def encoded_prompts(
    lm: LoadedModel, prompts: list[dict], methods: list[BenchMethod], setup: MethodSetup, max_new_tokens: int
) -> list[list[int]]:
    """Each prompt's token ids; ValueError naming a prompt too long for the model's context with the methods' reach."""
    encoded = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in prompts]
    reach = max(
        (
            method_reach(m.method, setup.config, setup.lookup, setup.entrant(m).draft, setup.medusa)
            for m in methods
            if m.method is not None
        ),
        default=0,
    )
    for item, ids in zip(prompts, encoded, strict=True):
        if lm.context_length is not None and len(ids) + max_new_tokens + reach > lm.context_length:
            raise ValueError(f"prompt {item['id']} has {len(ids)} tokens: too long for the model's context")
    return encoded


def run_bench(
    lm: LoadedModel,
    prompts: list[dict],
    methods: list[str],
    setup: MethodSetup,
    max_new_tokens: int,
    progress: Callable[[int, int, str], None] | None = None,
    dataset: str = "",
    sampling: SamplingConfig = GREEDY,
    *,
    repeats: int = REPEATS,
) -> BenchReport:
    """Benchmark `methods` (BenchMethods or their names) on `prompts` ({id, prompt, chat}) in `repeats`
    interleaved rounds per prompt: a BenchReport of the figures documented in the module docstring.

    With auto settings in `setup`, lookahead runs them and their planner instead of W, N, G.
    Sampled (temperature > 0), every method samples prompt k with seed S + k in every round, `generate`
    with the same warpers; outputs are not compared (`exact` is None). `progress` hears of every timed run.
    """
    methods = check_methods(methods)
    check_repeats(repeats)
    if needs_draft(methods) and setup.draft is None:
        raise ValueError(f"{', '.join(m for m in methods if m in NEEDS_DRAFT)} need a draft model")
    if BenchMethod.MEDUSA in methods and setup.medusa is None:
        raise ValueError("medusa needs heads trained for this model (--heads PATH)")
    if BenchMethod.HF_ASSISTED in methods and setup.draft is not None and isinstance(setup.draft.model, EagleLayer):
        raise ValueError(
            "hf-assisted needs a draft model: transformers' assisted generation cannot draft with an EAGLE layer"
        )
    if BenchMethod.EAGLE in methods and setup.eagle is None:
        raise ValueError("eagle needs an EAGLE layer trained for this model (--eagle PATH)")
    if setup.auto is not None:
        setup = replace(setup, config=setup.auto.config)
    encoded = encoded_prompts(lm, prompts, methods, setup, max_new_tokens)
    for method in methods:  # warm-up, as trace.warm_up does for this engine's methods, the peers included
        run_method(lm, method, encoded[0], setup, min(max_new_tokens, WARM_UP_TOKENS), sampling)
    baseline = baseline_of(methods)
    watch = CpuWatch()
    rows, timed = [], []
    per_prompt = len(methods) * repeats
    total = len(prompts) * per_prompt
    for index, (item, ids) in enumerate(zip(prompts, encoded, strict=True)):
        greedy = sampling.is_greedy
        reference = (
            run_generate(lm, ids, max_new_tokens).new_token_ids
            if greedy and BenchMethod.HF_GREEDY not in methods
            else None
        )

        def run(method: BenchMethod, r: int, index=index, label=item["id"], ids=ids) -> Timed:  # this prompt's
            if progress is not None:
                done = index * per_prompt + r * len(methods) + methods.index(method)
                progress(done, total, f"{label} {method} round {r + 1}/{repeats}")
            return run_method(lm, method, ids, setup, max_new_tokens, sampling.for_prompt(index))

        rounds = timed_rounds(run, methods, repeats)
        if greedy and reference is None:
            reference = rounds[0][BenchMethod.HF_GREEDY].new_token_ids
        shown = {method: median_round(rounds, method) for method in methods}
        results = {method: t.result(shown[baseline], reference) for method, t in shown.items()}
        rows.append(BenchPrompt(id=item["id"], prompt_tokens=len(ids), methods=results))
        timed.append(rounds)
    busy = watch.reading()
    if progress is not None:
        progress(total, total, "done")
    sums = {m: round_sums(timed, m) for m in methods}
    baseline_rates = [rate(t, s) for t, s in zip(*sums[baseline], strict=True)]
    config, lookup = setup.config, setup.lookup
    return BenchReport(
        summary={m: totals(rows, m, sums[m], baseline_rates) for m in methods},
        prompts=rows,
        machine=machine_facts(lm),
        settings=BenchSettings(
            dataset=dataset,
            methods=methods,
            baseline=baseline,
            max_new_tokens=max_new_tokens,
            lookahead=LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses),
            auto=setup.auto.settings() if setup.auto is not None else None,
            sampling=sampling.record(),
            prompt_lookup=LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates),
            draft=setup.draft.settings() if setup.draft is not None else None,
            medusa=setup.medusa.settings() if BenchMethod.MEDUSA in methods else None,
            eagle=setup.eagle.settings() if BenchMethod.EAGLE in methods else None,
            prompt_lookup_num_tokens=PROMPT_LOOKUP_TOKENS,
            ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
            repeats=repeats,
        ),
        busy=busy,
    )
