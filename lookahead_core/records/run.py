"""A trace and a run: every step record of one decoding (Trace), and a guessing method's trace beside
plain decoding's on the same prompt (Run), with what it takes to read them with no model: each method's
settings, the measured step-cost curve, the machine, sampling's settings, the meta and the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import Document, decode, expect, to_data
from .methods import METHODS
from .names import SCHEMA_VERSION, Method, SchemaError, StepMode, StopReason
from .step import StepRecord
from .timing import Timing


class MethodSettings:
    """Each guessing method's settings, keyed by method: each held by the method's name in lower case (`Method.name`:
    "lookahead", "prompt_lookup", ...: its key in JSON), of the type its entry names (MethodEntry.settings), only
    where the method ran. An attribute of a method's name (`settings.lookahead`) is its settings, or None.

    A trace keeps its own method's, a race each raced method's, a bench each entrant's (the speculative draft is
    hf-assisted's too). Lookahead's is the auto choice, with the curve behind it, where the settings were auto. A
    method a spec registers (lookahead_core.spec.register) records its own settings here too, read back as its
    entry's type.
    """

    __slots__ = ("by_name",)

    def __init__(self, **by_name) -> None:
        unknown = sorted(set(by_name) - set(settings_types()))
        if unknown:
            raise TypeError(f"MethodSettings: no method keeps settings as {unknown[0]!r}")
        self.by_name = {name: settings for name, settings in by_name.items() if settings is not None}

    def of(self, method: Method):
        """`method`'s settings (None where it did not run, and for greedy)."""
        return self.by_name.get(method.name.lower())

    def without(self, method: Method) -> MethodSettings:
        """These settings less `method`'s."""
        return MethodSettings(**{name: kept for name, kept in self.by_name.items() if name != method.name.lower()})

    def __getattr__(self, name: str):
        if name in settings_types():
            return self.by_name.get(name)
        raise AttributeError(name)

    def __eq__(self, other) -> bool:
        return isinstance(other, MethodSettings) and self.by_name == other.by_name

    def __repr__(self) -> str:
        return f"MethodSettings({', '.join(f'{name}={kept!r}' for name, kept in self.by_name.items())})"

    def plain(self) -> dict:
        """As JSON data (codec.to_data): each method's settings by its name."""
        return {name: to_data(kept) for name, kept in self.by_name.items()}

    @classmethod
    def decoded(cls, value, where: str) -> MethodSettings:
        """Read from JSON data (codec.decode): each key a method's name, its value of that method's settings type."""
        types = settings_types()
        held = {}
        for name, kept in expect(value, dict, where).items():
            if name not in types:
                raise SchemaError(f"{where}: unknown field {name!r}")
            held[name] = None if kept is None else decode(types[name], kept, f"{where}.{name}")
        return cls(**held)


def settings_types() -> dict[str, type]:
    """Each method's settings type by the method's name in lower case: the method table's, as registered now."""
    return {method.name.lower(): entry.settings for method, entry in METHODS.items() if entry.settings is not None}


@dataclass(kw_only=True)
class ProductGroup:
    """One group of a model's float32 linear layers that share a shape (`out_features` x `in_features`, biased or
    not; `head`: the output layer is among them), and how its products were taken: at each of the choice's sizes
    (rows fed), the way kept, and each way's median seconds for one product of every layer in the group."""

    out_features: int
    in_features: int
    bias: bool
    layers: int
    head: bool
    ways: list[str]
    seconds: dict[str, list[float]]


@dataclass(kw_only=True)
class ProductChoice:
    """How the engine takes a model's linear products on this machine (lookahead_core.device.product_ways): each way
    timed here for each group of layers at each size, the fastest kept per size. `fingerprint` is what the
    measurement holds for (the CPU's model and flags, cores, torch, its threads, dtype); above the largest
    size a product is nn.Linear's."""

    fingerprint: dict[str, str]
    measured_at: str
    sizes: list[int]
    groups: list[ProductGroup]


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
    engine: int = 0  # the engine's version (names.ENGINE_VERSION) that recorded it; 0: not recorded (before version 9)
    products: ProductChoice | None = None  # how a CPU's float32 products were taken (None: not chosen, not a CPU)


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
    settings: MethodSettings  # the method's own settings (schema 14; before, a field for each)
    max_new_tokens: int
    prompt_text: str | None
    prompt_token_ids: list[int]
    eos_ids: list[int]
    machine: Machine
    recorded_at: str
    sampling: SamplingRecord | None = None  # None: greedy decoding
    prompt_shown: str = ""  # the prompt's ids decoded as one text (chat template included): every script whole
    mode: StepMode = StepMode.EAGER  # how the passes after the prefill ran (schema 9; before, eager)
    mode_note: str = ""  # why the mode asked for could not run and this one ran instead ("" when it ran as asked)
    shape_rows: int = 0  # the rows every pass after the prefill ran in a fixed-shape mode (schema 11; 0: eager)
    shape_needs: int = 0  # the most rows a step feeds; below shape_rows where the step costs widened the shape


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
class Divergence:
    """Where a greedy output first leaves plain greedy decoding's: new token `index` (0 = the first), where plain
    decoding chose `plain_token` and the other run `other_token` (`plain_text` and `other_text`, each decoded
    alone). `plain_logit` and `other_logit` are the two
    candidates' logits in one more pass of the model over the prompt and the tokens both runs agree on, in the
    model's `dtype`, and `rounding_step` the spacing of that dtype's numbers at the larger logit's size: a gap
    of about one step is a near-tie that a computation of another shape (more rows, another kernel) may round
    the other way. In float32 the engine's outputs never diverge; in half precision they may."""

    index: int
    plain_token: int
    other_token: int
    plain_text: str
    other_text: str
    plain_logit: float
    other_logit: float
    rounding_step: float
    dtype: str


@dataclass(kw_only=True)
class Run(Document):
    """A guessing method's trace (lookahead, prompt lookup, speculative) beside plain decoding's on
    the same prompt: what a replay of the comparison needs. `divergence` is set where a greedy method's output
    left plain decoding's."""

    trace: Trace
    greedy: Trace
    timing: Timing | None = None  # None: a run from before repeated timings (each trace timed once)
    divergence: Divergence | None = None
    schema_version: int = SCHEMA_VERSION
