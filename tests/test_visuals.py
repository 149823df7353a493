"""Every panel renders every step of the shipped example runs, and says what the record says.

No model, except two short runs of the engine on a tiny random Llama for steps the examples lack
(G = 0, and more trajectory wins).
"""

from __future__ import annotations

import dataclasses
import random
import re
import subprocess
import sys
import time
from html import escape
from pathlib import Path

import pytest

from visuals import (
    caption,
    library,
    mask,
    output,
    palette,
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


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS])
def run(request) -> dict:
    return library.load_run(library.example_path(library.preset(PRESETS, request.param)))


def decode_steps(run: dict):
    trace = run["lookahead"]
    return [(i, r) for i, r in enumerate(trace["steps"]) if r["kind"] == "decode"]


def chip_count(html: str, kind: str) -> int:
    return len(re.findall(rf'class="ll-tok ll-{kind}[ "]', html))


def shown(vocab: dict, token_id: int) -> str:
    return escape(tokens.visible(tokens.token_text(vocab, token_id)))


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
        "import sys, visuals.replay, visuals.summary, visuals.library, visuals.palette; "
        "bad = {'torch', 'gradio', 'transformers'} & set(sys.modules); assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# ----------------------------------------------------------------------------------------------
# Panels, step by step


def test_every_panel_renders_every_step(run):
    for index in range(replay.last_step(run) + 1):
        shown_panels = replay.panels(run, index)
        assert list(shown_panels) == list(replay.PANELS)
        assert all(isinstance(html, str) and html for html in shown_panels.values())


def test_window_shows_every_level_and_outlines_harvested_columns(run):
    trace = run["lookahead"]
    ngram = trace["meta"]["settings"]["ngram"]
    for _, record in decode_steps(run):
        html = window.window_html(record, trace["vocab"], ngram)
        width = len(record["window"][0])
        assert html.count("<td") == (len(record["window"]) + 1) * width
        assert html.count("ll-h-top") == (width if record["harvested"] else 0)
        assert chip_count(html, "new") == len(record["jacobi_update"])
        assert chip_count(html, "current") == 1
        for token in [t for level in record["window"] for t in level] + record["jacobi_update"]:
            assert shown(trace["vocab"], token) in html
        assert ("Warm-up" in html) == record["warming_up"]


def test_window_colours_levels_by_origin():
    assert window.level_origin(step=1, levels=1, level=0) == 0
    assert window.level_origin(step=3, levels=3, level=2) == 2  # warm-up: level l came from step l
    assert window.level_origin(step=10, levels=4, level=0) == 6  # full: the window shifts one level per step
    assert window.level_origin(step=10, levels=4, level=3) == 9


def test_pool_lists_the_key_entries_and_picked_guesses(run):
    trace = run["lookahead"]
    for index, record in decode_steps(run):
        previous = trace["steps"][index - 1].get("pool_size")
        html = pool.pool_html(record, trace["vocab"], previous)
        assert f'title="id {record["pool_key"]} · the current token c"' in html
        assert html.count('<li class="ll-entry') == len(record["pool_entries"])
        assert html.count("ll-chosen") == len(record["guesses"])
        assert f"{record['pool_size']} n-grams in the pool" in html
        assert html.count('class="ll-ngram"') == len(record["pool_added"]) + len(record["pool_evicted"])
        assert len([a for a in record["pool_added"] if a[2] == "window"]) == len(record["harvested"])
        for guess, reason in enumerate(record["guess_reasons"]):
            assert f'title="picked for verification: {reason}">guess {guess + 1}' in html


def shown_trajectory_columns(record: dict) -> list[int]:
    """The trajectories the panel must show: the 3 longest matches (first column on ties) and the winner."""
    matched = record.get("trajectory_matched", [])
    ranked = sorted((j for j, m in enumerate(matched) if m), key=lambda j: (-matched[j], j))[:3]
    winner = record.get("trajectory_winner")
    return sorted(set(ranked) | ({winner} if winner is not None else set()))


def check_verification(record: dict, vocab: dict) -> None:
    """The verification panel of `record` shows every guess and the best trajectories as the record says."""
    html = verification.verification_html(record, vocab)
    for guess, matched in zip(record["guesses"], record["matched"], strict=True):
        assert f"matched {matched} of {len(guess)}" in html
    columns = shown_trajectory_columns(record)
    assert html.count("trajectory</th>") == len(columns)
    for j in columns:
        assert f"window column {j} trajectory</th>" in html
        assert f"matched {record['trajectory_matched'][j]} of {len(record['trajectories'][j])}" in html
    if record.get("trajectories") and not columns:
        assert "No window trajectory matched" in html
    paths = list(zip(record["guesses"], record["matched"], strict=True))
    paths += [(record["trajectories"][j], record["trajectory_matched"][j]) for j in columns]
    assert chip_count(html, "accepted") == sum(m for _, m in paths) + record["sources"].count("accepted")
    assert chip_count(html, "mismatch") == sum(m < len(tokens) for tokens, m in paths)
    won = record["winner"] is not None or record.get("trajectory_winner") is not None
    assert html.count("★") == html.count('class="ll-winner"') == won
    committed = html[html.index('class="ll-committed"') :]
    assert [shown(vocab, t) in committed for t in record["committed"]] == [True] * len(record["committed"])


def test_verification_marks_accepted_mismatch_and_the_winner(run):
    trace = run["lookahead"]
    for _, record in decode_steps(run):
        check_verification(record, trace["vocab"])


def test_trajectory_tooltips_name_the_predictions_from_the_window(run):
    """Trajectory token k is checked against the guaranteed token (k = 0) or the prediction at token k-1's cell."""
    trace = run["lookahead"]
    for _, record in decode_steps(run):
        html = verification.verification_html(record, trace["vocab"])
        for j in shown_trajectory_columns(record):
            cells = window.trajectory_cells(len(record["window"]), j)
            assert [record["window"][level][c] for level, c in cells] == record["trajectories"][j]
            expected = [record["block"][0]] + [record["window_predictions"][level][c] for level, c in cells]
            for k, (level, c) in enumerate(cells[: record["trajectory_matched"][j]]):
                said = tokens.named(trace["vocab"], expected[k])
                assert escape(f"trajectory token {k}: level {level}, column {c}") in html
                assert escape(f"accepted: the model also predicted {said} here") in html


def check_window_path(record: dict, vocab: dict, ngram: int) -> None:
    """The window panel marks exactly the accepted tokens of the winning trajectory, and names it."""
    html = window.window_html(record, vocab, ngram)
    column = record.get("trajectory_winner")
    if column is None:
        assert "ll-path" not in html and "Dashed" not in html
        return
    matched = record["trajectory_matched"][column]
    marked = re.findall(r'class="ll-tok ll-\w+ ll-path"[^>]* title="[^"]*accepted: token (\d+) of[^"]*">([^<]*)<', html)
    assert sorted((int(k), text) for k, text in marked) == [
        (k, shown(vocab, t)) for k, t in enumerate(record["block"][:matched])
    ]
    assert f"of column {column}'s Jacobi trajectory that verification accepted" in html


def test_window_marks_the_cells_of_the_accepted_trajectory(run):
    trace = run["lookahead"]
    for _, record in decode_steps(run):
        check_window_path(record, trace["vocab"], trace["meta"]["settings"]["ngram"])


def test_window_legend_names_the_trajectory_outline():
    html = palette.legend_html("window")
    assert "harvested column" in html and "accepted trajectory" in html and "ll-swatch-path" in html


def test_output_shows_the_committed_tokens_so_far(run):
    trace = run["lookahead"]
    produced = 0
    for index, record in enumerate(trace["steps"]):
        produced += len(record["committed"])
        html = output.output_html(trace, index)
        assert html.count('class="ll-tok') == produced
        assert html.count("ll-this") == len(record["committed"])
        assert f"step {index} · {record['sources'][0]}" in html


def test_mask_has_one_row_per_token_fed_and_the_recorded_visibility(run):
    trace = run["lookahead"]
    for _, record in decode_steps(run):
        html = mask.mask_html(record, trace["vocab"])
        assert html.count("<g fill=") == record["tokens_fed"] == len(record["input_ids"])
        seen = mask.visible_rows(record["parents"])
        cells = sum(length for row in seen for _, length in mask.runs(row))
        rects = re.findall(r'<g fill="[^"]+"><title>.*?</g>', html)
        widths = sum(int(w) + 1 for g in rects for w in re.findall(r'width="(\d+)" height="13"', g))
        assert widths == cells * mask.CELL
        for position in set(record["position_ids"]):
            assert f'class="ll-pos">{position}</text>' in html


def test_mask_visibility_follows_parents():
    parents = [-1, 0, 1, 0, 3]  # c, a window chain of two, a guess of two
    assert mask.visible_rows(parents) == [[0], [0, 1], [0, 1, 2], [0, 3], [0, 3, 4]]
    assert mask.runs([0, 1, 2, 5, 7, 8]) == [(0, 3), (5, 1), (7, 2)]


def check_caption(trace: dict, index: int) -> None:
    """The caption of step `index` says how many tokens it committed and which guess or trajectory won."""
    record = trace["steps"][index]
    html = caption.caption_html(trace, index)
    count = len(record["committed"])
    if count == 1:
        assert "committed only the guaranteed next token" in html
    else:
        assert f"committed {count} tokens" in html
    if record["winner"] is not None:
        winner = record["winner"]
        assert f"guess {winner + 1} matched {caption.plural(record['matched'][winner], 'token')}" in html
    column = record.get("trajectory_winner")
    if column is not None:
        matched = caption.plural(record["trajectory_matched"][column], "token")
        assert f"olumn {column}'s Jacobi trajectory matched {matched}" in html
        assert "the trajectory's first token matched it" in html or count == 1
        if record["guesses"]:
            assert "no guess beat the window" in html
    if record.get("note"):
        assert escape(record["note"]) in html
    assert f"Step {index} of {len(trace['steps']) - 1}" in html


def test_caption_says_what_the_step_committed(run):
    trace = run["lookahead"]
    assert "Prefill" in caption.caption_html(trace, 0)
    for index, _ in decode_steps(run):
        check_caption(trace, index)


def test_caption_example_wording():
    vocab = {"1": "def", "2": " f", "3": "(", "4": "x", "5": ")"}
    record = {
        "step": 5,
        "kind": "decode",
        "position": 9,
        "pool_key": 1,
        "pool_entries": [[[2, 3], "prompt"]] * 3,
        "guesses": [[9, 9], [2, 3], [2, 4]],
        "winner": 1,
        "matched": [0, 2, 1],
        "committed": [2, 3, 4],
        "sources": ["guaranteed", "accepted", "bonus"],
        "warming_up": False,
        "window": [[1]],
        "note": None,
        "stop": None,
        "tokens_fed": 7,
        "forward_seconds": 0.01,
    }
    trace = {"steps": [record] * 6, "vocab": vocab, "meta": {"machine": {"device_name": "CPU"}}}
    text = caption.step_caption(trace, 5)
    assert text == (
        "The key ‘def’ had 3 n-grams in the pool; guess 2 matched 2 tokens, so this one forward pass committed "
        "3 tokens: the guaranteed next token (the guess's first token matched it), 1 more accepted token and the "
        "bonus token."
    )
    window_won = {**record, "winner": None, "trajectory_winner": 3, "trajectory_matched": [0, 1, 1, 2]}
    text = caption.step_caption({**trace, "steps": [window_won] * 6}, 5)
    assert text == (
        "The key ‘def’ had 3 n-grams in the pool; no guess beat the window: column 3's Jacobi trajectory matched "
        "2 tokens, so this one forward pass committed 3 tokens: the guaranteed next token (the trajectory's first "
        "token matched it), 1 more accepted token and the bonus token."
    )


NEW_FIELDS = ("trajectories", "trajectory_matched", "trajectory_winner", "window_predictions", "block", "pool_added")


def test_records_from_before_trajectories_still_render(run):
    """Traces recorded before the window's trajectories were verified lack their fields: nothing breaks."""
    old_steps = [{k: v for k, v in r.items() if k not in NEW_FIELDS} for r in run["lookahead"]["steps"]]
    old = {**run, "lookahead": {**run["lookahead"], "steps": old_steps}}
    for index in range(replay.last_step(old) + 1):
        shown_panels = replay.panels(old, index)
        assert "trajectory" not in shown_panels["verification"] and "ll-path" not in shown_panels["window"]


def test_an_old_step_with_no_guesses_says_why(run):
    trace = run["lookahead"]
    index, record = decode_steps(run)[-1]
    bare = {
        **{k: v for k, v in record.items() if k not in NEW_FIELDS},
        "guesses": [],
        "guess_sources": [],
        "guess_reasons": [],
        "guess_predictions": [],
        "matched": [],
        "winner": None,
        "pool_entries": [],
        "committed": record["committed"][:1],
        "sources": ["guaranteed"],
        "note": "G = 0: no guesses are verified, so each step commits one token",
    }
    steps = [*trace["steps"][:index], bare]
    single = {**trace, "steps": steps}
    assert "No guesses to verify" in verification.verification_html(bare, trace["vocab"])
    assert "G = 0: no guesses are verified" in pool.pool_html(bare, trace["vocab"])
    text = caption.step_caption(single, index)
    assert text.startswith("G = 0: no guesses are verified, so each step commits one token.")
    assert "Nothing was verified, so this forward pass committed only the guaranteed" in text


# ----------------------------------------------------------------------------------------------
# Runs of the engine on a tiny random Llama: trajectory wins, with guesses and with G = 0


class NumberTokenizer:
    """Token i reads "t{i}": all that recording a trace needs from a tokenizer."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return " ".join(f"t{i}" for i in ids)


# A repeated motif per G: the random model's greedy output settles into loops the window's trajectories catch.
TINY_MOTIFS = {0: [64, 17, 36, 17], 3: [12, 93, 9, 87]}


def tiny_run(guesses: int) -> dict:
    from lookahead_core import LookaheadConfig, record_run

    from .conftest import tiny_model

    lm = dataclasses.replace(tiny_model("llama"), tokenizer=NumberTokenizer())
    prompt = (TINY_MOTIFS[guesses] * 4)[:13]
    return record_run(lm, prompt, LookaheadConfig(window=4, ngram=4, guesses=guesses), 24)


@pytest.fixture(scope="module")
def tiny_runs() -> dict[int, dict]:
    """One recorded run per G in TINY_MOTIFS, keyed by G."""
    return {guesses: tiny_run(guesses) for guesses in TINY_MOTIFS}


@pytest.mark.parametrize("guesses", sorted(TINY_MOTIFS))
def test_tiny_runs_show_what_each_trajectory_win_says(tiny_runs, guesses):
    run = tiny_runs[guesses]
    trace = run["lookahead"]
    vocab, ngram = trace["vocab"], trace["meta"]["settings"]["ngram"]
    assert any(r["trajectory_winner"] is not None for _, r in decode_steps(run)), "no step won by a trajectory"
    for index, record in decode_steps(run):
        check_verification(record, vocab)
        check_window_path(record, vocab, ngram)
        check_caption(trace, index)
        assert all(replay.panels(run, index).values())


def test_with_g_0_the_note_leads_and_only_trajectories_are_verified(tiny_runs):
    trace = tiny_runs[0]["lookahead"]
    for index, record in decode_steps(tiny_runs[0]):
        assert record["guesses"] == [] and record["winner"] is None
        assert "only the window's own Jacobi trajectories can add tokens" in record["note"]
        text = caption.step_caption(trace, index)
        assert text.startswith(escape(record["note"]) + ".")
        column = record["trajectory_winner"]
        if column is None:
            assert "No window trajectory began with the guaranteed next token" in text
        else:
            matched = caption.plural(record["trajectory_matched"][column], "token")
            assert f"Column {column}'s Jacobi trajectory matched {matched}, so this one forward pass" in text
        assert "No guesses to verify" in verification.verification_html(record, trace["vocab"])


def test_a_run_of_one_token_is_only_the_prefill(run):
    ours, theirs = run["lookahead"], run["greedy"]
    one = {
        "lookahead": {**ours, "steps": ours["steps"][:1], "summary": {**ours["summary"], "steps": 1, "tokens": 1}},
        "greedy": {**theirs, "steps": theirs["steps"][:1], "summary": {**theirs["summary"], "steps": 1}},
    }
    assert replay.last_step(one) == 0
    assert "prefill alone" in summary.summary_html(one)
    assert all(replay.panel_values(one, 5))


def test_progress_counts_passes_against_greedy(run):
    ours = run["lookahead"]
    for index in (0, replay.last_step(run)):
        p = progress.progress_at(run, index)
        tokens_so_far = sum(len(r["committed"]) for r in ours["steps"][: index + 1])
        assert p["tokens"] == p["greedy_passes"] == tokens_so_far
        assert p["lookahead_passes"] == index + 1
        assert p["same_as_greedy"]  # float32 on the CPU: lookahead is exact
        html = progress.progress_html(run, index)
        assert f"{p['compression']:.2f}</b> tokens per step" in html
        assert ours["meta"]["machine"]["device_name"] in html


def test_tokens_per_step_chart_is_small_and_plain(run):
    figure = progress.tokens_per_step_figure(run)
    assert figure.layout.height <= 260
    assert figure.layout.template.to_plotly_json() == {"data": {"scatter": [{"type": "scatter"}]}}
    stacked = [sum(values) for values in zip(*(bar.y for bar in figure.data), strict=True)]
    assert stacked == [len(r["committed"]) for r in run["lookahead"]["steps"]]


def test_summary_names_settings_machine_and_result(run):
    html = summary.summary_html(run)
    meta, s = run["lookahead"]["meta"], run["lookahead"]["summary"]
    settings = meta["settings"]
    assert f"W={settings['window']} N={settings['ngram']} G={settings['guesses']}" in html
    assert meta["machine"]["model"] in html and escape(meta["machine"]["device_name"]) in html
    assert f"<b>{s['tokens']}</b><span>new tokens" in html
    assert f"<b>{s['steps']} vs {run['greedy']['summary']['steps']}</b>" in html
    assert f"<b>{s['tokens_per_step']:.2f}</b><span>tokens per step" in html


# ----------------------------------------------------------------------------------------------
# Speed: replaying a step must stay well under 50 ms, even for the widest settings the budget allows


def widest_step_run(run: dict) -> dict:
    """`run` with its last step replaced by a synthetic full step of W=32, N=8, G=31 (441 rows fed)."""
    from lookahead_core.layout import step_layout

    width, ngram, count = 32, 8, 31
    layout = step_layout(ngram - 1, width, count, ngram - 1)
    ids = [int(k) for k in run["lookahead"]["vocab"]]
    rng = random.Random(0)

    def tokens(n: int) -> list[int]:
        return [rng.choice(ids) for _ in range(n)]

    levels = [tokens(width) for _ in range(ngram - 1)]
    guesses = [tokens(ngram - 1) for _ in range(count)]
    record = dict(run["lookahead"]["steps"][-1])
    record.update(
        window=levels,
        jacobi_update=tokens(width),
        warming_up=False,
        harvested=[[level[j] for level in levels] + tokens(1) for j in range(width)],
        pool_entries=[[g, "window"] for g in guesses],
        pool_added=[[levels[0][j], tokens(ngram - 1), "window"] for j in range(width)],
        guesses=guesses,
        guess_sources=["window"] * count,
        guess_reasons=["one-token key"] * count,
        guess_predictions=[tokens(ngram - 1) for _ in range(count)],
        matched=[0] * count,
        winner=None,
        window_predictions=[tokens(width) for _ in range(ngram - 1)],
        trajectories=[[levels[lv][c] for lv, c in window.trajectory_cells(ngram - 1, j)] for j in range(width)],
        trajectory_matched=[0] * width,
        trajectory_winner=None,
        block=record["committed"][:1],
        committed=record["committed"][:1],
        sources=["guaranteed"],
        input_ids=tokens(layout.size),
        parents=list(layout.parents),
        position_ids=[record["position"] + d for d in layout.depths],
        tokens_fed=layout.size,
    )
    lookahead = {**run["lookahead"], "steps": [*run["lookahead"]["steps"][:-1], record]}
    lookahead["meta"] = {**lookahead["meta"], "settings": {"window": width, "ngram": ngram, "guesses": count}}
    return {**run, "lookahead": lookahead}


def test_every_step_renders_in_well_under_50_ms(run):
    slowest = 0.0
    for index in range(replay.last_step(run) + 1):
        started = time.perf_counter()
        replay.panel_values(run, index)
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.05


def test_the_widest_allowed_step_renders_in_under_50_ms(run):
    wide = widest_step_run(run)
    last = replay.last_step(wide)
    assert wide["lookahead"]["steps"][last]["tokens_fed"] == 441
    best = min(timed(lambda: replay.panel_values(wide, last)) for _ in range(3))
    html = replay.panels(wide, last)
    assert html["mask"].count("<g fill=") == 441
    assert best < 0.05


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started
