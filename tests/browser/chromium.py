"""What the browser tests share beyond scripts/serving.py (which the scripts share too): why they cannot run
here, if they cannot (playwright or Debian's chromium missing); the app served with no model; one launched
chromium, and an offline context for exported pages; a press and the step it must show, a Run awaited; the
lesson walked step by step, each step once its outlined panel has come to rest.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scripts.serving import CHROMIUM, CHROMIUM_ARGS, PAGE_WAIT_MS, caption, running_app, wait_for_step
from visuals import library
from visuals.lesson import LESSON, step_index

# How many animation frames in a row the outlined panel must keep its place, on screen, with no (finite) animation
# running and no chart of it still to draw: the lesson's smooth scroll is over and its panels drawn, however slowly a
# busy machine draws frames. (A chart Gradio has not filled yet is a div named "Empty value": beside the other worker
# the tune card, lesson step 10, once measured 1,091 px tall with its maps still to draw, and 900 or less drawn.)
RESTING_FRAMES = 20
AT_REST = """frames => {
  const lit = document.querySelector('.ll-lit');
  if (!lit) return false;
  const box = lit.getBoundingClientRect();
  const place = [window.scrollY, box.top, box.height].join();
  const moving = document.getAnimations().some(
    (a) => a.playState === 'running' && isFinite(a.effect.getComputedTiming().endTime));
  const drawing = lit.querySelector('.empty[aria-label]') !== null;
  const still = !moving && !drawing && box.bottom > 0 && box.top < window.innerHeight && place === window.llLitPlace;
  window.llLitPlace = place;
  window.llLitFrames = still ? (window.llLitFrames || 0) + 1 : 0;
  return window.llLitFrames >= frames;
}"""


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None where they can."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: make test installs it"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (needs root)"
    return None


@contextmanager
def app_without_model() -> Iterator[str]:
    """The app served (its URL), every reach for the model failing the test: the lesson, replays and exports
    need none."""
    from lab.serve import server

    def no_model(*args, **kwargs):
        raise AssertionError("the classroom must not need the model")

    saved = server.MODEL.get
    server.MODEL.get = no_model
    try:
        with running_app() as url:
            yield url
    finally:
        server.MODEL.get = saved


@contextmanager
def launched_chromium() -> Iterator[object]:
    """Debian's chromium, launched headless by Playwright, for several pages."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def offline_context(browser, viewport: dict):
    """A fresh browser context with no network, for an exported page opened from its file; its waits fail after
    PAGE_WAIT_MS, as those of scripts.serving.open_page's pages do."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(PAGE_WAIT_MS)
    context.set_offline(True)
    return context


def wait_for_the_lit_panel_to_rest(page) -> None:
    """Wait until the lesson's outlined panel has stayed in one place on screen for RESTING_FRAMES frames."""
    page.evaluate("() => { window.llLitPlace = null; window.llLitFrames = 0; }")
    page.wait_for_function(AT_REST, arg=RESTING_FRAMES, polling="raf")


MOST_TABS = 150  # presses of Tab allowed to reach the next control


def focused_id(page) -> str:
    return page.evaluate("() => document.activeElement ? document.activeElement.id : ''")


def tab_to(page, element_id: str) -> int:
    """Press Tab until `element_id` has the focus; how many presses it took."""
    for presses in range(1, MOST_TABS + 1):
        page.keyboard.press("Tab")
        if focused_id(page) == element_id:
            return presses
    raise AssertionError(f"{MOST_TABS} presses of Tab never reached #{element_id}")


def focus_ring(page) -> str:
    """The focused element's outline, as drawn: style and width."""
    return page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle + ' ' + s.outlineWidth; }"
    )


def lit_box(page) -> dict:
    """The outlined card's box, and whether the point just inside its top edge shows the card (not the lesson)."""
    return page.evaluate(
        "() => { const lit = document.querySelector('.ll-lit'); const r = lit.getBoundingClientRect();"
        " const x = r.left + Math.min(r.width / 2, 40), y = Math.max(r.top, 0) + 12;"
        " const seen = document.elementFromPoint(x, y);"
        " return {top: r.top, bottom: r.bottom, height: r.height, seen: !!seen && lit.contains(seen)}; }"
    )


def walk_lesson(page, check, advance=None) -> None:
    """Every lesson step from the first, each once its panel is outlined, at its step and at rest: check(number).
    `advance(number)` goes on to step `number` (default: a click on the step before's Next)."""
    advance = advance or (lambda number: page.click(f"#ll-next-{number - 1}"))
    for number, item in enumerate(LESSON):
        if number:
            advance(number)
        wanted = f"ll-{item.panel}"
        page.wait_for_function(
            f"() => document.querySelector('.ll-lit') && (document.querySelector('.ll-lit').id === '{wanted}'"
            f" || document.querySelector('.ll-lit #{wanted}'))"
        )
        wait_for_step(page, step_index(library.example_run(item.preset), item))
        try:
            wait_for_the_lit_panel_to_rest(page)
        except Exception as error:  # playwright's TimeoutError: say which step, and where its panel was
            where = page.evaluate(
                "() => { const r = document.querySelector('.ll-lit').getBoundingClientRect();"
                " return `top ${r.top}, bottom ${r.bottom}, screen ${window.innerHeight}`; }"
            )
            raise AssertionError(f"lesson step {number + 1}: {wanted} never came to rest in view ({where})") from error
        check(number)


def shown_step(page) -> int | None:
    """The step the caption shows ("Step 5 of 38 · ..."), or None where it shows none."""
    words = caption(page).split()
    return int(words[1]) if len(words) > 1 and words[0] == "Step" and words[1].isdigit() else None


# What reached the page of each press, counted by the page from the first press on (window.llPresses): touch ends,
# clicks and keys by their target's id, and the step range's input events; and the page's last 40 happenings in order
# (window.llTimeline): each such event with the range's value as it came, and each request the page sent with what it
# sent and when its answer came. A failed wait says them (a phone's second tap moved nothing once in three clean runs,
# 2026-12-07, its counts no help: touchend, click and input twice each, the range back at 1).
COUNTING = """() => {
  if (window.llPresses) return;
  const counts = window.llPresses = {};
  const timeline = window.llTimeline = [];
  const start = performance.now();
  const log = (entry) => {
    timeline.push(`${Math.round(performance.now() - start)} ms ${entry}`);
    timeline.splice(0, timeline.length - 40);
  };
  const range = () => document.querySelector("#ll-step input[type=range]")?.value;
  const note = (kind) => (event) => {
    const key = `${kind} ${event.target?.id || event.target?.closest?.('[id]')?.id || event.target?.tagName}`;
    counts[key] = (counts[key] || 0) + 1;
    log(`${key} (range ${range()})`);
  };
  for (const kind of ["touchend", "click", "keydown", "input"]) document.addEventListener(kind, note(kind), true);
  const sent = window.fetch;
  window.fetch = async (...args) => {
    const body = typeof args[1]?.body === "string" ? args[1].body.slice(0, 90) : "";
    log(`sent ${String(args[0]).split("/").slice(-2).join("/")} ${body}`);
    const answer = await sent(...args);
    log(`answered ${answer.status} ${String(args[0]).split("/").slice(-2).join("/")} (range ${range()})`);
    return answer;
  };
}"""


# Where the focus went, from now on (window.llFocusTrail, its last 30 happenings): each focusin and focusout with
# its element and the one it went to or came from, each key, and Run's and Stop's disabled states at each. A Run's
# focus that never reached Stop (once in five clean runs on the 2-core AMD EPYC (Zen 3), 2026-12-07) says where it went.
FOCUS_TRAIL = """() => {
  if (window.llFocusTrail) return;
  const trail = window.llFocusTrail = [];
  const start = performance.now();
  const named = (element) => element ? (element.id || element.closest?.("[id]")?.id || element.tagName) : "-";
  const states = () => ["ll-run", "ll-run-stop"].map((id) => document.getElementById(id)?.disabled ? "off" : "on");
  const log = (kind) => (event) => {
    trail.push(`${Math.round(performance.now() - start)} ms ${kind} ${named(event.target)} ` +
      `(${named(event.relatedTarget)}${event.key ? " " + event.key : ""}) run/stop ${states().join("/")}`);
    trail.splice(0, trail.length - 30);
  };
  for (const kind of ["focusin", "focusout", "keydown"]) document.addEventListener(kind, log(kind), true);
}"""


def press_to_step(page, press: Callable[[], None], step: int) -> None:
    """`press` a step control (a click, a key, a tap) once, then wait until the caption shows step `step`: a press
    that moves nothing fails (wait_for_step says what the page shows instead, and what of the presses reached it)."""
    page.evaluate(COUNTING)
    press()
    wait_for_step(page, step)


def run_on_model(page, tokens: int) -> None:
    """Set Max new tokens to `tokens`, press Run and wait until the summary shows a run of that many new tokens;
    if none shows within two minutes, fail with what the page says instead (the note under Run, the summary)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    max_tokens = page.locator("#ll-max input[type=number]")
    max_tokens.fill(str(tokens))
    max_tokens.press("Enter")
    page.click("#ll-run")
    # the new tokens' tile sits in the summary's folded details: read its markup, which a closed <details> keeps
    shown = f"() => document.querySelector('#ll-summary').innerHTML.includes('<b>{tokens}</b><span>new tokens')"
    try:
        page.wait_for_function(shown, timeout=120_000)
    except PlaywrightTimeout:
        said = {part: page.inner_text(part) for part in ("#ll-run-notice", "#ll-summary")}
        raise AssertionError(f"no run of {tokens} new tokens shown in two minutes; the page says {said}") from None
