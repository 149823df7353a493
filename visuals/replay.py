"""Replaying a recorded run with no model: which step to show, and every panel for it.

A run is a `records.Run` (a guessing method's trace and greedy's, of one prompt). Nothing here imports
gradio: the page (ui/) turns a lost session into a message for the visitor.
"""

from __future__ import annotations

import logging
import math

from lookahead_core.records import METHODS, Branch, Run

from .caption import caption_html
from .heads import heads_html
from .markup import escape
from .mask import mask_html
from .methods import no_pool_html, no_window_html
from .output import output_html
from .palette import legend_html
from .pool import pool_html
from .progress import progress_html
from .suffix import suffix_html
from .verification import verification_html
from .window import window_html

LOG = logging.getLogger("lookahead_lab")
# What a method with no n-gram pool shows in the pool's panel instead, by the branch of its guesses (the others: a line)
STAND_INS = {Branch.HEADS: heads_html, Branch.SUFFIX: suffix_html}
PANELS = ("caption", "window", "pool", "verification", "output", "mask", "progress")
SESSION_EXPIRED = (
    "This session expired (the page was open a long time, or the server restarted), so the example run was "
    "loaded again. Pick a preset or press Run to record your prompt again."
)


# ----------------------------------------------------------------------------------------------
# The recorded run and the step index


def is_run(value) -> bool:
    """Whether `value` is a recorded run with at least its prefill step (a lost session holds None)."""
    return isinstance(value, Run) and bool(value.trace.steps) and bool(value.greedy.steps)


def last_step(run: Run) -> int:
    return len(run.trace.steps) - 1


def clamp_step(run: Run, index) -> int:
    """`index` as a valid step number of the run: 0 for anything that is not a finite number."""
    if isinstance(index, bool) or not isinstance(index, int | float) or not math.isfinite(index):
        return 0
    return min(max(int(round(index)), 0), last_step(run))


def linked_step(run: Run, text) -> int:
    """A step named in a link (`?step=17`: text) as a valid step number of the run; 0 for anything else."""
    try:
        return clamp_step(run, float(text))
    except (TypeError, ValueError):
        return 0


def step_by(run: Run, index, delta: int) -> int:
    return clamp_step(run, clamp_step(run, index) + delta)


def play_tick(run: Run, index) -> tuple[int, bool]:
    """The next step while playing, and whether to keep playing after it."""
    following = step_by(run, index, 1)
    return following, following < last_step(run)


def play_start(run: Run, index) -> int:
    """Where Play starts: from the current step, or from the beginning once the end was reached."""
    current = clamp_step(run, index)
    return 0 if current >= last_step(run) else current


def play_interval(steps_per_second) -> float:
    """Seconds between steps when playing at `steps_per_second` (held between 0.25 and 10)."""
    try:
        speed = float(steps_per_second)
    except (TypeError, ValueError):
        speed = 1.0
    if not math.isfinite(speed):
        speed = 1.0
    return 1.0 / min(max(speed, 0.25), 10.0)


# ----------------------------------------------------------------------------------------------
# Panels


def panels(run: Run, index: int) -> dict[str, str]:
    """The HTML of every per-step panel for step `index` of the method's trace.

    A method with no window or pool (prompt lookup, speculative) gets a line saying so in those panels; Medusa's
    heads and suffix decoding's tree take the pool's panel.
    A run read from a file passed library's checks, which cannot foresee every way a crafted record can
    contradict itself: a panel that such a record breaks says so in its place (and the log says why), and
    the other panels are drawn.
    """
    trace = run.trace
    index = clamp_step(run, index)
    record, vocab, settings, method = trace.steps[index], trace.vocab, trace.meta.settings.lookahead, trace.meta.method
    lookahead = METHODS[method].window
    drawers = {
        "caption": lambda: caption_html(trace, index),
        "window": lambda: (
            legend_html("window") + window_html(record, vocab, settings.ngram) if lookahead else no_window_html(method)
        ),
        "pool": lambda: (
            legend_html("pool") + pool_html(record, vocab, settings.guesses)
            if lookahead
            else STAND_INS[METHODS[method].branch](record, vocab)
            if METHODS[method].branch in STAND_INS
            else no_pool_html(method)
        ),
        "verification": lambda: verification_html(record, vocab),
        "output": lambda: output_html(trace, index),
        "mask": lambda: mask_html(record, vocab),
        "progress": lambda: progress_html(run, index),
    }
    return {name: drawn(name, draw, index) for name, draw in drawers.items()}


def drawn(name: str, draw, index: int) -> str:
    """`draw()`, or a line saying that this step's record cannot be drawn in this panel."""
    try:
        return draw()
    except (AttributeError, IndexError, KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        LOG.warning("step %d's %s panel not drawn: %s: %s", index, name, type(error).__name__, str(error)[:200])
        return f'<p class="ll-empty">{escape(UNDRAWABLE)}</p>'


UNDRAWABLE = "This step's record contradicts itself (a crafted or damaged run file), so this panel cannot draw it."


def panel_values(run: Run, index: int) -> list[str]:
    """The panels in PANELS order, the order app.py lists its outputs in."""
    shown = panels(run, index)
    return [shown[name] for name in PANELS]
