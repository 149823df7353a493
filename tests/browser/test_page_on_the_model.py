"""A real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) on the served_on_the_model app.

Loads the page, runs the model, steps with the button and the keyboard, checks that no error
toast appeared, and photographs a step into out/screenshot.png (git-ignored). The README's
assets/screenshot.png is written by scripts/screenshot.py, with the same page-driving code.
The race's playback, lane by lane, is test_accessibility.py's, on the default model's first layers (here, on the whole
model, the same race took 24 to 31 s of make test for those checks alone, 2026-12-07, the 2-core AMD EPYC (Zen 3)).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from scripts.serving import (
    ERROR_TOAST,
    PHONE,
    caption,
    choose_preset,
    open_page,
    screenshot_step,
    wait_for_step,
)
from tests.browser.chromium import FOCUS_TRAIL, press_to_step, run_on_model, shown_step

SCREENSHOT = Path(__file__).resolve().parents[2] / "out" / "screenshot.png"
WARNING_TOAST = '[data-testid="toast-body"].warning'
SCREENSHOT_PRESET, SCREENSHOT_STEP = "Math: a word problem", 16

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")


@pytest.fixture(scope="module")
def browser_page(browser, served_on_the_model):
    """The page and the list of JavaScript errors it raised."""
    page, errors = open_page(browser, served_on_the_model)
    yield page, errors
    page.close()


def set_max_tokens(page, tokens: int) -> None:
    max_tokens = page.locator("#ll-max input[type=number]")
    max_tokens.fill(str(tokens))
    max_tokens.press("Enter")


def page_width(page) -> int:
    return page.evaluate("() => document.documentElement.scrollWidth")


def test_the_page_opens_with_the_example_ready(browser_page):
    page, _ = browser_page
    wait_for_step(page, 0)  # the page's load event may still show its timer over the caption for a moment
    assert caption(page).startswith("Step 0 of")
    assert "Prefill" in caption(page)
    said = page.inner_text("#ll-summary")
    assert "forward passes saved" in said and "tokens per step" in said  # the large figures, unfolded
    assert "forward passes vs greedy" not in said  # the detail, one click away
    page.click("#ll-summary details > summary")
    assert "forward passes vs greedy" in page.inner_text("#ll-summary")


@pytest.mark.usefixtures("one_round")  # what the page shows of a Run or race, not its timing
def test_run_and_step_show_no_error(browser_page):
    page, errors = browser_page
    run_on_model(page, 12)
    press_to_step(page, lambda: page.click("#ll-forward"), 1)
    page.click("h1")
    press_to_step(page, lambda: page.keyboard.press("ArrowRight"), 2)
    press_to_step(page, lambda: page.keyboard.press("ArrowLeft"), 1)
    assert page.locator(ERROR_TOAST).count() == 0
    assert errors == []


def test_an_empty_prompt_gets_a_warning_and_the_page_keeps_working(browser_page):
    page, _ = browser_page
    step = shown_step(page)  # where the replay stands: the refusal must leave it there
    page.fill("#ll-controls textarea", "   ")
    page.click("#ll-run")
    page.wait_for_selector(WARNING_TOAST)
    assert "The prompt is empty" in page.inner_text(WARNING_TOAST)
    # the toast (a log message) may come before the outputs: wait for the note under Run
    page.wait_for_function(
        "() => document.querySelector('#ll-run-notice').innerText.includes('Not run: The prompt is empty')"
    )
    assert page.locator(ERROR_TOAST).count() == 0
    page.click('[data-testid="toast-close"]')
    press_to_step(page, lambda: page.click("#ll-forward"), step + 1)


def test_screenshot_of_a_step_with_accepted_guesses(browser_page):
    page, errors = browser_page
    SCREENSHOT.unlink(missing_ok=True)
    screenshot_step(page, SCREENSHOT, SCREENSHOT_STEP, preset=SCREENSHOT_PRESET)
    assert caption(page).startswith(f"Step {SCREENSHOT_STEP} of")
    assert "★" in page.inner_text("#ll-verification")
    assert page.locator(ERROR_TOAST).count() == 0
    assert errors == []
    assert SCREENSHOT.stat().st_size > 50_000


def show_progress_then_stop(page, screenshot: Path) -> str:
    """Press Run (by keyboard: Enter on it), wait for its progress bar, photograph it, press Stop (the note under
    Run then says what stopped); the progress text shown. Run, disabled while it runs, hands its focus to Stop
    (ui/scripts.FOCUS_KEPT: Gradio's disabling dropped it on the page's body)."""
    page.evaluate(FOCUS_TRAIL)
    page.focus("#ll-run")
    page.keyboard.press("Enter")
    try:
        shown = page.wait_for_function(  # read in the same poll: Gradio's own status text replaces it between steps
            "() => { const t = document.querySelector('#ll-run-notice').innerText; "
            "return t.includes(' of ') && t.includes(' tokens') ? t : null; }"
        ).json_value()
    except PlaywrightTimeout:  # a key swallowed (ui/scripts.FOCUS_KEPT's HANDED_MS), a question answered already
        notice, trail = page.inner_text("#ll-run-notice"), page.evaluate("() => window.llFocusTrail")
        raise AssertionError(f"no progress shown: the note says {notice!r}; {trail}") from None
    assert page.is_disabled("#ll-run") and page.is_disabled("#ll-race-run") and page.is_enabled("#ll-run-stop")
    try:
        page.wait_for_function("() => document.activeElement.id === 'll-run-stop'")
    except PlaywrightTimeout:
        focused = page.evaluate("() => document.activeElement?.id || document.activeElement?.tagName")
        trail = page.evaluate("() => window.llFocusTrail")
        notice = page.inner_text("#ll-run-notice")
        said = f"the focus never reached Stop: it is on {focused!r}; the note says {notice!r}; {trail}"
        raise AssertionError(said) from None
    page.locator("#ll-controls").screenshot(path=str(screenshot))
    # Stop pressed in the page, in one go with the check that it is still on. A Run that ended meanwhile hands the
    # focus back to Run, and Playwright's Enter on a disabled Stop goes to the focused element (checked on two plain
    # buttons): it started another Run (a clean clone's make test, 2026-12-06, found Stop on after the Run came back,
    # and the next test's page then stepped nothing for 120 s). A mouse click's wait for the button to scroll into view
    # gave up after 10 s beside the load tests.
    page.evaluate("() => { const stop = document.querySelector('#ll-run-stop'); if (!stop.disabled) stop.click(); }")
    try:
        page.wait_for_function(  # stopped, or (a short answer) ended while photographed
            "() => !document.querySelector('#ll-run').disabled && ['Stopped: the Run ended before', 'of model time']"
            ".some(words => document.querySelector('#ll-run-notice').innerText.includes(words))"
        )
    except PlaywrightTimeout:
        notice, running = page.inner_text("#ll-run-notice"), page.is_disabled("#ll-run")
        raise AssertionError(f"neither stopped nor ended: Run disabled {running}, the note says {notice!r}") from None
    assert page.is_disabled("#ll-run-stop") and page.is_enabled("#ll-race-run")
    return shown


def test_a_run_shows_its_progress_disables_its_buttons_and_stops(browser_page):
    page, errors = browser_page
    set_max_tokens(page, 60)
    shown = show_progress_then_stop(page, SCREENSHOT.with_name("progress-desktop.png"))
    # its first words: the warm-up's ("1/8 · warming up lookahead (untimed): 1 of 8 tokens") or a timed step's
    # ("lookahead: step 2, 5 of 60 new tokens"); waiting for a timed one took 3 s on a quiet machine, 30 in make test
    words = r"warming up (lookahead|greedy) \(untimed\): \d+ of \d+ tokens|(lookahead|greedy): step \d+, \d+ of 60 new"
    assert re.search(words, shown), shown
    assert page.locator(ERROR_TOAST).count() == 0
    assert errors == []


def test_on_a_phone_the_page_stays_390_px_wide_and_steps_by_tapping(browser, served_on_the_model):
    page, errors = open_page(browser, served_on_the_model, PHONE)
    try:
        assert page_width(page) <= PHONE["width"]
        choose_preset(page, "Code: a Python class")
        for shown in range(1, 9):
            press_to_step(page, lambda: page.tap("#ll-forward"), shown)
            assert page_width(page) <= PHONE["width"], f"the page grew to {page_width(page)} px at step {shown}"
        set_max_tokens(page, 60)
        show_progress_then_stop(page, SCREENSHOT.with_name("progress-phone.png"))
        assert page_width(page) <= PHONE["width"]
        assert errors == []
    finally:
        page.close()


def test_a_link_opens_its_preset_at_its_step_and_an_edited_prompt_is_no_preset(browser, served_on_the_model):
    page, errors = open_page(browser, f"{served_on_the_model}?preset=pencils&step=5")
    try:
        wait_for_step(page, 5)
        assert page.input_value("#ll-controls input[role=listbox], #ll-controls .wrap input") == "Math: a word problem"
        press_to_step(page, lambda: page.click("#ll-forward"), 6)
        page.click("#ll-link")
        page.wait_for_function("() => location.search.includes('step=6')")
        assert "preset=pencils" in page.url
        page.fill("#ll-controls textarea", "Write a haiku about the sea")
        page.type("#ll-controls textarea", ".")  # typed: Gradio's input event follows keys, not fill()
        page.wait_for_function(
            "() => document.querySelector('#ll-preset-caption').innerText.includes('Your own prompt')"
        )
        assert page.input_value("#ll-controls input[role=listbox], #ll-controls .wrap input") == ""
        assert errors == []
    finally:
        page.close()
    # a link to a preset that does not exist: tests/browser/test_hostile_links.py's first link
