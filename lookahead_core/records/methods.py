"""The method table: one entry per decoding method, what each method is, and beside it the bench's peers
(transformers' own `generate`), each with what it needs and how it is drawn.

What a method needs besides the model (a draft, heads, a layer), how it proposes (which branch of a step's token
tree its guesses fill), whether it races and plans its steps, its names and words, and its look. Plain Python, read
by the visuals as the records are. An entry is one part of a method's spec (`lookahead_core.method_spec.MethodSpec`,
whose `register` adds a method's entry here with its engine parts); the built-in methods' entries are listed here;
how the bench calls a peer's `generate` is `lab.measure.bench`'s.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .names import BenchMethod, Branch, Method
from .reports import DraftRecord, HeadsRecord, SuffixRecord
from .settings import DraftSettings, LookaheadSettings, LookupSettings, MedusaSettings, SuffixSettings


class Needs(enum.StrEnum):
    """What a method runs with besides the model and its request's settings."""

    NOTHING = "nothing"
    DRAFT = "draft"  # a draft model (speculative decoding)
    LAYER = "layer"  # an EAGLE layer trained for the model
    HEADS = "heads"  # Medusa heads trained for the model


@dataclass(frozen=True)
class Look:
    """How a method or peer is drawn wherever it is (the race's lanes, the bench's bars, the tune map's markers): its
    hue, one of visuals.palette's Okabe-Ito colours by name in lower case; its hatching where another entrant has its
    hue ("": none; never colour alone); its marker and its line's dash (Plotly's names). Every engine method has a
    marker and a dash of its own, so that the race's lines and points are told apart by shape as well as hue."""

    hue: str
    pattern: str = ""
    marker: str = "circle"
    dash: str = "solid"


@dataclass(frozen=True, kw_only=True)
class MethodEntry:
    """One method: what it needs, how it proposes, and how the lab names and draws it (`look`).

    `branch` is the part of a step's token tree its guesses fill (None: plain decoding guesses nothing);
    `settings` the type of its settings as records hold them (MethodSettings; None: it records none); `report` the
    type of what it did before each step's pass (StepRecord.method_report, reports.py; None: it reports nothing);
    `window` whether it keeps the Jacobi window and n-gram pool (with a planner and auto settings);
    `raced` whether the race runs it on a CPU (given what it needs) and `gpu_raced` on a GPU (None: as on a CPU):
    a draft model of the target's own size costs a full step per drafted token on a GPU, where a step of one
    token costs about what a step of many does (../shared/GPU.md measured 0.45x), so there EAGLE's one-layer
    draft races in its place (`unraced`: why, where the race leaves a method out); `missing` the refusal when what
    it needs is not there; `proposes` and `no_pool` what the window and pool panels say in their place; `prefill`
    what the prefill's caption adds.
    """

    method: Method
    name: str
    short: str
    needs: Needs
    branch: Branch | None
    look: Look
    settings: type | None = None
    report: type | None = None
    window: bool = False
    raced: bool = True
    gpu_raced: bool | None = None
    unraced: str = ""
    missing: str = ""
    proposes: str = ""
    no_pool: str = ""
    prefill: str = ""

    @property
    def guesses(self) -> bool:
        return self.branch is not None

    def races_on(self, device: str) -> bool:
        """Whether the race runs this method on a device of type `device` ("cpu", "cuda", ...)."""
        return self.raced if device == "cpu" or self.gpu_raced is None else self.gpu_raced


METHODS: dict[Method, MethodEntry] = {
    entry.method: entry
    for entry in (
        MethodEntry(
            method=Method.GREEDY,
            name="Greedy",
            short="greedy",
            needs=Needs.NOTHING,
            branch=None,
            look=Look("blue", marker="x"),
        ),
        MethodEntry(
            method=Method.LOOKAHEAD,
            name="Lookahead",
            short="lookahead",
            needs=Needs.NOTHING,
            branch=Branch.WINDOW,
            look=Look("sky", marker="circle", dash="dash"),
            settings=LookaheadSettings,
            window=True,
            prefill="Every n-gram of the prompt goes into the pool.",
        ),
        MethodEntry(
            method=Method.PROMPT_LOOKUP,
            name="Prompt lookup",
            short="prompt lookup",
            needs=Needs.NOTHING,
            branch=Branch.GUESS,
            look=Look("green", marker="square", dash="dot"),
            settings=LookupSettings,
            proposes=(
                "Prompt lookup has no Jacobi window: each step looks for the last few tokens earlier in the prompt "
                "and the output, and guesses that what followed them there comes again. See Verification."
            ),
            no_pool=(
                "Prompt lookup keeps no n-gram pool: the prompt and the output so far are searched afresh every step."
            ),
            prefill="Prompt lookup keeps no pool: each step searches the prompt and the output afresh.",
        ),
        MethodEntry(
            method=Method.SPECULATIVE,
            name="Speculative decoding",
            short="speculative",
            needs=Needs.DRAFT,
            branch=Branch.DRAFT,
            look=Look("purple", marker="diamond", dash="dashdot"),
            settings=DraftSettings,
            report=DraftRecord,
            gpu_raced=False,
            unraced=(
                "on a GPU a draft of the model's own size costs a full step per drafted token, so EAGLE's one-layer "
                "draft races in its place"
            ),
            missing="speculative decoding needs a draft model: give one (for instance bf16-self)",
            proposes=(
                "Speculative decoding has no Jacobi window: a draft model writes k tokens, one small forward pass "
                "each, and the target checks them all in one pass. See Verification."
            ),
            no_pool="Speculative decoding keeps no n-gram pool: its guesses come from the draft model.",
            prefill="The draft model reads the prompt too, into a KV cache of its own.",
        ),
        MethodEntry(
            method=Method.MEDUSA,
            name="Medusa heads",
            short="medusa",
            needs=Needs.HEADS,
            branch=Branch.HEADS,
            look=Look("black", marker="triangle-up", dash="longdash"),
            settings=MedusaSettings,
            report=HeadsRecord,
            missing="Medusa decoding needs heads trained for this model: give them (python -m lab.medusa)",
            proposes=(
                "Medusa has no Jacobi window: small heads read the model's own last hidden state and guess the next "
                "few tokens, a tree of their top guesses is checked in one pass. See Verification."
            ),
            prefill="The heads read the prompt's last hidden state: their first guesses come from this pass.",
        ),
        MethodEntry(
            method=Method.EAGLE,
            name="EAGLE draft layer",
            short="eagle",
            needs=Needs.LAYER,
            branch=Branch.DRAFT,
            # speculative decoding too, its draft an EAGLE layer (a race runs one of the two)
            look=Look("purple", pattern="/", marker="triangle-down", dash="dashdot"),
            settings=DraftSettings,
            report=DraftRecord,
            raced=False,
            gpu_raced=True,
            unraced=(
                "on a CPU the model's bfloat16 copy drafts faster than the layer (docs/eagle.md), so speculative "
                "decoding races in its place; a Run can still show it"
            ),
            missing="EAGLE needs a layer trained for this model: give one (python -m lab.eagle train)",
            proposes=(
                "EAGLE has no Jacobi window: one small decoder layer reads the model's own features and drafts k "
                "tokens, one pass of the layer each, and the target checks them all in one pass. See Verification."
            ),
            no_pool="EAGLE keeps no n-gram pool: its guesses come from the draft layer.",
            prefill="The layer reads the prompt's features from this pass, into a KV cache of its own.",
        ),
        MethodEntry(
            method=Method.SUFFIX,
            name="Suffix decoding",
            short="suffix",
            needs=Needs.NOTHING,
            branch=Branch.SUFFIX,
            look=Look("vermillion", marker="star", dash="longdashdot"),
            settings=SuffixSettings,
            report=SuffixRecord,
            proposes=(
                "Suffix decoding has no Jacobi window: each step finds the longest stretch of the sequence's end that "
                "occurred before (in the prompt, the output, or an earlier run's output) and guesses a tree of what "
                "followed it there, the most frequent first. See Verification."
            ),
            no_pool=(
                "Suffix decoding keeps no n-gram pool: it indexes the prompt, the output and earlier runs' outputs, "
                "and each step looks up the longest match of the sequence's end."
            ),
            prefill="Suffix decoding indexes the prompt: every token and pair of tokens, by where it occurs.",
        ),
    )
}


def entry(method: Method | str) -> MethodEntry:
    """The table's entry for `method` (a Method or its value)."""
    return METHODS[Method(method)]


def raced_on(device: str) -> tuple[Method, ...]:
    """The methods a race runs on a device of type `device`, in the table's order (where what they need is there)."""
    return tuple(method for method, entry in METHODS.items() if entry.races_on(device))


@dataclass(frozen=True, kw_only=True)
class PeerEntry:
    """A bench peer: transformers' own `generate` as a user would otherwise run it. `needs` what it runs with
    besides the model (assisted generation drafts with the engine's draft model), `look` how it is drawn (a peer of a
    method's family shares its hue, hatched), `missing` the refusal when that
    is not there, `settings_of` the engine method whose settings it runs with (assisted generation: speculative
    decoding's draft; None: its own, from `lab.measure.bench`)."""

    peer: BenchMethod
    look: Look
    needs: Needs = Needs.NOTHING
    missing: str = ""
    settings_of: Method | None = None


PEERS: dict[BenchMethod, PeerEntry] = {
    entry.peer: entry
    for entry in (
        PeerEntry(peer=BenchMethod.HF_GREEDY, look=Look("grey")),
        PeerEntry(peer=BenchMethod.HF_STATIC, look=Look("grey", pattern="x")),  # plain generate too, a static cache
        PeerEntry(peer=BenchMethod.HF_PROMPT_LOOKUP, look=Look("orange")),
        PeerEntry(
            peer=BenchMethod.HF_ASSISTED,
            look=Look("purple", pattern="x"),  # speculative decoding too, by transformers, with the same draft
            needs=Needs.DRAFT,
            missing="it needs a draft model",
            settings_of=Method.SPECULATIVE,
        ),
    )
}


def entrant_look(entrant: BenchMethod | str) -> Look:
    """How a bench entrant (an engine method, a peer, or its value) is drawn."""
    entrant = BenchMethod(entrant)
    return METHODS[entrant.method].look if entrant.method is not None else PEERS[entrant].look


def entrant_needs(entrant: BenchMethod) -> Needs:
    """What a bench entrant runs with besides the model: its engine method's, or the peer's."""
    return METHODS[entrant.method].needs if entrant.method is not None else PEERS[entrant].needs


def entrant_missing(entrant: BenchMethod) -> str:
    """The refusal for an entrant whose needs are not there, in its table's words."""
    return METHODS[entrant.method].missing if entrant.method is not None else PEERS[entrant].missing


def entrant_settings(entrant: BenchMethod) -> Method | None:
    """The engine method whose settings a bench entrant runs with: its own method's, or the one its peer borrows."""
    return entrant.method if entrant.method is not None else PEERS[entrant].settings_of
