"""The record schema: the one contract between the engine and everything above it.

Typed, versioned records of a decoding step, a trace (one method's run), a run (lookahead
beside greedy on the same prompt), a race and a bench report. The engine and the lab build every
record they write from these types; the visuals read only their fields. Plain Python only (no
torch), so a trace can be read, checked and drawn on a machine with no model. `from_json` refuses
a record of another schema version, a missing field or a wrong type, with a message that says where.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 7
# Older versions whose records read as this one: each only added facts with defaults. Version 4 added
# the sliding-window masks (a version 3 record is one of a model with no sliding layer); version 5 the
# repeated timings of a Run and a race (a version 4 record timed each method once, and says so); version 6
# Medusa's heads; version 7 the bench's EAGLE entrant and its layer (a version 6 bench ran none).
UPGRADABLE = {3, 4, 5, 6}


class SchemaError(ValueError):
    """A record does not fit this schema; the message names the field and what was wrong."""


# ----------------------------------------------------------------------------------------------
# Names (enums: values are what the JSON holds)


class Method(enum.StrEnum):
    """A decoding method. All but greedy guess tokens and verify them in one pass, each its own way."""

    LOOKAHEAD = "lookahead"  # Jacobi window + n-gram pool
    GREEDY = "greedy"  # plain autoregressive decoding (greedy or sampled)
    PROMPT_LOOKUP = "prompt-lookup"  # the tokens after an earlier occurrence of the last few tokens
    SPECULATIVE = "speculative"  # a draft model's chain of k tokens
    MEDUSA = "medusa"  # Medusa heads' sparse tree of guesses, read off the last accepted row's hidden state


class BenchMethod(enum.StrEnum):
    """A bench entrant: this engine's methods (the values of Method) and, prefixed hf-, transformers' own
    `generate` as a user would otherwise run it: the peers."""

    GREEDY = "greedy"
    LOOKAHEAD = "lookahead"
    PROMPT_LOOKUP = "prompt-lookup"
    SPECULATIVE = "speculative"
    MEDUSA = "medusa"
    EAGLE = "eagle"  # speculative decoding with an EAGLE layer on the model's own features as its draft
    HF_GREEDY = "hf-greedy"  # generate(do_sample=False), or sampled with the same P
    HF_PROMPT_LOOKUP = "hf-prompt-lookup"  # generate(prompt_lookup_num_tokens=...)
    HF_ASSISTED = "hf-assisted"  # generate(assistant_model=...) with the speculative method's draft

    @property
    def method(self) -> Method | None:
        """This engine's method that the entrant runs; None for a peer."""
        if self == BenchMethod.EAGLE:
            return Method.SPECULATIVE
        return next((method for method in Method if method.value == self.value), None)


class StepKind(enum.StrEnum):
    PREFILL = "prefill"  # the prompt in one pass; commits the first new token
    DECODE = "decode"


class TokenSource(enum.StrEnum):
    """How a committed token was produced."""

    GUARANTEED = "guaranteed"  # argmax of the current token's row: what greedy decoding emits
    ACCEPTED = "accepted"  # a candidate's token that verification accepted
    BONUS = "bonus"  # the prediction after the last accepted token (sampled: a draw from that row's P)
    SAMPLED = "sampled"  # sampling: drawn from P, or from what remained of it after every candidate was rejected


class StopReason(enum.StrEnum):
    EOS = "eos"  # an end-of-sequence token was committed
    MAX_NEW_TOKENS = "max_new_tokens"
    DEADLINE = "deadline"  # the request's time ran out first: a partial run (a run's summary only)


class Branch(enum.StrEnum):
    """Which part of a step's input a row belongs to."""

    CURRENT = "current"  # the current token c
    WINDOW = "window"  # the lookahead branch: the 2D Jacobi window
    GUESS = "guess"  # the verification branch: one candidate n-gram (lookahead) or match (prompt lookup)
    DRAFT = "draft"  # a draft model's chain
    HEADS = "heads"  # Medusa's sparse tree of the heads' guesses


class GuessSource(enum.StrEnum):
    """Where a candidate's (or a pool n-gram's) tokens came from."""

    PROMPT = "prompt"  # an n-gram of the prompt
    WINDOW = "window"  # an n-gram harvested from a column of the Jacobi window
    OUTPUT = "output"  # an n-gram of the committed output
    TRAJECTORY = "trajectory"  # a Jacobi trajectory inside the window, verified as it stands
    DRAFT = "draft"  # proposed by a draft model, one token at a time
    HEADS = "heads"  # Medusa's heads: a path of their top choices through the sparse tree


class GuessReason(enum.StrEnum):
    """Why a candidate was verified."""

    TWO_TOKEN_KEY = "two-token key"  # a pool n-gram whose key and preceding token both match
    ONE_TOKEN_KEY = "one-token key"  # a pool n-gram whose key matches the current token
    JACOBI_TRAJECTORY = "jacobi trajectory"  # the window computed this chain anyway: free to check
    SUFFIX_MATCH = "suffix match"  # prompt lookup: the last tokens occurred earlier; these followed them
    DRAFT_MODEL = "draft model"  # the draft model's own continuation
    TREE_PATH = "tree path"  # Medusa: a root-to-leaf path of the sparse tree, one head's choice per place


class Verdict(enum.StrEnum):
    """A candidate's outcome in verification."""

    WON = "won"  # the longest match (first on ties): its accepted tokens were committed
    SHORTER = "shorter"  # matched, but fewer tokens than the winner
    TIED_LATER = "tied-later"  # matched as many as the winner, but came later
    NO_MATCH = "no-match"  # its first token differs from the guaranteed next token


class PlanReason(enum.StrEnum):
    """Why a step fed what it fed."""

    PAPER = "paper"  # the paper's plan: the whole window and every guess, every step
    ALL_PROPOSED = "all-proposed"  # a method with no window: every candidate it proposed
    BEST_RATIO = "best-ratio"  # cost-aware: the most expected tokens per unit of measured step time
    PROBE_WINDOW = "probe-window"  # cost-aware: the window sat out too long and is fed to measure it again


class PlannerKind(enum.StrEnum):
    FULL = "full"
    COST_AWARE = "cost-aware"


class Regime(enum.StrEnum):
    """How a wide step's measured cost sorts the hardware (auto settings)."""

    FLAT = "flat"  # a wide step costs about what a 1-token step does: the paper's settings
    MODERATE = "moderate"  # a middle window, planned step by step
    STEEP = "steep"  # a small window, planned step by step


# ----------------------------------------------------------------------------------------------
# A step


@dataclass(kw_only=True)
class InputRow:
    """One token fed to the step's forward pass, where it sits, and what it may attend to.

    `lane` and `index` place it: (level, column) in the window, (guess number, token index) in
    a guess, (choice rank, head - 1) in Medusa's tree, (0, 0) for c. `sees` lists the rows of this
    step it attends to (its ancestors and itself); every row also sees the committed prefix. This is
    the mask the engine passed.
    """

    token: int
    position: int
    parent: int
    branch: Branch
    lane: int
    index: int
    sees: list[int]


@dataclass(kw_only=True)
class SlidingRecord:
    """The mask the engine passed to the model's sliding-window layers, where it differs from the rows' `sees`.

    On those `layers` (of the model's layers), a row at position t sees only keys at positions
    > t - `window`: of the committed prefix, positions `prefix_from[i]` onwards; of this step's
    rows, `sees[i]` (its ancestors and itself within the window). Full layers see what the rows say.
    """

    window: int
    layers: int
    prefix_from: list[int]
    sees: list[list[int]]


@dataclass(kw_only=True)
class PlanRecord:
    """What this step fed besides c, and why (figures only where a cost-aware planner weighed them)."""

    reason: PlanReason
    window_fed: bool
    guesses_offered: int
    guesses_verified: int
    guess_length: int  # tokens of each verified guess (N-1, or fewer when the plan cut them)
    expected_tokens: float | None = None
    relative_cost: float | None = None  # the planned step's measured cost, in 1-token steps
    idle_steps: int = 0  # steps the window had sat out before this one


@dataclass(kw_only=True)
class NGram:
    key: int
    continuation: list[int]
    source: GuessSource


@dataclass(kw_only=True)
class PoolEntry:
    """An entry under the current key before this step; `guess` is the guess it became, if picked."""

    continuation: list[int]
    source: GuessSource
    guess: int | None


@dataclass(kw_only=True)
class PoolRecord:
    """The n-gram pool at this step: the entries under the key, what was added and evicted, its size after."""

    key: int
    previous: int  # the token before c: the second token of a two-token key
    entries: list[PoolEntry]
    added: list[NGram]
    evicted: list[NGram]
    size: int
    size_before: int


@dataclass(kw_only=True)
class WindowRecord:
    """The Jacobi window before this step, where each level came from, and what the step did to it.

    `origins[l]` is the step whose Jacobi update produced level l (0: the initial fill from the
    prompt; level 0 column 0 is always c). `update` is this step's new top level (empty when the
    window was not fed), `harvested` the n-grams its columns gave the pool (empty in warm-up).
    """

    fed: bool
    warming_up: bool
    levels: list[list[int]]
    origins: list[int]
    update: list[int]
    harvested: list[list[int]]


@dataclass(kw_only=True)
class CandidateRecord:
    """One candidate token path and how verification judged it.

    `rows` are its rows in the step's input, `expected[k]` the model's prediction for the
    position of token k (the guaranteed token for k = 0, else the argmax of token k-1's row;
    sampling: the token committed there, up to its first mismatch only), `matched` how many
    leading tokens agreed with it. `lane` is its guess number, or the window
    column its trajectory ends atop.
    """

    source: GuessSource
    reason: GuessReason
    lane: int
    tokens: list[int]
    rows: list[int]
    expected: list[int]
    matched: int
    verdict: Verdict
    draft_probabilities: list[float] = field(default_factory=list)  # a draft's q(token) for each token
    found_at: int | None = None  # prompt lookup: the position in the sequence its tokens were copied from
    key_length: int = 0  # prompt lookup: how many trailing tokens matched there


@dataclass(kw_only=True)
class Draw:
    """Sampling: one candidate token tried at a position, accepted when `uniform` < `chance`.

    `probability` is P(token) renormalised after the rejections before it at this position, and
    `chance` the probability it was accepted with: P(token) for a fixed guess; for a draft
    model's token, whose `draft_probability` is q(token), min(1, P/q) (speculative sampling), the
    rejections before it taken out of P as max(0, P - q). It was accepted when `uniform` < `chance`.
    """

    token: int
    probability: float
    chance: float
    uniform: float
    accepted: bool
    draft_probability: float | None = None


@dataclass(kw_only=True)
class SampledPosition:
    """Sampling: one position of the verified block (offset 0 follows c), decided from row `row`'s P.

    The distinct candidate tokens offered there were tried in turn (`draws`); when all were
    rejected, or none was offered, `token` was drawn from what remained of P (`drawn` is True).
    """

    offset: int
    row: int
    draws: list[Draw]
    token: int
    drawn: bool


@dataclass(kw_only=True)
class VerificationRecord:
    """The outcome of verification: the candidates, the winner, the block it gives.

    Greedy: `block` is the guaranteed token followed by the winner's accepted tokens'
    predictions: m accepted tokens give m + 1, the last being the bonus token (None when nothing
    matched). Sampling: `guaranteed` is the first committed token (accepted or drawn), `positions`
    holds every draw, and `block` the accepted tokens plus the final draw.
    """

    guaranteed: int
    candidates: list[CandidateRecord]
    winner: int | None
    accepted: int
    bonus: int | None
    block: list[int]
    positions: list[SampledPosition] = field(default_factory=list)


@dataclass(kw_only=True)
class DraftRecord:
    """What a draft model did before this step's pass: the tokens it drafted, its passes and their time."""

    tokens: list[int]
    forward_passes: int
    seconds: float


@dataclass(kw_only=True)
class HeadGuesses:
    """One Medusa head's top choices this step, best first, with the probabilities its softmax gave them.
    Head k guesses the token k places after c (head 1: the one right after c)."""

    head: int
    tokens: list[int]
    probabilities: list[float]


@dataclass(kw_only=True)
class HeadsRecord:
    """What Medusa's heads did before this step's pass: each head's top choices, read off the hidden state
    of the row behind c, the sparse tree they filled (each node a path of choice ranks, head 1's first:
    [0, 1] is head 1's first choice then head 2's second), and the heads' time."""

    heads: list[HeadGuesses]
    tree: list[list[int]]
    seconds: float


@dataclass(kw_only=True)
class StepRecord:
    """One forward pass: what it fed, what it verified, what it committed, and how long it took.

    Greedy steps and the prefill carry no rows, plan, window, pool or verification.
    """

    step: int
    method: Method
    kind: StepKind
    position: int  # the current token's position (for the prefill: 0)
    tokens_fed: int
    committed: list[int]
    sources: list[TokenSource]
    stop: StopReason | None
    forward_seconds: float
    step_seconds: float
    rows: list[InputRow] = field(default_factory=list)
    plan: PlanRecord | None = None
    window: WindowRecord | None = None
    pool: PoolRecord | None = None
    verification: VerificationRecord | None = None
    draft: DraftRecord | None = None
    sliding: SlidingRecord | None = None  # None: the model has no sliding-window layer
    heads: HeadsRecord | None = None  # Medusa's heads (None for the other methods, and before schema 6)

    def token_ids(self) -> set[int]:
        """Every token id this record mentions (what a trace's vocabulary must cover)."""
        ids = set(self.committed) | {row.token for row in self.rows}
        if self.window is not None:
            ids |= {t for level in self.window.levels for t in level} | set(self.window.update)
        if self.pool is not None:
            ids |= {self.pool.key, self.pool.previous}
            ids |= {t for e in self.pool.entries for t in e.continuation}
            ids |= {t for g in self.pool.added + self.pool.evicted for t in [g.key, *g.continuation]}
        if self.verification is not None:
            ids |= set(self.verification.block)
            ids |= {t for c in self.verification.candidates for t in c.tokens + c.expected}
        if self.draft is not None:
            ids |= set(self.draft.tokens)
        if self.heads is not None:
            ids |= {t for head in self.heads.heads for t in head.tokens}
        return ids


# ----------------------------------------------------------------------------------------------
# A trace and a run


@dataclass(kw_only=True)
class StepCostCurve:
    """Median seconds of one forward pass for each number of tokens fed, after `context` cached tokens."""

    sizes: list[int]
    seconds: list[float]
    context: int
    hardware: str
    model: str
    dtype: str
    measured_at: str


@dataclass(kw_only=True)
class LookaheadSettings:
    """Lookahead's W, N, G, the planner that chose each step's input, and the auto choice if any.

    With auto settings, `regime` is how the measured `step_costs` sorted this hardware: a
    `probe_tokens`-token step costs `probe_ratio` 1-token steps. The curve is what a cost-aware
    planner weighed, so the run can be decoded again, plan for plan.
    """

    window: int
    ngram: int
    guesses: int
    planner: PlannerKind = PlannerKind.FULL
    regime: Regime | None = None
    probe_tokens: int | None = None
    probe_ratio: float | None = None
    step_costs: StepCostCurve | None = None


@dataclass(kw_only=True)
class LookupSettings:
    """Prompt lookup: match the last `ngram` tokens (down to 1) earlier in the sequence, propose the
    `tokens` that followed, from up to `candidates` distinct matches (most recent first)."""

    ngram: int
    tokens: int
    candidates: int


@dataclass(kw_only=True)
class DraftSettings:
    """Speculative decoding: the draft model (a name such as "bf16-self", a hub id or a folder), its
    dtype, and how many tokens it drafts per step."""

    model: str
    dtype: str
    tokens: int


@dataclass(kw_only=True)
class MedusaSettings:
    """Medusa decoding: the heads (where they came from, the model they were trained for, K) and the sparse
    tree's size (nodes after c) and depth."""

    heads: str
    model: str
    count: int
    tree_size: int
    tree_depth: int


@dataclass(kw_only=True)
class Machine:
    model: str
    architecture: str
    parameters: int
    device: str
    device_name: str
    dtype: str
    attention: str
    torch: str
    transformers: str
    python: str
    platform: str
    layers: int = 0  # 0: not recorded (a record from before schema version 4)
    sliding_layers: int = 0
    sliding_window: int | None = None


@dataclass(kw_only=True)
class SamplingRecord:
    """Sampled decoding's settings: P is the logits warped by temperature, top-k (0 = off), top-p (1 = off)."""

    temperature: float
    top_k: int
    top_p: float
    seed: int


@dataclass(kw_only=True)
class TraceMeta:
    method: Method
    settings: LookaheadSettings | None  # lookahead's W, N, G (None for the other methods)
    max_new_tokens: int
    prompt_text: str | None
    prompt_token_ids: list[int]
    eos_ids: list[int]
    machine: Machine
    recorded_at: str
    sampling: SamplingRecord | None = None  # None: greedy decoding
    lookup: LookupSettings | None = None  # prompt lookup's settings
    draft: DraftSettings | None = None  # speculative decoding's draft
    medusa: MedusaSettings | None = None  # Medusa's heads and tree
    prompt_shown: str = ""  # the prompt's ids decoded as one text (chat template included): every script whole


@dataclass(kw_only=True)
class Summary:
    """A run's totals: forward passes count the prefill as one."""

    new_token_ids: list[int]
    tokens: int
    steps: int
    tokens_per_step: float
    seconds: float
    tokens_per_second: float
    stop: StopReason | None
    text: str


class Document:
    """A top-level record (a trace, a run, a race, a bench report): it carries `schema_version` and reads and
    writes JSON."""

    def to_json(self, indent: int | None = None) -> str:
        return to_json(self, indent)

    @classmethod
    def from_json(cls, text: str | bytes):
        return from_json(cls, text)


@dataclass(kw_only=True)
class Trace(Document):
    """Every step record of one decoding run, plus what it takes to read it with no model."""

    meta: TraceMeta
    steps: list[StepRecord]
    vocab: dict[str, str]  # str(token id) -> its text, decoded alone
    summary: Summary
    pieces: list[str] = field(default_factory=list)  # the text each committed token added (see trace.text_pieces)
    schema_version: int = SCHEMA_VERSION


@dataclass(kw_only=True)
class Run(Document):
    """A guessing method's trace (lookahead, prompt lookup, speculative) beside plain decoding's on
    the same prompt: what a replay of the comparison needs."""

    trace: Trace
    greedy: Trace
    timing: Timing | None = None  # None: a run from before repeated timings (each trace timed once)
    schema_version: int = SCHEMA_VERSION


# ----------------------------------------------------------------------------------------------
# Progress: where a recording is, while it runs


@dataclass(frozen=True, kw_only=True)
class Progress:
    """How far a recording has come, yielded after every forward pass: a live record, never stored in a trace.

    `part` of `parts` numbers the decodings a request makes (warm-ups included), `method` is the
    one decoding now, `warming_up` says it is an untimed warm-up; `steps` and `tokens` count its
    forward passes and new tokens so far, out of at most `max_new_tokens`.
    """

    part: int
    parts: int
    method: Method
    warming_up: bool
    steps: int
    tokens: int
    max_new_tokens: int


# ----------------------------------------------------------------------------------------------
# Timing: repeated, interleaved rounds, medians with their spread, and what else ran meanwhile


@dataclass(kw_only=True)
class Spread:
    """A median and the interval around it: the min and max of the rounds for a rate, a bootstrap interval
    for a ratio of medians."""

    median: float
    low: float
    high: float

    def includes(self, value: float) -> bool:
        return self.low <= value <= self.high

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high


@dataclass(kw_only=True)
class MethodTiming:
    """One method over the rounds: in each round, the tokens compared and the seconds they took (runs of
    different lengths are cut to the shortest of their round); its rate over the rounds (tokens per second:
    median, min and max) and its speedup, the ratio of its median rate to greedy's with a bootstrap interval
    over the rounds (greedy's own is exactly 1)."""

    method: Method
    tokens: list[int]
    seconds: list[float]
    rate: Spread
    speedup: Spread
    partial: bool  # a round of it was stopped by the deadline before its end


@dataclass(kw_only=True)
class Busy:
    """What other programs used while a request measured: CPU time in cores (1.4: 140% of one core) out
    of `cores`, from the operating system's counters (None where they cannot be read)."""

    other_cores: float | None
    cores: int
    seconds: float  # the wall time the reading covers
    heavy: bool  # enough that the timings are less reliable (the lab's threshold, lab.busy.BUSY_CORES)


@dataclass(kw_only=True)
class Timing:
    """How a Run or a race was timed: `rounds` interleaved rounds (every method once per round, in `order`),
    each method's figures, the methods the intervals cannot tell apart from the fastest (`leaders`: one
    method is a clear winner, several are within noise), the round the playback shows, what the rest of the
    machine did meanwhile, and the time the request was given and whether it ran out."""

    rounds: int
    order: list[Method]
    methods: list[MethodTiming]
    leaders: list[Method]
    shown_round: int  # 0-based
    compared_tokens: int  # the tokens each rate counts in the round shown (all: equal lengths)
    lengths_differ: bool  # sampled runs stopped at different lengths and were cut to the shorter
    busy: Busy
    budget_seconds: float
    partial: bool  # the deadline stopped some decoding before its end: the figures cover what was done

    def of(self, method: Method) -> MethodTiming:
        return next(timing for timing in self.methods if timing.method == method)


@dataclass(kw_only=True)
class Fit:
    """What fits in a request's time on this machine at its latest prices: the most new tokens for which
    `rounds` rounds of a Run (two decodings) and of a race (four) fit, every decoding priced at one
    `step_seconds` step per token (plain decoding's pace, learned from the latest steps)."""

    step_seconds: float
    rounds: int
    run_seconds: float
    run_tokens: int
    race_seconds: float
    race_tokens: int


# ----------------------------------------------------------------------------------------------
# The race: greedy, lookahead, prompt lookup and speculative decoding, timed with nothing drawn


@dataclass(kw_only=True)
class RaceLane:
    """One method's race: cumulative tokens and seconds after each step, what each step fed and added.

    `pieces[i]` is the text step i added (a character split across tokens waits for the step that
    completes it), so a playback can grow the text as it really grew. `speedup` is tokens per
    second over the greedy lane's; `acceptance` the share of verified candidate tokens accepted.
    """

    method: Method
    tokens: list[int]
    seconds: list[float]
    tokens_fed: list[int]
    pieces: list[str]
    new_token_ids: list[int]
    steps: int
    tokens_per_step: float
    decode_step_seconds: float  # mean seconds of a step after the prefill
    mean_tokens_fed: float
    decode_tokens_per_step: float
    draft_seconds: float  # of all the steps' time, what the draft model's passes took (speculative)
    speedup: float
    exact: bool | None  # output equal to the greedy lane's (None when sampled: runs draw differently)
    acceptance: float | None


@dataclass(kw_only=True)
class RaceRecord(Document):
    """Every method on one prompt, one after the other, each after an untimed warm-up; greedy first."""

    lanes: list[RaceLane]
    settings: LookaheadSettings  # lookahead's
    lookup: LookupSettings
    draft: DraftSettings
    step_costs: StepCostCurve
    machine: Machine
    max_new_tokens: int
    ran_at: str
    sampling: SamplingRecord | None = None
    timing: Timing | None = None  # None: a race from before repeated timings (each lane timed once)
    medusa: MedusaSettings | None = None  # Medusa's heads and tree, when it raced (schema 6 on)
    schema_version: int = SCHEMA_VERSION

    def lane(self, method: Method) -> RaceLane:
        return next(lane for lane in self.lanes if lane.method == method)


# ----------------------------------------------------------------------------------------------
# The bench: every method and its transformers peers on a prompt set, in one process


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


@dataclass(kw_only=True)
class BenchSettings:
    """What a bench ran: the prompt set, the methods in run order, the baseline of every speedup, and each
    method's settings (`prompt_lookup` None: a report from before this engine had prompt lookup)."""

    dataset: str
    methods: list[BenchMethod]
    baseline: BenchMethod
    max_new_tokens: int
    lookahead: LookaheadSettings
    auto: LookaheadSettings | None  # lookahead's auto choice, with the measured curve behind it
    sampling: SamplingRecord | None  # None: greedy decoding
    prompt_lookup: LookupSettings | None
    draft: DraftSettings | None  # the draft of speculative and hf-assisted, when either ran
    prompt_lookup_num_tokens: int  # what hf-prompt-lookup passed to generate
    ran_at: str
    # An auto choice from before its regime was recorded said why in words (its `why`). None since.
    auto_why: str | None = None
    repeats: int | None = None  # interleaved rounds per prompt; None: a report from before rounds (timed once)
    medusa: MedusaSettings | None = None  # Medusa's heads and tree, when it ran
    eagle: DraftSettings | None = None  # the EAGLE entrant's layer (its name) and k, when it ran


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


def unversioned_bench_report(data: Any) -> Any:
    """A bench report written before bench reports carried a schema version (docs/bench), as this version's data.

    Three generations of the bench wrote them, and against today's report: those from before this engine
    had its own prompt lookup have no `settings.prompt_lookup` nor `settings.draft`, and their
    `prompt-lookup` was transformers' (today's `hf-prompt-lookup`); those from before sampling have no
    `settings.sampling` (they are greedy); those from before acceptance was counted have no `acceptance`,
    `offered` or `accepted`; the sampled ones counted `draws` (kept) where today's count `offered`; an auto
    choice from before its regime was recorded gave its `why` in words (kept as `settings.auto_why`). No
    figure is dropped. Versioned data is returned as it is; unversioned data of another shape is only
    stamped with this version, so that decoding names what does not fit.
    """
    if not isinstance(data, dict) or "schema_version" in data:
        return data
    stamped = data | {"schema_version": SCHEMA_VERSION}
    if not shaped_like_a_report(data):
        return stamped
    names = {} if "prompt_lookup" in data["settings"] else TRANSFORMERS_PROMPT_LOOKUP
    return stamped | {
        "summary": by_name(data["summary"], names, {"acceptance": None}),
        "prompts": [
            row | {"methods": by_name(row["methods"], names, {"offered": None, "accepted": None})}
            for row in data["prompts"]
        ],
        "settings": unversioned_settings(data["settings"], names),
    }


# Before this engine had prompt lookup, the bench's `prompt-lookup` was transformers'.
TRANSFORMERS_PROMPT_LOOKUP = {BenchMethod.PROMPT_LOOKUP.value: BenchMethod.HF_PROMPT_LOOKUP.value}


def by_name(table: dict, names: dict[str, str], missing: dict) -> dict:
    """A {method: figures} table under today's method names, with the `missing` figures as given (None)."""
    return {names.get(method, method): missing | figures for method, figures in table.items()}


def unversioned_settings(settings: dict, names: dict[str, str]) -> dict:
    """An unversioned report's settings as today's: absent settings None, methods by today's names, `why` kept."""
    settings = {"sampling": None, "prompt_lookup": None, "draft": None} | settings
    settings |= {
        "methods": [names.get(method, method) for method in settings["methods"]],
        "baseline": names.get(settings["baseline"], settings["baseline"]),
    }
    auto = settings.get("auto")
    if isinstance(auto, dict) and "why" in auto:
        settings |= {"auto": {k: v for k, v in auto.items() if k != "why"}, "auto_why": auto["why"]}
    return settings


def shaped_like_a_report(data: dict) -> bool:
    """Whether `unversioned_bench_report` can walk `data` (its fields are checked when it is decoded)."""
    summary, prompts, settings = data.get("summary"), data.get("prompts"), data.get("settings")
    if not (isinstance(summary, dict) and isinstance(prompts, list) and isinstance(settings, dict)):
        return False
    if not (isinstance(settings.get("methods"), list) and all(isinstance(m, str) for m in settings["methods"])):
        return False
    rows = [row.get("methods") for row in prompts if isinstance(row, dict)]
    tables = [
        *summary.values(),
        *(result for methods in rows if isinstance(methods, dict) for result in methods.values()),
    ]
    return (
        isinstance(settings.get("baseline"), str)
        and len(rows) == len(prompts)
        and all(isinstance(methods, dict) for methods in rows)
        and all(isinstance(table, dict) for table in tables)
    )


# ----------------------------------------------------------------------------------------------
# JSON


def to_data(record: Any) -> Any:
    """A record as plain JSON data (enums as their values)."""
    if dataclasses.is_dataclass(record):
        return {f.name: to_data(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, enum.Enum):
        return record.value
    if isinstance(record, list | tuple):
        return [to_data(item) for item in record]
    if isinstance(record, dict):
        return {to_data(key): to_data(value) for key, value in record.items()}
    return record


def to_json(record: Any, indent: int | None = None) -> str:
    """A record as JSON: compact, or indented for a file people read (a bench report)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(to_data(record), indent=indent, separators=separators, ensure_ascii=False)


def from_json(cls: type, text: str | bytes) -> Any:
    """Parse `text` as a `cls` record of this schema version; SchemaError says what does not fit."""
    return from_data(cls, parse_json(text))


def parse_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise SchemaError(f"not JSON: {error}") from error


def from_data(cls: type, data: Any) -> Any:
    """Build a `cls` record from plain data, checking the schema version first, then every field."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version in UPGRADABLE:
        data = upgraded(data)
    elif version != SCHEMA_VERSION:
        found = (
            "no schema version (a trace from before versioned records)" if version is None else f"version {version!r}"
        )
        raise SchemaError(
            f"this {cls.__name__.lower()} has {found}; this lab reads schema version {SCHEMA_VERSION}: record it again"
        )
    return decode(cls, data, cls.__name__.lower())


def upgraded(data: dict) -> dict:
    """An UPGRADABLE record's data as this version's: the documents it nests are re-labelled too."""
    return {
        key: SCHEMA_VERSION if key == "schema_version" else upgraded(value) if isinstance(value, dict) else value
        for key, value in data.items()
    }


def decode(kind: Any, value: Any, where: str) -> Any:
    """`value` as type `kind`, or SchemaError naming `where` it failed."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return decode(inner, value, where)
    if origin is list:
        return [decode(args[0], item, f"{where}[{i}]") for i, item in enumerate(expect(value, list, where))]
    if origin is dict:
        items = expect(value, dict, where).items()
        return {decode(args[0], k, where): decode(args[1], v, f"{where}.{k}") for k, v in items}
    if dataclasses.is_dataclass(kind):
        return decode_dataclass(kind, expect(value, dict, where), where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in kind)
            raise SchemaError(f"{where}: {value!r} is not one of {allowed}") from None
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise SchemaError(f"{where}: expected a number, got {type(value).__name__}")
    return expect(value, kind, where)


def expect(value: Any, kind: type, where: str) -> Any:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise SchemaError(f"{where}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def decode_dataclass(kind: type, value: dict, where: str) -> Any:
    hints = typing.get_type_hints(kind)
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise SchemaError(f"{where}: unknown field {unknown[0]!r}")
    fields = {}
    for f in dataclasses.fields(kind):
        if f.name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaError(f"{where}: missing field {f.name!r}")
            continue
        fields[f.name] = decode(hints[f.name], value[f.name], f"{where}.{f.name}")
    return kind(**fields)
