"""The page read from the back row of a classroom, on a projector at 1280 × 800, in a real headless Chromium with no
model (issue 61): every text drawn at 14 px at least (16 px in the high-contrast view), charts and the attention
mask's labels included, each as drawn (its computed size times any CSS or SVG scale); the window, the pool and
verification on the first screen; no emoji, which Debian's chromium draws as empty boxes where no emoji font is
installed; and a method's settings off, saying why, while a method that does not use them is chosen.

Writes out/back-row-1280.png and out/back-row-390.png (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.serving import PHONE, open_page, wait_for_step

OUT = Path(__file__).resolve().parents[2] / "out"
PROJECTOR = {"width": 1280, "height": 800}
SMALLEST, SMALLEST_HIGH = 14, 16
STEP_PANELS = ("window", "pool", "verification")
OPENED = "?preset=pencils&step=16"  # a step whose panels are all full: a pool hit, trajectories, a long window

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

# Every visible text as drawn: each text node (its parent's computed size), each ::before and ::after that draws
# content (a chip's mark), each text field's value; times the scale it is drawn at (an SVG's screen matrix, an HTML
# element's transform). Its panel is the card it sits in. An emoji is a code point drawn in emoji presentation by
# default, or any pictograph but the two arrows of the step buttons (▶ ◀, which DejaVu Sans draws).
TEXTS = r"""() => {
  const EMOJI = /[\p{Emoji_Presentation}\uFE0F]|(?![\u25B6\u25C0])\p{Extended_Pictographic}/u;
  const PANELS = ['window', 'pool', 'verification', 'output', 'mask', 'progress', 'caption', 'summary'];
  const panelOf = (el) => PANELS.find(
    (p) => el.closest(`#ll-${p}`) || el.closest('.ll-card')?.querySelector(`#ll-${p}`));
  const scaleOf = (el) => {
    if (el instanceof SVGElement) { const m = el.getScreenCTM(); return m ? Math.hypot(m.a, m.b) : 1; }
    const drawn = el.getBoundingClientRect().width;  // offsetWidth is rounded to a pixel: a scale differs by more
    return el.offsetWidth && Math.abs(drawn - el.offsetWidth) > 1 ? drawn / el.offsetWidth : 1;
  };
  const texts = [];
  const add = (el, text, box, pseudo) => {
    if (box.width <= 1 || box.height <= 1) return;  // a screen reader's clipped text draws nothing
    const size = parseFloat(getComputedStyle(el, pseudo).fontSize) * scaleOf(el);
    texts.push({size: Math.round(size * 10) / 10, text: text.slice(0, 60), top: box.top + window.scrollY,
                panel: panelOf(el) || '', emoji: EMOJI.test(text)});
  };
  const shown = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement, text = node.textContent.trim();
    if (!text || !el || ['SCRIPT', 'STYLE', 'NOSCRIPT'].includes(el.tagName) || !shown(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    add(el, text, range.getBoundingClientRect(), null);
  }
  for (const el of document.body.querySelectorAll('*')) {
    if (!shown(el)) continue;
    for (const pseudo of ['::before', '::after']) {
      const content = getComputedStyle(el, pseudo).content;
      if (content && !['none', 'normal'].includes(content) && content.replace(/["']/g, '').trim())
        add(el, content, el.getBoundingClientRect(), pseudo);
    }
    const field = ['INPUT', 'TEXTAREA'].includes(el.tagName)
      && !['checkbox', 'radio', 'range', 'file'].includes(el.type);
    if (field && el.value) add(el, el.value, el.getBoundingClientRect(), null);
  }
  return texts;
}"""
TOPS = """names => Object.fromEntries(names.map((name) => {
  const card = document.getElementById('ll-' + name).closest('.ll-card');
  return [name, card.getBoundingClientRect().top];
}))"""


def smallest(texts: list[dict]) -> dict:
    return min(texts, key=lambda t: t["size"])


# The CSS transitions running now, ended: a text is measured as drawn at rest. A button's size moves over Gradio's
# transition as the high-contrast view comes in; measured during it, buttons read 15.9 px (2026-12-06).
AT_REST = "() => Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition).map((a) => a.finished))"


def opened(browser, url: str, viewport: dict, ready: str | None = None):
    """A page on `url` at step 16, its fonts loaded, once `ready` (a JavaScript condition) holds and its transitions
    have ended."""
    page, errors = open_page(browser, url, viewport)
    wait_for_step(page, 16)
    page.evaluate("() => document.fonts.ready")
    if ready is not None:
        page.wait_for_function(ready)
    page.evaluate(AT_REST)
    return page, errors


def assert_readable(texts: list[dict], least: int, where: str) -> None:
    small = [t for t in texts if t["size"] < least]
    assert not small, f"{where}: {len(small)} texts under {least} px, e.g. {small[:5]}"


def test_the_first_screen_at_1280_by_800_shows_the_step_and_every_text_is_14_px(classroom, browser):
    page, errors = opened(browser, f"{classroom}{OPENED}", PROJECTOR)
    try:
        tops = page.evaluate(TOPS, list(STEP_PANELS))
        print(f"\nthe cards' tops at 1280 × 800: {tops}")
        assert all(0 < top < PROJECTOR["height"] - 100 for top in tops.values()), tops  # and a part of each shown
        assert page.evaluate("() => window.scrollY") == 0
        texts = page.evaluate(TEXTS)
        first = [t for t in texts if t["top"] < PROJECTOR["height"]]
        print(f"smallest text on the first screen: {smallest(first)}; on the page: {smallest(texts)}")
        assert_readable(first, SMALLEST, "the first screen")
        for name in ("window", "pool", "verification", "output", "mask", "progress", "caption", "summary"):
            inside = [t for t in texts if t["panel"] == name]
            assert inside, f"no text found in {name}"
            assert_readable(inside, SMALLEST, name)
        assert_readable(texts, SMALLEST, "the page")
        assert not [t["text"] for t in texts if t["emoji"]]
        OUT.mkdir(exist_ok=True)
        page.mouse.move(0, 0)
        page.screenshot(path=str(OUT / "back-row-1280.png"))
        assert errors == []
    finally:
        page.close()


def test_the_high_contrast_view_draws_every_text_at_16_px(classroom, browser):
    high = "() => document.documentElement.classList.contains('ll-contrast-high')"
    page, errors = opened(browser, f"{classroom}{OPENED}&contrast=high", PROJECTOR, high)
    try:
        texts = page.evaluate(TEXTS)
        print(f"\nsmallest text in the high-contrast view: {smallest(texts)}")
        assert_readable(texts, SMALLEST_HIGH, "the high-contrast view")
        tops = page.evaluate(TOPS, list(STEP_PANELS))
        assert all(0 < top < PROJECTOR["height"] for top in tops.values()), tops
        assert errors == []
    finally:
        page.close()


def test_a_phone_keeps_the_page_as_wide_as_its_screen_and_its_text_at_14_px(classroom, browser):
    page, errors = opened(browser, f"{classroom}{OPENED}", PHONE)
    try:
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
        title = page.locator("#ll-title").bounding_box()  # stacked over the switch: a flex basis of 0 drew it 0 px tall
        switch = page.locator("#ll-contrast").bounding_box()
        assert title["y"] < 50 and title["height"] > 100 and 0 < switch["y"] - title["y"] - title["height"] < 60
        texts = page.evaluate(TEXTS)
        print(f"\nsmallest text on a phone: {smallest(texts)}")
        assert_readable(texts, SMALLEST, "a phone")
        page.mouse.move(0, 0)
        OUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUT / "back-row-390.png"))
        assert errors == []
    finally:
        page.close()


OFF = """() => ['W · window size (columns)', 'Suffix decoding: nodes in its tree, at most'].map(
  (name) => document.querySelector(`input[type=range][aria-label="range slider for ${name}"]`)?.disabled)"""


def test_a_method_turns_off_the_settings_it_does_not_use_and_says_why(classroom, browser):
    """The method table (lookahead_core/records/methods.py) says which settings each method runs with: Medusa
    keeps no window, so W, N and G are off, with a note saying so; suffix decoding's own are on for it alone."""
    page, errors = opened(browser, f"{classroom}{OPENED}", PROJECTOR)
    try:
        note = page.locator("#ll-settings-off")
        page.get_by_text("Prompt lookup, the draft model, suffix decoding").click()  # Gradio draws it once opened
        page.wait_for_function(f"() => ({OFF})()[1] !== undefined")
        assert "Off for Lookahead" in note.inner_text()
        assert page.evaluate(OFF) == [False, True]
        page.get_by_role("radio", name="Medusa heads").check()
        page.wait_for_function(f"() => ({OFF})()[0] === true")
        assert page.evaluate(OFF) == [True, True]
        assert "Off for Medusa heads, which does not use them: W, N, G and Auto" in note.inner_text()
        assert page.locator("#ll-run-auto input").is_disabled()
        page.get_by_role("radio", name="Suffix decoding").check()
        page.wait_for_function(f"() => ({OFF})()[1] === false")
        assert page.evaluate(OFF) == [True, False]
        page.get_by_role("radio", name="Lookahead", exact=True).check()
        page.wait_for_function(f"() => ({OFF})()[0] === false")
        assert page.evaluate(OFF) == [False, True] and not page.locator("#ll-run-auto input").is_disabled()
        assert errors == []
    finally:
        page.close()
