"""The Medusa heads the lab ships, and the Medusa a run decodes with: heads for the model, with the sparse
tree that pays best on this hardware.

The shipped heads were trained here for the embedded SmolLM2-135M-Instruct (python -m lab.medusa train,
their record beside them in assets/heads/). Any other model needs heads trained for it (--heads PATH).
"""

from __future__ import annotations

from pathlib import Path

from lookahead_core.costs import step_costs
from lookahead_core.medusa import Medusa, fitted_medusa, load_heads
from lookahead_core.models import DEFAULT_MODEL, LoadedModel

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "heads"
SHIPPED_HEADS = SHIPPED / f"{DEFAULT_MODEL}.safetensors"
SHIPPED_RECORD = SHIPPED / f"{DEFAULT_MODEL}.training.json"
SHIPPED_LABEL = "the lab's heads"


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
