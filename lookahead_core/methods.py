"""The engine's half of the method table: how each guessing method proposes, and how far its rows reach.

Keyed by the same `Method` as `records.METHODS` (what each method is and needs); `decode_steps` in
trace.py asks both, so a new method is one entry in each. Greedy has no entry here: it guesses nothing and
runs the plain loop (decoding.greedy_steps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .config import LookaheadConfig
from .decoding import GuessingDecoder
from .draft import DraftProposer
from .eagle import EagleProposer
from .fixed import Shape, shape_for
from .forward import Passes
from .lookup import PromptLookupProposer
from .medusa import MedusaProposer
from .proposers import JacobiProposer, Proposer
from .records import LookaheadSettings, LookupSettings, Method, MethodSettings, SuffixSettings
from .request import DecodeRequest
from .runtime import Runtime
from .suffix import SuffixProposer, store_settings
from .working_state import OnDeviceDecoder, takes

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


GUESSING: dict[Method, Guessing] = {
    Method.LOOKAHEAD: Guessing(
        jacobi,
        lambda request, runtime: lookahead_reach(request.lookahead),
        lambda request, runtime: lookahead_settings(request, runtime),
        lambda request, runtime: request.lookahead.tokens_per_step,
    ),
    Method.PROMPT_LOOKUP: Guessing(
        prompt_lookup,
        lambda request, runtime: request.lookup.tokens,
        lambda request, runtime: lookup_settings(request),
        lambda request, runtime: 1 + request.lookup.tokens * request.lookup.candidates,
    ),
    Method.SPECULATIVE: Guessing(
        draft_chain,
        lambda request, runtime: runtime.draft.tokens,
        lambda request, runtime: runtime.draft.settings(),
        lambda request, runtime: 1 + runtime.draft.tokens,
    ),
    Method.EAGLE: Guessing(
        eagle_chain,
        lambda request, runtime: runtime.layer.tokens,
        lambda request, runtime: runtime.layer.settings(),
        lambda request, runtime: 1 + runtime.layer.tokens,
        keep_hidden=True,
    ),
    Method.MEDUSA: Guessing(
        heads_tree,
        lambda request, runtime: runtime.heads.reach,
        lambda request, runtime: runtime.heads.settings(),
        lambda request, runtime: 1 + len(runtime.heads.tree),
        keep_hidden=True,
    ),
    Method.SUFFIX: Guessing(
        suffix_tree,
        lambda request, runtime: request.suffix.tree_size,
        lambda request, runtime: suffix_settings(request, runtime),
        lambda request, runtime: 1 + request.suffix.tree_size,
    ),
}


def reach(request: DecodeRequest, runtime: Runtime) -> int:
    """How far past the current token a step of the request's method may feed rows (0 for greedy)."""
    guessing = GUESSING.get(request.method)
    return guessing.reach(request, runtime) if guessing is not None else 0


def method_settings(request: DecodeRequest, runtime: Runtime, methods: Iterable[Method]) -> MethodSettings:
    """The settings of `methods` as records hold them, each with the request's and the runtime's (the others None:
    a trace's are its own method's, a race's its lanes', a bench's its entrants')."""
    return MethodSettings(
        **{method.name.lower(): GUESSING[method].recorded(request, runtime) for method in methods if method in GUESSING}
    )


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
