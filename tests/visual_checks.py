"""What the panel tests check, shared by the tests/test_visuals_*.py modules: one check per panel.

The panels read facts from the record (`lookahead_core.records`) instead of re-deriving them:
the mask is `InputRow.sees`, a window level's origin is `WindowRecord.origins`, a candidate's
expected tokens, match and verdict come from its `CandidateRecord`, a picked pool entry is
`PoolEntry.guess`. Each check_* below reads one panel of one step against that step's record.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from html import escape, unescape

import pytest

from lookahead_core.records import (
    CandidateRecord,
    DraftRecord,
    GuessReason,
    GuessSource,
    HeadsRecord,
    Method,
    PlanReason,
    Run,
    StepKind,
    StepRecord,
    SuffixRecord,
    TokenSource,
    Trace,
    Verdict,
)
from visuals import caption, library, mask, replay, tokens, verification, window

PRESETS = library.load_presets()


@functools.cache
def example(preset_id: str) -> Run:
    """A shipped example run, read once (tests never mutate it: they use dataclasses.replace)."""
    return library.load_run(library.example_path(library.preset(PRESETS, preset_id)))


def greedy_only(run: Run) -> None:
    """Checks of greedy wording (guaranteed token, the model's predictions); sampled runs have their own test."""
    if run.trace.meta.sampling is not None:
        pytest.skip("a sampled run: see test_a_sampled_run_shows_every_draw")


def decode_steps(run: Run) -> list[tuple[int, StepRecord]]:
    return [(i, r) for i, r in enumerate(run.trace.steps) if r.kind == StepKind.DECODE]


def words(html: str) -> str:
    """The words `html` shows: its tags dropped, its entities read, its white space one space."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def chip_count(html: str, kind: str) -> int:
    return len(re.findall(rf'class="ll-tok ll-{kind}[ "]', html))


CHIP = re.compile(r'<span class="ll-tok ll-(\w+)(?: [^"]*)?" style="[^"]*" title="([^"]*)">([^<]*)</span>')


def chips_in(html: str) -> list[tuple[str, str, str]]:
    """(kind, tooltip, shown text) of every coloured token chip in `html`, tooltips unescaped."""
    return [(kind, unescape(title), text) for kind, title, text in CHIP.findall(html)]


def shown(vocab: dict, token_id: int) -> str:
    return escape(tokens.visible(tokens.token_text(vocab, token_id)))


def winner_of(record: StepRecord) -> CandidateRecord | None:
    v = record.verification
    return v.candidates[v.winner] if v.winner is not None else None


def trajectory_winner(record: StepRecord) -> CandidateRecord | None:
    winner = winner_of(record)
    return winner if winner is not None and winner.source == GuessSource.TRAJECTORY else None


def guesses_of(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source != GuessSource.TRAJECTORY]


def trajectories_of(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source == GuessSource.TRAJECTORY]


# ----------------------------------------------------------------------------------------------
# One check per panel, on one step


def check_window(record: StepRecord, vocab: dict, ngram: int) -> None:
    """The window panel shows every level (and the new one when fed), outlines and labels as the record says."""
    w = record.window
    html = window.window_html(record, vocab, ngram)
    width = len(w.levels[0])
    assert html.count("<td") == (len(w.levels) + w.fed) * width
    assert ("new level<small>this step</small>" in html) == w.fed
    assert html.count("ll-h-top") == (width if w.harvested else 0)
    assert html.count("ll-h-bot") == (width if w.harvested else 0)
    assert chip_count(html, "new") == len(w.update)
    assert chip_count(html, "current") == 1
    for token in [t for level in w.levels for t in level] + w.update:
        assert shown(vocab, token) in html
    for level, origin in enumerate(w.origins):
        label = "fill" if origin == 0 else f"from step {origin}"
        assert f'title="level {level}: {window.origin_words(origin)}">level {level}<small>{label}</small>' in html
    assert ("Warm-up" in html) == (w.fed and w.warming_up)
    assert ("left the window out" in html) == (not w.fed)
    if w.harvested:
        assert f"All {len(w.harvested)} went into the pool" in html


PATH_MARK = re.compile(r'class="ll-tok ll-\w+ ll-path" style="[^"]*" title="([^"]*)">([^<]*)<')


def check_window_path(record: StepRecord, vocab: dict, ngram: int) -> None:
    """The window panel marks exactly the accepted cells of the winning trajectory, and names it."""
    html = window.window_html(record, vocab, ngram)
    winner = trajectory_winner(record)
    if winner is None:
        assert "ll-path" not in html and "Dashed" not in html
        return
    marked = []
    for title, text in PATH_MARK.findall(html):
        level, j, k = re.search(r"level (\d+), column (\d+) · .* accepted: token (\d+) of", unescape(title)).groups()
        marked.append((int(k), int(level), int(j), text))
    cells = [(record.rows[r].lane, record.rows[r].index) for r in winner.rows[: winner.matched]]
    assert sorted(marked) == [
        (k, level, j, shown(vocab, t)) for k, ((level, j), t) in enumerate(zip(cells, winner.tokens, strict=False))
    ]
    assert f"of column {winner.lane}'s Jacobi trajectory that verification accepted" in html


def shown_trajectories(record: StepRecord) -> list[CandidateRecord]:
    """The trajectories the panel must show: the 3 longest matches (first column on ties), in column order."""
    ranked = sorted((c for c in trajectories_of(record) if c.matched), key=lambda c: (-c.matched, c.lane))[:3]
    winner = trajectory_winner(record)
    assert winner is None or winner in ranked
    return sorted(ranked, key=lambda c: c.lane)


VERIFY_ROW = re.compile(
    r'<tr class="([^"]*)"><th title="([^"]*)">(.*?)</th><td class="ll-guess">(.*?)</td>'
    r'<td class="ll-matched">matched (\d+) of (\d+)</td></tr>'
)


def expected_row(record: StepRecord, candidate: CandidateRecord) -> tuple[str, list[str]]:
    """The label of a candidate's row and the place each of its tokens is named by in its tooltip."""
    if candidate.source == GuessSource.TRAJECTORY:
        cells = [(record.rows[r].lane, record.rows[r].index) for r in candidate.rows]
        places = [f"trajectory token {k}: level {level}, column {j}" for k, (level, j) in enumerate(cells)]
        return f"window column {candidate.lane} trajectory", places
    if candidate.reason == GuessReason.DRAFT_MODEL:
        odds = [f" · q = {q:.2f} under the draft" for q in candidate.draft_probabilities]
        return "draft chain", [f"draft chain token {k}{odds[k]}" for k in range(len(candidate.tokens))]
    kinds = {GuessReason.SUFFIX_MATCH: "match", GuessReason.TREE_PATH: "path", GuessReason.FOLLOWED_MATCH: "path"}
    kind = kinds.get(candidate.reason, "guess")
    return f"{kind} {candidate.lane + 1}", [f"{kind} token {k}" for k in range(len(candidate.tokens))]


def check_path_row(record: StepRecord, vocab: dict, candidate: CandidateRecord, row: tuple) -> None:
    """One row: its label and verdict tooltip, each token's mark and tooltip, the bonus on the winner."""
    css, title, label, cells, matched, length = row
    won = candidate.verdict == Verdict.WON
    name, places = expected_row(record, candidate)
    assert label == ("★ " if won else "") + name
    assert (css == "ll-winner") == won
    assert unescape(title).endswith(verification.VERDICT_WORDS[candidate.verdict])
    assert (int(matched), int(length)) == (candidate.matched, len(candidate.tokens))
    marks = chips_in(cells)
    bonus = record.verification.bonus if won else None
    assert len(marks) == len(candidate.tokens) + (bonus is not None)
    for k, (token, expected) in enumerate(zip(candidate.tokens, candidate.expected, strict=True)):
        kind, tip, text = marks[k]
        assert text == shown(vocab, token)
        assert tip.startswith(f"id {token} · {places[k]} · position {record.position + 1 + k} · ")
        said = tokens.named(vocab, expected)
        if k < candidate.matched:
            assert kind == "accepted" and tip.endswith(f"accepted: the model also predicted {said} here")
        elif k == candidate.matched:
            assert kind == "mismatch" and tip.endswith(f"first mismatch: the model predicted {said}")
        else:
            assert kind == "unchecked" and "not checked" in tip
    if bonus is not None:
        assert marks[-1][0] == "bonus" and marks[-1][2] == shown(vocab, bonus)
        corrected = candidate.source == GuessSource.DRAFT and candidate.matched < len(candidate.tokens)
        assert f'<span class="ll-plus">+ {"correction" if corrected else "bonus"}</span>' in cells


def check_verification(record: StepRecord, vocab: dict) -> None:
    """The verification panel shows every guess and the best trajectories exactly as verification judged them."""
    v = record.verification
    html = verification.verification_html(record, vocab)
    assert f'title="id {v.guaranteed} · argmax of the current token\'s row"' in unescape(html)
    paths = guesses_of(record) + shown_trajectories(record)
    rows = VERIFY_ROW.findall(html)
    assert len(rows) == len(paths)
    for candidate, row in zip(paths, rows, strict=True):
        check_path_row(record, vocab, candidate, row)
    if not guesses_of(record):
        assert "No guesses to verify" in html
    if trajectories_of(record) and not shown_trajectories(record):
        assert "No window trajectory matched" in html
    assert chip_count(html, "accepted") == sum(c.matched for c in paths) + record.sources.count(TokenSource.ACCEPTED)
    assert chip_count(html, "mismatch") == sum(c.matched < len(c.tokens) for c in paths)
    assert html.count("★") == html.count('class="ll-winner"') == (v.winner is not None)
    assert html.count("+ bonus") + html.count("+ correction") == (v.bonus is not None)
    committed = html[html.index('class="ll-committed"') :]
    assert [(kind, text) for kind, _, text in chips_in(committed)] == [
        (source.value, shown(vocab, t)) for t, source in zip(record.committed, record.sources, strict=True)
    ]


GROUP = re.compile(r'<g fill="[^"]+"><title>(.*?)</title>(.*?)</g>')


def drawn_rows(html: str) -> list[tuple[str, set[int]]]:
    """Each mask row's tooltip and the columns its rectangles cover."""
    grid_x = mask.LABEL_WIDTH + mask.PREFIX_CELLS * mask.CELL + 4
    rows = []
    for title, body in GROUP.findall(html):
        columns = set()
        for x, width in re.findall(rf'<rect x="(\d+)" y="\d+" width="(\d+)" height="{mask.CELL - 1}"/>', body):
            first, length = (int(x) - grid_x) // mask.CELL, (int(width) + 1) // mask.CELL
            columns |= set(range(first, first + length))
        rows.append((unescape(title), columns))
    return rows


def check_mask(record: StepRecord, vocab: dict) -> None:
    """One row per token fed, each drawing exactly the columns its InputRow.sees lists, at its position."""
    html = mask.mask_html(record, vocab)
    drawn = drawn_rows(html)
    assert len(drawn) == record.tokens_fed == len(record.rows)
    for i, ((title, columns), row) in enumerate(zip(drawn, record.rows, strict=True)):
        assert columns == set(row.sees)
        assert title.startswith(f"row {i} ") and f"at position {row.position}" in title
    if len(record.rows) <= mask.DETAILED_ROWS:
        for row in record.rows:
            assert f'class="ll-pos">{row.position}</text>' in html


def check_caption(trace: Trace, index: int) -> None:
    """The caption of step `index` says how many tokens it committed, which guess or trajectory won, and the plan."""
    record = trace.steps[index]
    html = caption.caption_html(trace, index)
    count = len(record.committed)
    if count == 1:
        assert "committed only the guaranteed next token" in html
    else:
        assert f"committed {count} tokens" in html
    winner = winner_of(record)
    assert ("Plan:" in html) == (record.plan.reason not in (PlanReason.PAPER, PlanReason.ALL_PROPOSED))
    assert ("Decoding stops" in html) == (record.stop is not None)
    assert f"Step {index} of {len(trace.steps) - 1}" in html
    if trace.meta.method == Method.SPECULATIVE:
        drafted = caption.plural(len(record.report(DraftRecord).tokens), "token")
        assert f"The draft model drafted {drafted}" in html
        assert (f"the target agreed with the first {winner.matched}" in html) == (winner is not None)
        return
    if trace.meta.method == Method.MEDUSA:
        nodes = caption.plural(len(record.report(HeadsRecord).tree), "node")
        assert f"The heads' guesses filled a tree of {nodes}" in html
        said = f"; path {winner.lane + 1} matched {caption.plural(winner.matched, 'token')}" if winner else "; path"
        assert (said in html) == (winner is not None)
        return
    if trace.meta.method == Method.SUFFIX:
        found = f"The last {caption.plural(len(record.report(SuffixRecord).match), 'token')} occurred"
        assert found in html or "The last token occurs nowhere earlier" in html
        said = f"; path {winner.lane + 1} matched {caption.plural(winner.matched, 'token')}" if winner else "; path"
        assert (said in html) == (winner is not None)
        return
    if trace.meta.method == Method.PROMPT_LOOKUP:
        said = f"match {winner.lane + 1} agreed for {caption.plural(winner.matched, 'token')}" if winner else "occur"
        assert said in html
        return
    if winner is not None and winner.source != GuessSource.TRAJECTORY:
        assert f"guess {winner.lane + 1} matched {caption.plural(winner.matched, 'token')}" in html
    if trajectory_winner(record) is not None:
        matched = caption.plural(winner.matched, "token")
        assert f"olumn {winner.lane}'s Jacobi trajectory matched {matched}" in html
        assert "the trajectory's first token matched it" in html or count == 1
        if trace.meta.settings.lookahead.guesses and record.pool.entries:
            assert "no guess beat the window" in html
    if record.pool.entries and not guesses_of(record):  # nothing of the pool was verified: no claim it failed
        assert "but the plan verified none of them" in html and "none began" not in html
    assert (escape(caption.NO_GUESSES) in html) == (trace.meta.settings.lookahead.guesses == 0)


def check_step(run: Run, index: int) -> None:
    """Every per-step check above, on step `index` of `run`."""
    trace = run.trace
    record = trace.steps[index]
    check_window(record, trace.vocab, trace.meta.settings.lookahead.ngram)
    check_verification(record, trace.vocab)
    check_window_path(record, trace.vocab, trace.meta.settings.lookahead.ngram)
    check_mask(record, trace.vocab)
    check_caption(trace, index)
    assert all(replay.panels(run, index).values())


# ----------------------------------------------------------------------------------------------
# A tiny random Llama, for steps the examples lack (G = 0, more trajectory wins, cost-aware plans)


class NumberTokenizer:
    """Token i reads "t{i}": all that recording a trace needs from a tokenizer."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return " ".join(f"t{i}" for i in ids)


# A repeated motif per G: the random model's greedy output settles into loops the window's trajectories catch.
TINY_MOTIFS = {0: [64, 17, 36, 17], 3: [12, 93, 9, 87]}


def tiny_lm():
    from .tiny import tiny_model

    return dataclasses.replace(tiny_model("llama"), tokenizer=NumberTokenizer())
