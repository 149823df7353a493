"""The Medusa heads and the EAGLE layer the lab ships, and what a run decodes with: heads for the model with
the sparse tree that pays best on this hardware, and speculative decoding's draft, a model or an EAGLE layer.

The shipped heads and layer were trained here for the embedded SmolLM2-135M-Instruct (python -m lab.medusa
train, python -m lab.eagle train; their records beside them in assets/heads/). Any other model needs its
own (--heads PATH, --eagle PATH).
"""

from __future__ import annotations

from pathlib import Path

from lookahead_core.costs import step_costs
from lookahead_core.draft import DEFAULT_DRAFT_TOKENS, Draft, make_draft
from lookahead_core.eagle import EAGLE, load_eagle
from lookahead_core.medusa import Medusa, fitted_medusa, load_heads
from lookahead_core.models import DEFAULT_MODEL, LoadedModel

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "heads"
SHIPPED_HEADS = SHIPPED / f"{DEFAULT_MODEL}.safetensors"
SHIPPED_RECORD = SHIPPED / f"{DEFAULT_MODEL}.training.json"
SHIPPED_LABEL = "the lab's heads"
SHIPPED_EAGLE = SHIPPED / f"{DEFAULT_MODEL}.eagle.safetensors"
SHIPPED_EAGLE_RECORD = SHIPPED / f"{DEFAULT_MODEL}.eagle.training.json"


class NoHeads(ValueError):
    """Medusa was asked for on a model the lab has no heads for."""


def medusa_for(lm: LoadedModel, path: str | Path | None = None) -> Medusa:
    """Medusa for `lm`: the heads at `path` (default: the shipped heads, for the embedded model only) with the
    tree fitted to this hardware's measured step costs. NoHeads when none are given and none ship for `lm`;
    MedusaError (one line) for heads trained for another model."""
    if path is None:
        if lm.name != DEFAULT_MODEL or not SHIPPED_HEADS.exists():
            raise NoHeads(
                f"Medusa needs heads trained for {lm.name}: none ship for it (train them: python -m lab.medusa)"
            )
        heads = load_heads(SHIPPED_HEADS, lm.model, lm.name, label=SHIPPED_LABEL)
    else:
        heads = load_heads(path, lm.model, lm.name)
    return fitted_medusa(heads, step_costs(lm).fitted_relative)


def eagle_draft(lm: LoadedModel, tokens: int = DEFAULT_DRAFT_TOKENS, path: str | Path | None = None) -> Draft:
    """Speculative decoding's draft for `lm` as an EAGLE layer drafting `tokens` per step: the layer at `path`
    (default: the shipped one, for the embedded model only). NoHeads when none is given and none ships for
    `lm`; MedusaError (one line) for a layer trained for another model."""
    if path is None:
        if lm.name != DEFAULT_MODEL or not SHIPPED_EAGLE.exists():
            raise NoHeads(
                f"EAGLE needs a layer trained for {lm.name}: none ships for it (train one: python -m lab.eagle train)"
            )
        path = SHIPPED_EAGLE
    layer = load_eagle(path, lm.model, lm.name)
    return Draft(layer, f"{EAGLE}: {layer.label}", tokens)


def draft_for(lm: LoadedModel, name: str, tokens: int = DEFAULT_DRAFT_TOKENS, eagle: str | Path | None = None) -> Draft:
    """The draft called `name`: "eagle" for an EAGLE layer (eagle_draft, the layer at `eagle` or the shipped
    one; named "eagle: FILE" in records), else a draft model (make_draft)."""
    return eagle_draft(lm, tokens, eagle) if name == EAGLE else make_draft(lm, name, tokens)
