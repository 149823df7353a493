"""A method's working state on the device, and a greedy step that reads and writes nothing else: plain decoding's,
lookahead's, prompt lookup's, Medusa's and EAGLE's timed steps in a fixed-shape mode, with one small read-back a step.

Each method's own state is a module beside its proposer (methods/lookahead_on_device.py, lookup_on_device.py,
medusa_on_device.py, eagle_on_device.py), its `Resident` registered with its spec (spec.register fills RESIDENT).

Plain decoding: the current token; the pass feeds it, the next is its argmax (`PlainPassesOnDevice`, the fixed
step's passes of a timed lane's greedy decoding).

Every method's device step: the host reads back the accepted count, the guesses offered and the block, commits (EOS,
the budget) and counts the step; the steps, tokens and counts equal the host step's, which
tests/test_working_state.py checks against the recorded step's records. Greedy only: sampled verification stays on
the host (verify_sampled).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from .device.fixed import FixedPasses, FixedStep, one_line, padded_tree
from .device.forward import Pass
from .method_spec import Resident
from .records import Method, StepKind, StepTally
from .request import DecodeRequest
from .step.decoding import GuessingDecoder
from .step.verify import commit
from .tree.layout import chain_layout, tree_layout


def at(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """`values` (1-D) at `index` (any shape; where it is -1, the first value: the caller's `where` discards it)."""
    return values.index_select(0, index.clamp(min=0).reshape(-1)).view_as(index)


@dataclass(frozen=True)
class FixedTree:
    """A device step's token tree: each row's parent (row 0, c, has none: -1), and each candidate's rows in
    verification order, padded with row 0 to the longest, with the mask of its real rows."""

    parents: tuple[int, ...]
    rows: torch.Tensor  # (candidates, longest) long
    real: torch.Tensor  # (candidates, longest) bool

    @property
    def size(self) -> int:
        return len(self.parents)

    def fit(self, step: FixedStep) -> None:
        """Check that the step's shape holds this tree, then give the step its depths and mask."""
        shape = step.shape
        if self.size > shape.rows or shape.kept < self.rows.shape[1] + 1:
            raise ValueError(f"a tree of {self.size} rows reaching {self.rows.shape[1]} does not fit {shape}")
        depths, tree = padded_tree(tree_layout(self.parents), shape.rows, step.tree.dtype, step.tree.device)
        step.depths.copy_(depths)
        step.tree.copy_(tree)


def fixed_tree(parents: list[int], candidates: list[list[int]], device: torch.device) -> FixedTree:
    longest = max(map(len, candidates))
    rows = [c + [0] * (longest - len(c)) for c in candidates]
    real = [[True] * len(c) + [False] * (longest - len(c)) for c in candidates]
    return FixedTree(tuple(parents), torch.tensor(rows, device=device), torch.tensor(real, device=device))


def verified(rows: torch.Tensor, real: torch.Tensor, fed: torch.Tensor, argmax: torch.Tensor):
    """Greedy verification on the device, as verify.verify: each candidate's matched length (its tokens, at `rows`
    (candidates x longest) where `real`, against the argmax of the rows before them, while they agree), the longest
    (the first on ties), and (accepted, the winner's rows, the block: the argmax of c's row and of each of the
    winner's rows, the first 1 + accepted being the step's)."""
    tokens = fed.index_select(0, rows.reshape(-1)).view_as(rows)
    before = torch.cat([rows.new_zeros(rows.shape[0], 1), rows[:, :-1]], dim=1)
    predicted = argmax.index_select(0, before.reshape(-1)).view_as(rows)
    matched = ((tokens == predicted) & real).long().cumprod(dim=1).sum(dim=1)
    kept = rows.index_select(0, matched.argmax().view(1))[0]
    return matched.max(), kept, torch.cat([argmax[:1], argmax.index_select(0, kept)])


def kept_down(step: FixedStep, accepted: torch.Tensor, kept: torch.Tensor) -> None:
    """Copy c's row and the winner's rows down (past the accepted ones harmlessly) and advance L by 1 + accepted."""
    rows = torch.cat([kept.new_zeros(1), kept, kept.new_zeros(step.shape.kept - 1 - kept.shape[0])])
    step.sources.copy_(rows)
    step.kept_rows_down()
    step.length += 1 + accepted


class OnDevice:
    """A method's working state kept with one fixed-shape step's buffers, and its step as two device functions around
    the step's pass (FixedStep.run, recorded per span): `propose` writes the next pass's ids (and any tree it lays
    out) from the state, and `settle` reads the pass's argmax (and hidden states), verifies, keeps, learns, proposes
    the next pass and returns (accepted, guesses offered, the block) as int32, the step's one read-back. Neither
    reads the host. `settle` is recorded once by the shape's capture, after a first run on the first decoding's
    state, which is loaded again after it. Made once per FixedStep and settings (`kept_with`), loaded by each
    decoding."""

    drafts_inside = False  # whether `settle` drafts (a draft's passes inside the device step: StepTally)

    def __init__(self, step: FixedStep, tree: FixedTree | None) -> None:
        self.step, self.tree, self.run = step, tree, None

    @torch.inference_mode()
    def load(self, *state) -> None:
        """A decoding's state in (the method's `fill`), the tree and the cache's L given to the step, and its first
        pass proposed."""
        if self.run is None:
            self.fill(*state)
            self.run = self.step.capture(self.settle)
            self.run()
        self.fill(*state)
        self.propose()

    def fill(self, *state) -> None:
        raise NotImplementedError

    def propose(self) -> None:
        raise NotImplementedError

    def settle(self) -> torch.Tensor:
        raise NotImplementedError

    def counted(self, offered: int) -> tuple[int, int]:
        """The rows the host step feeds and the candidate tokens it verifies, when `offered` guesses are offered."""
        raise NotImplementedError


class PlainOnDevice(OnDevice):
    """Plain decoding's state: the current token c, fed as the pass's row 0 (and its pad rows, as the host feeds
    them). `settle` takes row 0's argmax as the next c and advances L by one: row 0 was written at L, so nothing
    moves down."""

    def __init__(self, step: FixedStep) -> None:
        super().__init__(step, None)

    def fill(self, current: int, length: int) -> None:
        step = self.step
        depths, tree = padded_tree(chain_layout(1), step.shape.rows, step.tree.dtype, step.tree.device)
        step.depths.copy_(depths)
        step.tree.copy_(tree)
        step.ids.fill_(current)
        step.length.fill_(length)

    def propose(self) -> None:
        """Nothing: `settle` wrote the next c where the pass reads it."""

    def settle(self) -> torch.Tensor:
        step = self.step
        following = step.argmax[:1].long()
        step.ids.copy_(following.expand_as(step.ids))
        step.length += 1
        return following.to(torch.int32)


class PlainPassesOnDevice(FixedPasses):
    """The fixed-shape passes of a timed lane's greedy plain decoding, c and L kept on the device (PlainOnDevice):
    after the prefill each pass is the pass over its span and one run of `settle`, whose read-back is the next
    token; the host only commits. Where the device step fails to capture, the passes are FixedPasses'
    (`moved_or_refused`)."""

    def __init__(self, passes: FixedPasses) -> None:
        vars(self).update(vars(passes))  # the same passes, before their prefill: every field theirs
        self.state: OnDevice | None = None
        self.moved = False

    @torch.inference_mode()
    def one(self, token: int) -> Pass:
        if not self.moved:
            self.moved, self.state = True, moved_or_refused(self, Method.GREEDY, lambda: self.loaded(token))
        if self.state is None:
            return super().one(token)
        start = time.perf_counter()
        self.step.run(self.span())
        following = self.state.run().item()  # the step's one read-back
        self.length += 1
        return Pass([following], None, time.perf_counter() - start)

    def loaded(self, token: int) -> OnDevice:
        state = kept_with(self.step, Method.GREEDY, lambda: PlainOnDevice(self.step))
        state.load(token, self.length)
        return state


def plain_passes(passes, request: DecodeRequest, recorded: bool):
    """Plain decoding's passes: a timed lane's (not `recorded`) greedy decoding in the fixed-shape step keeps c and
    L on the device (PlainPassesOnDevice); any other keeps `passes`."""
    if recorded or not request.sampling.is_greedy or type(passes) is not FixedPasses:
        return passes
    return PlainPassesOnDevice(passes)


def kept_with(step: FixedStep, key, make: Callable[[], OnDevice]) -> OnDevice:
    """The step's working state under `key` (a method's settings), made on its first use and kept with the step."""
    if key not in step.working:
        step.working[key] = make()
    return step.working[key]


# Each method whose timed steps may run on the device, by method: filled by spec.register from each spec's
# `resident` (the built-in ones' are their methods/*_on_device.py's RESIDENT)
RESIDENT: dict[Method, Resident] = {}


REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {method: why its device step failed}


REFUSED_LOCK = threading.Lock()


def refused(model) -> dict[Method, str]:
    """The methods whose device step failed on `model` (their steps keep their state on the host), and why."""
    with REFUSED_LOCK:
        return dict(REFUSED.get(model, {}))


class OnDeviceDecoder(GuessingDecoder):
    """A greedy guessing decoder in the fixed-shape step for a timed lane (tallies only), whose steps run on the
    device once its method's state is `ready` (lookahead: when the window is full, its `settle` recorded at the
    prefill; the steps before run on the host, as GuessingDecoder runs them): each is the pass over its span, one run
    of the state's `settle` and one read-back. A step's tally counts what the host step's would (the rows it would
    feed, the tokens verified, those accepted); its pass seconds are the whole device step's."""

    def steps(self) -> Iterator[StepTally]:
        resident = RESIDENT[self.method]
        try:
            yield self.prefill()
            if self.stop is None and resident.recorded is not None:
                self.tried(resident.recorded)
            while self.stop is None and not resident.ready(self):
                yield self.step()
            state = self.tried(resident.state) if self.stop is None else None
            while self.stop is None:
                yield self.device_step(state) if state is not None else self.step()
        finally:
            self.passes.release()

    def tried(self, moving: Callable[[GuessingDecoder], OnDevice]) -> OnDevice | None:
        return moved_or_refused(self.passes, self.method, lambda: moving(self))

    @torch.inference_mode()
    def device_step(self, state: OnDevice) -> StepTally:
        """The pass over the filled length's span, then `settle`; L follows on the host, for the next span."""
        start = time.perf_counter()
        self.step_index += 1
        passes = self.passes
        passes.step.run(passes.span())
        accepted, offered, *block = state.run().tolist()  # the step's one read-back
        seconds = time.perf_counter() - start
        passes.length += 1 + accepted
        committed, self.stop = commit(block[: 1 + accepted], self.max_new_tokens - self.produced, self.eos_ids)
        self.sequence = self.sequence + committed
        fed, verified_tokens = state.counted(offered)
        return StepTally(
            step=self.step_index,
            kind=StepKind.DECODE,
            tokens_fed=fed,
            committed=committed,
            stop=self.stop,
            forward_seconds=seconds,
            step_seconds=time.perf_counter() - start,
            verified_tokens=verified_tokens,
            accepted_tokens=accepted,
            drafted_inside=state.drafts_inside,
        )


def moved_or_refused(passes: FixedPasses, method: Method, moving: Callable[[], OnDevice]) -> OnDevice | None:
    """`moving()`'s state (recorded, or moved to the device); None, the steps going on on the host, when the
    method's device step failed on this model, now (kept in REFUSED, with the cache's L as it was) or before."""
    if method in REFUSED.get(passes.model, {}):
        return None
    length = passes.length
    try:
        return moving()
    except Exception as error:  # noqa: BLE001 - a capture that fails sends the steps back to the host, and says why
        with REFUSED_LOCK:
            REFUSED.setdefault(passes.model, {})[method] = one_line(error)
        passes.step.working.clear()
        with torch.inference_mode():
            passes.step.length.fill_(length)
        return None


def takes(request: DecodeRequest, passes, planner, recorded: bool) -> bool:
    """Whether a decoding can run its steps on the device: a timed lane's (not `recorded`), greedy, in the
    fixed-shape step, of a method RESIDENT lists, which `takes` its request and planner."""
    resident = RESIDENT.get(request.method)
    return (
        resident is not None
        and not recorded
        and request.sampling.is_greedy
        and isinstance(passes, FixedPasses)
        and resident.takes(request, planner)
    )
