"""Where a greedy output left plain greedy decoding's, in words a student follows: from the Divergence record.

Plain text (escaped where it enters HTML): the Run's progress panel and the bench's table both say it.
"""

from __future__ import annotations

from lookahead_core.records import Divergence

from .tokens import visible

NEAR_TIE_STEPS = 4  # a gap of at most this many rounding steps of the dtype is a near-tie that rounding can flip


def divergence_words(d: Divergence, method: str, plain: str = "greedy") -> str:
    """`method`'s output left `plain`'s at the record's token: the two candidates, their logits, and whether the
    gap is one that rounding in the record's dtype explains."""
    gap = abs(d.plain_logit - d.other_logit)
    steps = gap / d.rounding_step if d.rounding_step else float("inf")
    why = (
        f"a near-tie ({steps:.1f} rounding steps of {d.dtype}), that a pass of another shape rounds the other way"
        if steps <= NEAR_TIE_STEPS
        else f"{steps:.0f} rounding steps of {d.dtype} apart: more than rounding explains"
    )
    return (
        f"output differs from {plain} from new token {d.index + 1}: {plain} chose “{visible(d.plain_text)}”, "
        f"{method} “{visible(d.other_text)}”; their logits were {d.plain_logit:.3f} and {d.other_logit:.3f}, {why}"
    )
