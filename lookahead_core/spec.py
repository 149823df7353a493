"""One spec per method: what it is (its entry in the method table, records.METHODS: its names and words, what it
needs, its branch, its look), how the engine runs it (`Guessing`: its proposer, its reach and rows, its settings as
records hold them) and its device-resident form (working_state.Resident), registered in one place (`register`).

The records, the visuals, the bench, the race and the Run read the tables a registration fills (records.METHODS,
GUESSING, working_state.RESIDENT), so a method added with `register` (a new name from `Method.add`) runs wherever
the built-in ones do. Greedy guesses nothing: its spec has no Guessing, and it runs the plain loop
(decoding.greedy_steps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from .config import LookaheadConfig, LookupConfig, SuffixConfig
from .decoding import GuessingDecoder
from .device.fixed import Shape, shape_for
from .device.forward import Passes
from .methods.draft import DraftProposer
from .methods.eagle import EagleProposer
from .methods.lookahead import JacobiProposer
from .methods.lookup import PromptLookupProposer
from .methods.medusa import MedusaProposer, make_medusa
from .methods.suffix import SuffixProposer, store_settings
from .proposers import Proposer
from .records import METHODS, LookaheadSettings, LookupSettings, Method, MethodEntry, MethodSettings, SuffixSettings
from .request import DecodeRequest
from .runtime import Runtime
from .working_state import RESIDENT, OnDeviceDecoder, Resident, takes

MakeProposer = Callable[[list[int]], Proposer]  # the proposer, built once the prefill committed the first token


def lookahead_reach(config: LookaheadConfig) -> int:
    """How many positions past the current token a lookahead step's rows can reach.

    The window's deepest row sits W + N - 3 past it (during warm-up and after), a guess's N - 1.
    """
    return max(config.window + config.ngram - 3, config.ngram - 1)


@dataclass(frozen=True)
class Guessing:
    """How the engine runs one guessing method: `proposer(model, prompt_ids, request, runtime)` makes its
    proposer's maker, `reach(request, runtime)` says how far past the current token its rows may sit,
    `recorded(request, runtime)` its settings as records hold them (its field of MethodSettings),
    `rows(request, runtime)` the most rows a step feeds (c included: the fixed-shape step's T), and `keep_hidden`
    whether each pass keeps its rows' last hidden states (what heads and a layer read)."""

    proposer: Callable[[object, list[int], DecodeRequest, Runtime], MakeProposer]
    reach: Callable[[DecodeRequest, Runtime], int]
    recorded: Callable[[DecodeRequest, Runtime], object]
    rows: Callable[[DecodeRequest, Runtime], int]
    keep_hidden: bool = False


def lookahead_settings(request: DecodeRequest, runtime: Runtime) -> LookaheadSettings:
    """Lookahead's settings as records hold them: the auto choice with its figures, or W, N, G."""
    if runtime.auto is not None:
        return runtime.auto.settings()
    config = request.lookahead
    return LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses)


def lookup_settings(request: DecodeRequest) -> LookupSettings:
    lookup = request.lookup
    return LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates)


def jacobi(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """Lookahead: the Jacobi window and the n-gram pool, seeded with the prompt's n-grams."""
    return lambda sequence: JacobiProposer(request.lookahead, sequence, prompt_ids)


def prompt_lookup(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """Prompt lookup: earlier occurrences of the last few tokens in the prompt and the output."""
    return lambda sequence: PromptLookupProposer(request.lookup, len(prompt_ids))


def draft_chain(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """Speculative decoding: the draft model's chain of k tokens, from a KV cache of its own."""
    vocabulary = model.get_output_embeddings().weight.shape[0]
    return lambda sequence: DraftProposer(runtime.draft, sequence, vocabulary, request.sampling)


def eagle_chain(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """EAGLE: the layer's chain of k tokens, read off the model's own features (kept from each pass)."""
    return lambda sequence: EagleProposer(runtime.layer, model, request.sampling)


def heads_tree(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """Medusa: the heads' sparse tree, read off the hidden state of the row behind the current token."""
    return lambda sequence: MedusaProposer(runtime.heads, model)


def suffix_tree(model, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime) -> MakeProposer:
    """Suffix decoding: the tree of what followed the longest match, in this run's text and the runtime's store."""
    vocabulary = model.get_output_embeddings().weight.shape[0]
    return lambda sequence: SuffixProposer(request.suffix, sequence, len(prompt_ids), runtime.store, vocabulary)


def suffix_settings(request: DecodeRequest, runtime: Runtime) -> SuffixSettings:
    """Suffix decoding's settings as records hold them, with what the runtime's store holds now."""
    return store_settings(request.suffix, runtime.store.texts() if runtime.store is not None else ())


Settings = dict[str, int]  # one cell's settings in a tune map, by name (TuneCell.settings)


@dataclass(frozen=True)
class Swept:
    """How the tune map sweeps a method: `settings(grid)` its cells' settings from the lab's TuneGrid (none: left out),
    `request(base, settings)` and `runtime(runtime, settings)` what one cell decodes with."""

    settings: Callable[[object], list[Settings]]
    request: Callable[[DecodeRequest, Settings], DecodeRequest]
    runtime: Callable[[Runtime, Settings], Runtime]


def same_runtime(runtime: Runtime, settings: Settings) -> Runtime:
    return runtime


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """One method, whole: `entry` what it is and how the lab names and draws it (records: what the visuals read),
    `guessing` how the engine proposes and verifies with it (None: plain decoding), `resident` how its timed steps
    run on the device (None: on the host), `swept` how the tune map sweeps its settings (None: it is not swept)."""

    entry: MethodEntry
    guessing: Guessing | None = None
    resident: Resident | None = None
    swept: Swept | None = None

    @property
    def method(self) -> Method:
        return self.entry.method


GUESSING: dict[Method, Guessing] = {}
SWEPT: dict[Method, Swept] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Add `spec`'s method everywhere a method is read: its name to `Method` (and so to the bench's entrants), its
    entry to records.METHODS, its Guessing to GUESSING, its device form to working_state.RESIDENT, its sweep to
    SWEPT."""
    method = Method.add(spec.method.value, spec.method.name)
    METHODS[method] = spec.entry
    for table, part in ((GUESSING, spec.guessing), (RESIDENT, spec.resident), (SWEPT, spec.swept)):
        if part is not None:
            table[method] = part
    return spec


@contextmanager
def registered(spec: MethodSpec) -> Iterator[MethodSpec]:
    """`spec` registered while the block runs, then removed from every table (a method tried for a while)."""
    register(spec)
    try:
        yield spec
    finally:
        for table in (METHODS, GUESSING, RESIDENT, SWEPT):
            table.pop(spec.method, None)
        Method.remove(spec.method.value)


# The built-in methods, each gathered from where its halves must live: its entry in records (torch-free, for the
# visuals), its device form in working_state (beside the device twins it shares)
BUILT_IN = (
    MethodSpec(entry=METHODS[Method.GREEDY]),
    MethodSpec(
        entry=METHODS[Method.LOOKAHEAD],
        guessing=Guessing(
            jacobi,
            lambda request, runtime: lookahead_reach(request.lookahead),
            lambda request, runtime: lookahead_settings(request, runtime),
            lambda request, runtime: request.lookahead.tokens_per_step,
        ),
        resident=RESIDENT[Method.LOOKAHEAD],
        swept=Swept(
            lambda g: [{"window": w, "ngram": n, "guesses": w} for w in g.windows for n in g.ngrams],
            lambda r, s: replace(
                r, method=Method.LOOKAHEAD, lookahead=LookaheadConfig(s["window"], s["ngram"], s["guesses"])
            ),
            same_runtime,
        ),
    ),
    MethodSpec(
        entry=METHODS[Method.PROMPT_LOOKUP],
        guessing=Guessing(
            prompt_lookup,
            lambda request, runtime: request.lookup.tokens,
            lambda request, runtime: lookup_settings(request),
            lambda request, runtime: 1 + request.lookup.tokens * request.lookup.candidates,
        ),
        resident=RESIDENT[Method.PROMPT_LOOKUP],
        swept=Swept(
            lambda g: [{"ngram": n, "tokens": k} for n, k in g.lookups],
            lambda r, s: replace(
                r, method=Method.PROMPT_LOOKUP, lookup=LookupConfig(ngram=s["ngram"], tokens=s["tokens"])
            ),
            same_runtime,
        ),
    ),
    MethodSpec(
        entry=METHODS[Method.SPECULATIVE],
        guessing=Guessing(
            draft_chain,
            lambda request, runtime: runtime.draft.tokens,
            lambda request, runtime: runtime.draft.settings(),
            lambda request, runtime: 1 + runtime.draft.tokens,
        ),
        swept=Swept(
            lambda g: [{"tokens": k} for k in g.draft_tokens],
            lambda r, s: replace(r, method=Method.SPECULATIVE, draft_tokens=s["tokens"]),
            lambda rt, s: replace(rt, draft=replace(rt.draft, tokens=s["tokens"])),
        ),
    ),
    MethodSpec(
        entry=METHODS[Method.EAGLE],
        guessing=Guessing(
            eagle_chain,
            lambda request, runtime: runtime.layer.tokens,
            lambda request, runtime: runtime.layer.settings(),
            lambda request, runtime: 1 + runtime.layer.tokens,
            keep_hidden=True,
        ),
        resident=RESIDENT[Method.EAGLE],
    ),
    MethodSpec(
        entry=METHODS[Method.MEDUSA],
        guessing=Guessing(
            heads_tree,
            lambda request, runtime: runtime.heads.reach,
            lambda request, runtime: runtime.heads.settings(),
            lambda request, runtime: 1 + len(runtime.heads.tree),
            keep_hidden=True,
        ),
        resident=RESIDENT[Method.MEDUSA],
        swept=Swept(
            lambda g: [{"tree_size": n} for n in g.tree_sizes],
            lambda r, s: replace(r, method=Method.MEDUSA),
            lambda rt, s: replace(rt, heads=make_medusa(rt.heads.heads, s["tree_size"])),
        ),
    ),
    MethodSpec(
        entry=METHODS[Method.SUFFIX],
        guessing=Guessing(
            suffix_tree,
            lambda request, runtime: request.suffix.tree_size,
            lambda request, runtime: suffix_settings(request, runtime),
            lambda request, runtime: 1 + request.suffix.tree_size,
        ),
        swept=Swept(
            lambda g: [{"tree_size": n, "alpha": a} for n, a in g.suffixes],
            lambda r, s: replace(
                r, method=Method.SUFFIX, suffix=SuffixConfig(tree_size=s["tree_size"], alpha=s["alpha"])
            ),
            same_runtime,
        ),
    ),
)
for built_in in BUILT_IN:
    register(built_in)


def reach(request: DecodeRequest, runtime: Runtime) -> int:
    """How far past the current token a step of the request's method may feed rows (0 for greedy)."""
    guessing = GUESSING.get(request.method)
    return guessing.reach(request, runtime) if guessing is not None else 0


def method_settings(request: DecodeRequest, runtime: Runtime, methods: Iterable[Method]) -> MethodSettings:
    """The settings of `methods` as records hold them, each with the request's and the runtime's (the others None:
    a trace's are its own method's, a race's its lanes', a bench's its entrants'; a method that records none, None)."""
    recorded = {method: GUESSING[method].recorded(request, runtime) for method in methods if method in GUESSING}
    return MethodSettings(**{method.name.lower(): kept for method, kept in recorded.items() if kept is not None})


def step_rows(request: DecodeRequest, runtime: Runtime) -> int:
    """The most rows a step of the request's method feeds (greedy: one)."""
    guessing = GUESSING.get(request.method)
    return guessing.rows(request, runtime) if guessing is not None else 1


def step_shape(request: DecodeRequest, runtime: Runtime, prompt_length: int) -> Shape:
    """The fixed shape of the request's steps (greedy: one row, nothing past it), its cache sized for the prompt
    and every new token; its rows the cheapest size on the runtime's step costs that holds step_rows
    (StepCosts.cheapest_rows; without costs, step_rows)."""
    guessing = GUESSING.get(request.method)
    rows = step_rows(request, runtime)
    if runtime.costs is not None:
        rows = runtime.costs.cheapest_rows(rows)
    hidden = guessing is not None and guessing.keep_hidden
    return shape_for(rows, reach(request, runtime), prompt_length + request.max_new_tokens, hidden)


def guessing_decoder(
    model,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime,
    eos_ids,
    passes: Passes | None = None,
    *,
    recorded: bool = True,
) -> GuessingDecoder:
    """The decoder of a guessing method (the request's), its planner fresh from the runtime, its passes `passes`
    (the eager step's when None), yielding records when `recorded`, else tallies; lookahead's steps on the device
    where the runtime allows it and working_state.takes the decoding."""
    guessing = GUESSING[request.method]
    make_proposer = guessing.proposer(model, prompt_ids, request, runtime)
    planner = runtime.planner(request.method)
    on_device = runtime.device_state and takes(request, passes, planner, recorded)
    return (OnDeviceDecoder if on_device else GuessingDecoder)(
        model,
        prompt_ids,
        request,
        make_proposer,
        eos_ids,
        planner=planner,
        keep_hidden=guessing.keep_hidden,
        passes=passes,
        recorded=recorded,
    )
