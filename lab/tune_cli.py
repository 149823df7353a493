"""`python -m lab tune`: the options of the tune map, its run with a line per piece of work, its table and files.

Every option is checked before the model loads. `--adopt` keeps the map's chosen lookahead settings beside
this hardware's step-cost curve, where auto settings read them for this model, device and dtype.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from lab.measure.datasets import load_prompts
from lab.measure.tune import SWEPT, TuneGrid, TuneOptions, check_grid, tuning
from lab.outputs import writable
from lab.train.heads import Aids, runtime_for, ships
from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import settled_mode
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.records import METHODS, Method, StepMode
from lookahead_core.records.tune import TuneReport
from lookahead_core.request import DecodeRequest
from lookahead_core.tuning import adopt, regime_settings

DEFAULT = TuneGrid()


def numbers(text: str) -> tuple[int, ...]:
    """`2,3,4` as (2, 3, 4); an empty text as (): that method left out."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text!r}") from None


def pairs(text: str) -> tuple[tuple[int, int], ...]:
    """`2:5,3:10` as ((2, 5), (3, 10))."""
    try:
        return tuple((int(a), int(b)) for a, b in (part.split(":") for part in text.split(",") if part.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NGRAM:TOKENS pairs separated by commas, got {text!r}") from None


def joined(values) -> str:
    """A default as the option takes it: `2,3` or `2:5,3:10`."""
    return ",".join(":".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in values)


def add_tune_options(tune: argparse.ArgumentParser) -> None:
    add = tune.add_argument
    add(
        "--windows",
        type=numbers,
        default=DEFAULT.windows,
        help=f"lookahead's W (G = W) (default {joined(DEFAULT.windows)})",
    )
    add("--ngrams", type=numbers, default=DEFAULT.ngrams, help=f"lookahead's N (default {joined(DEFAULT.ngrams)})")
    add(
        "--lookups",
        type=pairs,
        default=DEFAULT.lookups,
        help=f"prompt lookup's NGRAM:TOKENS (default {joined(DEFAULT.lookups)})",
    )
    add(
        "--draft-k",
        type=numbers,
        default=DEFAULT.draft_tokens,
        help=f"the draft's k (default {joined(DEFAULT.draft_tokens)})",
    )
    add(
        "--tree-sizes",
        type=numbers,
        default=DEFAULT.tree_sizes,
        help=f"Medusa's tree nodes (default {joined(DEFAULT.tree_sizes)})",
    )
    add(
        "--suffixes",
        type=pairs,
        default=DEFAULT.suffixes,
        help=f"suffix decoding's TREE_SIZE:ALPHA (default {joined(DEFAULT.suffixes)})",
    )
    add("--methods", default=",".join(SWEPT), help="comma-separated methods to sweep (default: all that can run here)")
    add("--draft-model", default="bf16-self", help="the draft of speculative decoding (default bf16-self)")
    add("--heads", metavar="PATH", help="Medusa's heads for this model (default: the shipped ones, where they ship)")
    add("--rounds", type=int, default=3, metavar="R", help="interleaved rounds of each timed cell (default 3)")
    add("--best", type=int, default=1, help="each method's best predicted cells timed (default 1)")
    add("--sample", type=int, default=3, help="other cells timed, spread over the predicted ranks (default 3)")
    add("--held-out", type=int, default=0, metavar="H", help="the next H prompts: the chosen settings against auto")
    add("--checkpoint", metavar="FILE", help="cells measured so far: kept here, and resumed from when it exists")
    add(
        "--cached-costs",
        action="store_true",
        help="price the cells off the cached step-cost curve (default: measure it now)",
    )
    add("--adopt", action="store_true", help="auto settings take the map's chosen lookahead settings here")


def asked_grid(args: argparse.Namespace) -> TuneGrid:
    """The grid asked for, checked, with only the methods named in --methods."""
    names = [name.strip() for name in args.methods.split(",") if name.strip()]
    unknown = [name for name in names if name not in {m.value for m in SWEPT}]
    if unknown:
        raise ValueError(f"tune sweeps {', '.join(SWEPT)}; not {', '.join(unknown)}")
    grid = TuneGrid(
        windows=args.windows if "lookahead" in names else (),
        ngrams=args.ngrams,
        lookups=args.lookups if "prompt-lookup" in names else (),
        draft_tokens=args.draft_k if "speculative" in names else (),
        tree_sizes=args.tree_sizes if "medusa" in names else (),
        suffixes=args.suffixes if "suffix" in names else (),
        named=tuple(names),
    )
    check_grid(grid)
    return grid


def checked_counts(args: argparse.Namespace) -> None:
    """ValueError naming the first count out of range, before any work."""
    counts = [("--limit", args.limit, 1), ("--max-new-tokens", args.max_new_tokens, 1), ("--rounds", args.rounds, 1)]
    counts += [("--best", args.best, 0), ("--sample", args.sample, 0), ("--held-out", args.held_out, 0)]
    for name, value, low in counts:
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")


def tune(args: argparse.Namespace) -> None:
    """Run the sweep asked for: progress on stderr, the table on stdout, the report where asked."""
    from visuals.tune import tune_table  # visuals.tune loads plotly: only when a sweep is asked for

    checked_counts(args)
    grid = asked_grid(args)
    for path in (args.json, args.html):
        writable(path)
    listed = load_prompts(args.dataset, args.limit + args.held_out)
    if len(listed) < args.limit + args.held_out:
        raise ValueError(f"{args.dataset} has {len(listed)} prompts: fewer than --limit plus --held-out")
    lm = load_model(args.model, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code)
    encoded = [(p["id"], encode_prompt(lm.tokenizer, p["prompt"], p["chat"])) for p in listed]
    heads = args.heads is not None or ships(lm, METHODS[Method.MEDUSA].needs)
    grid = grid if heads else replace(grid, tree_sizes=())  # Medusa only where it has heads
    swept = [m for m in SWEPT if SWEPT[m].settings(grid)]
    settled = settled_mode(lm, refresh=not args.cached_costs)  # the device's default step, its curve measured again
    aids = Aids(lm, draft_name=args.draft_model, heads_path=args.heads, settled=settled)
    runtime = runtime_for(lm, swept, aids, settled=settled)
    auto = regime_settings(settled)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    options = TuneOptions(
        dataset=args.dataset,
        rounds=args.rounds,
        best=args.best,
        sample=args.sample,
        held_out=encoded[args.limit :],
        checkpoint=checkpoint,
    )
    request = DecodeRequest(max_new_tokens=args.max_new_tokens)
    work = tuning(lm, encoded[: args.limit], grid, request, runtime, auto, options)
    report = run_printed(work)
    print(tune_table(report))
    written(report, args)
    if args.adopt:
        adopt_chosen(lm, report, settled.mode, args.json or "(not saved)")


def run_printed(work) -> TuneReport:
    """Run the sweep, a line on stderr before each piece of work; the report it returns."""
    while True:
        try:
            step = next(work)
        except StopIteration as done:
            return done.value
        print(f"[{step.done + 1}/{step.total}] {step.label}", file=sys.stderr, flush=True)


def written(report: TuneReport, args: argparse.Namespace) -> None:
    """The report as JSON (--json) and as a self-contained page (--html), where asked."""
    if args.json:
        Path(args.json).write_text(report.to_json())
    if args.html:
        from visuals.tune import tune_page  # as tune_table: plotly only when a sweep is asked for

        Path(args.html).write_text(tune_page(report))


def adopt_chosen(lm, report: TuneReport, mode: StepMode, source: str) -> None:
    """Auto settings take the report's chosen lookahead cell and planner for this model, device, dtype and the step
    `mode` the map ran; ValueError where the map chose none (no exact lookahead cell)."""
    cell = report.chosen_cell(Method.LOOKAHEAD)
    if cell is None:
        raise ValueError("no exact lookahead cell to adopt")
    path = adopt(lm, mode, LookaheadConfig(**cell.settings), report.planner, source)
    print(f"auto settings here now take {cell.label} ({report.planner} plan): {path}", file=sys.stderr)
