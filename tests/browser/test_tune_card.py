"""The tune card in a real headless Chromium, on a tiny random model standing in for the held one: a tiny sweep
runs from the card, shows its progress, and ends with a map (a Plotly heatmap) and its table; a value out of
range is refused in words."""

from __future__ import annotations

import dataclasses

import pytest

from lookahead_core.models import DEFAULT_MODEL
from scripts.serving import ERROR_TOAST, open_page, running_app
from tests.browser.test_back_row import AT_REST
from tests.test_bench import char_tokenizer
from tests.tiny import tiny_model

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")
SUMMARY = "#ll-tune-summary"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app holding a tiny random Llama under the default model's name, with a cache of its own (its step costs
    must not be taken for the real model's)."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=char_tokenizer(), name=DEFAULT_MODEL)
    with running_app(lm) as url:
        yield url
    monkeypatch.undo()


@pytest.fixture(scope="module")
def page(browser, served):
    page, errors = open_page(browser, served)
    page.locator("#ll-tune").scroll_into_view_if_needed()
    page.get_by_role("radio", name="your prompts").check()
    page.get_by_text("Your own prompts, the methods and lookahead's W and N").click()
    # typed once the opened settings are drawn and at rest: beside two burners the prompts typed at once were gone
    # by the time the sweep was sent, the windows typed after them kept (2026-12-06)
    page.wait_for_selector("#ll-tune-prompts textarea", state="visible")
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate(AT_REST)
    yield page
    assert not errors
    page.close()


def fill(page, selector: str, text: str) -> None:
    box = page.locator(f"{selector} textarea, {selector} input").first
    box.fill(text)
    box.press("Tab")


def boxes(page) -> dict:
    """What the card's text boxes hold now, for a failure's message."""
    return {
        name: page.locator(f"#ll-tune-{name} textarea, #ll-tune-{name} input").first.input_value()
        for name in ("prompts", "windows")
    }


def test_a_window_out_of_range_is_refused_in_words(page):
    fill(page, "#ll-tune-prompts", "a, b, c, a, b, c, a, b")
    fill(page, "#ll-tune-windows", "0")
    page.click("#ll-tune-run")
    page.wait_for_function(f"() => document.querySelector('{SUMMARY}').innerText.includes('Not mapped')")
    # Once in 2026-12-06's runs the sweep was sent no prompts ("Paste at least one prompt"): the boxes say whether
    # the page lost what was typed or only failed to send it
    said = page.inner_text(SUMMARY)
    assert "The windows W must each be from 1 to 16; 0 is not" in said, (said, boxes(page))
    assert page.locator(ERROR_TOAST).count() == 0


def test_a_tiny_sweep_ends_with_a_heatmap_and_its_table(page):
    from tests.browser.test_accessibility import audited

    fill(page, "#ll-tune-prompts", "a, b, c, a, b, c, a, b\n---\nx = 1\ny = 2\nx = 1\n")
    fill(page, "#ll-tune-windows", "2, 3")
    page.get_by_role("checkbox", name="Suffix decoding").check()
    page.click("#ll-tune-run")
    page.wait_for_selector("#ll-tune-table table", timeout=300_000)
    page.wait_for_selector("#ll-tune .js-plotly-plot .heatmaplayer")
    table = page.inner_text("#ll-tune-table")
    assert "lookahead W=2 N=3 G=2" in table and "lookahead W=3 N=5 G=3" in table and "predicted" in table
    assert "suffix nodes=8 α=1" in table and "suffix nodes=48 α=4" in table  # suffix decoding's cells
    assert audited(page, "the tune card's map with suffix decoding's cells") == {}
    assert "Chosen" in page.inner_text(SUMMARY)
    assert page.locator("#ll-tune-run").is_enabled() and not page.locator("#ll-tune-stop").is_enabled()
