"""Panel 3, verification: each guess (a pool n-gram, a prompt match, a draft chain), then the window's
own trajectories, token by token against the model.

Each candidate (a guess, or a Jacobi trajectory of the window) as the engine's verifier judged
it: its tokens against the model's predictions for their positions (recorded as `expected`),
how far it matched, and its verdict. Accepted tokens are green (✓), the first mismatch red (✗),
the rest grey; the winner is starred with its bonus token. Trajectories cost no extra input,
so the panel shows the few that matched most, not all W.
"""

from __future__ import annotations

from lookahead_core.records import CandidateRecord, Draw, GuessSource, SampledPosition, StepKind, StepRecord, Verdict

from .markup import escape, scroll_region
from .methods import STOP_WORDS, candidate_kind, candidate_label, candidate_why
from .sources import step_sources_html
from .tokens import chip, chips, named
from .window import trajectory_route

VERDICT_WORDS = {
    Verdict.WON: "won: the longest match (the first on ties), so its accepted tokens were committed",
    Verdict.SHORTER: "lost: it matched fewer tokens than the winner",
    Verdict.TIED_LATER: "lost: it matched as many tokens as the winner but came later",
    Verdict.NO_MATCH: "no match: its first token is not the token committed first",
}
SHOWN_TRAJECTORIES = 3


def token_status(k: int, matched: int) -> str:
    """accepted, mismatch or unchecked, for token k of a path whose first `matched` tokens matched."""
    if k < matched:
        return "accepted"
    return "mismatch" if k == matched else "unchecked"


def path_tokens_html(record: StepRecord, vocab: dict, candidate: CandidateRecord, places: list[str]) -> str:
    """The chips of one candidate; `places[k]` names token k (e.g. "guess token 2") in its tooltip."""
    sampled = bool(record.verification.positions)
    cells = []
    for k, token in enumerate(candidate.tokens):
        status = token_status(k, candidate.matched)
        expected = candidate.expected[k] if k < len(candidate.expected) else None
        words = {
            "accepted": f"accepted: the model also predicted {named(vocab, expected)} here"
            if not sampled
            else "accepted by the sampling rule",
            "mismatch": f"first mismatch: the model predicted {named(vocab, expected)}"
            if not sampled
            else f"first mismatch: decoding committed {named(vocab, expected)} here",
            "unchecked": "not checked: an earlier token of this path already differed",
        }[status]
        position = record.rows[candidate.rows[k]].position  # the position id the engine fed it at
        cells.append(chip(vocab, token, status, f"{places[k]} · position {position} · {words}"))
    return "".join(cells)


def path_row(
    record: StepRecord, vocab: dict, candidate: CandidateRecord, label: str, why: str, places: list[str]
) -> str:
    """One table row: the label (why it was verified and its verdict as a tooltip), the chips, the bonus, the count."""
    won = candidate.verdict == Verdict.WON
    extra = ""
    if won and record.verification.bonus is not None:
        corrected = candidate.source == GuessSource.DRAFT and candidate.matched < len(candidate.tokens)
        name = "correction" if corrected else "bonus"
        words = "where the draft went wrong" if corrected else "after the last accepted token"
        extra = (
            f'<span class="ll-nowrap"><span class="ll-plus">+ {name}</span>'
            f"{chip(vocab, record.verification.bonus, 'bonus', f'the model’s prediction {words}')}</span>"
        )
    odds = ""
    if candidate.draft_probabilities:
        cells = "".join(f"<span>{q:.2f}</span>" for q in candidate.draft_probabilities)
        odds = f'<div class="ll-odds" title="each token’s probability q under the draft model">q {cells}</div>'
    title = f"{why} · {VERDICT_WORDS[candidate.verdict]}"
    return (
        f'<tr class="{"ll-winner" if won else ""}"><th title="{escape(title)}">'
        f"{'★ ' if won else ''}{label}</th>"
        f'<td class="ll-guess">{path_tokens_html(record, vocab, candidate, places)}{extra}{odds}</td>'
        f'<td class="ll-matched">matched {candidate.matched} of {len(candidate.tokens)}</td></tr>'
    )


# ----------------------------------------------------------------------------------------------
# Guesses from the n-gram pool


def guesses(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source != GuessSource.TRAJECTORY]


def trajectories(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source == GuessSource.TRAJECTORY]


def guess_row(record: StepRecord, vocab: dict, guess: CandidateRecord) -> str:
    places = [f"{candidate_kind(guess)} token {k}" + draft_odds(guess, k) for k in range(len(guess.tokens))]
    return path_row(record, vocab, guess, candidate_label(guess), candidate_why(guess), places)


def draft_odds(candidate: CandidateRecord, k: int) -> str:
    """A draft token's probability under the draft model, for its tooltip ("" for other paths)."""
    if not candidate.draft_probabilities:
        return ""
    return f" · q = {candidate.draft_probabilities[k]:.2f} under the draft"


def guesses_html(record: StepRecord, vocab: dict) -> str:
    verified = guesses(record)
    if not verified:
        return '<p class="ll-empty">No guesses to verify this step.</p>'
    rows = "".join(guess_row(record, vocab, guess) for guess in verified)
    return scroll_region(f'<table class="ll-verify"><tbody>{rows}</tbody></table>', "guesses verified")


# ----------------------------------------------------------------------------------------------
# The window's own Jacobi trajectories


def shown_trajectories(record: StepRecord) -> list[CandidateRecord]:
    """Trajectories that matched at least one token: the longest few, in column order.

    Ranked by matched length, then column, the rule verification breaks ties with.
    """
    matching = sorted((c for c in trajectories(record) if c.matched), key=lambda c: (-c.matched, c.lane))
    return sorted(matching[:SHOWN_TRAJECTORIES], key=lambda c: c.lane)  # a winning trajectory ranks first


def trajectory_row(record: StepRecord, vocab: dict, trajectory: CandidateRecord) -> str:
    cells = [(record.rows[row].lane, record.rows[row].index) for row in trajectory.rows]
    places = [f"trajectory token {k}: level {level}, column {j}" for k, (level, j) in enumerate(cells)]
    column = trajectory.lane
    why = f"{trajectory_route(column)}: rows this pass computed anyway"
    return path_row(record, vocab, trajectory, f"window column {column} trajectory", why, places)


def trajectories_html(record: StepRecord, vocab: dict) -> str:
    """The trajectories that matched, under a heading; one line when none did; nothing when none was verified."""
    verified = trajectories(record)
    if not verified:
        return ""
    shown = shown_trajectories(record)
    if not shown:
        first = "token committed first" if record.verification.positions else "guaranteed next token"
        return (
            f'<p class="ll-empty">No window trajectory matched: none of the {len(verified)} began with the {first}.</p>'
        )
    matching = sum(c.matched > 0 for c in verified)
    more = f"; the {len(shown)} longest shown" if matching > len(shown) else ""
    rows = "".join(trajectory_row(record, vocab, c) for c in shown)
    table = f'<table class="ll-verify ll-trajectories"><tbody>{rows}</tbody></table>'
    return (
        f'<h3>Window trajectories <span class="ll-dim">(no extra input; {matching} of {len(verified)} matched '
        f"at least one token{more})</span></h3>{scroll_region(table, 'window trajectories')}"
    )


# ----------------------------------------------------------------------------------------------
# Sampling: each position's draws


def draw_html(vocab: dict, draw: Draw) -> str:
    """A candidate token, a bar as long as its chance of acceptance with the uniform draw marked, and the verdict.

    A fixed guess's chance is P(token); a draft token's is min(1, P/q), q its probability under the draft.
    """
    verdict = "accepted" if draw.accepted else "rejected"
    relation = "<" if draw.accepted else "≥"
    q, chance = draw.draft_probability, draw.chance
    rule = f"P {draw.probability:.2f}" if q is None else f"min(1, P/q) = {draw.probability:.2f}/{q:.2f}"
    words = f"draw {draw.uniform:.2f} {relation} {rule}: {verdict}"
    odds = f"P = {draw.probability:.3f}" if q is None else f"min(1, P/q) = {chance:.3f}"
    tip = f"accepted with probability {odds}; the uniform draw was {draw.uniform:.3f}"
    bar = (
        f'<span class="ll-pbar" title="{escape(tip)}"><span class="ll-pbar-fill ll-{verdict}" '
        f'style="width:{100 * chance:.1f}%"></span>'
        f'<span class="ll-pbar-draw" style="left:{100 * draw.uniform:.1f}%"></span></span>'
    )
    return f'<div class="ll-draw">{chip(vocab, draw.token, verdict, tip)}{bar}<span>{escape(words)}</span></div>'


def ending_html(vocab: dict, position: SampledPosition) -> str:
    """How a position ended when no candidate was accepted: a draw from what remained of P, or the bonus."""
    if position.draws:
        words = "every candidate was rejected, so the token was drawn from what remained of P"
        kind = "sampled"
    elif position.offset:
        words, kind = "no candidate reaches here: the bonus token, drawn from P after the last accepted token", "bonus"
    else:
        words, kind = "no candidate to verify: the token was drawn from P", "sampled"
    return f'<div class="ll-draw">{chip(vocab, position.token, kind, words)}<span>{escape(words)}</span></div>'


def positions_html(record: StepRecord, vocab: dict) -> str:
    """Each verified position: its candidates tried in turn, each with P and the draw, then how it ended."""
    rows = []
    for position in record.verification.positions:
        draws = "".join(draw_html(vocab, d) for d in position.draws)
        ending = "" if position.draws and position.draws[-1].accepted else ending_html(vocab, position)
        rows.append(
            f'<div class="ll-position"><b>position {record.position + 1 + position.offset}</b> '
            f'<span class="ll-dim" title="{escape(p_words(position.row))}">P from row {position.row}</span>'
            f"{draws}{ending}</div>"
        )
    return (
        '<h3>Sampling, position by position <span class="ll-dim">(P: the model\'s probabilities for the position, '
        "read from one row of this forward pass; each candidate is accepted with its probability under P; a "
        "rejection removes it from P)</span></h3>" + "".join(rows)
    )


def p_words(row: int) -> str:
    """What "P from row N" means, for its hover title."""
    return (
        f"P: the model's probabilities for this position, computed at row {row} of this step's forward pass "
        "(a row: one token fed to the pass; the row of the token just before the position)"
    )


# ----------------------------------------------------------------------------------------------
# The panel


def committed_html(record: StepRecord, vocab: dict) -> str:
    cells = "".join(
        chip(vocab, token, source.value, f"{source.value} · position {record.position + 1 + k}")
        for k, (token, source) in enumerate(zip(record.committed, record.sources, strict=True))
    )
    stop = f' <span class="ll-dim">Decoding stops: {STOP_WORDS[record.stop]}.</span>' if record.stop else ""
    count = len(record.committed)
    return (
        f'<div class="ll-committed"><b>Committed this step</b> <span class="ll-dim">({count} token'
        f"{'s' if count != 1 else ''}, one forward pass)</span> {cells}{stop}</div>"
    )


def verification_html(record: StepRecord, vocab: dict[str, str]) -> str:
    """Every guess, then the best window trajectories, checked token by token; the winner starred; the commit."""
    if record.kind == StepKind.PREFILL or record.verification is None:
        first = chips(vocab, record.committed, record.sources[0].value)
        return f'<p class="ll-empty">The prefill verifies nothing: it gives the first new token {first}.</p>'
    if record.verification.positions:
        head = positions_html(record, vocab)
    else:
        guaranteed = chip(vocab, record.verification.guaranteed, "guaranteed", "argmax of the current token's row")
        head = (
            f'<div class="ll-poolhead">guaranteed next token {guaranteed}'
            f'<span class="ll-dim">from the row of c, as greedy decoding would emit</span></div>'
        )
    panel = head + guesses_html(record, vocab) + trajectories_html(record, vocab) + committed_html(record, vocab)
    return panel + step_sources_html(record)
