"""Each method's settings as records hold them, and the step-cost curve that lookahead's auto settings were chosen
from: the types a method's entry names (records.methods.MethodEntry.settings) and `MethodSettings` holds by method.
"""

from __future__ import annotations

from dataclasses import dataclass

from .names import PlannerKind, Regime


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
class SuffixSettings:
    """Suffix decoding: the tree's size at most, alpha (a tree holds at most alpha x the match's length nodes),
    the least probability a node is grown with, the longest match looked for, and what its store of earlier
    outputs held when the run began (their names; empty: a cold store) and their tokens."""

    tree_size: int
    alpha: float
    min_probability: float
    longest_match: int
    store: list[str]
    store_tokens: int
