"""Step plans: what one lookahead step feeds besides the current token (the window, which guesses).

The paper's plan feeds the whole window and up to G guesses every step. The cost-aware plan
(`--auto`) feeds a part only when it pays on this hardware: it weighs the tokens each part is
expected to add, measured so far in this run, against the measured cost of the wider step
(`costs.StepCosts`), and picks the plan with the most expected tokens per unit of step time.
Either way verification is exact: a plan changes what is tried, never what is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .costs import StepCosts
from .pool import Guess

PROBE_EVERY = 16  # a window left out this many steps in a row is fed once, to measure it again


@dataclass
class StepPlan:
    """This step's input beyond c, and the reason for it in plain words."""

    feed_window: bool
    guesses: list[Guess]
    reason: str
    expected_tokens: float | None = None
    relative_cost: float | None = None

    def as_record(self, offered: int) -> dict:
        return {
            "window": self.feed_window,
            "guesses_offered": offered,
            "guesses_verified": len(self.guesses),
            "expected_tokens": self.expected_tokens,
            "relative_cost": self.relative_cost,
            "reason": self.reason,
        }


class FullPlanner:
    """The paper's plan: the whole window and every guess the pool offers, every step."""

    def plan(self, guesses: list[Guess], window_tokens: int, guess_length: int) -> StepPlan:
        return StepPlan(True, guesses, "every step feeds the whole window and up to G guesses")

    def observe(self, record: dict) -> None:
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
    ngram: int
    guess_gain: dict = field(default_factory=dict)
    window_gain: RunningMean = field(default_factory=RunningMean)
    idle_steps: int = 0

    def gain(self, reason: str, k: int, length: int) -> RunningMean:
        """Untried guesses start as if fully accepted once: optimism is what gets each length tried."""
        return self.guess_gain.setdefault((reason, k, length), RunningMean(float(length)))

    def plan(self, guesses: list[Guess], window_tokens: int, guess_length: int) -> StepPlan:
        if self.idle_steps >= PROBE_EVERY:
            why = f"the window sat out {PROBE_EVERY} steps, so it is fed to measure it again"
            return self.best(guesses, window_tokens, guess_length, windows=(True,), why=why)
        return self.best(guesses, window_tokens, guess_length, windows=(False, True), why="")

    def best(self, guesses, window_tokens, guess_length, windows, why: str) -> StepPlan:
        """The plan with the most expected tokens per unit of step time among the allowed ones."""
        reason = guesses[0].reason if guesses else ""
        options = []
        for window in windows:
            for k in range(len(guesses) + 1):
                for length in range(1, guess_length + 1) if k else (0,):
                    expected = 1 + (self.gain(reason, k, length).value if k else 0.0)
                    expected += self.window_gain.value if window else 0.0
                    cost = self.costs.relative(1 + window * window_tokens + k * length)
                    options.append((expected / cost, -k, -length, window, k, length, expected, cost))
        _, _, _, window, k, length, expected, cost = max(options)
        chosen = [Guess(g.tokens[:length], g.source, g.reason) for g in guesses[:k]]
        parts = ("the window" if window else "no window") + (
            f" and {k} of {len(guesses)} guesses, {length} tokens each" if k else ", no guess" if guesses else ""
        )
        because = why or (
            f"{parts}: {expected:.2f} tokens expected for {cost:.2f}x the time of a 1-token step, "
            "the best ratio of the plans measured so far"
        )
        return StepPlan(window, chosen, because, expected, cost)

    def observe(self, record: dict) -> None:
        """Update the measured gains from a finished step's record."""
        plan, matched = record["plan"], record["matched"]
        if matched:
            reason, fed = record["guess_reasons"][0], len(record["guesses"][0])
            for k in range(1, len(matched) + 1):
                best = max(matched[:k])
                for length in range(1, fed + 1):
                    self.gain(reason, k, length).add(float(min(best, length)))
        if not plan["window"]:
            self.idle_steps += 1
            return
        self.idle_steps = 0
        best_guess = max(matched, default=0)
        beyond = max(max(record["trajectory_matched"], default=0) - best_guess, 0)
        harvested = max((m for m, s in zip(matched, record["guess_sources"], strict=True) if s == "window"), default=0)
        self.window_gain.add(float(beyond + (harvested if harvested == best_guess else 0)))
