"""Step planners: what one lookahead step feeds besides the current token (the window, which guesses).

The paper's plan feeds the whole window and up to G guesses every step. The cost-aware plan
(`--auto`) feeds a part only when it pays on this hardware: it weighs the tokens each part is
expected to add, measured so far in this run, against the measured cost of the wider step
(`costs.StepCosts`), and picks the plan with the most expected tokens per unit of step time.
Either way verification is exact: a plan changes what is tried, never what is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..costs import StepCosts
from ..records import GuessReason, GuessSource, PlanReason
from .proposers import Outcome, Proposal

PROBE_EVERY = 16  # a window left out this many steps in a row is fed once, to measure it again


@dataclass(frozen=True)
class Plan:
    """This step's input beyond c: the window or not, the first `guesses` guesses cut to `length` tokens; why, out
    of how many guesses `offered`; a cost-aware plan also what it weighed: the tokens it `expected`, the step's
    `cost` in 1-token steps, the steps the window had sat out before (`idle_steps`)."""

    feed_window: bool
    guesses: int
    length: int
    reason: PlanReason
    offered: int
    expected: float | None = None
    cost: float | None = None
    idle_steps: int = 0


class StepPlanner(Protocol):
    def plan(self, proposal: Proposal) -> Plan: ...

    def observe(self, outcome: Outcome) -> None: ...


def guess_length(proposal: Proposal) -> int:
    return max((len(g.tokens) for g in proposal.guesses), default=0)


class FullPlanner:
    """The paper's plan: the whole window and every guess the pool offers, every step (every
    candidate, for a method with no window)."""

    def plan(self, proposal: Proposal) -> Plan:
        offered, length, window = len(proposal.guesses), guess_length(proposal), proposal.window is not None
        reason = PlanReason.PAPER if window else PlanReason.ALL_PROPOSED
        return Plan(window, offered, length, reason, offered)

    def observe(self, outcome: Outcome) -> None:
        """The full plan learns nothing."""


@dataclass
class RunningMean:
    """A mean that starts from a prior worth one observation (one token unless told), so an untried
    part gets tried where such a gain would pay for it."""

    total: float = 1.0
    count: float = 1.0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    @property
    def value(self) -> float:
        return self.total / self.count


@dataclass
class CostAwarePlanner:
    """Feeds the window and the top-k guesses, cut to L tokens, only when they outgrow their cost.

    Measured in this run: `guess_gain[(reason, k, L)]`, the best matched length among the first k
    guesses cut to L tokens, when the first guess was chosen for `reason`; `window_gain`, the
    tokens the window adds per step it is fed (its trajectories beyond the guesses, and the
    matches of n-grams it harvested). The window is fed at least once every PROBE_EVERY steps,
    so its figure stays measured.
    """

    costs: StepCosts
    guess_gain: dict = field(default_factory=dict)
    window_gain: RunningMean = field(default_factory=RunningMean)
    idle_steps: int = 0

    def gain(self, reason: GuessReason, k: int, length: int) -> RunningMean:
        """Untried guesses start as if fully accepted once: optimism is what gets each length tried."""
        return self.guess_gain.setdefault((reason, k, length), RunningMean(float(length)))

    def plan(self, proposal: Proposal) -> Plan:
        if self.idle_steps >= PROBE_EVERY:
            return self.best(proposal, windows=(True,), reason=PlanReason.PROBE_WINDOW)
        return self.best(proposal, windows=(False, True), reason=PlanReason.BEST_RATIO)

    def best(self, proposal: Proposal, windows: tuple[bool, ...], reason: PlanReason) -> Plan:
        """The plan with the most expected tokens per unit of step time among the allowed ones."""
        guesses, longest = proposal.guesses, guess_length(proposal)
        windows = windows if proposal.window is not None else (False,)  # no window proposed: none to feed
        window_tokens = len(proposal.window.tokens) if proposal.window is not None else 0
        first = guesses[0].candidates[0].reason if guesses else GuessReason.ONE_TOKEN_KEY
        options = []
        for window in windows:
            for k in range(len(guesses) + 1):
                for length in range(1, longest + 1) if k else (0,):
                    expected = 1 + (self.gain(first, k, length).value if k else 0.0)
                    expected += self.window_gain.value if window else 0.0
                    cost = self.costs.relative(1 + window * window_tokens + k * length)
                    options.append((expected / cost, -k, -length, window, k, length, expected, cost))
        _, _, _, window, k, length, expected, cost = max(options)
        return Plan(window, k, length, reason, len(guesses), expected, cost, self.idle_steps)

    def observe(self, outcome: Outcome) -> None:
        """Update the measured gains from what verification decided."""
        judged = outcome.judged()
        guesses = [(c, m) for c, m in judged if c.source != GuessSource.TRAJECTORY]
        matched = [m for _, m in guesses]
        if guesses:
            first = guesses[0][0]
            for k in range(1, len(matched) + 1):
                best = max(matched[:k])
                for length in range(1, len(first.tokens) + 1):
                    self.gain(first.reason, k, length).add(float(min(best, length)))
        if not outcome.window_fed:
            self.idle_steps += 1
            return
        self.idle_steps = 0
        best_guess = max(matched, default=0)
        trajectories = [m for c, m in judged if c.source == GuessSource.TRAJECTORY]
        beyond = max(max(trajectories, default=0) - best_guess, 0)
        harvested = max((m for c, m in guesses if c.source == GuessSource.WINDOW), default=0)
        self.window_gain.add(float(beyond + (harvested if harvested == best_guess else 0)))
