"""The Medusa heads and the EAGLE layer the lab ships, and what a run decodes with: heads for the model with
the sparse tree that pays best on this hardware, and speculative decoding's draft, a model or an EAGLE layer.

The shipped heads and layer were trained here for the embedded SmolLM2-135M-Instruct (python -m lab.medusa
train, python -m lab.eagle train; their records beside them in assets/heads/). Any other model needs its
own (--heads PATH, --eagle PATH).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lookahead_core.costs import shape_costs, step_costs
from lookahead_core.draft import DEFAULT_DRAFT, DEFAULT_DRAFT_TOKENS, Draft, make_draft
from lookahead_core.eagle import EAGLE, load_eagle
from lookahead_core.medusa import Medusa, fitted_medusa, load_heads
from lookahead_core.models import DEFAULT_MODEL, LoadedModel
from lookahead_core.records import METHODS, Needs, StepMode, StepRecord
from lookahead_core.runtime import Deadline, Runtime
from lookahead_core.tuning import AutoSettings

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "heads"
SHIPPED_HEADS = SHIPPED / f"{DEFAULT_MODEL}.safetensors"
SHIPPED_RECORD = SHIPPED / f"{DEFAULT_MODEL}.training.json"
SHIPPED_LABEL = "the lab's heads"
SHIPPED_EAGLE = SHIPPED / f"{DEFAULT_MODEL}.eagle.safetensors"
SHIPPED_EAGLE_RECORD = SHIPPED / f"{DEFAULT_MODEL}.eagle.training.json"


class NoHeads(ValueError):
    """Medusa or EAGLE was asked for on a model the lab has no heads or layer for."""


NONE_SHIP = {
    Needs.HEADS: "Medusa needs heads trained for {name}: none ship for it (train them: python -m lab.medusa)",
    Needs.LAYER: "EAGLE needs a layer trained for {name}: none ships for it (train one: python -m lab.eagle train)",
}


def ships(lm: LoadedModel, needs: Needs) -> bool:
    """Whether the lab ships what `needs` names (heads, a layer) for `lm`: for the embedded model only."""
    shipped = {Needs.HEADS: SHIPPED_HEADS, Needs.LAYER: SHIPPED_EAGLE}
    return lm.name == DEFAULT_MODEL and shipped[needs].exists()


def medusa_for(lm: LoadedModel, path: str | Path | None = None, mode: StepMode | None = None) -> Medusa:
    """Medusa for `lm`: the heads at `path` (default: the shipped heads, for the embedded model only) with the
    tree fitted to this hardware's measured step costs in the step mode a run asking for `mode` takes (None: the
    device's default). NoHeads when none are given and none ship for `lm`; MedusaError (one line) for heads
    trained for another model."""
    if path is None:
        if not ships(lm, Needs.HEADS):
            raise NoHeads(NONE_SHIP[Needs.HEADS].format(name=lm.name))
        heads = load_heads(SHIPPED_HEADS, lm.model, lm.name, label=SHIPPED_LABEL)
    else:
        heads = load_heads(path, lm.model, lm.name)
    return fitted_medusa(heads, step_costs(lm, mode=mode).fitted_relative)


def eagle_draft(lm: LoadedModel, tokens: int = DEFAULT_DRAFT_TOKENS, path: str | Path | None = None) -> Draft:
    """Speculative decoding's draft for `lm` as an EAGLE layer drafting `tokens` per step: the layer at `path`
    (default: the shipped one, for the embedded model only). NoHeads when none is given and none ships for
    `lm`; MedusaError (one line) for a layer trained for another model."""
    if path is None:
        if not ships(lm, Needs.LAYER):
            raise NoHeads(NONE_SHIP[Needs.LAYER].format(name=lm.name))
        path = SHIPPED_EAGLE
    layer = load_eagle(path, lm.model, lm.name)
    return Draft(layer, f"{EAGLE}: {layer.label}", tokens)


def runtime_for(
    lm: LoadedModel,
    methods,
    *,
    auto: AutoSettings | None = None,
    draft: str = DEFAULT_DRAFT,
    tokens: int = DEFAULT_DRAFT_TOKENS,
    heads: str | Path | None = None,
    layer: str | Path | None = None,
    deadline: Deadline | None = None,
    learn: Callable[[list[StepRecord]], None] | None = None,
    mode: str | None = None,
) -> Runtime:
    """What `methods` run with on `lm`, built once: for each, what its table entry needs (the draft model called
    `draft`, the heads at `heads` and the EAGLE layer at `layer`, the shipped ones by default: NoHeads where
    none ship for `lm`), drafting `tokens` per step; with the auto settings, deadline, learning and step mode
    (None: the device's default, fixed.default_mode) given, and the step costs its fixed shapes widen on
    (costs.shape_costs: none for the eager step); its mode settled (Runtime.in_mode: the mode run, and why)."""
    needs = {METHODS[method].needs for method in methods}
    mode = None if mode is None else StepMode(mode)
    return Runtime(
        auto=auto,
        draft=make_draft(lm, draft, tokens) if Needs.DRAFT in needs else None,
        layer=eagle_draft(lm, tokens, layer) if Needs.LAYER in needs else None,
        heads=medusa_for(lm, heads, mode) if Needs.HEADS in needs else None,
        deadline=deadline,
        learn=learn,
        mode=mode,
        costs=shape_costs(lm, mode),
    ).in_mode(lm.model)  # settled after the curve, which may have found the mode failing on a wider shape
