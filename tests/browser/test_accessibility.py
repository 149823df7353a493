"""axe-core on every state a class sees, in a real headless Chromium: no serious or critical violation.

The states: the first view at 1280 and 390 px, a Run's result (on the default model's first layers,
tests.conftest.app_model), the race's playback and table, and the offline HTML replay. Each lesson step's panel is
audited in test_classroom.py's walk (tests/browser/axe.py). A negative control checks that axe does catch a
deliberately low-contrast element on the same page, so a silent axe cannot pass the audit.
`pytest -s` prints the counts, state by state.

On the same served app, what the race's playback does beyond reading at AA: its lanes played back to greedy's text
(or, cut short by the deadline, its start, and the table says so), its pause and its slowed playback (the same race was
run again on the whole model in test_page_on_the_model.py for these checks alone: 24 to 31 s of make test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.serving import LANE_TEXTS, PHONE, open_page, wait_for_step
from tests.browser.axe import audited, with_axe
from tests.browser.chromium import FOCUS_TRAIL, offline_context, run_on_model

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

DESKTOP = {"width": 1280, "height": 900}
OUT = Path(__file__).resolve().parents[2] / "out"  # git-ignored: what a reader of a failure looks at


@pytest.fixture(scope="module")
def desktop(browser, served_on_app_model):
    """The first view at 1280 px, and the list of its JavaScript errors."""
    page, errors = open_page(browser, served_on_app_model, DESKTOP)
    yield page, errors
    page.close()


def axe_version(page) -> str:
    with_axe(page)
    return page.evaluate("() => axe.version")


def test_the_negative_control_a_low_contrast_element_is_caught(desktop):
    page, _ = desktop
    page.evaluate(
        "() => { const p = document.createElement('p'); p.id = 'll-too-pale'; p.textContent = 'too pale to read';"
        " p.style.cssText = 'color:#c8c8c8;background:#ffffff'; document.body.prepend(p); }"
    )
    try:
        found = audited(page, "negative control", ["#ll-too-pale"])  # what every audit here and the lesson's runs
        whole = audited(page, "negative control, the whole page")
    finally:
        page.evaluate("() => document.getElementById('ll-too-pale').remove()")
    print(f"\naxe-core {axe_version(page)}")
    assert found == {"color-contrast": 1} and whole == {"color-contrast": 1}


def test_the_first_view_at_1280_px(desktop):
    page, errors = desktop
    assert audited(page, "first view 1280 px") == {}
    assert errors == []


def test_the_first_view_at_390_px(browser, served_on_app_model):
    page, errors = open_page(browser, served_on_app_model, PHONE)
    try:
        assert audited(page, "first view 390 px") == {}
        assert errors == []
    finally:
        page.close()


def test_a_refused_request(desktop):
    """A refusal under Run (what a busy machine, a long prompt or an empty one gets), read at AA like the rest."""
    page, errors = desktop
    page.fill("#ll-controls textarea", "")
    page.click("#ll-run")
    page.wait_for_selector("#ll-run-notice .ll-over")
    # The refusal's toast is audited open: Gradio draws its header as a role=button holding the Close button
    # (axe: nested-interactive), which the page's script makes plain text (ui/scripts.py)
    page.wait_for_selector('[data-testid="toast-body"] .toast-header:not([role])')
    assert audited(page, "a refused request, its toast open") == {}
    page.click('[data-testid="toast-close"]')
    page.wait_for_selector('[data-testid="toast-body"]', state="detached")
    assert audited(page, "a refused request") == {}
    assert errors == []


@pytest.mark.usefixtures("one_round")  # what the page shows of a Run or race, not its timing
def test_a_runs_result(desktop):
    page, errors = desktop
    page.fill("#ll-controls textarea", "Count from one to ten:")  # short enough to fit a busy machine's time budget
    page.type("#ll-controls textarea", " ")
    run_on_model(page, 12)
    page.click("#ll-forward")
    wait_for_step(page, 1)
    assert audited(page, "a Run's result") == {}
    assert errors == []


@pytest.mark.usefixtures("one_round")  # what the page shows of a Run or race, not its timing
def test_the_races_playback_and_table(desktop):
    page, errors = desktop
    tokens = page.locator("#ll-max input[type=number]")
    tokens.fill("6")
    tokens.press("Enter")
    page.fill("#ll-controls textarea", "Count from one to ten:")  # short enough to fit the race's time budget
    page.type("#ll-controls textarea", " ")
    page.click("#ll-race-run")
    page.wait_for_selector("#ll-race-summary table, #ll-race-summary .ll-over", timeout=400_000)
    assert page.locator("#ll-race-summary table").count(), page.inner_text("#ll-race-summary")
    assert "The charts in words" in page.inner_text("#ll-race-summary")
    page.wait_for_selector("#ll-race-playback .ll-lane")
    assert page.get_by_role("region", name="Suffix decoding: its text").count() == 1  # the sixth lane, audited too
    page.locator("#ll-race-playback").scroll_into_view_if_needed()
    # the playback fades each step's text in at its measured time: audit the text once it has all appeared
    page.wait_for_function("() => document.getAnimations().every(a => a.playState === 'finished')", timeout=60_000)
    assert audited(page, "the race's playback and table") == {}
    lanes = page.evaluate(LANE_TEXTS)
    names = ["Greedy", "Lookahead", "Prompt lookup", "Speculative decoding", "Medusa heads", "Suffix decoding"]
    assert [lane["name"] for lane in lanes] == names
    # greedy: every lane writes the same text, or, where the deadline cut it short on a busy machine (beside two CPU
    # burners, 2026-12-07: lookahead 7 tokens of 8, speculative decoding 1), the start of it, and the race's table
    # says it is the same as greedy's over the tokens both wrote
    shown = {lane["name"]: (lane["text"], lane["all"], lane["count"]) for lane in lanes}
    longest = max((lane["text"] for lane in lanes), key=len)
    assert all(lane["text"] == lane["all"] and lane["count"].endswith(" s") for lane in lanes), f"unshown: {shown}"
    assert all(lane["text"] and longest.startswith(lane["text"]) for lane in lanes), f"greedy: the same text: {shown}"
    cut = [lane["name"] for lane in lanes if lane["text"] != longest]
    assert all(lane["count"].startswith("6 tokens") for lane in lanes if lane["name"] not in cut), shown
    table = page.inner_text("#ll-race")
    assert "same as greedy" in table and "differs from greedy" not in table, table
    assert not cut or "same as greedy over the first" in table, table
    OUT.mkdir(exist_ok=True)
    page.locator("#ll-race").screenshot(path=str(OUT / "race.png"))
    page.check("#ll-race-playback .ll-pause")
    state = page.evaluate(
        "() => getComputedStyle(document.querySelector('#ll-race-playback .ll-lane-text > span')).animationPlayState"
    )
    assert state == "paused"
    page.click("#ll-slow input")
    page.wait_for_function("() => document.querySelector('#ll-race-playback').innerText.includes('Slowed down')")
    page.check("#ll-race-playback .ll-pause")  # paused again: no slowed animation runs on under the next tests
    assert errors == []


def test_the_offline_html_replay(desktop, browser, tmp_path):
    page, _ = desktop
    with page.expect_download() as download:
        page.click("#ll-html")
    exported = tmp_path / "replay.html"
    download.value.save_as(exported)
    context = offline_context(browser, DESKTOP)
    try:
        offline = context.new_page()
        offline.goto(exported.as_uri())
        offline.wait_for_selector("body[data-ready]")
        assert audited(offline, "the offline HTML replay") == {}
    finally:
        context.close()


HANDED = "() => document.querySelector('.ll-handed-note')?.innerText.includes('did nothing')"
FOCUSED = "id => document.activeElement?.id === id"


def said_it_did_nothing(page) -> None:
    """The status line under Run's row says the key did nothing (written as the key is pressed), else fail with
    what the note under Run says the key did."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(HANDED, timeout=10_000)
    except PlaywrightTimeout:
        said, trail = page.inner_text("#ll-run-notice"), page.evaluate("() => window.llFocusTrail")
        # the trail's times say whether the key came within HANDED_MS of the focus reaching the button (the test's
        # own latency on a busy machine) or the page let a key through that it should have held
        raise AssertionError(f"the key was not held: the note under Run says {said!r}; {trail}") from None


@pytest.mark.usefixtures("one_round")
def test_a_key_meant_for_a_button_switched_off_as_the_focus_moved_does_nothing_and_says_so(desktop):
    """Enter on Run hands the focus to Stop as the Run starts: a second Enter at once (a double press) stops
    nothing. The Run ends and hands the focus back to Run: Enter at once (meant for Stop) starts no other Run. Each
    time the status line under Run's row says so. A key pressed later than ui/scripts.FOCUS_KEPT's HANDED_MS runs."""
    page, errors = desktop
    page.fill("#ll-controls textarea", "Count from one to a hundred:")
    max_tokens = page.locator("#ll-max input[type=number]")
    max_tokens.fill("96")
    max_tokens.press("Enter")
    page.evaluate(FOCUS_TRAIL)
    page.focus("#ll-run")
    page.keyboard.press("Enter")
    page.wait_for_function(FOCUSED, arg="ll-run-stop")
    page.keyboard.press("Enter")
    said_it_did_nothing(page)
    assert "“■ Stop”" in page.inner_text(".ll-handed-note")  # the key reached Stop, and did nothing
    page.wait_for_function(FOCUSED, arg="ll-run", timeout=120_000)  # the Run ended: the focus handed back to Run
    page.keyboard.press("Enter")
    said_it_did_nothing(page)
    assert "Stopped" not in page.inner_text("#ll-run-notice")  # the first key stopped nothing
    page.wait_for_timeout(1000)
    assert page.is_enabled("#ll-run") and page.is_disabled("#ll-run-stop")  # the second started no Run
    page.keyboard.press("Enter")  # past HANDED_MS: a key the visitor meant
    page.wait_for_function("() => document.querySelector('#ll-run').disabled")
    page.evaluate("() => { const stop = document.querySelector('#ll-run-stop'); if (!stop.disabled) stop.click(); }")
    page.wait_for_function("() => !document.querySelector('#ll-run').disabled", timeout=120_000)
    assert errors == []
