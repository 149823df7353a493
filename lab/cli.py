"""Command line: `python -m lab generate|bench|tune ...` (the contract other tools rely on).

generate: with --json, one JSON object per prompt per line, keys: id, method, window, ngram,
guesses (lookahead's, else null), lookup_ngram, lookup_tokens (prompt lookup's), draft_model,
draft_tokens (speculative's), prompt_token_ids, new_token_ids, text, steps (forward passes of the
target, the prefill counted as one), seconds, plain_seconds and plain_tokens (transformers' `generate` on
the same prompt, timed once beside it; null with --no-plain), temperature, top_k, top_p, seed. Without it,
the prompt and the continuation, each labelled, a one-line summary and a line of plain decoding's time.
The prompt is the positional argument or --prompt (not both), or a --prompts-file.
bench: a table of every method's totals on stdout (medians over --repeats interleaved rounds, with
their spread), what other programs used of the CPU meanwhile, a progress bar on stderr, and the
BenchReport of `bench.run_bench` as JSON with --json and as a self-contained Plotly page with --html.
tune: a line per cell on stderr as the sweep goes, a table of the cells on stdout, the TuneReport as JSON
with --json and as a Plotly page with --html (lab.tune_cli).
Progress goes to stderr (generate: the model's load, the auto settings' step costs, each prompt's tokens decoded);
--help gives each option's default, the app's where the app has the option (lookahead: auto settings).
Errors go to stderr as one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from lab.measure.bench import (
    ENTRANTS,
    REPEATS,
    Timed,
    check_methods,
    check_repeats,
    engine_methods,
    first_answer,
    run_bench,
    run_generate,
)
from lab.measure.datasets import load_prompts, read_prompts_file, with_first_answers
from lab.outputs import writable
from lab.serve.holding import chosen_threads
from lab.train.heads import NONE_SHIP, Aids, runtime_for, ships
from lab.tune_cli import add_tune_options, tune
from lookahead_core.config import (
    DEFAULT_DRAFT_TOKENS,
    LookaheadConfig,
    LookupConfig,
    SettingsError,
    SuffixConfig,
    check_draft_tokens,
)
from lookahead_core.costs import SettledMode, settled_mode
from lookahead_core.methods.draft import DEFAULT_DRAFT, SELF_DRAFTS
from lookahead_core.methods.eagle import EAGLE
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.models import ModelLoadError, encode_prompt, load_model, unicode_problem
from lookahead_core.records import METHODS, BenchMethod, BenchReport, Branch, Method, Needs, StepMode, entrant_needs
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import SamplingConfig
from lookahead_core.spec import method_settings
from lookahead_core.step.decoding import DecodingError
from lookahead_core.trace import decode_steps, summarize
from lookahead_core.tuning import AutoSettings, auto_settings
from visuals.divergence import divergence_words
from visuals.methods import recorded_words
from visuals.plans import settings_words
from visuals.timing import bench_rate, bench_rounds_words, bench_speedup, busy_words, products_words, times

MAX_NEW_TOKENS = 128
# The settings --window, --ngram and --guesses name: given none, lookahead runs the auto settings, as the app's race
# and Auto do; given some, the others take the engine's defaults (LookaheadConfig)
WINDOW_SETTINGS = ("window", "ngram", "guesses")


class DefaultsShown(argparse.HelpFormatter):
    """Each option's help ends with its default, where it has one and the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, argparse.SUPPRESS) or action.default is False:
            return text
        return f"{text} (default: %(default)s)"


def command(commands, name: str, **options) -> argparse.ArgumentParser:
    """A subcommand whose --help shows its options' defaults."""
    return commands.add_parser(name, formatter_class=DefaultsShown, **options)


def add_model_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--model", default=None, help="hub id, local folder or .gguf file (default: embedded SmolLM2-135M-Instruct)"
    )
    command.add_argument(
        "--device", default="auto", choices=["auto", "cpu", "cuda"], help="where the model runs (auto: CUDA if any)"
    )
    command.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="the weights' type (auto: float32 on a CPU)",
    )
    command.add_argument("--trust-remote-code", action="store_true", help="allow a hub model's own code to run")
    command.add_argument(
        "--mode",
        default=None,
        choices=[mode.value for mode in StepMode],
        help="how the engine runs its steps (default: eager on a CPU, cuda-graph on CUDA; docs/engine.md)",
    )


def add_settings_options(command: argparse.ArgumentParser) -> None:
    fixed = "auto settings, as the app's; {default} where W, N or G is given"
    command.add_argument(
        "--window",
        type=int,
        metavar="W",
        help=f"window W (columns) (default: {fixed.format(default=LookaheadConfig.window)})",
    )
    command.add_argument(
        "--ngram", type=int, metavar="N", help=f"n-gram size N (default: {fixed.format(default=LookaheadConfig.ngram)})"
    )
    command.add_argument(
        "--guesses",
        type=int,
        metavar="G",
        help=f"guesses G verified per step (default: {fixed.format(default=LookaheadConfig.guesses)})",
    )
    command.add_argument(
        "--auto",
        action="store_true",
        help="W, N, G and a per-step plan from this hardware's measured step costs, even where W, N or G is given "
        "(the default where none is)",
    )
    command.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS, metavar="M", help="new tokens at most")
    command.add_argument(
        "--temperature", type=float, default=0.0, metavar="T", help="sample at temperature T (0: greedy)"
    )
    command.add_argument(
        "--top-k", type=int, default=0, metavar="K", help="sample from the K likeliest tokens (0: off)"
    )
    command.add_argument("--top-p", type=float, default=1.0, metavar="P", help="nucleus sampling mass (1: off)")
    command.add_argument(
        "--seed", type=int, default=0, metavar="S", help="sampling seed; prompt k of a file is sampled with S + k"
    )


def add_method_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--draft-model",
        default=DEFAULT_DRAFT,
        metavar="ID|" + "|".join((*SELF_DRAFTS, EAGLE)),
        help="speculative decoding's draft: a copy of the target, or a hub id / folder with the same tokenizer "
        "(eagle, with generate: --method eagle)",
    )
    command.add_argument(
        "--draft-tokens", type=int, default=DEFAULT_DRAFT_TOKENS, metavar="K", help="tokens drafted per step"
    )
    command.add_argument(
        "--lookup-ngram",
        type=int,
        default=LookupConfig.ngram,
        metavar="N",
        help="prompt lookup: longest suffix matched",
    )
    command.add_argument(
        "--lookup-tokens", type=int, default=LookupConfig.tokens, metavar="K", help="prompt lookup: tokens proposed"
    )
    command.add_argument(
        "--suffix-tree-size",
        type=int,
        default=SuffixConfig.tree_size,
        metavar="S",
        help="suffix decoding: the most nodes of a step's tree",
    )
    command.add_argument(
        "--suffix-alpha",
        type=float,
        default=SuffixConfig.alpha,
        metavar="A",
        help="suffix decoding: a tree holds at most A x the match's length nodes",
    )
    command.add_argument(
        "--suffix-store",
        choices=("warm", "cold"),
        default="warm",
        help="suffix decoding: warm, each prompt also matches the outputs of the prompts before it in this run "
        "(never its own); cold, each prompt's own text only",
    )
    command.add_argument(
        "--heads",
        metavar="PATH",
        help="Medusa heads trained for this model (default: the shipped heads, for the embedded model; "
        "python -m lab.medusa train writes others)",
    )
    command.add_argument(
        "--eagle",
        metavar="PATH",
        help="the layer of --method eagle and of the bench's eagle entrant (default: the shipped layer, "
        "for the embedded model; python -m lab.eagle train writes others)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab", description="Exact lookahead decoding.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = command(commands, "generate", help="decode prompts with lookahead, prompt lookup, a draft or greedy")
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("text", nargs="?", metavar="PROMPT", help="one prompt text, as --prompt takes it")
    source.add_argument("--prompt", metavar="TEXT", help="one prompt text")
    source.add_argument("--prompts-file", help='JSONL file, one {"id": str, "prompt": str} per line')
    add_model_options(gen)
    gen.add_argument("--method", default="lookahead", choices=[m.value for m in Method], help="the decoding method")
    add_settings_options(gen)
    add_method_options(gen)
    gen.add_argument("--chat", action="store_true", help="wrap each prompt in the model's chat template")
    gen.add_argument("--json", action="store_true", help="one JSON object per prompt per line")
    gen.add_argument(
        "--no-plain",
        action="store_true",
        help="do not also time plain decoding (transformers' generate) on each prompt, beside the method",
    )
    bench = command(commands, "bench", help="time greedy, lookahead and their peers on a prompt set")
    bench.add_argument(
        "--dataset",
        required=True,
        metavar="humaneval|humaneval-edit|mtbench|mtbench-2|gsm8k|FILE.jsonl",
        help="a prompt set or a JSONL file",
    )
    bench.add_argument("--limit", type=int, default=None, metavar="K", help="the first K prompts only")
    bench.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        metavar="R",
        help=f"interleaved rounds per prompt: every method once per round (default {REPEATS})",
    )
    bench.add_argument(
        "--methods", default=",".join(ENTRANTS), help=f"comma-separated, from {', '.join(ENTRANTS)} (default: all)"
    )
    add_model_options(bench)
    add_settings_options(bench)
    add_method_options(bench)
    bench.add_argument("--json", metavar="OUT.json", help="write the full report as JSON")
    bench.add_argument("--html", metavar="OUT.html", help="write a self-contained Plotly report")
    add_tune_parser(commands)
    return parser


def add_tune_parser(commands) -> None:
    """`tune`: where each method pays on this machine (lab.tune_cli says what each option does)."""
    tune = command(commands, "tune", help="map where each method pays here: predicted, then checked by the clock")
    tune.add_argument("--dataset", required=True, metavar="humaneval|humaneval-edit|mtbench|mtbench-2|gsm8k|FILE.jsonl")
    tune.add_argument("--limit", type=int, default=5, metavar="K", help="sweep on the first K prompts (default 5)")
    tune.add_argument("--max-new-tokens", type=int, default=64, metavar="M", help="new tokens each prompt decodes")
    add_model_options(tune)
    add_tune_options(tune)
    tune.add_argument("--json", metavar="OUT.json", help="write the report as JSON")
    tune.add_argument("--html", metavar="OUT.html", help="write the map as a self-contained Plotly page")


def asked_settings(args: argparse.Namespace) -> LookaheadConfig | None:
    """The W, N, G asked for (those not given: the engine's defaults), validated before any model loads; None (the
    auto settings) with --auto or where none of W, N, G is given."""
    given = {name: getattr(args, name) for name in WINDOW_SETTINGS if getattr(args, name) is not None}
    return None if args.auto or not given else LookaheadConfig(**given)


def asked_sampling(args: argparse.Namespace) -> SamplingConfig:
    """The sampling settings asked for, validated before any model loads."""
    return SamplingConfig(args.temperature, args.top_k, args.top_p, args.seed)


def asked_suffix(args: argparse.Namespace) -> SuffixConfig:
    """Suffix decoding's settings asked for, validated before any model loads."""
    return SuffixConfig(tree_size=args.suffix_tree_size, alpha=args.suffix_alpha)


def suffix_store(args: argparse.Namespace) -> SuffixStore | None:
    """A fresh store for the run's outputs (--suffix-store warm), else None: a cold store."""
    return SuffixStore() if args.suffix_store == "warm" else None


def asked_lookup(args: argparse.Namespace) -> LookupConfig:
    """Prompt lookup's settings asked for, validated before any model loads."""
    return LookupConfig(ngram=args.lookup_ngram, tokens=args.lookup_tokens)


def chosen_settings(
    asked: LookaheadConfig | None, lm, settled: SettledMode
) -> tuple[LookaheadConfig, AutoSettings | None]:
    """The settings asked for, or (asked None) the auto choice for this model and device in its `settled` step
    mode, said on stderr."""
    if asked is not None:
        return asked, None
    with waiting("auto settings: this hardware's step costs (measured once per model, device and dtype, then cached)"):
        auto = auto_settings(lm, settled)
    print(f"auto: {settings_words(auto.settings())}", file=sys.stderr)
    return auto.config, auto


def asked_method(args: argparse.Namespace) -> Method:
    """The method asked for; `--method speculative --draft-model eagle` is EAGLE's (as before EAGLE was a method of
    its own). ValueError for --eagle without an EAGLE method."""
    method = Method(args.method)
    if method == Method.SPECULATIVE and args.draft_model == EAGLE:
        return Method.EAGLE
    if args.eagle is not None and method != Method.EAGLE:
        raise ValueError("--eagle PATH is the layer of --method eagle: add it, or drop --eagle")
    return method


def generate(args: argparse.Namespace) -> None:
    asked, sampling, lookup, suffix = asked_settings(args), asked_sampling(args), asked_lookup(args), asked_suffix(args)
    check_draft_tokens(args.draft_tokens)
    prompt = args.prompt if args.prompt is not None else args.text
    if prompt is not None and not prompt.strip():
        raise ValueError("the prompt is empty: give some text")
    prompts = read_prompts_file(args.prompts_file) if args.prompts_file else [{"id": "prompt", "prompt": prompt}]
    for item in prompts:  # refused before the model loads
        problem = unicode_problem(item["prompt"])
        if problem is not None:
            raise ValueError(f"prompt {item['id']} cannot be tokenized: {problem}; remove that character")
    method = asked_method(args)
    lm = loaded(args)
    window = METHODS[method].window
    settled = mode_of(lm, args)
    config, auto = chosen_settings(asked, lm, settled) if window else (asked or LookaheadConfig(), None)
    needs = METHODS[method].needs  # a draft model, a layer or heads to load first
    with waiting(f"{METHODS[method].name}: loading its {needs}") if needs != Needs.NOTHING else nullcontext():
        runtime = replace(asked_runtime(lm, [method], auto, args, settled), store=suffix_store(args))
    request = DecodeRequest(
        method=method, lookahead=config, lookup=lookup, suffix=suffix, max_new_tokens=args.max_new_tokens
    )
    for index, item in enumerate(prompts):
        prompt_ids = encode_prompt(lm.tokenizer, item["prompt"], args.chat)
        seeded = replace(request, sampling=sampling.for_prompt(index))
        label = f"{item['id']} ({index + 1} of {len(prompts)})" if len(prompts) > 1 else item["id"]
        steps = counted(decode_steps(lm, prompt_ids, seeded, runtime), args.max_new_tokens, label)
        summary = summarize(list(steps))
        summary.text = lm.tokenizer.decode(summary.new_token_ids, skip_special_tokens=True)
        plain = None if args.no_plain else run_generate(lm, prompt_ids, args.max_new_tokens, seeded.sampling)
        shown = generated_json if args.json else generated_words
        print(shown(item, prompt_ids, seeded, runtime, summary, lm, plain), flush=True)
        if runtime.store is not None:  # the prompts after this one match its output too
            runtime.store.add(item["id"], summary.new_token_ids)


@contextmanager
def waiting(words: str) -> Iterator[None]:
    """While the work inside runs (a load, a measurement: no count to give), `words` on stderr with the time waited
    so far, redrawn each second; the line stays, with the time it took."""
    done = threading.Event()
    with tqdm(desc=words, bar_format="{desc}: {elapsed}", file=sys.stderr) as bar:

        def tick() -> None:
            while not done.wait(1.0):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


def loaded(args: argparse.Namespace):
    """The model asked for, loaded while stderr says so (the embedded model's first load dequantizes its GGUF once:
    seconds to a minute; later loads read the cached copy); on a CPU, the process then runs on the torch threads
    the server would give it (`on_chosen_threads`)."""
    with waiting(f"loading {args.model or 'the embedded SmolLM2-135M-Instruct'}"):
        lm = load_model(args.model, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code)
    on_chosen_threads(lm)
    return lm


def on_chosen_threads(lm) -> None:
    """Put this process on the torch threads the server chooses for a request (lab.serve.threads): a plain step timed at
    each count tried (on the first run on a machine, each count also measures how its products run fastest:
    seconds, then cached), and of the fastest count, the cores other programs leave free now. Said on stderr. A
    count set by OMP_NUM_THREADS is the caller's and is kept (the tests set one)."""
    if lm.device.type != "cpu":
        return
    if os.environ.get("OMP_NUM_THREADS"):
        print(f"threads: {torch.get_num_threads()} (OMP_NUM_THREADS)", file=sys.stderr)
        return
    with waiting("threads: a plain step at each count (the first time here: the products' ways timed at each)"):
        choice = chosen_threads(lm)
        threads = choice.choose()
    timed = ", ".join(f"{count}: {seconds * 1000:.0f} ms" for count, seconds in sorted(choice.timed.items()))
    others = f"; other programs used {choice.others:.1f} of its cores" if choice.others else ""
    print(f"threads: {threads} of {choice.cores} cores (a plain step on {timed}{others})", file=sys.stderr)
    torch.set_num_threads(threads)


def counted(steps: Iterable, most: int, label: str) -> Iterator:
    """`steps` as they come, with a bar on stderr of the tokens decoded so far of the `most` asked for (the first
    step reads the prompt; a decoding may end sooner, at the model's end of text)."""
    with tqdm(total=most, unit="token", desc=f"decoding {label}", file=sys.stderr, leave=False) as bar:
        for record in steps:
            bar.update(min(len(record.committed), most - bar.n))
            yield record


def generated_json(
    item: dict, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, summary, lm, plain: Timed | None
) -> str:
    """One prompt's decoding as the JSON line documented in the module's docstring."""
    entry, config, lookup, sampling = METHODS[request.method], request.lookahead, request.lookup, request.sampling
    settings = method_settings(request, runtime, [request.method])
    looking_up, draft = entry.branch == Branch.GUESS, settings.speculative or settings.eagle
    return json.dumps(
        {
            "id": item["id"],
            "method": request.method.value,
            "window": config.window if entry.window else None,
            "ngram": config.ngram if entry.window else None,
            "guesses": config.guesses if entry.window else None,
            "lookup_ngram": lookup.ngram if looking_up else None,
            "lookup_tokens": lookup.tokens if looking_up else None,
            "draft_model": draft.model if draft is not None else None,
            "draft_tokens": draft.tokens if draft is not None else None,
            "prompt_token_ids": prompt_ids,
            "new_token_ids": summary.new_token_ids,
            "text": summary.text,
            "steps": summary.steps,
            "seconds": round(summary.seconds, 6),
            "plain_seconds": round(plain.seconds, 6) if plain is not None else None,
            "plain_tokens": len(plain.new_token_ids) if plain is not None else None,
            "temperature": sampling.temperature,
            "top_k": sampling.top_k,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
        }
    )


def labelled(label: str, text: str) -> str:
    """`label: text`, verbatim; a text that opens with a line break (code often does) starts under its label."""
    gap = "" if text.startswith("\n") else " "
    return f"{label}:{gap}{text}"


def generated_words(
    item: dict, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, summary, lm, plain: Timed | None
) -> str:
    """One prompt's decoding as text: the continuation and a line of what ran, how, where and how fast, and plain
    decoding's time on the same prompt beside it (one round each: a bench repeats them)."""
    sampling, machine = request.sampling, lm.describe()
    settings = recorded_words(method_settings(request, runtime, [request.method]))  # greedy: none ('[greedy]')
    if not sampling.is_greedy:
        drawn = f"T={sampling.temperature} top-k={sampling.top_k} top-p={sampling.top_p} seed={sampling.seed}"
        settings = f"{settings or 'sampling'}, {drawn}"
    settings += f", {runtime.auto.planner.value} plan" if runtime.planner(request.method) is not None else ""
    ran = f"{request.method.value} {settings}".strip()
    return (
        f"--- {item['id']} ---\n{labelled('Prompt', item['prompt'])}\n{labelled('Continuation', summary.text)}\n"
        f"[{ran}] {summary.tokens} tokens in {summary.steps} steps "
        f"({summary.tokens_per_step:.2f} tokens/step), {summary.seconds:.2f} s "
        f"on {machine['device_name']}, {machine['dtype']}" + plain_words(summary, plain)
    )


def plain_words(summary, plain: Timed | None) -> str:
    """Plain decoding's time beside the method's, as measured once each ("" when not timed)."""
    if plain is None:
        return ""
    tokens = len(plain.new_token_ids)
    return (
        f"\n[plain decoding, transformers generate] {tokens} tokens in {plain.seconds:.2f} s "
        f"({tokens / plain.seconds:.1f} tokens/s; the method {summary.tokens / summary.seconds:.1f}): one round "
        "each, the method's with its records; `python -m lab bench` repeats both, interleaved, for a speedup"
    )


def bench_runtime(
    lm, args: argparse.Namespace, methods: list[BenchMethod], auto: AutoSettings | None, settled: SettledMode
) -> Runtime:
    """What the bench's entrants run with. Of the default methods, Medusa and EAGLE are left out (said on stderr,
    and dropped from `methods`) where no heads or layer ship for this model; asked for by name, they must run."""
    given = {Needs.HEADS: args.heads, Needs.LAYER: args.eagle}
    if args.methods == ",".join(ENTRANTS):
        for method in [m for m in methods if entrant_needs(m) in given and given[entrant_needs(m)] is None]:
            if not ships(lm, entrant_needs(method)):
                missing = NONE_SHIP[entrant_needs(method)].format(name=lm.name)
                print(f"note: {method} left out: {missing}", file=sys.stderr)
                methods.remove(method)
    return asked_runtime(lm, engine_methods(methods), auto, args, settled)


def bench(args: argparse.Namespace) -> None:
    methods = check_methods([m.strip() for m in args.methods.split(",") if m.strip()])
    asked, sampling, lookup, suffix = asked_settings(args), asked_sampling(args), asked_lookup(args), asked_suffix(args)
    check_draft_tokens(args.draft_tokens)
    check_repeats(args.repeats)
    if args.draft_model == EAGLE:
        raise ValueError(
            "the EAGLE layer is an entrant of its own: --methods ...,eagle (with --eagle PATH for another)"
        )
    writable(args.json)
    writable(args.html)
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    prompts = load_prompts(args.dataset, args.limit)
    if not prompts:
        raise ValueError(f"no prompts in {args.dataset}")
    lm = loaded(args)
    settled = mode_of(lm, args)
    config, auto = chosen_settings(asked, lm, settled)
    runtime = replace(bench_runtime(lm, args, methods, auto, settled), store=suffix_store(args))
    request = DecodeRequest(
        lookahead=config, lookup=lookup, suffix=suffix, sampling=sampling, max_new_tokens=args.max_new_tokens
    )
    with waiting("the model's answers to the first turns") if any("first" in p for p in prompts) else nullcontext():
        prompts = with_first_answers(prompts, lambda text: first_answer(lm, text, args.max_new_tokens))
    with tqdm(total=len(prompts) * len(methods) * args.repeats, unit="run", file=sys.stderr) as bar:

        def progress(done: int, total: int, label: str) -> None:
            bar.update(done - bar.n)
            bar.set_postfix_str(label)

        report = run_bench(lm, prompts, methods, request, runtime, progress, args.dataset, repeats=args.repeats)
    print(summary_table(report))
    if args.json:
        Path(args.json).write_text(report.to_json(indent=1))
    if args.html:
        from visuals.bench import bench_report_html  # plotly loads only when a page is asked for

        Path(args.html).write_text(bench_report_html(report))


def summary_table(report: BenchReport) -> str:
    """The totals as a plain-text table, with what ran where, how it was timed and how busy the machine was."""
    machine, settings, sampling = report.machine, report.settings, report.settings.sampling
    decoding = (
        "greedy, exact = output equal to greedy generate"
        if sampling is None
        else f"SAMPLED at T={sampling.temperature} top-k={sampling.top_k} top-p={sampling.top_p}, "
        f"prompt k with seed {sampling.seed} + k, the hf- peers with do_sample=True; "
        "outputs are not compared token for token"
    )
    static = settings.static_compiled is not None
    lines = [
        f"{settings.dataset}: {len(report.prompts)} prompts, "
        f"{settings.max_new_tokens} new tokens, {machine.model} on {machine.device_name} "
        f"({machine.dtype}); {decoding}; speedup over {settings.baseline}",
        f"{'method':<18}{'tokens':>8}{'steps':>8}{'tok/step':>10}{'seconds':>10}{'tok/s':>22}{'speedup':>22}"
        + (f"{'vs hf-static':>22}" if static else "")
        + f"{'accepted':>10}"
        + (f"{'exact':>8}" if sampling is None else ""),
    ]
    for method, row in report.summary.items():
        accepted = f"{row.acceptance:>10.1%}" if row.acceptance is not None else f"{'-':>10}"
        exact = f"{row.exact:>5}/{row.prompts}" if sampling is None else ""
        over_static = f"{times(row.over_static):>22}" if static and row.over_static is not None else ""
        lines.append(
            f"{method:<18}{row.tokens:>8}{row.steps:>8}{row.tokens_per_step:>10.2f}{row.seconds:>10.2f}"
            f"{bench_rate(row):>22}{bench_speedup(row):>22}{over_static}{accepted}{exact}"
        )
    if static:
        compiled = "compiled by transformers (CUDA graphs)" if settings.static_compiled else "uncompiled on this device"
        lines.append(f"hf-static: generate with a static cache, {compiled}.")
    lines.append(bench_rounds_words(settings))
    if machine.products is not None:
        lines.append(products_words(machine.products) + ".")
    lines += [
        f"{method}: its device step failed here ({why}); its steps kept their state on the host."
        for method, why in settings.state_on_host.items()
    ]
    lines += [
        f"{prompt.id}: {divergence_words(result.divergence, method, 'greedy generate')}"
        for prompt in report.prompts
        for method, result in prompt.methods.items()
        if result.divergence is not None
    ]
    if report.busy is not None:
        lines.append(busy_words(report.busy, "this bench"))
    return "\n".join(lines)


def mode_of(lm, args: argparse.Namespace) -> SettledMode:
    """The command line's step mode (--mode; None: the device's default), settled once for the command with its
    curve (costs.settled_mode)."""
    return settled_mode(lm, None if args.mode is None else StepMode(args.mode))


def asked_runtime(lm, methods, auto: AutoSettings | None, args: argparse.Namespace, settled: SettledMode) -> Runtime:
    """What `methods` run with, from the command line's draft, heads and EAGLE layer, in its `settled` step mode."""
    aids = Aids(lm, draft_name=args.draft_model, heads_path=args.heads, layer_path=args.eagle, settled=settled)
    return runtime_for(lm, methods, aids, tokens=args.draft_tokens, auto=auto, settled=settled)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        {"bench": bench, "tune": tune, "generate": generate}[args.command](args)
    except (SettingsError, DecodingError, ModelLoadError, ValueError, OSError) as error:
        detail = getattr(error, "detail", "")  # a model's load error in the library's words: the operator's to read
        print(f"error: {error}" + (f" ({detail})" if detail else ""), file=sys.stderr)
        return 2
    return 0
