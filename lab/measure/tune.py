"""The tune map: each method's settings swept on a prompt set, each cell decoded, predicted and checked by the clock.

Every cell (lookahead's (W, N) with G = W and this hardware's planner, prompt lookup's (n-gram, tokens), the
draft's k, Medusa's tree size) decodes every prompt once: its tokens per step, rows fed, host time and
exactness against greedy `generate`. Its speedup is predicted from the step-cost curve (lab.measure.payoff); the best
predicted cells of each method and a sample of the rest are then timed in interleaved rounds against plain
decoding (a ratio of medians with its interval, lab.measure.timing). `tuning` is a generator: it yields a TuneProgress
before each piece of work and returns the TuneReport; a checkpoint file lets a stopped sweep resume.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path

from lab.measure.bench import run_generate
from lab.measure.busy import CpuWatch
from lab.measure.payoff import Decoded, predicted_speedup, relative_cost
from lab.measure.timing import rate, ratio_of_medians
from lookahead_core.config import LookaheadConfig, LookupConfig, SettingsError, SuffixConfig, check_draft_tokens
from lookahead_core.costs import StepCosts
from lookahead_core.device.forward import synchronize
from lookahead_core.methods.medusa import MAX_TREE_SIZE
from lookahead_core.models import LoadedModel
from lookahead_core.records import METHODS, Machine, StepKind, StepMode
from lookahead_core.records import Method as M
from lookahead_core.records.tune import HeldOut, TuneCell, TunePlain, TuneReport, cell_label
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.spec import SWEPT
from lookahead_core.trace import candidate_tokens, lean_steps, machine_facts, plan_of_any_prompt, settle, warm_up
from lookahead_core.tuning import AutoSettings, make_planner

Settings = dict[str, int]


@dataclass(frozen=True, kw_only=True)
class TuneGrid:
    """The settings swept: lookahead's windows x n-gram sizes (G = W), prompt lookup's (n-gram, tokens) pairs,
    the draft's k, Medusa's tree sizes and suffix decoding's (tree size, alpha) pairs; and the methods asked for by
    name (`named`). An empty tuple leaves that method out. Each method's spec says how its cells are read from the
    grid (lookahead_core.method_spec.Swept)."""

    windows: tuple[int, ...] = (2, 3, 4, 6, 8)
    ngrams: tuple[int, ...] = (3, 4, 5, 7)
    lookups: tuple[tuple[int, int], ...] = ((2, 5), (3, 10), (4, 20))
    draft_tokens: tuple[int, ...] = (2, 4, 6)
    tree_sizes: tuple[int, ...] = (4, 16, 32)
    suffixes: tuple[tuple[int, int], ...] = ((8, 1), (24, 2), (48, 4))
    named: tuple[str, ...] = ()  # the methods asked for: a method a spec added (spec.register) is swept where named

    @property
    def size(self) -> int:
        return sum(len(swept.settings(self)) for swept in SWEPT.values())


def swept_cells(grid: TuneGrid, runtime: Runtime) -> list[tuple[M, Settings]]:
    """Every (method, settings) of the grid whose method can run with `runtime` (a draft, heads)."""
    usable = [m for m in SWEPT if runtime.has(METHODS[m].needs)]
    return [(method, settings) for method in usable for settings in SWEPT[method].settings(grid)]


@dataclass(frozen=True, kw_only=True)
class TuneProgress:
    """Where a sweep is: `done` of `total` pieces of work (cells decoded, then timed rounds), and what runs now."""

    done: int
    total: int
    label: str


@dataclass(frozen=True, kw_only=True)
class TuneOptions:
    """How a sweep runs: the prompt set's name, rounds per timed cell, how many best predicted cells of each
    method and how many others are timed, the held-out prompts (ids and token ids; none: no held-out check),
    the checkpoint file (None: none), and `stop` (asked before each piece of work: True ends the sweep with
    what is done)."""

    dataset: str
    rounds: int = 3
    best: int = 1
    sample: int = 3
    held_out: list[tuple[str, list[int]]] = field(default_factory=list)
    checkpoint: Path | None = None
    stop: Callable[[], bool] = lambda: False


# ---------------------------------------------------------------- measuring a cell by decoding


@dataclass(kw_only=True)
class Measured:
    """One decoding of a cell over the prompts, as the checkpoint keeps it."""

    tokens: int
    rows: list[int]
    host_seconds: float
    forward_seconds: list[float]  # each decode step's forward pass (plain decoding's set the curve's unit)
    prefill_seconds: float
    exact: bool
    offered: int
    accepted: int

    def decoded(self, shape: int = 0) -> Decoded:
        """As the predictor reads it, each pass priced at `shape` rows at least (shape_rows)."""
        return Decoded(tokens=self.tokens, rows=tuple(self.rows), host_seconds=self.host_seconds, shape=shape)


def decode_prompt(lm: LoadedModel, ids: list[int], request: DecodeRequest, runtime: Runtime, reference: list[int]):
    """One prompt: its steps, tallied (the lean path), with the wall time of each (everything between two steps:
    the host's share beyond the forward pass included), as a Measured of one prompt."""
    records, walls = [], []
    start = time.perf_counter()
    for record in lean_steps(lm, ids, request, runtime):
        now = time.perf_counter()
        records.append(record)
        walls.append(now - start)
        start = now
    steps = [(r, w) for r, w in zip(records, walls, strict=True) if r.kind == StepKind.DECODE]
    new_ids = [t for r in records for t in r.committed]
    offered, accepted = candidate_tokens(records)
    return Measured(
        tokens=len(new_ids),
        rows=[r.tokens_fed for r, _ in steps],
        host_seconds=sum(max(w - r.forward_seconds, 0.0) for r, w in steps),
        forward_seconds=[r.forward_seconds for r, _ in steps],
        prefill_seconds=sum(r.forward_seconds for r in records if r.kind == StepKind.PREFILL),
        exact=new_ids == reference,
        offered=offered,
        accepted=accepted,
    )


def shape_rows(lm: LoadedModel, request: DecodeRequest, runtime: Runtime) -> int:
    """The rows every pass of the request runs in the step mode it ran in (a mode whose probe failed ran eagerly):
    its fixed shape's T, which no prompt changes, or 0 for the eager step. Worked out when a cell is priced, not
    kept with its measurement, so a resumed sweep prices every cell alike."""
    return settle(lm, [0], request, runtime, recorded=False).shape_facts(runtime)["shape_rows"]


def measure(lm: LoadedModel, prompts: list[list[int]], references, request: DecodeRequest, runtime: Runtime):
    """A cell decoded on every prompt once, the figures summed (`references`: greedy `generate`'s tokens)."""
    parts = [decode_prompt(lm, ids, request, runtime, ref) for ids, ref in zip(prompts, references, strict=True)]
    return Measured(
        tokens=sum(p.tokens for p in parts),
        rows=[r for p in parts for r in p.rows],
        host_seconds=sum(p.host_seconds for p in parts),
        forward_seconds=[s for p in parts for s in p.forward_seconds],
        prefill_seconds=sum(p.prefill_seconds for p in parts),
        exact=all(p.exact for p in parts),
        offered=sum(p.offered for p in parts),
        accepted=sum(p.accepted for p in parts),
    )


class Checkpoint:
    """Cells measured so far, one JSON line each ({"label", "measured"}), so a stopped sweep resumes where it
    was; the curve it priced them with is kept as the line labelled "curve"."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.done = path, {}
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self.done[entry["label"]] = entry["data"]

    def get(self, label: str) -> dict | None:
        return self.done.get(label)

    def put(self, label: str, data: dict) -> None:
        self.done[label] = data
        if self.path is not None:
            with self.path.open("a") as file:
                file.write(json.dumps({"label": label, "data": data}) + "\n")


def measured_cell(saved: Checkpoint, label: str, work: Callable[[], Measured]) -> Measured:
    """A cell's measurement from the checkpoint, or measured now and kept."""
    data = saved.get(label)
    if data is not None:
        return Measured(**data)
    measured = work()
    saved.put(label, vars(measured))
    return measured


def sweep_curve(saved: Checkpoint, costs: StepCosts) -> StepCosts:
    """The curve a resumed sweep priced its cells with, else `costs` (kept for a resume)."""
    data = saved.get("curve")
    if data is not None:
        return StepCosts(**data)
    saved.put("curve", vars(costs.curve()))
    return costs


# ---------------------------------------------------------------- the cells, predicted and timed


def tune_cell(method: M, settings: Settings, measured: Measured, cost, plain: Measured, shape: int) -> TuneCell:
    """A cell's record: what decoding measured and the speedup predicted from the curve (`cost`, in 1-row steps),
    each pass priced at `shape` rows at least (its fixed shape; plain decoding's is its one row)."""
    decoded, unit = measured.decoded(shape), statistics.median(plain.forward_seconds or [0.0])
    steps = max(len(measured.rows), 1)
    return TuneCell(
        method=method,
        settings=settings,
        tokens=measured.tokens,
        steps=len(measured.rows),
        tokens_per_step=decoded.tokens_per_step,
        acceptance=measured.accepted / measured.offered if measured.offered else None,
        rows_fed=sum(measured.rows) / steps,
        relative_cost=relative_cost(cost, decoded),
        host_seconds=measured.host_seconds / steps,
        predicted_speedup=predicted_speedup(cost, decoded, plain.decoded(), unit, plain.prefill_seconds),
        measured_speedup=None,
        exact=measured.exact,
        shape=shape,
    )


def timed_indices(cells: list[TuneCell], best: int, sample: int) -> list[int]:
    """The cells to time: each method's `best` highest predicted, and `sample` others spread evenly over the
    rest by predicted rank (so the timed set covers losers as well as winners)."""
    chosen: list[int] = []
    for method in dict.fromkeys(c.method for c in cells):
        ranked = sorted(
            (i for i, c in enumerate(cells) if c.method == method), key=lambda i: -cells[i].predicted_speedup
        )
        chosen += ranked[:best]
    rest = sorted((i for i in range(len(cells)) if i not in chosen), key=lambda i: -cells[i].predicted_speedup)
    if sample and rest:
        step = len(rest) / min(sample, len(rest))
        chosen += [rest[int(k * step)] for k in range(min(sample, len(rest)))]
    return chosen


def timed_pass(lm: LoadedModel, prompts: list[list[int]], request: DecodeRequest, runtime: Runtime) -> float:
    """One decoding of every prompt, timed with the device synchronised: the rate in tokens per second."""
    tokens, seconds = 0, 0.0
    for ids in prompts:
        synchronize(lm.device)
        start = time.perf_counter()
        tokens += sum(len(r.committed) for r in lean_steps(lm, ids, request, runtime))
        synchronize(lm.device)
        seconds += time.perf_counter() - start
    return rate(tokens, seconds)


Lane = tuple[DecodeRequest, Runtime]


def raced_rounds(lm: LoadedModel, prompts: list[list[int]], lanes: list[Lane], rounds: int, stop: Callable[[], bool]):
    """Up to `rounds` interleaved rounds (fewer when `stop` says so before one): plain decoding (lanes[0]) then
    every other lane, over every prompt, each round. Yields a label before each round; returns each other
    lane's speedup over the first, a ratio of median rates with its bootstrap interval (None: no round ran),
    and the rounds run."""
    rates: list[list[float]] = [[] for _ in lanes]
    for r in range(rounds):
        if stop():
            break
        yield f"timed round {r + 1}/{rounds} ({len(lanes) - 1} cells and plain decoding)"
        for i, (request, runtime) in enumerate(lanes):
            rates[i].append(timed_pass(lm, prompts, request, runtime))
    return [ratio_of_medians(lane, rates[0]) if lane else None for lane in rates[1:]], len(rates[0])


def chosen_cells(cells: list[TuneCell]) -> dict[M, int]:
    """Each method's chosen cell among its exact ones: the best measured where any was timed, else the best
    predicted."""
    chosen = {}
    for method in dict.fromkeys(c.method for c in cells):
        own = [i for i, c in enumerate(cells) if c.method == method and c.exact]
        timed = [i for i in own if cells[i].measured_speedup is not None]
        pool, key = (timed, lambda i: cells[i].measured_speedup.median) if timed else (own, None)
        if pool:
            chosen[method] = max(pool, key=key or (lambda i: cells[i].predicted_speedup))
    return chosen


def uptime() -> str:
    """The load averages over 1, 5 and 15 minutes, as uptime says them."""
    one, five, fifteen = os.getloadavg()
    return f"load average: {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


# ---------------------------------------------------------------- the sweep


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """What one sweep runs with, built once: the prompts (ids and token ids), greedy `generate`'s tokens for
    each, the grid's cells, the base request (budget, sampling), the runtime of the cells (lookahead planned
    by `planner`), plain decoding's request, and this hardware's auto settings (priced off `costs`)."""

    prompts: list[tuple[str, list[int]]]
    references: list[list[int]]
    cells: list[tuple[M, Settings]]
    base: DecodeRequest
    runtime: Runtime
    auto: AutoSettings
    costs: StepCosts

    @property
    def ids(self) -> list[list[int]]:
        return [ids for _, ids in self.prompts]

    def lane(self, method: M, settings: Settings) -> Lane:
        swept = SWEPT[method]
        return swept.request(self.base, settings), swept.runtime(self.runtime, settings)

    @property
    def plain(self) -> Lane:
        return replace(self.base, method=M.GREEDY), self.runtime


def references_of(lm: LoadedModel, saved: Checkpoint, prompts: list[list[int]], max_new_tokens: int, total: int):
    """Greedy `generate`'s new tokens for every prompt: what every cell's output must equal (kept for a resume).
    Yields a TuneProgress before each prompt, numbered from 0 of `total` (a sweep's first wait: seconds a prompt)."""
    data = saved.get("references")
    if data is None:
        tokens = []
        for k, ids in enumerate(prompts):
            label = f"greedy generate, the reference tokens: prompt {k + 1} of {len(prompts)}"
            yield TuneProgress(done=k, total=total, label=label)
            tokens.append(run_generate(lm, ids, max_new_tokens).new_token_ids)
        data = {"tokens": tokens}
        saved.put("references", data)
    return data["tokens"]


def prepared(
    lm, prompts, references, grid: TuneGrid, base: DecodeRequest, runtime: Runtime, auto: AutoSettings, saved
) -> Sweep:
    """The sweep's fixed parts: the curve (a resumed sweep's own), the cells' runtime with lookahead planned
    as auto settings plan it here and each fixed shape widened on that curve, and the references."""
    costs = sweep_curve(saved, auto.costs)
    shaped = plan_of_any_prompt(lm, base, runtime).mode != StepMode.EAGER
    plan = lambda: make_planner(auto.planner, costs)  # noqa: E731
    planned = replace(runtime, auto=None, plan=plan, costs=costs if shaped else None)
    return Sweep(
        prompts=prompts,
        references=references,
        cells=swept_cells(grid, planned),
        base=replace(base, auto=False),
        runtime=planned,
        auto=replace(auto, costs=costs),
        costs=costs,
    )


def measured_cells(lm: LoadedModel, sweep: Sweep, saved: Checkpoint, stop: Callable[[], bool], first: int, total: int):
    """Plain decoding, then every cell decoded once (from the checkpoint where it was), predicted off the curve.
    Yields a TuneProgress before each, numbered from `first` of `total`; returns the cells."""
    yield TuneProgress(done=first, total=total, label="plain decoding")
    request, runtime = sweep.plain
    plain = measured_cell(saved, "plain", lambda: measure(lm, sweep.ids, sweep.references, request, runtime))
    cells = []
    for k, (method, settings) in enumerate(sweep.cells):
        if stop():
            break
        label = cell_label(method, settings)
        yield TuneProgress(done=first + 1 + k, total=total, label=label)
        request, runtime = sweep.lane(method, settings)
        work = lambda r=request, rt=runtime: measure(lm, sweep.ids, sweep.references, r, rt)  # noqa: E731
        measured = measured_cell(saved, label, work)
        shape = shape_rows(lm, request, runtime)
        cells.append(tune_cell(method, settings, measured, sweep.costs.relative, plain, shape))
    return cells, plain


def timed_cells(lm: LoadedModel, sweep: Sweep, cells: list[TuneCell], options: TuneOptions, done: int, total: int):
    """The cells `timed_indices` picks, timed in interleaved rounds against plain decoding; their
    `measured_speedup` set in place. Yields a TuneProgress before each round; returns the rounds run."""
    picked = timed_indices(cells, options.best, options.sample)
    lanes = [sweep.plain, *(sweep.lane(cells[i].method, cells[i].settings) for i in picked)]
    rounds = raced_rounds(lm, sweep.ids, lanes, options.rounds, options.stop)
    speedups, ran = yield from progressed(rounds, done, total)
    for i, speedup in zip(picked, speedups, strict=True):
        cells[i].measured_speedup = speedup
    return ran


def progressed(labels, done: int, total: int):
    """A TuneProgress for each label `labels` yields, counted on from `done`; returns what `labels` returns."""
    while True:
        try:
            label = next(labels)
        except StopIteration as finished:
            return finished.value
        yield TuneProgress(done=done, total=total, label=label)
        done += 1


def held_out_check(lm: LoadedModel, sweep: Sweep, chosen: TuneCell | None, options: TuneOptions, done: int, total: int):
    """The chosen lookahead cell against auto settings on the held-out prompts, in interleaved rounds over plain
    decoding; None without held-out prompts, a chosen lookahead cell, or a round."""
    if not options.held_out or chosen is None:
        return None
    started, ids = time.perf_counter(), [p for _, p in options.held_out]
    auto = sweep.auto
    auto_lane = (
        replace(sweep.base, method=M.LOOKAHEAD, lookahead=auto.config),
        replace(sweep.runtime, plan=None, auto=auto),
    )
    lanes = [sweep.plain, sweep.lane(M.LOOKAHEAD, chosen.settings), auto_lane]
    speedups, ran = yield from progressed(raced_rounds(lm, ids, lanes, options.rounds, options.stop), done, total)
    if not ran:
        return None
    c = auto.config
    return HeldOut(
        prompts=[name for name, _ in options.held_out],
        chosen=chosen.settings,
        auto={"window": c.window, "ngram": c.ngram, "guesses": c.guesses},
        chosen_speedup=speedups[0],
        auto_speedup=speedups[1],
        rounds=ran,
        seconds=time.perf_counter() - started,
    )


def tuning(
    lm: LoadedModel,
    prompts: list[tuple[str, list[int]]],
    grid: TuneGrid,
    base: DecodeRequest,
    runtime: Runtime,
    auto: AutoSettings,
    options: TuneOptions,
) -> Generator[TuneProgress, None, TuneReport]:
    """Sweep `grid` on `prompts` (ids and token ids) with `base`'s budget: yields a TuneProgress before each
    piece of work, returns the TuneReport (the cells done so far, when `options.stop` ended it early).

    `runtime` holds what the methods need (a draft, heads: a method whose needs are missing is left out);
    `auto` is this hardware's auto settings, with the curve every cell is priced off and the planner
    lookahead runs with in every cell.
    """
    started, watch = time.perf_counter(), CpuWatch()
    saved = Checkpoint(options.checkpoint)
    # The pieces of work, counted before the first: each prompt's reference, the warm-up, plain decoding, each
    # cell, each timed round
    rounds = options.rounds * (2 if options.held_out else 1)
    first = len(prompts)
    total = first + 2 + len(swept_cells(grid, runtime)) + rounds
    references = yield from references_of(lm, saved, [ids for _, ids in prompts], base.max_new_tokens, total)
    sweep = prepared(lm, prompts, references, grid, base, runtime, auto, saved)
    methods = [M.GREEDY, *dict.fromkeys(method for method, _ in sweep.cells)]
    yield TuneProgress(done=first, total=total, label=f"warming up {', '.join(m.value for m in methods)}")
    warm_up(lm, sweep.ids[0], replace(sweep.base, max_new_tokens=8), sweep.runtime, methods)
    cells, plain = yield from measured_cells(lm, sweep, saved, options.stop, first + 1, total)
    ran = yield from timed_cells(lm, sweep, cells, options, first + 2 + len(cells), total)
    chosen = chosen_cells(cells)
    look = cells[chosen[M.LOOKAHEAD]] if M.LOOKAHEAD in chosen else None
    held = yield from held_out_check(lm, sweep, look, options, first + 2 + len(cells) + ran, total)
    settled = plan_of_any_prompt(lm, base, runtime)  # the mode its decodings ran
    return TuneReport(
        dataset=options.dataset,
        prompts=[name for name, _ in prompts],
        max_new_tokens=base.max_new_tokens,
        machine=machine_facts(lm),
        curve=sweep.costs.curve(),
        planner=auto.planner,
        plain=TunePlain(
            tokens=plain.tokens,
            steps=len(plain.rows),
            host_seconds=plain.host_seconds / max(len(plain.rows), 1),
            prefill_seconds=plain.prefill_seconds,
        ),
        cells=cells,
        chosen=chosen,
        rounds=ran,
        sweep_seconds=time.perf_counter() - started,
        busy=watch.reading(),
        load=uptime(),
        ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        held_out=held,
        mode=settled.mode,
        mode_note=settled.mode_note,
    )


MAX_CELLS = 64  # the most cells one sweep may decode (the app's operator may set fewer)


def check_grid(grid: TuneGrid, most: int = MAX_CELLS) -> None:
    """Refuse, in words, a grid with a setting the engine would refuse, with no cell, or with over `most` cells."""
    for w in grid.windows:
        for n in grid.ngrams:
            LookaheadConfig(window=w, ngram=n, guesses=w)  # SettingsError names what is out of range
    if grid.windows and not grid.ngrams:
        raise SettingsError("lookahead's windows need at least one n-gram size N")
    for n, k in grid.lookups:
        LookupConfig(ngram=n, tokens=k)
    for k in grid.draft_tokens:
        check_draft_tokens(k)
    for n in grid.tree_sizes:
        if n < 1 or n > MAX_TREE_SIZE:
            raise SettingsError(f"a Medusa tree has 1 to {MAX_TREE_SIZE} nodes, got {n}")
    for n, a in grid.suffixes:
        SuffixConfig(tree_size=n, alpha=a)
    if grid.size == 0:
        raise SettingsError("nothing to sweep: give at least one setting of one method")
    if grid.size > most:
        raise SettingsError(f"{grid.size} cells: this sweep may decode at most {most}; take fewer settings")


def repriced(report: TuneReport, costs: StepCosts, unit: float, machine: Machine, source: str) -> TuneReport:
    """`report`'s cells priced off another machine's step cost (`costs`, its 1-row step `unit` seconds), with the
    tokens per step and rows fed this sweep measured: a prediction for that machine, every measured speedup None,
    each method's chosen cell its best predicted. The host's time per step (a draft's passes included) carries
    over as the same share of a 1-row step as it took here (the report's curve's); each prompt's prefill is
    priced as one step (a small model's prefill on a GPU costs about what a step does). Each step is priced at the
    rows it fed, as an eager step runs them: a fixed-shape step there would run its shape's T (tune_cell).
    `source` says where `costs` come from."""
    share = unit / report.curve.seconds[0]
    steps = report.plain.steps
    plain = Decoded(
        tokens=report.plain.tokens, rows=(1,) * steps, host_seconds=report.plain.host_seconds * steps * share
    )
    prefill = unit * len(report.prompts)
    cells = []
    for cell in report.cells:
        decoded = Decoded(
            tokens=cell.tokens, rows=(cell.rows_fed,) * cell.steps, host_seconds=cell.host_seconds * cell.steps * share
        )
        predicted = predicted_speedup(costs.relative, decoded, plain, unit, prefill)
        cost = relative_cost(costs.relative, decoded)
        cells.append(replace(cell, predicted_speedup=predicted, relative_cost=cost, measured_speedup=None))
    return replace(
        report,
        machine=machine,
        curve=costs.curve(),
        cells=cells,
        chosen=chosen_cells(cells),
        rounds=0,
        busy=None,
        load="not measured: priced off recorded figures",
        held_out=None,
        source=source,
    )
