"""Where a Run's or a race's figures came from when the machine answered a question it had measured before.

A pure function of what the lab says of the answer (its age, how many measurements and rounds it pools): a class
pressing the same preset gets one measurement, and each page says so rather than pass it off as its own.
"""

from __future__ import annotations

from .markup import escape


def shared_note(age: float | None, measurements: int, rounds: int, again: str | None = None) -> str:
    """A line for the card: measured `age` seconds ago for whoever asked first (None: measured for this request),
    its `rounds` over `measurements` measurements pooled, and what the button named `again` does (None: none)."""
    pooled = f"{rounds} interleaved round{'s' if rounds != 1 else ''}"
    if measurements > 1:
        pooled += f" pooled from {measurements} measurements"
    if age is None:
        if measurements == 1:
            return ""
        words = f"Measured again on this machine: these figures are {pooled} of this question."
    else:
        words = (
            f"Measured {ago(age)} on this machine for the first visitor who asked this question (the same prompt, "
            f"model and settings): {pooled}. "
        )
        words += (
            f"{again} measures it once more, and its rounds join these."
            if again
            else "Change the prompt or a setting to measure another question."
        )
    return f'<div class="ll-budget ll-shared" role="status">{escape(words)}</div>'


def ago(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    return f"{seconds / 60:.0f} min ago"
