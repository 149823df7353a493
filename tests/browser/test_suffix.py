"""Suffix decoding in a real headless Chromium: its panel (the shipped suffix example at a step whose tree an
earlier run's output fed) and the lesson step on it; axe-core finds no serious or critical violation on either, and
the panel's tree is reached and read without a mouse. Its lane in a race is audited with the rest
of the race (test_accessibility.py) and named there.
"""

from __future__ import annotations

import pytest

from lookahead_core.records import SuffixRecord
from scripts.serving import open_page, wait_for_step
from tests.browser.chromium import wait_for_the_lit_panel_to_rest
from tests.browser.test_accessibility import DESKTOP, audited
from visuals import library
from visuals.lesson import LESSON

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

PRESET = "study-tips-suffix"
LESSON_STEP = next(number for number, item in enumerate(LESSON, 1) if item.title == "A pool that spans runs")


def tree_step() -> int:
    """The first step of the example whose tree a path of an earlier run's output won, more than one node deep."""
    run = library.example_run(PRESET)
    return next(
        i
        for i, s in enumerate(run.trace.steps)
        if (r := s.report(SuffixRecord)) is not None
        and s.verification.accepted > 1
        and any(n.parent >= 0 for n in r.nodes)
    )


def test_the_suffix_panel_reads_in_words_and_passes_axe(browser, served_on_app_model):
    index = tree_step()
    page, errors = open_page(browser, f"{served_on_app_model}?preset={PRESET}&step={index}", DESKTOP)
    try:
        wait_for_step(page, index)
        words = page.inner_text("#ll-pool")
        assert "The longest match" in words and "an earlier run: example:" in words and "✓ accepted" in words
        tree = page.get_by_role("region", name="the tree of what followed the match")
        items = tree.get_by_role("listitem")
        assert items.count() == len(library.example_run(PRESET).trace.steps[index].report(SuffixRecord).nodes)
        counts = "document.querySelectorAll('#ll-pool li.ll-node > :is(.ll-count, .ll-odds)')"
        sizes = page.evaluate(f"() => Array.from({counts}, count => getComputedStyle(count).fontSize)")
        assert len(set(sizes)) == 1, f"a deeper node is drawn smaller (Gradio's nested-list rule): {sizes}"
        tree.focus()  # a keyboard reaches the scrolling tree (it is a named, focusable region)
        assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == (
            "the tree of what followed the match"
        )
        assert audited(page, "the suffix panel") == {}
        assert errors == []
    finally:
        page.close()


def test_the_lesson_step_on_a_pool_that_spans_runs(browser, served_on_app_model):
    item = LESSON[LESSON_STEP - 1]
    page, errors = open_page(browser, f"{served_on_app_model}?lesson={LESSON_STEP}", DESKTOP)
    try:
        page.wait_for_function("() => document.querySelector('.ll-lit #ll-pool')")
        wait_for_step(page, item.step)
        wait_for_the_lit_panel_to_rest(page)
        assert "A pool that spans runs" in page.inner_text("#ll-lesson")
        assert "earlier run" in page.inner_text("#ll-pool")
        assert audited(page, "the lesson step on a pool that spans runs") == {}
        assert errors == []
    finally:
        page.close()
