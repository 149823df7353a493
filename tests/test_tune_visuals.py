"""The tune map's visuals, pure functions of a TuneReport: a map per method with its text labels, the break-even
contour and the chosen cell, the two curves, a table for screen readers, AA contrast, and escaped text."""

from __future__ import annotations

import dataclasses

from lookahead_core.records import Method
from visuals.palette import contrast
from visuals.tune import SCALE, TEXT, curves_figure, method_figure, tune_page, tune_table, tune_table_html

from .test_tune import report


def test_black_text_reads_at_aa_on_every_colour_of_the_scale():
    assert all(contrast(TEXT, hue) >= 4.5 for _, hue in SCALE)


def test_each_cell_says_its_speedup_in_words_not_colour_alone():
    figure = method_figure(report(), Method.LOOKAHEAD)
    predicted, measured = (t for t in figure.data if t.type == "heatmap")
    words = [w for row in predicted.text for w in row if w]
    assert any("1.30× gain" in w for w in words) and any("0.70× loss" in w for w in words)
    timed = [w for row in measured.text for w in row if w]
    assert "1.25× gain<br>error +4%<br><b>chosen</b>" in timed and "not timed" in timed


def test_the_lookahead_map_draws_the_break_even_contour_and_rings_the_chosen_cell():
    figure = method_figure(report(), Method.LOOKAHEAD)
    contours = [t for t in figure.data if t.type == "contour"]
    assert contours and all(c.contours.start == 1.0 == c.contours.end for c in contours)
    frames = [shape for shape in figure.layout.shapes if shape.name == "chosen"]
    assert len(frames) == 2 and (frames[0].x0, frames[0].y0) == (-0.47, -0.47)  # N=3, W=2: the first cell
    predicted = next(t for t in figure.data if t.type == "heatmap")
    assert predicted.text[0][0].endswith("<b>chosen</b>") and "chosen" not in predicted.text[1][0]


def test_the_curves_figure_shows_the_measured_cost_and_each_methods_tokens_per_step():
    figure = curves_figure(report())
    names = {t.name for t in figure.data}
    assert {"measured step cost", "lookahead", "prompt-lookup"} <= names
    symbols = {t.marker.symbol for t in figure.data if t.name in ("lookahead", "prompt-lookup")}
    assert len(symbols) == 2  # told apart by shape, not by colour


def test_the_table_lists_every_cell_with_predicted_measured_and_error():
    html = tune_table_html(report())
    assert html.count("<tr>") == 1 + 3 and "<caption>" in html and "scope='col'" in html
    assert "lookahead W=2 N=3 G=2 (chosen)" in html and "+4%" in html and "not timed" in html


def test_visitor_text_is_escaped_in_the_page():
    hostile = dataclasses.replace(report(), dataset="<script>alert(1)</script>")
    page = tune_page(hostile)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_the_cli_table_says_the_load_the_prediction_error_and_the_held_out_check():
    text = tune_table(report())
    assert "load average: 3.00" in text and "other programs used 1.2 of 2 cores" in text
    assert "predicted within 15% of measured on 1 of 2 timed cells" in text
    assert "the map's choice (window=2 ngram=3 guesses=2) 1.20x" in text


def test_the_table_says_the_maps_time_apart_from_the_held_out_checks():
    assert "1.7 min (1.0 min the map, 0.7 the held-out check)" in tune_table(report())
    older = dataclasses.replace(report(), held_out=dataclasses.replace(report().held_out, seconds=None))
    assert "; 1.7 min; " in tune_table(older)


def test_a_small_share_accepted_never_reads_as_none_beside_the_tokens_it_gained():
    """A wide window verifies hundreds of candidate tokens a step: 0.14 of them accepted (1.14 tokens per step) once
    read "accepted 0%" in the sweep's table. A share above 0 now says so; a share of exactly 0 is the control."""
    wide = dataclasses.replace(report().cells[1], tokens_per_step=1.14, acceptance=0.0012)
    none = dataclasses.replace(report().cells[1], tokens_per_step=1.0, acceptance=0.0)
    rare = dataclasses.replace(report().cells[1], tokens_per_step=1.01, acceptance=0.0004)
    for cells, shown in (([wide], "0.1%"), ([none], "0%"), ([rare], "under 0.1%")):
        sweep = dataclasses.replace(report(), cells=cells, chosen={})
        assert f"<td>{cells[0].tokens_per_step:.2f}</td>" in tune_table_html(sweep)
        assert f"<td>{shown}</td>" in tune_table_html(sweep) and f" {shown}" in tune_table(sweep)
    assert "<td>0%</td>" not in tune_table_html(dataclasses.replace(report(), cells=[wide], chosen={}))


def test_counts_of_one_read_in_the_singular():
    """A sweep of one prompt once read "1 prompts of HumanEval/0"; two prompts are the control."""
    one = dataclasses.replace(report(), prompts=["a"], max_new_tokens=1)
    assert "1 prompt of humaneval, 1 new token;" in tune_table(one)
    assert "on 1 held-out prompt, 3 rounds" in tune_table(one)
    assert "2 prompts of humaneval, 64 new tokens;" in tune_table(report())


def test_the_sweeps_words_open_in_plain_words_naming_the_machine():
    from visuals.tune import tune_summary_html

    html = tune_summary_html(report())
    plain = "Each cell is one method at one setting. Its speed against plain decoding is predicted from two curves"
    assert html.index(plain) < html.index("tiny on CPU") and "measured on the 2-core CPU of 2026-11-26" in html
    assert "2 cells were also timed by the clock" in html
    one = dataclasses.replace(report(), cells=report().cells[:1], chosen={Method.LOOKAHEAD: 0})
    assert "1 cell was also timed by the clock" in tune_summary_html(one)


def test_a_sweep_that_timed_no_cell_says_predicted_and_draws_no_empty_clock_map():
    """A sweep that timed 0 cells showed two empty clock heatmaps under "checked by the clock": its maps are now the
    predicted ones alone, titled so, and its words say every speedup is predicted; a timed sweep keeps both maps
    (the control)."""
    from visuals.tune import MEASURED, tune_summary_html

    untimed = dataclasses.replace(
        report(), cells=[dataclasses.replace(c, measured_speedup=None) for c in report().cells]
    )
    for method in (Method.LOOKAHEAD, Method.PROMPT_LOOKUP):
        figure = method_figure(untimed, method)
        assert [t.name for t in figure.data if t.type == "heatmap"] == ["predicted"]
        titles = [a.text for a in figure.layout.annotations]
        assert titles == ["predicted from the curves: no cell was timed"] and MEASURED not in titles
        assert figure.layout.title.text.endswith("predicted only")
        frames = [shape for shape in figure.layout.shapes if shape.name == "chosen"]
        assert len(frames) == 1  # the chosen cell framed on the one map
    html = tune_summary_html(untimed)
    assert "no cell was timed by the clock in this sweep, so every speedup shown is predicted" in html
    assert "timed by the clock, to check" not in html and "(predicted over plain decoding)" in html
    timed = method_figure(report(), Method.LOOKAHEAD)
    assert [t.name for t in timed.data if t.type == "heatmap"] == ["predicted", "measured"]
    assert "(predicted / measured over plain decoding)" in tune_summary_html(report())
