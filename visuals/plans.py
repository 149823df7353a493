"""Lookahead's settings and plans in words: the auto choice and the figures behind it, and what each step fed and why.

Pure functions of the records' LookaheadSettings and PlanRecord: every figure they name was measured
(the step-cost curve, with its hardware and date) or counted in the run at hand.
"""

from __future__ import annotations

from lookahead_core.records import LookaheadSettings, PlannerKind, PlanReason, PlanRecord, Regime

REGIME_WORDS = {
    Regime.FLAT: "wide steps are almost free, so every step feeds the paper's whole window and all its guesses",
    Regime.MODERATE: "each token fed must earn its cost, so a middle window is planned step by step",
    Regime.STEEP: "each token fed must earn its cost, so a small window is planned step by step",
}
PLANNER_WORDS = {
    PlannerKind.FULL: "full plan: every step feeds the whole window and up to G guesses",
    PlannerKind.COST_AWARE: (
        "cost-aware plan: each step feeds the window and the guesses only when the tokens they were measured "
        "to add in this run outweigh the wider step's measured cost"
    ),
}


def triple(settings: LookaheadSettings) -> str:
    return f"W={settings.window} N={settings.ngram} G={settings.guesses}"


AUTO_ORIGIN = "auto settings measured for the hardware it ran on, as the form's “auto” box asks"
SLIDERS_ORIGIN = "the W, N and G of the form's sliders, its “auto” box unticked"


def origin_words(settings: LookaheadSettings) -> str:
    """Where lookahead's W, N, G came from, in words a student reads: the auto choice or the form's sliders. A Run
    and a race take the same form, so each card says which it used (a race once ran auto's W=8 beside a Run's
    W=4, said only in small print)."""
    return AUTO_ORIGIN if settings.regime is not None else SLIDERS_ORIGIN


def settings_words(settings: LookaheadSettings) -> str:
    """The settings, the planner, and (for an auto choice) the measured figure that chose them."""
    words = f"{triple(settings)}, {PLANNER_WORDS[settings.planner]}"
    if settings.regime is None or settings.step_costs is None:
        return words
    curve = settings.step_costs
    return (
        f"{words}. Auto: on {curve.hardware} ({curve.dtype}, measured {curve.measured_at}) the line fitted through the "
        f"step costs puts a {settings.probe_tokens}-token step at {settings.probe_ratio:.2f}× a 1-token step: "
        f"{REGIME_WORDS[settings.regime]}"
    )


def fed_words(plan: PlanRecord) -> str:
    """What the plan fed beyond c, e.g. "the window and 2 of 4 guesses, 3 tokens each"."""
    window = "the window" if plan.window_fed else "no window"
    if not plan.guesses_offered:
        return f"{window}, no guess offered"
    if not plan.guesses_verified:
        return f"{window}, none of the {plan.guesses_offered} guess{'es' * (plan.guesses_offered != 1)}"
    of = f"{plan.guesses_verified} of {plan.guesses_offered} guess{'es' * (plan.guesses_offered != 1)}"
    return f"{window} and {of}, {plan.guess_length} token{'s' if plan.guess_length != 1 else ''} each"


def tried_words(plan: PlanRecord) -> str:
    """What the plan tried beyond c, in plain words, e.g. "1 of the 3 guesses the pool offered, without the window"."""
    offered, verified = plan.guesses_offered, plan.guesses_verified
    if not offered:
        guesses = "no guess (the pool offered none)"
    elif not verified:
        guesses = "none of the " + ("guess" if offered == 1 else f"{offered} guesses") + " the pool offered"
    elif verified == offered:
        guesses = "the one guess the pool offered" if offered == 1 else f"all {offered} guesses the pool offered"
    else:
        guesses = f"{verified} of the {offered} guesses the pool offered"
    return f"the window and {guesses}" if plan.window_fed else f"{guesses}, without the window"


def plan_words(plan: PlanRecord) -> str:
    """Why this step fed what it fed: in plain words first, then the planner's measured figures in brackets."""
    if plan.reason == PlanReason.PAPER:
        return "the paper's plan: the whole window and every guess the pool offered"
    if plan.reason == PlanReason.ALL_PROPOSED:
        return "every candidate the method proposed"
    if plan.reason == PlanReason.PROBE_WINDOW:
        return (
            f"this step fed the window again to see whether it pays now, after it had sat out {plan.idle_steps} "
            f"step{'s' * (plan.idle_steps != 1)} ({fed_words(plan)})"
        )
    return (
        f"this step tried {tried_words(plan)}: of the plans measured so far in this run, that one was expected to "
        f"write the most tokens for its time ({fed_words(plan)}: {plan.expected_tokens:.2f} tokens expected for "
        f"{plan.relative_cost:.2f}x the measured time of a 1-token step)"
    )
