"""The tune report: where each method pays on one machine, model and prompt set (`python -m lab tune`).

Every swept cell (a method at one setting) with what decoding measured (tokens per step, rows fed, the host's
time beyond the forward pass, exactness), the speedup predicted from the step-cost curve, and the speedup
measured by the clock where it was timed. The report carries its own version (TUNE_VERSION), apart from the
trace schema's, and is read back by `read_tune_report`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .codec import decode, parse_json, to_json
from .names import Method, PlannerKind, SchemaError, StepMode
from .run import Machine
from .settings import StepCostCurve
from .timing import Busy, Spread

TUNE_VERSION = 2
READABLE = {1, TUNE_VERSION}  # version 2 added the step mode and each cell's shape; a version 1 report ran eagerly


@dataclass(kw_only=True)
class TuneCell:
    """One method at one setting, over the report's prompts.

    `settings` are the method's own, by name (lookahead: window, ngram, guesses; prompt lookup: ngram, tokens;
    a draft or EAGLE: tokens; Medusa: tree_size; suffix decoding: tree_size, alpha). `tokens_per_step` counts
    decode steps only (the prefill apart); `rows_fed` is the mean tokens fed per decode step and `relative_cost`
    the mean cost of those steps on the curve, in 1-row steps, each at the rows its pass ran (`shape`, where a
    fixed-shape step pads every pass to its T); `host_seconds` the mean seconds per step beyond the forward pass
    (proposing, verifying, a draft's own passes). `predicted_speedup` is over plain decoding from those figures;
    `measured_speedup` the ratio of median rates over plain decoding in interleaved rounds (None: not timed).
    `exact`: every prompt's output equals greedy `generate`'s.
    """

    method: Method
    settings: dict[str, int]
    tokens: int
    steps: int
    tokens_per_step: float
    acceptance: float | None
    rows_fed: float
    relative_cost: float
    host_seconds: float
    predicted_speedup: float
    measured_speedup: Spread | None
    exact: bool
    shape: int = 0  # the rows every pass ran in a fixed-shape step (fixed.py's T; 0: the eager step, or version 1)

    @property
    def label(self) -> str:
        return cell_label(self.method, self.settings)


SHORT = {"window": "W", "ngram": "N", "guesses": "G", "tokens": "k", "tree_size": "nodes", "alpha": "α"}


def cell_label(method: Method, settings: dict[str, int]) -> str:
    """A cell's name: its method and settings, e.g. `lookahead W=4 N=5 G=4`."""
    return " ".join([method.value, *(f"{SHORT.get(k, k)}={v}" for k, v in settings.items())])


@dataclass(kw_only=True)
class TunePlain:
    """Plain decoding (the engine's greedy) on the same prompts: what every speedup is over."""

    tokens: int
    steps: int
    host_seconds: float  # mean seconds per step beyond the forward pass
    prefill_seconds: float  # the prompts' prefills, summed: the same for every method


@dataclass(kw_only=True)
class HeldOut:
    """The map's chosen lookahead settings against auto settings on prompts the map did not see: each one's
    speedup over plain decoding, a ratio of medians over interleaved rounds. `seconds`: the check's own time,
    part of the report's `sweep_seconds` (None in reports from before it was kept apart)."""

    prompts: list[str]
    chosen: dict[str, int]
    auto: dict[str, int]
    chosen_speedup: Spread
    auto_speedup: Spread
    rounds: int
    seconds: float | None = None


@dataclass(kw_only=True)
class TuneReport:
    """A sweep: every cell, the curve behind the prediction, the plain baseline, the chosen cell of each method
    (index into `cells`: the best measured, else the best predicted), the machine and how busy it was."""

    dataset: str
    prompts: list[str]
    max_new_tokens: int
    machine: Machine
    curve: StepCostCurve
    planner: PlannerKind  # lookahead's planner in every cell: the one auto settings take on this hardware
    plain: TunePlain
    cells: list[TuneCell]
    chosen: dict[Method, int]
    rounds: int  # interleaved rounds of each timed cell
    sweep_seconds: float
    busy: Busy | None
    load: str  # the load average when the sweep ended (uptime's words)
    ran_at: str
    held_out: HeldOut | None = None
    # Where the figures come from when this machine did not measure them: a map priced off another machine's
    # recorded step cost (its measured speedups then all None). None: every figure was measured by this sweep.
    source: str | None = None
    mode: StepMode = StepMode.EAGER  # how every decoding's passes ran (version 2; before, eager)
    mode_note: str = ""  # why that is not the mode asked for ("" when it is)
    tune_version: int = TUNE_VERSION

    def to_json(self, indent: int | None = 1) -> str:
        return to_json(self, indent)

    def chosen_cell(self, method: Method) -> TuneCell | None:
        index = self.chosen.get(method)
        return self.cells[index] if index is not None else None


def read_tune_report(text: str | bytes) -> TuneReport:
    """A tune report from its JSON; SchemaError names the field that does not fit, or another version."""
    data = parse_json(text)
    version = data.get("tune_version") if isinstance(data, dict) else None
    if version not in READABLE:
        readable = " and ".join(map(str, sorted(READABLE)))
        raise SchemaError(f"this tune report has version {version!r}; this lab reads versions {readable}")
    return decode(TuneReport, data | {"tune_version": TUNE_VERSION}, "tunereport")
