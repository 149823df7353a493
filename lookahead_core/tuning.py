"""Auto settings: (W, N, G) and a step planner chosen from the measured cost of wide steps.

Lookahead trades wider forward passes for fewer of them. Where a 64-token step costs about what
a 1-token step does (a GPU with a small model), the paper's plan pays: a wide window and many
guesses every step. Where it costs several times more (a CPU), a small window and the
cost-aware planner, which feeds the window and each guess only when the tokens they add are
measured to outgrow their cost, do better. The choice and the figures behind it are returned
in plain words, for the CLI, the bench report and the app.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import LookaheadConfig
from .costs import StepCosts, step_costs
from .models import LoadedModel
from .planning import CostAwarePlanner, FullPlanner

PROBE_TOKENS = 64  # the step width whose relative cost sorts hardware into the regimes below
FLAT = 1.5  # a 64-token step at most this many 1-token steps: wide steps are almost free
MODERATE = 2.5  # up to this: a middle window, planned step by step; beyond it, a small one

PAPER = LookaheadConfig(window=15, ngram=5, guesses=15)
MIDDLE = LookaheadConfig(window=8, ngram=6, guesses=8)
SMALL = LookaheadConfig(window=4, ngram=8, guesses=4)


@dataclass
class AutoSettings:
    """The chosen maxima (W, N, G), the planner that uses them, and why."""

    config: LookaheadConfig
    planner: str  # "full": the paper's plan every step; "cost-aware": per-step plans (planning.py)
    why: str
    costs: StepCosts

    def make_planner(self):
        """A fresh planner for one decoding run (the cost-aware one learns within a run)."""
        return FullPlanner() if self.planner == "full" else CostAwarePlanner(self.costs, self.config.ngram)

    def as_dict(self) -> dict:
        return {
            "window": self.config.window,
            "ngram": self.config.ngram,
            "guesses": self.config.guesses,
            "planner": self.planner,
            "why": self.why,
            "step_costs": self.costs.as_dict(),
        }


def choose_settings(costs: StepCosts) -> AutoSettings:
    """Pick (W, N, G) and the planner from the relative cost of a PROBE_TOKENS-token step.

    The ratio comes from a line fitted through the whole measured curve, so one noisy timing
    cannot flip the choice.
    """
    ratio = costs.fitted_relative(PROBE_TOKENS)
    measured = f"on {costs.hardware} ({costs.dtype}) a {PROBE_TOKENS}-token step costs {ratio:.2f}x a 1-token step"
    if ratio <= FLAT:
        why = (
            f"{measured}: wide steps are almost free, so every step feeds the paper's window "
            f"W={PAPER.window}, N={PAPER.ngram} and G={PAPER.guesses} guesses"
        )
        return AutoSettings(PAPER, "full", why, costs)
    config = MIDDLE if ratio <= MODERATE else SMALL
    why = (
        f"{measured}: each token fed must earn its cost, so the window is at most W={config.window} "
        f"(N={config.ngram}, G={config.guesses}) and each step feeds the window and the guesses only "
        "when the tokens they were measured to add in this run outweigh the wider step"
    )
    return AutoSettings(config, "cost-aware", why, costs)


def auto_settings(lm: LoadedModel, refresh: bool = False) -> AutoSettings:
    """Auto settings for this model on its device and dtype (the cost curve is measured once, cached)."""
    return choose_settings(step_costs(lm, refresh))
