"""The race: every method on one prompt, one after the other, timed with nothing drawn (RaceRecord), and
one method's lane of it (RaceLane): its tokens and seconds after each step and the text each step added.
"""

from __future__ import annotations

from dataclasses import dataclass

from .codec import Document
from .names import SCHEMA_VERSION, Method, StepMode
from .run import Machine, MethodSettings, SamplingRecord
from .settings import StepCostCurve
from .timing import Timing


@dataclass(kw_only=True)
class RaceLane:
    """One method's race: cumulative tokens and seconds after each step, what each step fed and added.

    `pieces[i]` is the text step i added (a character split across tokens waits for the step that
    completes it), so a playback can grow the text as it really grew. `speedup` is tokens per
    second over the greedy lane's; `acceptance` the share of verified candidate tokens accepted.
    """

    method: Method
    tokens: list[int]
    seconds: list[float]
    tokens_fed: list[int]
    pieces: list[str]
    new_token_ids: list[int]
    steps: int
    tokens_per_step: float
    decode_step_seconds: float  # mean seconds of a step after the prefill
    mean_tokens_fed: float
    decode_tokens_per_step: float
    draft_seconds: float  # of all the steps' time, what the draft model's passes took (speculative)
    speedup: float
    exact: bool | None  # output equal to the greedy lane's (None when sampled: runs draw differently)
    acceptance: float | None
    # its steps drafted inside themselves on the device (EAGLE's device step): `draft_seconds` holds only the
    # steps drafted on the host (before, none did)
    drafted_inside: bool = False


@dataclass(kw_only=True)
class RaceRecord(Document):
    """Every method on one prompt, one after the other, each after an untimed warm-up; greedy first."""

    lanes: list[RaceLane]
    settings: MethodSettings  # each raced method's (schema 14; before, a field for each)
    step_costs: StepCostCurve
    machine: Machine
    max_new_tokens: int
    ran_at: str
    sampling: SamplingRecord | None = None
    timing: Timing | None = None  # None: a race from before repeated timings (each lane timed once)
    mode: StepMode = StepMode.EAGER  # how every lane ran its steps (schema 9; before, eager)
    mode_note: str = ""  # why that is not the mode asked for ("" when it is)
    schema_version: int = SCHEMA_VERSION

    def lane(self, method: Method) -> RaceLane:
        return next(lane for lane in self.lanes if lane.method == method)
