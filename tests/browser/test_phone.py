"""A phone (390 × 844 CSS pixels) in a real headless Chromium: no action widens the page past the screen (a race, a
sweep on card 8, the lesson walked from its first step to its last), and the lesson opened with its arrow, as the
page tells a newcomer to, applies its first step as `?lesson=1` does.

The app holds a tiny random Llama under the default model's name (a race and a sweep take seconds on it); no heads
or EAGLE layer ship for it, so the race runs greedy, lookahead, prompt lookup and speculative decoding.
"""

from __future__ import annotations

import dataclasses

import pytest

from lookahead_core.models import DEFAULT_MODEL
from scripts.serving import PHONE, VIEWPORT, open_page, race_to_end, running_app, wait_for_step
from tests.browser.chromium import lit_box, walk_lesson
from tests.test_bench import char_tokenizer
from tests.tiny import tiny_model
from visuals import library
from visuals.lesson import LESSON

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")
# A prompt that fits the tiny model's context of 256 tokens (its tokenizer reads one character a token)
SHORT_PROMPT = "a, b, c, a, b, c, a, b"
PAGE_WIDTH = "() => document.documentElement.scrollWidth"
ARROW = "Toggle Sidebar"  # Gradio's name for the sidebar's arrow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app holding a tiny random Llama under the default model's name, with a cache of its own (its step costs
    must not be taken for the real model's), and no heads or EAGLE layer shipped for it."""
    from lab.train import heads

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setattr(heads, "ships", lambda lm, needs: False)  # the shipped ones are the real model's
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=char_tokenizer(), name=DEFAULT_MODEL)
    with running_app(lm) as url:
        yield url
    monkeypatch.undo()


def opened(browser, url: str, viewport: dict = PHONE):
    """A page once its own load event has filled it (the default preset's note and step 0)."""
    page, errors = open_page(browser, url, viewport)
    page.wait_for_function("() => document.querySelector('#ll-preset-caption').innerText.trim() !== ''")
    wait_for_step(page, 0)
    return page, errors


def assert_as_wide_as_the_screen(page, after: str) -> None:
    width = page.evaluate(PAGE_WIDTH)
    print(f"\n{after}: the page is {width} px wide on a {PHONE['width']} px screen")
    assert width <= PHONE["width"], f"after {after} the page is {width} px wide"


def within_the_screen(page, selector: str) -> bool:
    """Whether every element `selector` finds lies across the screen from its left edge to its right."""
    boxes = [page.locator(selector).nth(i).bounding_box() for i in range(page.locator(selector).count())]
    return boxes != [] and all(b is not None and b["x"] >= 0 and b["x"] + b["width"] <= PHONE["width"] for b in boxes)


def test_on_a_phone_a_race_leaves_the_page_as_wide_as_the_screen(served, browser):
    page, errors = opened(browser, served)
    try:
        page.fill("#ll-controls textarea", SHORT_PROMPT)
        max_tokens = page.locator("#ll-max input[type=number]")
        max_tokens.fill("8")
        max_tokens.press("Enter")
        lanes = race_to_end(page)
        assert len(lanes) == 5 and all(lane["text"] == lanes[0]["text"] for lane in lanes)  # no heads: no Medusa
        page.wait_for_function("() => document.querySelectorAll('#ll-race .js-plotly-plot .main-svg').length >= 2")
        assert "method" in page.inner_text("#ll-race-summary table")
        assert_as_wide_as_the_screen(page, "a race")
        for shown in ("#ll-race-run", "#ll-race-summary", "#ll-race-playback", "#ll-race .js-plotly-plot"):
            assert within_the_screen(page, shown), f"{shown} is cut off"
        assert errors == []
    finally:
        page.close()


def test_on_a_phone_a_sweep_leaves_the_page_as_wide_as_the_screen(served, browser):
    page, errors = opened(browser, served)
    try:
        page.locator("#ll-tune").scroll_into_view_if_needed()
        page.get_by_role("radio", name="your prompts").check()
        page.get_by_text("Your own prompts, the methods and lookahead's W and N").click()
        for selector, text in (
            ("#ll-tune-prompts", f"{SHORT_PROMPT}\n---\nx = 1\ny = 2\nx = 1\n"),
            ("#ll-tune-windows", "2, 3"),
        ):
            box = page.locator(f"{selector} textarea, {selector} input").first
            box.fill(text)
            box.press("Tab")
        page.click("#ll-tune-run")
        page.wait_for_selector("#ll-tune-table table", timeout=300_000)
        page.wait_for_selector("#ll-tune .js-plotly-plot .heatmaplayer")
        assert_as_wide_as_the_screen(page, "a sweep")
        assert within_the_screen(page, "#ll-tune-table") and within_the_screen(page, "#ll-tune-run")
        assert errors == []
    finally:
        page.close()


def lit_id(page) -> str:
    return page.evaluate(
        "() => { const lit = document.querySelector('.ll-lit'); if (!lit) return '';"
        " return lit.id.startsWith('ll-') ? lit.id : (lit.querySelector('[id^=ll-]') || {id: ''}).id; }"
    )


def test_on_a_phone_the_lesson_from_its_arrow_starts_at_step_1_and_never_widens_the_page(served, browser):
    """The arrow applies step 1 (its preset at its step, its panel outlined, the token it names underlined), then
    Next walks every step: the page never wider than the screen, each step's panel in the screen's top half and not
    under the lesson."""
    first = LESSON[0]
    page, errors = opened(browser, served)
    try:
        assert lit_id(page) == ""
        page.get_by_role("button", name=ARROW).first.click()
        page.wait_for_function("() => document.querySelector('.ll-lit')")
        assert lit_id(page) == f"ll-{first.panel}"
        described = library.preset(library.load_presets(), first.preset)["caption"]
        assert described[:60] in page.inner_text("#ll-preset-caption")  # after the line saying it is the example's
        assert page.locator(".ll-lit .ll-output .ll-tok.ll-this").count() == 1  # "underlined in the output"

        def check(number: int) -> None:
            assert lit_id(page) == f"ll-{LESSON[number].panel}"
            assert_as_wide_as_the_screen(page, f"lesson step {number + 1}")
            box = lit_box(page)
            assert 0 <= box["top"] < PHONE["height"] / 2, f"lesson step {number + 1}: the panel's top is not in sight"
            assert box["seen"], f"lesson step {number + 1}: the lesson covers its panel"

        walk_lesson(page, check)
        assert errors == []
    finally:
        page.close()


def test_on_a_desktop_the_arrow_applies_lesson_step_1_and_opening_it_again_keeps_the_step_shown(served, browser):
    page, errors = opened(browser, served, VIEWPORT)
    try:
        arrow = page.get_by_role("button", name=ARROW).first
        arrow.click()
        page.wait_for_function("() => document.querySelector('.ll-lit')")
        assert lit_id(page) == f"ll-{LESSON[0].panel}"
        page.click("#ll-next-0")
        page.wait_for_function(f"() => document.querySelector('.ll-lit #ll-{LESSON[1].panel}')")
        wait_for_step(page, LESSON[1].step)
        arrow.click()  # closed
        page.wait_for_function("() => !document.querySelector('#ll-lesson-bar.open')")
        page.evaluate("() => document.querySelector('.ll-lit').classList.remove('ll-lit')")
        arrow.click()  # and opened again: its answer outlines step 2's panel again, and the page stays at step 2
        page.wait_for_function(f"() => document.querySelector('.ll-lit #ll-{LESSON[1].panel}')")
        assert page.inner_text("#ll-caption").startswith(f"Step {LESSON[1].step} of")
        assert errors == []
    finally:
        page.close()
