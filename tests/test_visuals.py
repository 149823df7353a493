"""Every panel renders every step of the shipped example runs, and shows what the record says.

The panels read facts from the record (`lookahead_core.records`) instead of re-deriving them:
the mask is `InputRow.sees`, a window level's origin is `WindowRecord.origins`, a candidate's
expected tokens, match and verdict come from its `CandidateRecord`, a picked pool entry is
`PoolEntry.guess`. Several tests below alter one such fact and check the panel follows it.

No model, except short runs of the engine on a tiny random Llama for steps the examples lack
(G = 0, more trajectory wins, and cost-aware plans that leave the window out).
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
import subprocess
import sys
import time
from html import escape, unescape
from pathlib import Path

import pytest

from lookahead_core.records import (
    CandidateRecord,
    Method,
    NGram,
    PlanReason,
    PlanRecord,
    PoolEntry,
    PoolRecord,
    Reason,
    Run,
    Settings,
    Source,
    StepKind,
    StepRecord,
    TokenSource,
    Trace,
    Verdict,
    VerificationRecord,
    WindowRecord,
)
from visuals import (
    caption,
    library,
    mask,
    methods,
    output,
    palette,
    plans,
    pool,
    progress,
    replay,
    summary,
    tokens,
    verification,
    window,
)

ROOT = Path(__file__).resolve().parent.parent
PRESETS = library.load_presets()


@functools.cache
def example(preset_id: str) -> Run:
    """A shipped example run, read once (tests never mutate it: they use dataclasses.replace)."""
    return library.load_run(library.example_path(library.preset(PRESETS, preset_id)))


def greedy_only(run: Run) -> None:
    """Checks of greedy wording (guaranteed token, the model's predictions); sampled runs have their own test."""
    if run.trace.meta.sampling is not None:
        pytest.skip("a sampled run: see test_a_sampled_run_shows_every_draw")


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS])
def run(request) -> Run:
    return example(request.param)


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS if p.get("method", "lookahead") == "lookahead"])
def lookahead_run(request) -> Run:
    """The presets that run lookahead: the ones with a window and a pool to draw."""
    return example(request.param)


def decode_steps(run: Run) -> list[tuple[int, StepRecord]]:
    return [(i, r) for i, r in enumerate(run.trace.steps) if r.kind == StepKind.DECODE]


def chip_count(html: str, kind: str) -> int:
    return len(re.findall(rf'class="ll-tok ll-{kind}[ "]', html))


CHIP = re.compile(r'<span class="ll-tok ll-(\w+)(?: [^"]*)?" style="[^"]*" title="([^"]*)">([^<]*)</span>')


def chips_in(html: str) -> list[tuple[str, str, str]]:
    """(kind, tooltip, shown text) of every coloured token chip in `html`, tooltips unescaped."""
    return [(kind, unescape(title), text) for kind, title, text in CHIP.findall(html)]


def shown(vocab: dict, token_id: int) -> str:
    return escape(tokens.visible(tokens.token_text(vocab, token_id)))


def with_record(run: Run, index: int, record: StepRecord, settings: Settings | None = None) -> Run:
    """`run` with lookahead step `index` replaced by `record` (and its settings, if given)."""
    trace = run.trace
    steps = [*trace.steps[:index], record, *trace.steps[index + 1 :]]
    meta = dataclasses.replace(trace.meta, settings=settings) if settings is not None else trace.meta
    return dataclasses.replace(run, trace=dataclasses.replace(trace, steps=steps, meta=meta))


def winner_of(record: StepRecord) -> CandidateRecord | None:
    v = record.verification
    return v.candidates[v.winner] if v.winner is not None else None


def trajectory_winner(record: StepRecord) -> CandidateRecord | None:
    winner = winner_of(record)
    return winner if winner is not None and winner.source == Source.TRAJECTORY else None


def guesses_of(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source != Source.TRAJECTORY]


def trajectories_of(record: StepRecord) -> list[CandidateRecord]:
    return [c for c in record.verification.candidates if c.source == Source.TRAJECTORY]


# ----------------------------------------------------------------------------------------------
# Tokens and palette


def test_whitespace_is_visible_and_text_is_escaped():
    assert tokens.visible(" a\n\tb") == "▁a⏎⇥b"
    assert tokens.visible("") == "∅"
    html = tokens.chip({"7": "<script>&\n"}, 7, "accepted", 'tip "quoted"')
    assert "<script>" not in html and "&lt;script&gt;&amp;⏎" in html
    assert 'title="id 7 · tip &quot;quoted&quot;"' in html
    assert tokens.chip({}, 99).count("[99]") == 1


def test_every_legend_names_its_colours():
    for panel, kinds in palette.LEGENDS.items():
        html = palette.legend_html(panel)
        for kind in kinds:
            hue, label, _ = palette.KINDS[kind]
            assert escape(label) in html and hue in html


def test_palette_is_okabe_ito():
    okabe_ito = {"#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442"}
    assert {hue for hue, _, _ in palette.KINDS.values()} - {palette.GREY} <= okabe_ito


def test_visuals_do_not_import_torch_or_gradio():
    code = (
        "import sys, visuals.replay, visuals.summary, visuals.library, visuals.palette, visuals.race, "
        "visuals.plans; bad = {'torch', 'gradio', 'transformers'} & set(sys.modules); assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# ----------------------------------------------------------------------------------------------
# Panels, step by step


def test_every_panel_renders_every_step(run):
    for index in range(replay.last_step(run) + 1):
        shown_panels = replay.panels(run, index)
        assert list(shown_panels) == list(replay.PANELS)
        assert all(isinstance(html, str) and html for html in shown_panels.values())


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


def test_window_shows_every_level_and_outlines_harvested_columns(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        check_window(record, trace.vocab, trace.meta.settings.ngram)
        harvested = [a for a in record.pool.added if a.source == Source.WINDOW]
        assert [[g.key, *g.continuation] for g in harvested] == record.window.harvested


def test_window_labels_each_level_with_its_recorded_origin():
    """Level labels, tooltips and colours follow WindowRecord.origins, whatever they say."""
    trace = example("python").trace
    record = next(r for r in trace.steps[1:] if len(r.window.levels) == 4)
    origins = [0, 42, 7, 0]  # no real window looks like this: the panel must not re-derive it
    odd = dataclasses.replace(record, window=dataclasses.replace(record.window, origins=origins))
    html = window.window_html(odd, trace.vocab, trace.meta.settings.ngram)
    assert 'title="level 1: the Jacobi update of step 42">level 1<small>from step 42</small>' in html
    assert 'title="level 2: the Jacobi update of step 7">level 2<small>from step 7</small>' in html
    assert 'title="level 3: the initial fill (random prompt tokens)">level 3<small>fill</small>' in html
    rows = re.findall(r'<tr><th class="ll-rowhead" title="level (\d+)[^"]*">(.*?)</tr>', html)
    assert [level for level, _ in rows] == ["3", "2", "1", "0"]
    for (_, level_html), origin in zip(rows[:3], [0, 7, 42], strict=True):  # level 0 also holds c
        kinds = {kind for kind, _, _ in chips_in(level_html)}
        assert kinds == {"fill" if origin == 0 else "earlier"}
        assert all(window.origin_words(origin) in tip for _, tip, _ in chips_in(level_html))


def test_pool_lists_the_key_entries_and_picked_guesses(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        p = record.pool
        html = pool.pool_html(record, trace.vocab, trace.meta.settings.guesses)
        assert f'title="id {p.key} · the current token c"' in html
        items = re.findall(r'<li class="ll-entry( ll-chosen)?">(.*?)</li>', html)
        assert len(items) == len(p.entries)
        reasons = {c.lane: c.reason for c in guesses_of(record)}
        for (chosen, item), entry in zip(items, p.entries, strict=True):
            assert bool(chosen) == (entry.guess is not None)
            assert [text for _, _, text in chips_in(item)] == [shown(trace.vocab, t) for t in entry.continuation]
            assert f">{entry.source.value}</span>" in item
            if entry.guess is None:
                assert "not picked" in item
            else:
                reason = reasons[entry.guess].value
                assert f'title="picked for verification: {reason}">guess {entry.guess + 1}' in item
        assert f"{p.size} n-grams in the pool, {p.size - p.size_before:+d} this step" in html
        assert html.count('class="ll-ngram"') == len(p.added) + len(p.evicted)
        if not p.entries:
            assert "there is no guess to verify" in html


def test_pool_marks_the_recorded_guess_of_each_entry(lookahead_run):
    """Which entry became which guess is PoolEntry.guess: the panel shows it as recorded."""
    run = lookahead_run
    trace = run.trace
    index, record = next((i, r) for i, r in decode_steps(run) if len(r.pool.entries) >= 2 and guesses_of(r))
    lane = guesses_of(record)[0].lane
    entries = [dataclasses.replace(e, guess=None) for e in record.pool.entries]
    entries[-1] = dataclasses.replace(entries[-1], guess=lane)  # the newest entry, whatever was picked
    moved = dataclasses.replace(record, pool=dataclasses.replace(record.pool, entries=entries))
    html = pool.pool_html(moved, trace.vocab, trace.meta.settings.guesses)
    items = re.findall(r'<li class="ll-entry( ll-chosen)?">(.*?)</li>', html)
    assert [bool(chosen) for chosen, _ in items] == [False] * (len(entries) - 1) + [True]
    assert f">guess {lane + 1}" in items[-1][1]


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
    if candidate.source == Source.TRAJECTORY:
        cells = [(record.rows[r].lane, record.rows[r].index) for r in candidate.rows]
        places = [f"trajectory token {k}: level {level}, column {j}" for k, (level, j) in enumerate(cells)]
        return f"window column {candidate.lane} trajectory", places
    if candidate.reason == Reason.DRAFT_MODEL:
        odds = [f" · q = {q:.2f} under the draft" for q in candidate.draft_probabilities]
        return "draft chain", [f"draft chain token {k}{odds[k]}" for k in range(len(candidate.tokens))]
    kind = "match" if candidate.reason == Reason.SUFFIX_MATCH else "guess"
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
        corrected = candidate.source == Source.DRAFT and candidate.matched < len(candidate.tokens)
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


def test_verification_marks_accepted_mismatch_and_the_winner(run):
    greedy_only(run)
    trace = run.trace
    for _, record in decode_steps(run):
        check_verification(record, trace.vocab)


def test_verification_shows_each_recorded_verdict():
    """The verdict tooltip is CandidateRecord.verdict, not a re-judgement: change it and the panel follows."""
    trace = example("study-tips").trace
    record = next(r for r in trace.steps[1:] if r.verification.winner is not None and len(guesses_of(r)) >= 2)
    losers = [i for i, c in enumerate(record.verification.candidates) if c.source != Source.TRAJECTORY]
    losers = [i for i in losers if i != record.verification.winner]
    candidates = list(record.verification.candidates)
    for i in losers:
        candidates[i] = dataclasses.replace(candidates[i], verdict=Verdict.TIED_LATER)
    relabelled = dataclasses.replace(
        record, verification=dataclasses.replace(record.verification, candidates=candidates)
    )
    html = unescape(verification.verification_html(relabelled, trace.vocab))
    assert html.count(verification.VERDICT_WORDS[Verdict.TIED_LATER]) == len(losers)
    assert html.count(verification.VERDICT_WORDS[Verdict.WON]) == 1
    assert verification.VERDICT_WORDS[Verdict.NO_MATCH] not in html


def test_trajectory_tooltips_name_the_predictions_from_the_window(run):
    greedy_only(run)
    """Trajectory token k sits at the cell its input row names and is checked against the recorded prediction."""
    trace = run.trace
    for _, record in decode_steps(run):
        html = unescape(verification.verification_html(record, trace.vocab))
        for trajectory in shown_trajectories(record):
            cells = [(record.rows[r].lane, record.rows[r].index) for r in trajectory.rows]
            assert [record.window.levels[level][j] for level, j in cells] == trajectory.tokens
            assert trajectory.expected[0] == record.verification.guaranteed
            for k, (level, j) in enumerate(cells[: trajectory.matched]):
                said = tokens.named(trace.vocab, trajectory.expected[k])
                assert f"trajectory token {k}: level {level}, column {j}" in html
                assert f"accepted: the model also predicted {said} here" in html


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


def test_window_marks_the_cells_of_the_accepted_trajectory(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        check_window_path(record, trace.vocab, trace.meta.settings.ngram)


def test_window_legend_names_the_trajectory_outline():
    html = palette.legend_html("window")
    assert "harvested column" in html and "accepted trajectory" in html and "ll-swatch-path" in html


def test_output_shows_the_committed_tokens_so_far(run):
    trace = run.trace
    produced = 0
    for index, record in enumerate(trace.steps):
        produced += len(record.committed)
        html = output.output_html(trace, index)
        assert html.count('class="ll-tok') == produced
        assert html.count("ll-this") == len(record.committed)
        assert f"step {index} · {record.sources[0].value}" in html
    assert len(trace.meta.prompt_token_ids) and 'class="ll-prompt"' in html


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


def test_mask_has_one_row_per_token_fed_and_the_recorded_visibility(run):
    trace = run.trace
    for _, record in decode_steps(run):
        check_mask(record, trace.vocab)


def test_mask_draws_the_recorded_rows_not_a_rederivation():
    """The mask is InputRow.sees as the engine passed it: an unusual visibility is drawn as it stands."""
    trace = example("python").trace
    record = trace.steps[3]
    odd = [dataclasses.replace(row, sees=[0, i] if i % 2 else [i]) for i, row in enumerate(record.rows)]
    altered = dataclasses.replace(record, rows=odd)
    check_mask(altered, trace.vocab)
    assert mask.runs([0, 1, 2, 5, 7, 8]) == [(0, 3), (5, 1), (7, 2)]


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
        drafted = caption.plural(len(record.draft.tokens), "token")
        assert f"The draft model drafted {drafted}" in html
        assert (f"the target agreed with the first {winner.matched}" in html) == (winner is not None)
        return
    if trace.meta.method == Method.PROMPT_LOOKUP:
        said = f"match {winner.lane + 1} agreed for {caption.plural(winner.matched, 'token')}" if winner else "occur"
        assert said in html
        return
    if winner is not None and winner.source != Source.TRAJECTORY:
        assert f"guess {winner.lane + 1} matched {caption.plural(winner.matched, 'token')}" in html
    if trajectory_winner(record) is not None:
        matched = caption.plural(winner.matched, "token")
        assert f"olumn {winner.lane}'s Jacobi trajectory matched {matched}" in html
        assert "the trajectory's first token matched it" in html or count == 1
        if trace.meta.settings.guesses and record.pool.entries:
            assert "no guess beat the window" in html
    if record.pool.entries and not guesses_of(record):  # nothing of the pool was verified: no claim it failed
        assert "but the plan verified none of them" in html and "none began" not in html
    assert (escape(caption.NO_GUESSES) in html) == (trace.meta.settings.guesses == 0)


def test_caption_says_what_the_step_committed(run):
    greedy_only(run)
    trace = run.trace
    assert "Prefill" in caption.caption_html(trace, 0)
    for index, _ in decode_steps(run):
        check_caption(trace, index)


# A hand-made step: key ‘def’ with 3 n-grams; guesses [9 9], [2 3], [2 4] against the predictions [2 3].

CAPTION_VOCAB = {"1": "def", "2": " f", "3": "(", "4": "x", "5": ")", "9": "?"}


def candidate(tokens_: list[int], lane: int, verdict: Verdict, trajectory: bool = False) -> CandidateRecord:
    expected = [2, 3][: len(tokens_)]
    matched = next((k for k, (t, e) in enumerate(zip(tokens_, expected, strict=True)) if t != e), len(tokens_))
    source, reason = (
        (Source.TRAJECTORY, Reason.JACOBI_TRAJECTORY) if trajectory else (Source.PROMPT, Reason.ONE_TOKEN_KEY)
    )
    return CandidateRecord(source, reason, lane, tokens_, [], expected, matched, verdict)


def caption_step(candidates: list[CandidateRecord], winner: int) -> StepRecord:
    verification_ = VerificationRecord(2, candidates, winner, 2, 4, [2, 3, 4])
    entries = [PoolEntry([2, 3], Source.PROMPT, lane) for lane in range(3)]
    return StepRecord(
        5,
        Method.LOOKAHEAD,
        StepKind.DECODE,
        9,
        7,
        [2, 3, 4],
        [TokenSource.GUARANTEED, TokenSource.ACCEPTED, TokenSource.BONUS],
        None,
        0.01,
        0.01,
        plan=PlanRecord(PlanReason.PAPER, True, 3, 3, 2),
        window=WindowRecord(True, False, [[1, 5], [4, 5]], [3, 4], [5, 5], []),
        pool=PoolRecord(1, 5, entries, [], [], 9, 9),
        verification=verification_,
    )


def hand_trace(record: StepRecord, guesses: int = 3) -> Trace:
    base = example("python").trace
    meta = dataclasses.replace(base.meta, settings=Settings(2, 3, guesses))
    return dataclasses.replace(base, meta=meta, steps=[*base.steps[:5], record], vocab=CAPTION_VOCAB)


def test_caption_example_wording():
    guess_won = caption_step(
        [
            candidate([9, 9], 0, Verdict.NO_MATCH),
            candidate([2, 3], 1, Verdict.WON),
            candidate([2, 4], 2, Verdict.SHORTER),
        ],
        winner=1,
    )
    assert caption.step_caption(hand_trace(guess_won), 5) == (
        "The key ‘def’ had 3 n-grams in the pool; guess 2 matched 2 tokens, so this one forward pass committed "
        "3 tokens: the guaranteed next token (the guess's first token matched it), 1 more accepted token and the "
        "bonus token."
    )
    window_won = caption_step(
        [
            candidate([9, 9], 0, Verdict.NO_MATCH),
            candidate([2, 4], 1, Verdict.SHORTER),
            candidate([2, 5], 2, Verdict.SHORTER),
            candidate([9, 3], 0, Verdict.NO_MATCH, trajectory=True),
            candidate([2, 9], 1, Verdict.SHORTER, trajectory=True),
            candidate([2, 4], 2, Verdict.SHORTER, trajectory=True),
            candidate([2, 3], 3, Verdict.WON, trajectory=True),
        ],
        winner=6,
    )
    assert caption.step_caption(hand_trace(window_won), 5) == (
        "The key ‘def’ had 3 n-grams in the pool; no guess beat the window: column 3's Jacobi trajectory matched "
        "2 tokens, so this one forward pass committed 3 tokens: the guaranteed next token (the trajectory's first "
        "token matched it), 1 more accepted token and the bonus token."
    )


def test_a_step_with_nothing_verified_says_so():
    """G = 0 and no candidate at all (a window left out): the caption leads with the G = 0 wording."""
    bare = caption_step([], winner=0)
    bare = dataclasses.replace(
        bare,
        committed=[2],
        sources=[TokenSource.GUARANTEED],
        pool=dataclasses.replace(bare.pool, entries=[]),
        window=dataclasses.replace(bare.window, fed=False, update=[]),
        verification=VerificationRecord(2, [], None, 0, None, [2]),
    )
    trace = hand_trace(bare, guesses=0)
    text = caption.step_caption(trace, 5)
    assert text.startswith(escape(caption.NO_GUESSES))
    assert "Nothing was verified, so this forward pass committed only the guaranteed next token ‘▁f’." in text
    assert "No guesses to verify" in verification.verification_html(bare, trace.vocab)
    pool_html = pool.pool_html(bare, trace.vocab, 0)
    assert "G = 0: the pool keeps no n-grams" in pool_html
    assert "this step can commit only the guaranteed token" in pool_html


# ----------------------------------------------------------------------------------------------
# Runs of the engine on a tiny random Llama: trajectory wins, G = 0, and cost-aware plans


class NumberTokenizer:
    """Token i reads "t{i}": all that recording a trace needs from a tokenizer."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return " ".join(f"t{i}" for i in ids)


# A repeated motif per G: the random model's greedy output settles into loops the window's trajectories catch.
TINY_MOTIFS = {0: [64, 17, 36, 17], 3: [12, 93, 9, 87]}


def tiny_lm():
    from .conftest import tiny_model

    return dataclasses.replace(tiny_model("llama"), tokenizer=NumberTokenizer())


def tiny_run(guesses: int) -> Run:
    from lookahead_core.config import LookaheadConfig
    from lookahead_core.trace import record_run

    prompt = (TINY_MOTIFS[guesses] * 4)[:13]
    return record_run(tiny_lm(), prompt, LookaheadConfig(window=4, ngram=4, guesses=guesses), 24)


@pytest.fixture(scope="module")
def tiny_runs() -> dict[int, Run]:
    """One recorded run per G in TINY_MOTIFS, keyed by G."""
    return {guesses: tiny_run(guesses) for guesses in TINY_MOTIFS}


def check_step(run: Run, index: int) -> None:
    """Every per-step check above, on step `index` of `run`."""
    trace = run.trace
    record = trace.steps[index]
    check_window(record, trace.vocab, trace.meta.settings.ngram)
    check_verification(record, trace.vocab)
    check_window_path(record, trace.vocab, trace.meta.settings.ngram)
    check_mask(record, trace.vocab)
    check_caption(trace, index)
    assert all(replay.panels(run, index).values())


@pytest.mark.parametrize("guesses", sorted(TINY_MOTIFS))
def test_tiny_runs_show_what_each_trajectory_win_says(tiny_runs, guesses):
    run = tiny_runs[guesses]
    assert any(trajectory_winner(r) is not None for _, r in decode_steps(run)), "no step won by a trajectory"
    assert run.trace.summary.new_token_ids == run.greedy.summary.new_token_ids
    for index, _ in decode_steps(run):
        check_step(run, index)


def test_with_g_0_the_wording_leads_and_only_trajectories_are_verified(tiny_runs):
    trace = tiny_runs[0].trace
    for index, record in decode_steps(tiny_runs[0]):
        assert guesses_of(record) == [] and record.pool.entries == []
        text = caption.step_caption(trace, index)
        assert text.startswith(escape(caption.NO_GUESSES) + " ")
        winner = trajectory_winner(record)
        if winner is None:
            assert "No window trajectory began with the guaranteed next token" in text
        else:
            matched = caption.plural(winner.matched, "token")
            assert f"Column {winner.lane}'s Jacobi trajectory matched {matched}, so this one forward pass" in text
        assert "No guesses to verify" in verification.verification_html(record, trace.vocab)
        html = pool.pool_html(record, trace.vocab, 0)
        assert "G = 0: the pool keeps no n-grams" in html
        assert "only the window's own Jacobi trajectories can add tokens this step" in html


@pytest.fixture(scope="module")
def auto_run() -> Run:
    """A tiny run with auto settings on a steep cost table: the cost-aware planner leaves the window out."""
    from lookahead_core.config import LookaheadConfig
    from lookahead_core.trace import record_run
    from lookahead_core.tuning import choose_settings

    from .conftest import cost_table

    prompt = (TINY_MOTIFS[3] * 4)[:13]
    return record_run(tiny_lm(), prompt, LookaheadConfig(), 40, auto=choose_settings(cost_table(0.2)))


def test_an_auto_run_renders_its_plans_and_the_window_left_out(auto_run):
    trace = auto_run.trace
    steps = decode_steps(auto_run)
    assert {r.window.fed for _, r in steps} == {True, False}, "want steps with and without the window"
    assert any(r.plan.reason != PlanReason.PAPER for _, r in steps)
    for index, record in steps:
        check_step(auto_run, index)
        html = caption.caption_html(trace, index)
        if record.plan.reason != PlanReason.PAPER:
            words = plans.plan_words(record.plan)
            assert f"Plan: {escape(words[0].upper() + words[1:])}." in html
        shown_window = window.window_html(record, trace.vocab, trace.meta.settings.ngram)
        left_out = "The plan left the window out of this step's forward pass"
        assert (left_out in shown_window) == (not record.window.fed)
        if not record.window.fed:
            assert "new level" not in shown_window
            assert all(row.branch != "window" for row in record.rows)
    for index in range(replay.last_step(auto_run) + 1):
        assert all(replay.panel_values(auto_run, index))
    html = summary.summary_html(auto_run)
    assert "cost-aware plan" in html and "Auto: on test hardware" in html


def test_a_run_of_one_token_is_only_the_prefill(run):
    ours, theirs = run.trace, run.greedy
    one = Run(
        dataclasses.replace(ours, steps=ours.steps[:1], summary=dataclasses.replace(ours.summary, steps=1, tokens=1)),
        dataclasses.replace(theirs, steps=theirs.steps[:1], summary=dataclasses.replace(theirs.summary, steps=1)),
    )
    assert replay.last_step(one) == 0
    assert "prefill alone" in summary.summary_html(one)
    values = replay.panel_values(one, 5)
    assert all(values)
    assert "Step 0 of 0" in values[replay.PANELS.index("caption")]


def test_progress_counts_passes_against_greedy(run):
    greedy_only(run)
    ours = run.trace
    for index in (0, replay.last_step(run)):
        p = progress.progress_at(run, index)
        tokens_so_far = sum(len(r.committed) for r in ours.steps[: index + 1])
        assert p["tokens"] == p["greedy_passes"] == tokens_so_far
        assert p["passes"] == index + 1
        assert p["same_as_greedy"]  # float32 on the CPU: lookahead is exact
        html = progress.progress_html(run, index)
        assert f"{p['compression']:.2f}</b> tokens per step" in html
        assert escape(ours.meta.machine.device_name) in html


def test_tokens_per_step_chart_is_small_and_plain(run):
    figure = progress.tokens_per_step_figure(run)
    assert figure.layout.height <= 260
    assert figure.layout.template.to_plotly_json() == {"data": {"scatter": [{"type": "scatter"}]}}
    stacked = [sum(values) for values in zip(*(bar.y for bar in figure.data), strict=True)]
    assert stacked == [len(r.committed) for r in run.trace.steps]


def test_summary_names_settings_machine_and_result(run):
    html = summary.summary_html(run)
    meta, s = run.trace.meta, run.trace.summary
    settings = meta.settings
    if meta.method == Method.LOOKAHEAD:
        assert f"W={settings.window} N={settings.ngram} G={settings.guesses}" in html
        assert f"lookahead settings, {settings.planner.value} plan" in html
    elif meta.method == Method.SPECULATIVE:
        assert f"draft {meta.draft.model} ({meta.draft.dtype}), k={meta.draft.tokens}" in html
        assert "Speculative decoding ran" in html and "went to the draft model" in html
    else:
        assert f"match ≤{meta.lookup.ngram} tokens, propose {meta.lookup.tokens}" in html
        assert "Prompt lookup ran" in html
    assert escape(meta.machine.model) in html and escape(meta.machine.device_name) in html
    assert f"<b>{s.tokens}</b><span>new tokens" in html
    assert f"<b>{s.steps} vs {run.greedy.summary.steps}</b>" in html
    assert f"<b>{s.tokens_per_step:.2f}</b><span>tokens per step" in html


def test_model_html_names_the_machine_or_the_model_to_load():
    machine = example("python").trace.meta.machine
    html = summary.model_html(machine, "some-default")
    assert escape(machine.model) in html and escape(machine.device_name) in html and "some-default" not in html
    assert f"{machine.parameters / 1e6:.0f} M parameters" in html
    waiting = summary.model_html(None, "SmolLM2-135M-Instruct")
    assert "none yet" in waiting and "<b>SmolLM2-135M-Instruct</b> loads on the first Run" in waiting


def test_notice_says_why_a_run_was_refused():
    assert "ll-over" not in summary.notice_html(None)
    refused = summary.notice_html("too <long>", "Refused")
    assert "<b>Refused:</b> too &lt;long&gt;" in refused and "ll-over" in refused


# ----------------------------------------------------------------------------------------------
# Speed: replaying a step must stay well under 50 ms, even for the widest settings the budget allows

WIDEST = Settings(window=32, ngram=8, guesses=31)  # 1 + 31 + 6 * 32 + 31 * 7 = 441 tokens fed


def widest_step_run(run: Run) -> Run:
    """`run` with its last step replaced by a full step of WIDEST, built by the engine's own parts."""
    from lookahead_core.decoding import input_rows, lay_out
    from lookahead_core.planning import FullPlanner
    from lookahead_core.pool import Guess
    from lookahead_core.proposers import Proposal, guess_branch, window_branch
    from lookahead_core.verify import commit_sources, verify
    from lookahead_core.window import JacobiWindow

    width, ngram, count = WIDEST.window, WIDEST.ngram, WIDEST.guesses
    ids = [int(k) for k in run.trace.vocab]
    rng = random.Random(0)

    def draw(n: int) -> list[int]:
        return [rng.choice(ids) for _ in range(n)]

    levels = [draw(width) for _ in range(ngram - 1)]
    current = levels[0][0]
    guesses = [draw(ngram - 1) for _ in range(count)]
    proposal = Proposal(
        window_branch(JacobiWindow([list(level) for level in levels], ngram)),
        [guess_branch(Guess(g, Source.WINDOW, Reason.ONE_TOKEN_KEY), lane) for lane, g in enumerate(guesses)],
    )
    plan = FullPlanner().plan(proposal)
    fed = lay_out(current, proposal, plan)
    verified = verify(fed.candidates, draw(len(fed.tokens)))
    update = draw(width)
    harvested = [[level[j] for level in levels] + [update[j]] for j in range(width)]
    last = run.trace.steps[-1]
    record = StepRecord(
        last.step,
        last.method,
        StepKind.DECODE,
        last.position,
        fed.layout.size,
        verified.block,
        commit_sources(len(verified.block), verified),
        None,
        0.01,
        0.01,
        input_rows(fed, last.position),
        plan.record,
        WindowRecord(True, False, levels, list(range(1, ngram)), update, harvested),
        PoolRecord(
            current,
            draw(1)[0],
            [PoolEntry(g, Source.WINDOW, lane) for lane, g in enumerate(guesses)],
            [NGram(column[0], column[1:], Source.WINDOW) for column in harvested],
            [],
            500,
            500 - width,
        ),
        verified,
    )
    return with_record(run, len(run.trace.steps) - 1, record, WIDEST)


def test_every_step_renders_in_well_under_50_ms(run):
    slowest = 0.0
    for index in range(replay.last_step(run) + 1):
        started = time.perf_counter()
        replay.panel_values(run, index)
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.05


def test_the_widest_allowed_step_renders_in_under_50_ms(lookahead_run):
    run = lookahead_run
    wide = widest_step_run(run)
    last = replay.last_step(wide)
    record = wide.trace.steps[last]
    assert record.tokens_fed == len(record.rows) == 441
    best = min(timed(lambda: replay.panel_values(wide, last)) for _ in range(3))
    html = replay.panels(wide, last)
    assert html["mask"].count("<g fill=") == 441
    assert html["window"].count("<td") == WIDEST.ngram * WIDEST.window
    assert html["pool"].count('<li class="ll-entry ll-chosen">') == WIDEST.guesses
    assert best < 0.05


def test_the_widest_step_is_drawn_as_recorded():
    """The synthetic widest step passes the same checks as a recorded one (so its timing is a fair one)."""
    wide = widest_step_run(example("python"))
    last = replay.last_step(wide)
    check_window(wide.trace.steps[last], wide.trace.vocab, WIDEST.ngram)
    check_verification(wide.trace.steps[last], wide.trace.vocab)
    check_mask(wide.trace.steps[last], wide.trace.vocab)


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def test_a_sampled_run_shows_every_draw():
    item = next(p for p in PRESETS if "sampling" in p)
    run = library.load_run(library.example_path(item))
    trace = run.trace
    for index, record in enumerate(trace.steps[1:], start=1):
        html = verification.verification_html(record, trace.vocab)
        draws = [d for p in record.verification.positions for d in p.draws]
        assert html.count('class="ll-pbar"') == len(draws)
        for d in draws:
            assert f"P = {d.probability:.3f}" in unescape(html) and f"draw was {d.uniform:.3f}" in unescape(html)
        text = caption.step_caption(trace, index)
        assert f"committed {len(record.committed)} token" in text
        assert all(f"probability {d.probability:.2f}" in unescape(text) for d in draws)
        assert "identical to greedy" not in progress.progress_html(run, index)
    assert any(d.accepted for r in trace.steps[1:] for p in r.verification.positions for d in p.draws)
    assert any(not d.accepted for r in trace.steps[1:] for p in r.verification.positions for d in p.draws)
    assert "plain sampling" in summary.summary_html(run)


@pytest.mark.parametrize("preset_id", [p["id"] for p in PRESETS if p.get("method", "lookahead") != "lookahead"])
def test_a_method_without_window_or_pool_says_so(preset_id):
    run = example(preset_id)
    method = run.trace.meta.method
    for index in range(replay.last_step(run) + 1):
        shown = replay.panels(run, index)
        assert shown["window"] == methods.no_window_html(method) and "has no Jacobi window" in shown["window"]
        assert shown["pool"] == methods.no_pool_html(method) and "keeps no n-gram pool" in shown["pool"]
    assert ">" + methods.SHORT_NAMES[method] + "<" in replay.panels(run, 1)["progress"]


def test_a_draft_chain_shows_each_tokens_q_and_the_correction():
    run = example("study-tips-speculative")
    vocab = run.trace.vocab
    steps = run.trace.steps[1:]
    for record in steps:
        html = verification.verification_html(record, vocab)
        (chain,) = record.verification.candidates
        assert all(f"<span>{q:.2f}</span>" in html for q in chain.draft_probabilities)
        if chain.verdict == Verdict.WON:
            whole = chain.matched == len(chain.tokens)
            assert ('<span class="ll-plus">+ bonus</span>' in html) == whole
            assert ('<span class="ll-plus">+ correction</span>' in html) == (not whole)
        assert methods.draft_words(record) in caption.caption_html(run.trace, record.step)
    assert any(r.verification.candidates[0].verdict == Verdict.WON for r in steps)


MANY_SCRIPTS = "翻译成英文：你好，世界。Привет, мир! مرحبا بالعالم 🎉🚀 Say it in all four."


def test_text_in_every_script_is_drawn_whole(default_model):
    """Characters split across tokens are drawn whole: the prompt as typed, the output with no U+FFFD."""
    from lookahead_core.config import LookaheadConfig
    from lookahead_core.models import encode_prompt
    from lookahead_core.trace import record_trace

    ids = encode_prompt(default_model.tokenizer, MANY_SCRIPTS)
    trace = record_trace(default_model, ids, Method.LOOKAHEAD, LookaheadConfig(3, 3, 3), 24, MANY_SCRIPTS)
    split = [trace.vocab[str(t)] for t in ids if "‹" in trace.vocab[str(t)]]
    assert split, "no token of the prompt is a split character: nothing was tested"
    assert all(re.search(r"‹[0-9a-f]{2}( [0-9a-f]{2})*›", text) for text in split)  # its bytes, marked
    last = len(trace.steps) - 1
    html = output.output_html(trace, last)
    assert escape(MANY_SCRIPTS) in html and "\ufffd" not in html
    for index in range(last + 1):  # the window, pool and verification chips show bytes, never U+FFFD
        assert not [name for name, panel in replay.panels(Run(trace, trace), index).items() if "\ufffd" in panel]
    whole = default_model.tokenizer.decode(trace.summary.new_token_ids, skip_special_tokens=True)
    assert "".join(trace.pieces) == whole.rstrip("\ufffd")
