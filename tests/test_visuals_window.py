"""The window panel: every level, labelled with its recorded origin; the harvested columns outlined; the
cells of the accepted trajectory marked. On every decode step of the lookahead examples."""

from __future__ import annotations

import dataclasses
import re

from lookahead_core.records import GuessSource
from tests.visual_checks import check_window, check_window_path, chips_in, decode_steps, example
from visuals import window


def test_window_shows_every_level_and_outlines_harvested_columns(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        check_window(record, trace.vocab, trace.meta.settings.lookahead.ngram)
        harvested = [a for a in record.pool.added if a.source == GuessSource.WINDOW]
        assert [[g.key, *g.continuation] for g in harvested] == record.window.harvested


def test_window_labels_each_level_with_its_recorded_origin():
    """Level labels, tooltips and colours follow WindowRecord.origins, whatever they say."""
    trace = example("german").trace  # N = 5: a full window has 4 levels
    record = next(r for r in trace.steps[1:] if len(r.window.levels) == 4)
    origins = [0, 42, 7, 0]  # no real window looks like this: the panel must not re-derive it
    odd = dataclasses.replace(record, window=dataclasses.replace(record.window, origins=origins))
    html = window.window_html(odd, trace.vocab, trace.meta.settings.lookahead.ngram)
    assert 'title="level 1: the Jacobi update of step 42">level 1<small>from step 42</small>' in html
    assert 'title="level 2: the Jacobi update of step 7">level 2<small>from step 7</small>' in html
    assert 'title="level 3: the initial fill (random prompt tokens)">level 3<small>fill</small>' in html
    rows = re.findall(r'<tr><th class="ll-rowhead" title="level (\d+)[^"]*">(.*?)</tr>', html)
    assert [level for level, _ in rows] == ["3", "2", "1", "0"]
    for (_, level_html), origin in zip(rows[:3], [0, 7, 42], strict=True):  # level 0 also holds c
        kinds = {kind for kind, _, _ in chips_in(level_html)}
        assert kinds == {"fill" if origin == 0 else "earlier"}
        assert all(window.origin_words(origin) in tip for _, tip, _ in chips_in(level_html))


def test_window_marks_the_cells_of_the_accepted_trajectory(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        check_window_path(record, trace.vocab, trace.meta.settings.lookahead.ngram)
