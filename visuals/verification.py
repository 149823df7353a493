"""Panel 3, verification: each guess, then the window's own trajectories, token by token against the model.

A path (a guess, or a Jacobi trajectory of the window) is checked token by token: token 0 against
the guaranteed next token, token k against the model's argmax at the row of token k-1. Accepted
tokens are green (✓), the first mismatch red (✗), the rest grey. The longest match wins (guesses
first on ties); its last accepted row's prediction is the bonus token. Trajectories cost no extra
input, so the panel shows the few that matched most, not all W.
"""

from __future__ import annotations

from html import escape

from .tokens import chip, chips, named
from .window import trajectory_cells, trajectory_route

STOP_WORDS = {"eos": "an end-of-sequence token was committed", "max_new_tokens": "max new tokens was reached"}
SHOWN_TRAJECTORIES = 3


def token_status(k: int, matched: int) -> str:
    """accepted, mismatch or unchecked, for token k of a path whose first `matched` tokens matched."""
    if k < matched:
        return "accepted"
    return "mismatch" if k == matched else "unchecked"


def expected_tokens(record: dict, predictions: list[int]) -> list[int]:
    """What the model predicted at each token's position of a path whose rows predicted `predictions`.

    Token 0 is checked against the guaranteed token, token k against the row of token k-1.
    """
    return [record["committed"][0], *predictions][: len(predictions)]


def path_tokens_html(
    record: dict, vocab: dict, tokens: list[int], predictions: list[int], matched: int, places: list[str]
) -> str:
    """The chips of one path; `places[k]` names token k (e.g. "guess token 2") in its tooltip."""
    cells = []
    for k, (token, expected) in enumerate(zip(tokens, expected_tokens(record, predictions), strict=True)):
        status = token_status(k, matched)
        words = {
            "accepted": f"accepted: the model also predicted {named(vocab, expected)} here",
            "mismatch": f"first mismatch: the model predicted {named(vocab, expected)}",
            "unchecked": "not checked: an earlier token of this path already differed",
        }[status]
        position = record["position"] + 1 + k
        cells.append(chip(vocab, token, status, f"{places[k]} · position {position} · {words}"))
    return "".join(cells)


def path_row(
    vocab: dict, label: str, title: str, tokens_html: str, matched: int, length: int, bonus: int | None
) -> str:
    """One table row: the label (its title a tooltip), the chips, the bonus token if this path won, the count."""
    extra = ""
    if bonus is not None:
        extra = (
            f'<span class="ll-nowrap"><span class="ll-plus">+ bonus</span>'
            f"{chip(vocab, bonus, 'bonus', 'the prediction after the last accepted token')}</span>"
        )
    return (
        f'<tr class="{"ll-winner" if bonus is not None else ""}"><th title="{escape(title)}">'
        f"{'★ ' if bonus is not None else ''}{label}</th>"
        f'<td class="ll-guess">{tokens_html}{extra}</td>'
        f'<td class="ll-matched">matched {matched} of {length}</td></tr>'
    )


# ----------------------------------------------------------------------------------------------
# Guesses from the n-gram pool


def guess_row(record: dict, vocab: dict, guess: int) -> str:
    tokens, predictions = record["guesses"][guess], record["guess_predictions"][guess]
    matched = record["matched"][guess]
    places = [f"guess token {k}" for k in range(len(tokens))]
    bonus = predictions[matched - 1] if record["winner"] == guess else None
    return path_row(
        vocab,
        f"guess {guess + 1}",
        f"{record['guess_reasons'][guess]}, {record['guess_sources'][guess]}",
        path_tokens_html(record, vocab, tokens, predictions, matched, places),
        matched,
        len(tokens),
        bonus,
    )


def guesses_html(record: dict, vocab: dict) -> str:
    if not record["guesses"]:
        return '<p class="ll-empty">No guesses to verify this step.</p>'
    rows = "".join(guess_row(record, vocab, i) for i in range(len(record["guesses"])))
    return f'<div class="ll-scroll"><table class="ll-verify"><tbody>{rows}</tbody></table></div>'


# ----------------------------------------------------------------------------------------------
# The window's own Jacobi trajectories


def shown_trajectories(record: dict) -> list[int]:
    """Columns whose trajectory matched at least one token: the longest few plus the winner, in column order.

    Ranked by matched length, then column, the rule verification breaks ties with.
    """
    matched = record.get("trajectory_matched") or []
    ranked = sorted((j for j, m in enumerate(matched) if m > 0), key=lambda j: (-matched[j], j))
    shown = set(ranked[:SHOWN_TRAJECTORIES])
    if record.get("trajectory_winner") is not None:
        shown.add(record["trajectory_winner"])
    return sorted(shown)


def trajectory_row(record: dict, vocab: dict, column: int) -> str:
    cells = trajectory_cells(len(record["window"]), column)
    tokens, matched = record["trajectories"][column], record["trajectory_matched"][column]
    predictions = [record["window_predictions"][level][j] for level, j in cells]
    places = [f"trajectory token {k}: level {level}, column {j}" for k, (level, j) in enumerate(cells)]
    bonus = predictions[matched - 1] if record.get("trajectory_winner") == column else None
    return path_row(
        vocab,
        f"window column {column} trajectory",
        f"{trajectory_route(column)}: rows this pass computed anyway",
        path_tokens_html(record, vocab, tokens, predictions, matched, places),
        matched,
        len(tokens),
        bonus,
    )


def trajectories_html(record: dict, vocab: dict) -> str:
    """The trajectories that matched, under a heading; one line when none did; nothing for old traces."""
    trajectories = record.get("trajectories") or []
    if not trajectories:
        return ""
    columns = shown_trajectories(record)
    if not columns:
        return (
            f'<p class="ll-empty">No window trajectory matched: none of the {len(trajectories)} began with the '
            "guaranteed next token.</p>"
        )
    matching = sum(m > 0 for m in record["trajectory_matched"])
    more = f"; the {len(columns)} longest shown" if matching > len(columns) else ""
    rows = "".join(trajectory_row(record, vocab, j) for j in columns)
    return (
        f'<h4>Window trajectories <span class="ll-dim">(no extra input; {matching} of {len(trajectories)} matched '
        f"at least one token{more})</span></h4>"
        f'<div class="ll-scroll"><table class="ll-verify ll-trajectories"><tbody>{rows}</tbody></table></div>'
    )


# ----------------------------------------------------------------------------------------------
# The panel


def committed_html(record: dict, vocab: dict) -> str:
    position = record["position"]
    cells = "".join(
        chip(vocab, token, source, f"{source} · position {position + 1 + k}")
        for k, (token, source) in enumerate(zip(record["committed"], record["sources"], strict=True))
    )
    stop = f' <span class="ll-dim">Decoding stops: {STOP_WORDS[record["stop"]]}.</span>' if record.get("stop") else ""
    count = len(record["committed"])
    return (
        f'<div class="ll-committed"><b>Committed this step</b> <span class="ll-dim">({count} token'
        f"{'s' if count != 1 else ''}, one forward pass)</span> {cells}{stop}</div>"
    )


def verification_html(record: dict, vocab: dict[str, str]) -> str:
    """Every guess, then the best window trajectories, checked token by token; the winner starred; the commit."""
    if record.get("kind") == "prefill":
        first = chips(vocab, record["committed"], "guaranteed")
        return f'<p class="ll-empty">The prefill verifies nothing: it predicts the first new token {first}.</p>'
    guaranteed = chip(vocab, record["committed"][0], "guaranteed", "argmax of the current token's row")
    head = (
        f'<div class="ll-poolhead">guaranteed next token {guaranteed}'
        f'<span class="ll-dim">from the row of c, as greedy decoding would emit</span></div>'
    )
    return head + guesses_html(record, vocab) + trajectories_html(record, vocab) + committed_html(record, vocab)
