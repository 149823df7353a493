"""The bench report: every method and its transformers peers on a prompt set, in one process: each
prompt's results, each method's totals, the settings, the machine and what else used the CPU. A report
from before bench reports were versioned reads through legacy.unversioned_bench_report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import Document, from_data, parse_json
from .legacy import unversioned_bench_report
from .names import SCHEMA_VERSION, BenchMethod, StepMode
from .run import Divergence, Machine, MethodSettings, SamplingRecord
from .timing import Busy, Spread


@dataclass(kw_only=True)
class BenchResult:
    """One method on one prompt. `speedup` is its tokens per second over the baseline's on this prompt,
    `exact` whether its output equals greedy `generate` (None when sampled), `offered` and `accepted`
    the candidate tokens it verified and those accepted (None for plain decoding and the peers). Timed in
    rounds, these are the figures of its median round on this prompt (by seconds; the lower middle of an
    even count), the baseline's likewise."""

    tokens: int
    steps: int  # forward passes of the target, the prefill counted as one
    tokens_per_step: float
    seconds: float
    tokens_per_second: float
    exact: bool | None
    offered: int | None
    accepted: int | None
    speedup: float
    # A sampled report from before versioned bench reports counted, in place of `offered`, the candidate
    # tokens the sampling rule tried; its `accepted` and acceptance count over these. None since.
    draws: int | None = None
    # where a greedy output left greedy `generate`'s: the token and the two candidates' logits (None: it did not)
    divergence: Divergence | None = None


@dataclass(kw_only=True)
class BenchPrompt:
    """One prompt of the set: its id, its length in tokens, and each method's result on it, in run order."""

    id: str
    prompt_tokens: int
    methods: dict[BenchMethod, BenchResult]


@dataclass(kw_only=True)
class BenchTotals:
    """One method's totals over the prompts. `speedup` is its tokens per second over the baseline's,
    `exact` the prompts whose output equals greedy `generate` (None when sampled), `acceptance` the
    share of verified candidate tokens accepted (None for plain decoding and the peers).

    Timed in rounds (`round_tokens` and `round_seconds` set, one entry per round, summed over the prompts):
    a round's rate is its tokens over its seconds; `rate` is the median, min and max of the rounds' rates,
    `tokens_per_second` its median; `seconds` is the median of the rounds' seconds; `speedup_interval` the
    ratio of this method's median rate to the baseline's with a bootstrap interval over the rounds, and
    `speedup` its median. `tokens`, `steps`, `exact` and `acceptance` are those of the prompts' results.
    A report from before rounds (these four None) timed each method once per prompt."""

    prompts: int
    tokens: int
    steps: int
    tokens_per_step: float
    seconds: float
    tokens_per_second: float
    speedup: float
    exact: int | None
    acceptance: float | None
    round_tokens: list[int] | None = None
    round_seconds: list[float] | None = None
    rate: Spread | None = None
    speedup_interval: Spread | None = None
    # this method's median rate over hf-static's, with its interval, when hf-static ran (plain decoding at its best
    # where transformers compiles it); None otherwise and in reports from before it
    over_static: Spread | None = None


@dataclass(kw_only=True)
class BenchSettings:
    """What a bench ran: the prompt set, the methods in run order, the baseline of every speedup, and each
    method's settings (prompt lookup's None in a report from before this engine had prompt lookup)."""

    dataset: str
    methods: list[BenchMethod]
    baseline: BenchMethod
    max_new_tokens: int
    # each entrant's settings (schema 14; before, a field for each, and lookahead's auto choice a field of its own)
    by_method: MethodSettings
    sampling: SamplingRecord | None  # None: greedy decoding
    prompt_lookup_num_tokens: int  # what hf-prompt-lookup passed to generate
    ran_at: str
    # An auto choice from before its regime was recorded said why in words (its `why`; the choice is lookahead's
    # settings). None since.
    auto_why: str | None = None
    repeats: int | None = None  # interleaved rounds per prompt; None: a report from before rounds (timed once)
    static_compiled: bool | None = None  # whether transformers compiled hf-static's step here (CUDA); None: not run
    mode: StepMode = StepMode.EAGER  # how this engine's methods ran their steps (schema 9; before, eager)
    mode_note: str = ""  # why that is not the mode asked for ("" when it is)
    # Whether suffix decoding's store was warm: each prompt also matched the outputs of the prompts before it in
    # the run (never its own); False: cold, each prompt's own text only; None: suffix decoding did not run.
    suffix_warm: bool | None = None
    # The methods whose steps were to keep their state on the device (a fixed-shape mode's timed greedy lanes) but
    # whose device step failed on this model, and why: their steps kept it on the host (schema 13; before, none kept)
    state_on_host: dict[BenchMethod, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class BenchReport(Document):
    """A bench: each method's totals (`summary`, in run order), each prompt's results, the machine, the
    settings and what other programs used of the CPU while it was timed (`busy`, None: a report from before
    that reading). Reports from before bench reports were versioned read through `unversioned_bench_report`."""

    summary: dict[BenchMethod, BenchTotals]
    prompts: list[BenchPrompt]
    machine: Machine
    settings: BenchSettings
    busy: Busy | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_json(cls, text: str | bytes) -> BenchReport:
        return from_data(cls, unversioned_bench_report(parse_json(text)))
