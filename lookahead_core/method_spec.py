"""What a method's spec holds (`MethodSpec`): its entry in the method table (records.METHODS: what the visuals read),
how the engine guesses with it (`Guessing`), its device-resident form (`Resident`) and how the tune map
sweeps it (`Swept`). Each built-in method's spec is its module's `SPEC` (methods/), beside its proposer; spec.py
registers them. Below the methods: it imports none of them, so each can name its own spec.

A request is a request.DecodeRequest, a runtime a runtime.Runtime, a decoder a decoding.GuessingDecoder; none is
imported here (each imports, or is imported by, the methods' modules, whose specs this module types).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .records import Method, MethodEntry
from .step.proposers import Proposer

MakeProposer = Callable[[list[int]], Proposer]  # the proposer, built once the prefill committed the first token
Settings = dict[str, int]  # one cell's settings in a tune map, by name (TuneCell.settings)


@dataclass(frozen=True)
class Guessing:
    """How the engine runs one guessing method: `proposer(model, prompt_ids, request, runtime)` makes its
    proposer's maker, `reach(request, runtime)` says how far past the current token its rows may sit,
    `recorded(request, runtime)` its settings as records hold them (its field of MethodSettings),
    `rows(request, runtime)` the most rows a step feeds (c included: the fixed-shape step's T), and `keep_hidden`
    whether each pass keeps its rows' last hidden states (what heads and a layer read)."""

    proposer: Callable[[object, list[int], object, object], MakeProposer]
    reach: Callable[[object, object], int]
    recorded: Callable[[object, object], object]
    rows: Callable[[object, object], int]
    keep_hidden: bool = False


@dataclass(frozen=True)
class Resident:
    """A method whose timed steps may run on the device (working_state.OnDeviceDecoder): whether a decoding can
    (`takes(request, planner)`), when its state is ready to move (`ready(decoder)`: the host steps run until then), how
    it moves (`state(decoder)`, its working_state.OnDevice), and, for a method whose state moves after some host steps,
    how its device function is recorded at the prefill (`recorded(decoder)`)."""

    takes: Callable[[object, object], bool]
    ready: Callable[[object], bool]
    state: Callable[[object], object]
    recorded: Callable[[object], object] | None = None


@dataclass(frozen=True)
class Swept:
    """How the tune map sweeps a method: `settings(grid)` its cells' settings from the lab's TuneGrid (none: left out),
    `request(base, settings)` and `runtime(runtime, settings)` what one cell decodes with."""

    settings: Callable[[object], list[Settings]]
    request: Callable[[object, Settings], object]
    runtime: Callable[[object, Settings], object]


def same_runtime(runtime, settings: Settings):
    """A sweep's runtime for a cell whose settings are all in its request."""
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
