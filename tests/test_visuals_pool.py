"""The pool panel: the n-grams under the current token's key, and which became which guess, as
`PoolEntry.guess` records it."""

from __future__ import annotations

import dataclasses
import re

from tests.visual_checks import chips_in, decode_steps, guesses_of, shown
from visuals import pool


def test_pool_lists_the_key_entries_and_picked_guesses(lookahead_run):
    run = lookahead_run
    trace = run.trace
    for _, record in decode_steps(run):
        p = record.pool
        html = pool.pool_html(record, trace.vocab, trace.meta.settings.lookahead.guesses)
        assert f'title="id {p.key} · the current token c"' in html
        items = re.findall(r'<li class="ll-entry( ll-chosen)?">(.*?)</li>', html)
        assert len(items) == len(p.entries)
        reasons = {c.lane: c.reason for c in guesses_of(record)}
        assert [e.guess for e in pool.shown_entries(record)][: len(reasons)] == sorted(reasons)  # guess 1 first
        for (chosen, item), entry in zip(items, pool.shown_entries(record), strict=True):
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
    html = pool.pool_html(moved, trace.vocab, trace.meta.settings.lookahead.guesses)
    items = re.findall(r'<li class="ll-entry( ll-chosen)?">(.*?)</li>', html)
    assert [bool(chosen) for chosen, _ in items] == [True] + [False] * (len(entries) - 1)  # the guess first
    assert f">guess {lane + 1}" in items[0][1]


def test_the_pools_change_adds_up_with_what_was_added_and_evicted(lookahead_run):
    """The panel once read "+0 this step" beside "Added (8)" and "2 evicted": 6 of the 8 were in the pool already
    (moved to newest). The header now splits the added into new and already there, and its parts add up, on every
    recorded step and on that one (its negative: a step that added nothing says no split)."""
    trace = lookahead_run.trace
    for _, record in decode_steps(lookahead_run):
        p = record.pool
        header = pool.size_words(record)
        new = int(re.search(r": (\d+) new", header).group(1)) if " new" in header else 0
        evicted = int(re.search(r"(\d+) evicted", header).group(1)) if "evicted" in header else 0
        again = re.search(r"(\d+) of the (\d+) added already there", header)
        assert new - evicted == p.size - p.size_before and evicted == len(p.evicted)
        assert new + (int(again.group(1)) if again else 0) == len(p.added)
        assert again is None or int(again.group(2)) == len(p.added)
    record = next(r for _, r in decode_steps(lookahead_run) if len(r.pool.added) >= 8)
    added = [dataclasses.replace(record.pool.added[0]) for _ in range(8)]
    evicted = added[:2]
    step = dataclasses.replace(
        record, pool=dataclasses.replace(record.pool, added=added, evicted=evicted, size=50, size_before=50)
    )
    assert "50 n-grams in the pool, +0 this step: 2 new, 2 evicted, 6 of the 8 added already there" in pool.pool_html(
        step, trace.vocab, trace.meta.settings.lookahead.guesses
    )
    quiet = dataclasses.replace(
        record, pool=dataclasses.replace(record.pool, added=[], evicted=[], size=50, size_before=50)
    )
    assert pool.size_words(quiet) == "50 n-grams in the pool, +0 this step"
