"""Serving the app in-process on a free localhost port, and driving it in Debian's headless chromium.

Shared by scripts/screenshot.py, scripts/bench_plot.py, scripts/load_test.py, scripts/tune_figure.py and the
tests, so the page is served, opened, stepped and photographed one way only; what only the tests do (a press and
its step, a Run awaited) is tests/browser/chromium.py's. It lives here because the scripts must not import tests/,
and not in lab/ because it imports app, the floor above the lab. Playwright is imported
only when a page is opened: the end-to-end tests need the server alone.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 1000}
PHONE = {"width": 390, "height": 844}  # a common phone's CSS pixels
ERROR_TOAST = '[data-testid="toast-body"].error'
# How long a page's wait (for a selector, a step, a download) may last before it fails, where the wait names no
# bound of its own: Playwright's 30 s was overrun by an export's download on a machine busy with other tests.
PAGE_WAIT_MS = 120_000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_app(lm=None) -> Iterator[str]:
    """The app's `demo` served with its theme, CSS and keyboard script; yields its URL.

    `lm`, an already loaded model, is what Run will use, warmed up and priced here (the first Run's work on a
    fresh machine: half a minute, minutes on a busy one) so that a page's wait times only its Run; a model an
    earlier serving in this process held and priced is kept with what was made from it (its prices are renewed
    where stale, as before any request; this cost each test module 7 to 13 s); without it the model loads on the
    first Run (replaying the shipped examples needs none).
    """
    import app
    from lab.serve import server

    server.ANSWERS.clear()  # a server starts with no question answered: an earlier serving's answers are not its own
    if lm is not None:
        if server.MODEL.held_model() is not lm:
            server.MODEL.put(lm)
        server.MODEL.get()
    port = free_port()
    app.demo.launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.LAUNCH_OPTIONS
    )
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.demo.close()


# ----------------------------------------------------------------------------------------------
# The page in chromium


@contextmanager
def chromium_page(url: str) -> Iterator[tuple[object, list]]:
    """A page on `url` once the panels are drawn, and the list its JavaScript errors are appended to."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield open_page(browser, url)
        finally:
            browser.close()


def open_page(browser, url: str, viewport: dict = VIEWPORT, motion: str = "no-preference") -> tuple[object, list]:
    """A new page of `browser` (a touch screen at PHONE's size) on `url` once the panels are drawn and its opening
    event has filled the session's run (ui.scripts.OPENED), and the list its JavaScript errors are appended to. Its
    waits fail after PAGE_WAIT_MS unless they say otherwise. `motion`: the reader's system's wish, as CSS's
    prefers-reduced-motion ("reduce": the lesson moves to its panels at once, no transitions)."""
    page = browser.new_page(viewport=viewport, has_touch=viewport is PHONE, reduced_motion=motion)
    page.set_default_timeout(PAGE_WAIT_MS)
    errors: list = []
    page.on("pageerror", lambda error: errors.append(error))  # playwright cannot wrap a bound builtin
    page.goto(url)
    page.wait_for_selector("#ll-window")
    # the opening event has run: before it the panels show the build's default and the session holds no run yet
    page.wait_for_selector("body[data-ll-opened]", state="attached")
    return page, errors


STEP_SHOWN = "() => document.querySelector('#ll-caption').innerText.startsWith('Step %d of')"


def caption(page) -> str:
    return page.inner_text("#ll-caption")


def wait_for_step(page, step: int) -> None:
    """Wait until the caption shows step `step`; if it does not within PAGE_WAIT_MS, fail with what the page shows
    instead (the caption, the note under Run, any toast: Gradio's own when it lost the server)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(STEP_SHOWN % step)
    except PlaywrightTimeout:
        said = {part: page.inner_text(part) for part in ("#ll-caption", "#ll-run-notice")}
        # the step the page would send with the next press (a value left behind would redraw the same step each time)
        said["#ll-step"] = page.evaluate("() => document.querySelector('#ll-step input[type=number]')?.value")
        # the range a step button moves (scripts.STEP_BY moves nothing past its ends), and what has the focus
        said["range"] = page.evaluate(
            "() => { const r = document.querySelector('#ll-step input[type=range]');"
            " return r && [r.min, r.value, r.max, document.activeElement?.id || document.activeElement?.tagName]; }"
        )
        said["presses"] = page.evaluate("() => window.llPresses ?? null")  # tests/browser/chromium.press_to_step's
        said["timeline"] = page.evaluate("() => window.llTimeline ?? null")
        toasts = page.locator('[data-testid="toast-body"]').all_inner_texts()
        raise AssertionError(f"step {step} never showed; the page says {said}, toasts {toasts}") from None


LANE_TEXTS = """() => [...document.querySelectorAll('#ll-race-playback .ll-lane')].map(lane => ({
  name: lane.querySelector('b').innerText,
  text: [...lane.querySelectorAll('.ll-lane-text > span')].filter(s => getComputedStyle(s).opacity === '1')
        .map(s => s.textContent).join(''),
  all: [...lane.querySelectorAll('.ll-lane-text > span')].map(s => s.textContent).join(''),
  count: [...lane.querySelectorAll('.ll-counts > span')].filter(s => getComputedStyle(s).opacity === '1')
        .map(s => s.innerText).join('|'),
}))"""  # each lane of the race's playback: its name, its text shown so far and in all, its counters shown


def race_to_end(page) -> list[dict]:
    """Press Race, wait (three minutes at most) for its playback, then for every lane to have shown its last
    step (all its text, and its seconds); the lanes, as LANE_TEXTS reads them."""
    page.click("#ll-race-run")
    page.wait_for_selector("#ll-race-playback .ll-lane", timeout=180_000)
    page.wait_for_function(
        f"() => ({LANE_TEXTS})().every(lane => lane.text === lane.all && lane.count.endsWith(' s'))",
        timeout=60_000,
    )
    return page.evaluate(LANE_TEXTS)


def choose_preset(page, label: str) -> None:
    """Pick the preset labelled `label` in the dropdown and wait for its example run at step 0: for its
    description, which comes with the run (step 0 alone may still be the previous preset's)."""
    from visuals import library

    described = next(preset["caption"] for preset in library.load_presets() if preset["label"] == label)
    page.click("#ll-controls input[role=listbox], #ll-controls .wrap input")
    page.get_by_role("option", name=label).click()
    page.wait_for_function(
        "start => document.querySelector('#ll-preset-caption').innerText.includes(start)", arg=described[:60]
    )
    wait_for_step(page, 0)


def step_forward_to(page, step: int) -> None:
    """From step 0, press → `step` times, then wait until step `step` shows (each press moves the step slider at
    once, in the browser: none waits on the one before it). The keys go to the page, not to a text box: beside two
    burners an input (the preset list's, most likely) still held the focus after a click on the title, and none of
    16 presses stepped (2026-12-06)."""
    page.click("h1")
    page.evaluate("() => document.activeElement?.blur()")
    page.wait_for_function("() => !['INPUT', 'TEXTAREA'].includes(document.activeElement?.tagName)")
    for _ in range(step):
        page.keyboard.press("ArrowRight")
    wait_for_step(page, step)


def screenshot(page, path: Path) -> None:
    """The whole page as a PNG at `path` (written whole, then moved in), with no hover and no error toast."""
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    if page.locator(ERROR_TOAST).count():
        raise RuntimeError(f"the page shows an error: {page.inner_text(ERROR_TOAST)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.png")
    page.screenshot(path=str(partial), full_page=True)
    partial.replace(path)


def screenshot_step(page, path: Path, step: int, preset: str | None = None) -> None:
    """Photograph step `step` of the example of the preset labelled `preset` (default: the example shown).

    Without `preset`, the page must be at step 0 (freshly opened).
    """
    if preset is not None:
        choose_preset(page, preset)
    step_forward_to(page, step)
    screenshot(page, path)
