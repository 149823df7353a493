"""Auto settings: (W, N, G) and a step planner chosen from the measured cost of wide steps.

Lookahead trades wider forward passes for fewer of them. Where a 64-token step costs about what
a 1-token step does (a GPU with a small model), the paper's plan pays: a wide window and many
guesses every step. Where it costs several times more (a CPU), a small window and the
cost-aware planner, which feeds the window and each guess only when the tokens they add are
measured to outgrow their cost, do better. The choice comes with the measured figures behind
it; the words that explain it belong to the visuals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from .config import LookaheadConfig, SettingsError
from .costs import SettledMode, StepCosts, costs_path
from .models import LoadedModel
from .records import LookaheadSettings, PlannerKind, Regime, StepMode
from .step.planning import CostAwarePlanner, FullPlanner, StepPlanner

PROBE_TOKENS = 64  # the step width whose relative cost sorts hardware into the regimes below
FLAT = 1.5  # a 64-token step at most this many 1-token steps: wide steps are almost free
MODERATE = 2.5  # up to this: a middle window, planned step by step; beyond it, a small one

CHOICES = {
    Regime.FLAT: (LookaheadConfig(window=15, ngram=5, guesses=15), PlannerKind.FULL),  # the paper's
    Regime.MODERATE: (LookaheadConfig(window=8, ngram=6, guesses=8), PlannerKind.COST_AWARE),
    Regime.STEEP: (LookaheadConfig(window=4, ngram=8, guesses=4), PlannerKind.COST_AWARE),
}


@dataclass
class AutoSettings:
    """The chosen maxima (W, N, G), the planner that uses them, and the measured figures behind them."""

    config: LookaheadConfig
    planner: PlannerKind
    regime: Regime
    ratio: float  # a PROBE_TOKENS-token step's cost in 1-token steps, from a line fitted through the curve
    costs: StepCosts
    adopted: str | None = None  # the tune report whose chosen cell replaced the regime's (W, N, G), if any

    def make_planner(self) -> StepPlanner:
        """A fresh planner for one decoding run (the cost-aware one learns within a run)."""
        return make_planner(self.planner, self.costs)

    def settings(self) -> LookaheadSettings:
        """These settings as the records hold them (the curve as the plain record type, so a trace read
        back from JSON equals the one recorded)."""
        c = self.config
        curve = self.costs.curve()
        return LookaheadSettings(
            window=c.window,
            ngram=c.ngram,
            guesses=c.guesses,
            planner=self.planner,
            regime=self.regime,
            probe_tokens=PROBE_TOKENS,
            probe_ratio=self.ratio,
            step_costs=curve,
        )


def make_planner(planner: PlannerKind, costs: StepCosts | None) -> StepPlanner:
    return CostAwarePlanner(costs) if planner == PlannerKind.COST_AWARE else FullPlanner()


def choose_settings(costs: StepCosts, mode: StepMode = StepMode.EAGER) -> AutoSettings:
    """Pick (W, N, G) and the planner from the relative cost of a PROBE_TOKENS-token step, for runs in step
    `mode` (the curve's).

    The ratio comes from a line fitted through the whole measured curve, so one noisy timing
    cannot flip the choice. In a fixed-shape mode every step is padded to its shape's rows, so a planner's
    narrower step would save nothing: the paper's full plan runs there, whatever the regime.
    """
    ratio = costs.fitted_relative(PROBE_TOKENS)
    regime = Regime.FLAT if ratio <= FLAT else Regime.MODERATE if ratio <= MODERATE else Regime.STEEP
    config, planner = CHOICES[regime]
    if mode != StepMode.EAGER:
        planner = PlannerKind.FULL
    return AutoSettings(config, planner, regime, ratio, costs)


def regime_settings(settled: SettledMode) -> AutoSettings:
    """The regime's choice for a model on its device and dtype, from the cost curve of its settled step mode,
    adopted settings aside: what a tune map compares its own choice with."""
    return choose_settings(settled.costs, settled.mode)


def auto_settings(lm: LoadedModel, settled: SettledMode) -> AutoSettings:
    """Auto settings for `lm` on its device and dtype in its settled step mode: the regime's choice
    (regime_settings), or the settings a tune map chose here and was told to adopt (`adopt`)."""
    auto = regime_settings(settled)
    tuned = adopted(lm, settled.mode)
    if tuned is None:
        return auto
    config, planner, source = tuned
    return replace(auto, config=config, planner=planner, adopted=source)


def tuned_path(lm: LoadedModel, mode: StepMode) -> Path:
    """Where a tune map's chosen lookahead settings for this model, device, dtype and settled step `mode` are kept:
    beside that mode's curve."""
    path = costs_path(lm, mode)
    return path.with_name(path.stem + "-tuned.json")


def identity(lm: LoadedModel) -> dict:
    facts = lm.describe()
    return {"model": lm.name, "hardware": facts["device_name"], "dtype": facts["dtype"]}


def adopt(lm: LoadedModel, mode: StepMode, config: LookaheadConfig, planner: PlannerKind, source: str) -> Path:
    """Keep `config` and `planner` (a tune map's chosen cell, from the report at `source`) as this model's auto
    settings on this device and dtype in the settled step `mode` its map ran; returns the file written."""
    path = tuned_path(lm, mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    chosen = {"window": config.window, "ngram": config.ngram, "guesses": config.guesses, "planner": planner.value}
    path.write_text(json.dumps(identity(lm) | chosen | {"source": source}, indent=1))
    return path


def adopted(lm: LoadedModel, mode: StepMode) -> tuple[LookaheadConfig, PlannerKind, str] | None:
    """The adopted settings for this model, device, dtype and settled step mode (tuned_path); None where none were
    adopted, or the file names another model, device or dtype, or does not read as settings."""
    path = tuned_path(lm, mode)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if {k: data.get(k) for k in ("model", "hardware", "dtype")} != identity(lm):
            return None
        config = LookaheadConfig(window=data["window"], ngram=data["ngram"], guesses=data["guesses"])
        return config, PlannerKind(data["planner"]), str(data["source"])
    except (ValueError, KeyError, TypeError, SettingsError):
        return None  # a damaged file is ignored: the regime's choice stands


def replay_planner(settings: LookaheadSettings) -> StepPlanner:
    """A fresh planner of a recorded run's settings: decoding again with it repeats the run's plans."""
    costs = StepCosts.of(settings.step_costs) if settings.step_costs is not None else None
    return make_planner(settings.planner, costs)
