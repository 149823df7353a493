"""Medusa's heads panel (in the n-gram pool's place): what each head guessed this step and what came of it.

A pure function of the step's record: the heads' top choices with their probabilities (HeadsRecord),
the tree they filled, and the verification of its paths. A choice on the accepted path is marked ✓ and
named "accepted"; one the tree used but no accepted path reached is "in the tree"; one the tree left out
is "not fed". Marks and words, not colour alone, tell them apart.
"""

from __future__ import annotations

from lookahead_core.records import Branch, HeadsRecord, StepKind, StepRecord, Verdict

from .markup import escape, scroll_region
from .tokens import chip, named


def accepted_path(record: StepRecord) -> tuple[int, ...]:
    """The choice ranks (head 1's first) of the tree path whose tokens were accepted, as far as they were."""
    won = [c for c in record.verification.candidates if c.verdict == Verdict.WON]
    if not won:
        return ()
    rows = won[0].rows[: won[0].matched]
    first = next(i for i, row in enumerate(record.rows) if row.branch == Branch.HEADS)  # the tree's first node
    return tuple(record.report(HeadsRecord).tree[rows[-1] - first]) if rows else ()


def choice_cell(
    record: StepRecord, path: tuple[int, ...], vocab: dict, head: int, rank: int, token: int, chance: float
) -> str:
    """One choice: its token chip, its probability, and whether it was accepted (on `path`, the accepted
    path), fed, or left out."""
    used = any(len(p) >= head and p[head - 1] == rank for p in record.report(HeadsRecord).tree)
    if len(path) >= head and path[head - 1] == rank:
        state, mark, kind = "accepted", "✓ accepted", "accepted"
    elif used:
        state, mark, kind = "in the tree", "in the tree", None
    else:
        state, mark, kind = "not fed", "not fed", "unchecked"
    tooltip = f"head {head}, choice {rank + 1}: {chance:.0%} · {state}"
    return (
        f'<td class="ll-headchoice">{chip(vocab, token, kind, tooltip)}'
        f'<span class="ll-odds">{chance:.0%}</span> <span class="ll-dim">{escape(mark)}</span></td>'
    )


def heads_html(record: StepRecord, vocab: dict[str, str]) -> str:
    """The heads panel for one Medusa step: one row per head, its choices best first."""
    heads = record.report(HeadsRecord)
    if record.kind == StepKind.PREFILL or heads is None:
        return (
            '<p class="ll-empty">The heads read the hidden state of the row behind the current token: the first '
            "pass gives it, so their first guesses are verified from step 1.</p>"
        )
    path = accepted_path(record)
    widest = max(len(h.tokens) for h in heads.heads)
    ranks = "".join(f'<th scope="col">choice {r + 1}</th>' for r in range(widest))
    rows = []
    for guesses in heads.heads:
        cells = "".join(
            choice_cell(record, path, vocab, guesses.head, rank, token, chance)
            for rank, (token, chance) in enumerate(zip(guesses.tokens, guesses.probabilities, strict=True))
        )
        place = "right after c" if guesses.head == 1 else f"{guesses.head} places after c"
        rows.append(f'<tr><th scope="row">head {guesses.head} <span class="ll-dim">({place})</span></th>{cells}</tr>')
    accepted = len(path)
    said = (
        f"{accepted} of the heads' guesses matched along one path of the tree"
        if accepted
        else "no path of the tree matched the model's own next token"
    )
    current = named(vocab, record.committed[0]) if record.committed else ""
    return (
        f'<p class="ll-note">The heads read the hidden state behind the current token and guessed the tokens after '
        f"it; their choices filled a sparse tree of {len(heads.tree)} nodes, verified in this one pass "
        f"({heads.seconds * 1000:.1f} ms of heads). This step: {escape(said)}"
        f"{escape(f'; the guaranteed token was {current}') if current else ''}.</p>"
        + scroll_region(  # wider than a phone: it scrolls in its panel
            f'<table class="ll-heads"><thead><tr><th scope="col">head</th>{ranks}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>",
            "what each head guessed",
        )
    )
