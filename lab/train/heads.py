"""The Medusa heads and the EAGLE layer the lab ships, and what a run decodes with: heads for the model with
the sparse tree that pays best on this hardware, and speculative decoding's draft, a model or an EAGLE layer.

The shipped heads and layer were trained here for the embedded SmolLM2-135M-Instruct (python -m lab.medusa
train, python -m lab.eagle train; their records beside them in assets/heads/). Any other model needs its
own (--heads PATH, --eagle PATH).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from lookahead_core.config import DEFAULT_DRAFT_TOKENS
from lookahead_core.costs import SettledMode, settled_mode
from lookahead_core.methods.draft import DEFAULT_DRAFT, Draft, make_draft
from lookahead_core.methods.eagle import EAGLE, load_eagle
from lookahead_core.methods.medusa import Medusa, fitted_medusa, load_heads
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.models import DEFAULT_MODEL, LoadedModel
from lookahead_core.records import METHODS, Method, Needs, StepRecord
from lookahead_core.runtime import Deadline, Runtime
from lookahead_core.tuning import AutoSettings

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "heads"
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


def medusa_for(lm: LoadedModel, path: str | Path | None = None, settled: SettledMode | None = None) -> Medusa:
    """Medusa for `lm`: the heads at `path` (default: the shipped heads, for the embedded model only) with the
    tree fitted to this hardware's measured step costs in the `settled` step mode (None: the device's default,
    settled now). NoHeads when none are given and none ship for `lm`; MedusaError (one line) for heads trained for
    another model."""
    if path is None:
        if not ships(lm, Needs.HEADS):
            raise NoHeads(NONE_SHIP[Needs.HEADS].format(name=lm.name))
        heads = load_heads(SHIPPED_HEADS, lm.model, lm.name, label=SHIPPED_LABEL)
    else:
        heads = load_heads(path, lm.model, lm.name)
    settled = settled if settled is not None else settled_mode(lm)
    return fitted_medusa(heads, settled.costs.fitted_relative)


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


@dataclass
class Aids:
    """What a model's guessing methods run with besides it, each made on first use and kept for the next run:
    its draft model (`draft_name`, by default its bfloat16 copy), its Medusa heads with the tree fitted to the
    step costs of the `settled` step mode (None: the device's default) and its EAGLE layer, from the files at
    `heads_path` and `layer_path` (None: the shipped ones, for the embedded model only; NoHeads for any other,
    raised each time they are asked for)."""

    lm: LoadedModel
    draft_name: str = DEFAULT_DRAFT
    heads_path: str | Path | None = None
    layer_path: str | Path | None = None
    settled: SettledMode | None = None
    made: dict[Needs, Draft | Medusa | NoHeads] = field(default_factory=dict)

    def draft(self, tokens: int) -> Draft:
        """The draft model drafting `tokens` per step."""
        made = self.kept(Needs.DRAFT, lambda: make_draft(self.lm, self.draft_name, tokens))
        return replace(made, tokens=tokens)

    def layer(self, tokens: int) -> Draft:
        """The EAGLE layer as a draft of `tokens` per step; NoHeads where none is given or ships."""
        made = self.kept(Needs.LAYER, lambda: eagle_draft(self.lm, tokens, self.layer_path))
        return replace(made, tokens=tokens)

    def heads(self) -> Medusa:
        """The Medusa heads, fitted to this hardware; NoHeads where none are given or ship."""
        return self.kept(Needs.HEADS, lambda: medusa_for(self.lm, self.heads_path, self.settled))

    def kept(self, needs: Needs, make: Callable[[], Draft | Medusa]):
        if needs not in self.made:
            try:
                self.made[needs] = make()
            except NoHeads as missing:
                self.made[needs] = missing
        if isinstance(self.made[needs], NoHeads):
            # a fresh error each time: the kept one, raised again, would gather every raise's frames (and what they
            # hold, a request's data) in its traceback for as long as the model is held
            raise NoHeads(str(self.made[needs]))
        return self.made[needs]


def runtime_for(
    lm: LoadedModel,
    methods,
    aids: Aids | None = None,
    *,
    tokens: int = DEFAULT_DRAFT_TOKENS,
    auto: AutoSettings | None = None,
    deadline: Deadline | None = None,
    learn: Callable[[list[StepRecord], Method], None] | None = None,
    settled: SettledMode | None = None,
    store: SuffixStore | None = None,
    lenient: bool = False,
) -> Runtime:
    """What `methods` run with on `lm` for one request, built once: for each, what its table entry needs, from
    `aids` (by default the draft model, the shipped heads and the shipped layer, made now), drafting `tokens`
    per step; where heads or a layer are missing, NoHeads, or with `lenient` a runtime without them
    (`Runtime.has` says: a race leaves the method out, a Run refuses it). With the auto settings, deadline,
    learning, the `settled` step mode (costs.settled_mode: the mode, why, and the curve its fixed shapes widen on;
    settled before a request's time starts, since a GPU's first curve is measured then; None: each decoding settles
    the device's default, trace.settle) and the store of earlier outputs suffix decoding matches (None: a run's own
    text alone)."""
    needs = {METHODS[method].needs for method in methods}
    aids = aids if aids is not None else Aids(lm, settled=settled)

    def made(need: Needs, make: Callable[[], object]):
        if need not in needs:
            return None
        try:
            return make()
        except NoHeads:
            if lenient:
                return None
            raise

    parts = {
        "auto": auto,
        "draft": made(Needs.DRAFT, lambda: aids.draft(tokens)),
        "layer": made(Needs.LAYER, lambda: aids.layer(tokens)),
        "heads": made(Needs.HEADS, aids.heads),
        "store": store,
        "deadline": deadline,
        "learn": learn,
    }
    return Runtime(**parts) if settled is None else Runtime.in_settled(settled, **parts)
