"""The classroom in a real headless Chromium, with no model: the first view, the lesson walked end to end on a
desktop by keyboard alone, its panels read at AA at each step (the phone's walk is test_phone.py's), every step
press stepping however fast the presses come, the offline export compared panel for panel with the app, and a run
file taken out and brought back.

The app is classroom with its model access replaced by a failure, so anything here that needed a model would
show an error. Writes out/lesson-*.png (git-ignored); scripts/screenshot.py is not needed for these.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from scripts.serving import caption, open_page, wait_for_step
from tests.browser.axe import audited
from tests.browser.chromium import focus_ring, lit_box, offline_context, tab_to, walk_lesson
from ui.race import RACE_AUTO, RACE_SLIDERS
from visuals import library, replay
from visuals.lesson import LESSON, step_index

OUT = Path(__file__).resolve().parents[2] / "out"
PRESETS = library.load_presets()
PRESETS_BY_ID = {item["id"]: item for item in PRESETS}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")


def example(preset_id: str):
    return library.load_run(library.example_path(library.preset(PRESETS, preset_id)))


def lit_panel(page) -> str:
    """The id of the element the lesson outlines (the panel inside an outlined card, or the element itself)."""
    return page.evaluate(
        "() => { const lit = document.querySelector('.ll-lit'); if (!lit) return '';"
        " const inner = lit.querySelector('[id^=ll-]'); return (lit.id.startsWith('ll-') ? lit : inner).id; }"
    )


def in_view(page, element_id: str) -> bool:
    return page.evaluate(
        f"() => {{ const r = document.getElementById('{element_id}').getBoundingClientRect();"
        " return r.bottom > 0 && r.top < window.innerHeight && r.width > 0; }"
    )


def test_run_on_the_model_is_on_screen_as_the_page_opens_at_1280_by_800(classroom, browser):
    page, errors = open_page(browser, classroom, {"width": 1280, "height": 800})
    try:
        wait_for_step(page, 0)
        box = page.locator("#ll-run").bounding_box()
        print(f"\nRun on the model at 1280×800: top {box['y']:.0f} px, bottom {box['y'] + box['height']:.0f} px")
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1280
        assert box["y"] >= 0 and box["y"] + box["height"] <= 800
        assert page.evaluate("() => window.scrollY") == 0 and errors == []
    finally:
        page.close()


DESKTOP = {"width": 1280, "height": 900}


def test_the_lesson_walks_from_start_to_end_by_keyboard_alone_and_reads_at_aa(classroom, browser):
    """Every lesson step on a desktop, walked with Enter alone (`?lesson=1` opens with the focus on Next, each step
    hands it to its own Next, a focus ring on each): its panel outlined, on screen and no taller than it, its title
    shown, and its panel and the lesson read at AA by axe (the rest of the page is audited in test_accessibility.py);
    Enter on the last step's Back goes back one, and Tab comes back to Next. (This walk was three: by clicks, by keys
    and axe's over the whole page at each step.)"""
    started = time.perf_counter()
    page, errors = open_page(browser, f"{classroom}?lesson=1", DESKTOP)
    try:
        page.wait_for_function("() => document.querySelector('.ll-lit')")
        print(f"\nopening ?lesson=1 to its outlined panel: {time.perf_counter() - started:.2f} s")
        page.wait_for_function("() => document.activeElement?.id === 'll-next-0'")  # ?lesson=1 starts on it
        found = {}

        def by_enter(number: int) -> None:
            assert focus_ring(page).startswith("solid 3px"), f"lesson step {number}: no focus ring"
            page.keyboard.press("Enter")

        def check(number: int) -> None:
            wanted = f"ll-{LESSON[number].panel}"
            assert lit_panel(page) == wanted
            assert in_view(page, wanted), f"lesson step {number + 1}: {wanted} is not on screen"
            box = lit_box(page)
            assert box["height"] <= page.viewport_size["height"], f"lesson step {number + 1}: taller than the screen"
            assert page.get_by_text(LESSON[number].title).first.is_visible()
            following = f"ll-next-{number}" if number + 1 < len(LESSON) else f"ll-back-{number}"
            page.wait_for_function(f"() => document.activeElement?.id === '{following}'")
            # the panel at rest has drawn its charts (walk_lesson); the lesson's bar has none
            parts = [".ll-lit", "#ll-lesson-bar"]
            found[number + 1] = audited(page, f"lesson step {number + 1}", parts, drawn=True)
            if number in (4, 8):
                OUT.mkdir(exist_ok=True)
                page.screenshot(path=str(OUT / f"lesson-{number + 1}.png"))

        walk_lesson(page, check, by_enter)
        assert found == {number + 1: {} for number in range(len(LESSON))}
        page.keyboard.press("Enter")  # on the last step's Back
        wait_for_step(page, step_index(example(LESSON[-2].preset), LESSON[-2]))
        page.wait_for_function(f"() => document.activeElement?.id === 'll-next-{len(LESSON) - 2}'")
        print(f"\nfrom Next, Tab comes back to it in {tab_to(page, f'll-next-{len(LESSON) - 2}')} presses")
        named = page.evaluate(
            "() => [...document.querySelectorAll('#ll-lesson button[role=tab]')].map(b => b.getAttribute('aria-label'))"
        )
        assert named == [f"Lesson step {i + 1}: {item.title}" for i, item in enumerate(LESSON)]
        assert errors == []
    finally:
        page.close()


def panels_in(page, inside: str) -> dict[str, str]:
    """Each panel's HTML on `page`: the content of `#ll-NAME` followed by the selector `inside` (the app's
    gr.HTML puts it in a `.prose` block; the export's is the element itself)."""
    return page.evaluate(
        "([names, inside]) => Object.fromEntries(names.map((n) =>"
        " [n, document.querySelector('#ll-' + n + inside).innerHTML]))",
        [list(replay.PANELS), inside],
    )


def test_the_exported_html_replays_offline_exactly_as_the_app(classroom, browser, tmp_path):
    page, errors = open_page(browser, f"{classroom}?preset=python&step=0")
    try:
        wait_for_step(page, 0)
        with page.expect_download() as download:
            page.click("#ll-html")
        exported = tmp_path / "replay.html"
        download.value.save_as(exported)
        print(f"\nexported HTML of the python preset: {exported.stat().st_size:,} bytes")
        context = offline_context(browser, {"width": 1280, "height": 900})
        offline = context.new_page()
        fetched: list[str] = []
        offline.on("request", lambda request: fetched.append(request.url))
        offline_errors: list = []
        offline.on("pageerror", lambda error: offline_errors.append(error))
        offline.goto(exported.as_uri())
        offline.wait_for_selector("body[data-ready]")
        page.click("h1")
        for step in range(6):
            if step:
                page.keyboard.press("ArrowRight")
                wait_for_step(page, step)
                offline.keyboard.press("ArrowRight")
            assert offline.inner_text("#ll-step-number").startswith(f"step {step} of")
            assert panels_in(offline, "") == panels_in(page, " .prose"), f"step {step}"
        last = replay.last_step(example("python"))
        offline.fill("#ll-step", str(last))
        offline.dispatch_event("#ll-step", "input")
        assert offline.inner_text("#ll-step-number").startswith(f"step {last} of")
        with offline.expect_download() as png:
            offline.click("#ll-png")
        assert png.value.suggested_filename == f"lookahead-step-{last}.png"
        assert fetched == [exported.as_uri()] and offline_errors == [] and errors == []
        context.close()
    finally:
        page.close()


def test_a_run_file_goes_out_and_comes_back_and_a_bad_one_gets_a_message(classroom, browser, tmp_path):
    page, errors = open_page(browser, f"{classroom}?preset=pencils&step=3")
    try:
        wait_for_step(page, 3)
        with page.expect_download() as download:
            page.click("#ll-json")
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert library.read_run(saved.read_bytes()).to_json() == example("pencils").to_json()
        picker = "#ll-share input[type=file]"
        bad = tmp_path / "notes.json"
        bad.write_text('{"schema_version": 1, "trace": {}, "greedy": {}}')
        page.set_input_files(picker, str(bad))
        page.wait_for_function(
            "() => document.querySelector('#ll-share-notice').innerText.includes('cannot be opened')"
        )
        assert "schema version" in page.inner_text("#ll-share-notice")
        page.set_input_files(picker, str(saved))
        page.wait_for_function("() => document.querySelector('#ll-preset-caption').innerText.includes('from a file')")
        wait_for_step(page, 0)
        page.click("#ll-link")
        page.wait_for_function("() => location.search.includes('run=')")
        linked, _ = open_page(browser, page.url)
        wait_for_step(linked, 0)  # the default example's step 0 may show before the linked run replaces it
        linked.wait_for_function(
            "() => document.querySelector('#ll-preset-caption').innerText.includes('opened from its link')"
        )
        linked.close()
        assert errors == []
    finally:
        page.close()


def test_a_number_typed_past_a_sliders_range_is_said_under_it(classroom, browser):
    """Gradio moves a number typed into a slider's box past its range to the nearest end, silently; the page says
    so under the slider (ui/scripts.SLIDER_LIMITS), in a status region there from the start and named by the box,
    until the slider moves or a number in range is typed; with Enter the box shows the end at once. The control: the
    same typing, the change event stopped at the window before the page's listener hears it, leaves the note empty
    and the box as typed."""
    page, errors = open_page(browser, classroom)
    try:
        box, limit = (
            page.locator("#ll-max input[type=number]"),
            page.locator("#ll-max input[type=number]").get_attribute("max"),
        )
        note = page.locator("#ll-max .ll-slider-note")
        assert note.get_attribute("role") == "status" and note.inner_text() == ""
        assert box.get_attribute("aria-describedby") == note.get_attribute("id")
        for typed, moved in (("99999", "12"), ("0", None)):
            box.fill(typed)
            box.press("Tab")
            end = limit if typed == "99999" else "1"
            assert note.inner_text() == f"Max new tokens goes from 1 to {limit}: {typed} was set to {end}."
            assert box.input_value() == end
            if moved:
                page.locator("#ll-max input[type=range]").fill(moved)  # the slider dragged
            else:
                box.fill("12")
                box.press("Tab")
            assert note.inner_text() == ""
        box.fill("99999")
        box.press("Enter")  # the focus stays in the box: it shows the end at once, not once it loses the focus
        assert box.input_value() == limit and page.evaluate("() => document.activeElement.type") == "number"
        assert not errors
        box.fill("12")
        box.press("Tab")
        assert note.inner_text() == ""
        # the control, on the same page (a page of its own cost an opening: 3 to 4 s of Chromium's CPU): a listener
        # on the window's capture phase hears every change before the box's own listeners, whenever it was added
        page.evaluate("() => window.addEventListener('change', (e) => e.stopPropagation(), true)")
        box.fill("99999")
        box.press("Enter")
        time.sleep(0.5)
        assert box.input_value() == "99999"  # Gradio's own move waits for the focus to leave
        box.press("Tab")
        time.sleep(0.5)
        assert note.inner_text() == ""
    finally:
        page.close()


def test_the_lesson_keeps_the_visitors_own_prompt_and_brings_it_back(classroom, browser):
    """A lesson step loads its preset over the prompt box; a prompt of the visitor's own is kept the first time and
    ↩ brings it back (ui/lesson.back_to_own). The control: over a preset's own prompt nothing is kept, and no ↩."""
    from tests.browser.test_phone import ARROW

    page, errors = open_page(browser, classroom)
    try:
        box, back = page.get_by_label("Prompt (or write your own)"), page.locator("#ll-lesson-own")
        arrow = page.get_by_role("button", name=ARROW).first
        arrow.click()  # the control first: the page's preset, untouched
        page.wait_for_function("() => document.querySelector('.ll-lit')")
        page.click("#ll-next-0")
        wait_for_step(page, LESSON[1].step)
        assert not back.is_visible()
        box.fill("My own prompt about turtles")
        page.click("#ll-back-1")
        page.wait_for_function(f"() => document.querySelector('.ll-lit #ll-{LESSON[0].panel}')")
        back.wait_for(state="visible")
        assert box.input_value() == PRESETS_BY_ID[LESSON[0].preset]["prompt"]
        back.click()
        back.wait_for(state="hidden")
        assert box.input_value() == "My own prompt about turtles"
        assert "Your own prompt" in page.inner_text("#ll-preset-caption")
        assert not errors
    finally:
        page.close()


def plan_says(text: str) -> str:
    return f"() => document.querySelector('#ll-race-plan').innerText.includes({text!r})"


def test_the_races_settings_follow_runs_auto_box_and_its_card_says_so(classroom, browser):
    """A race ran auto's W=8 beside a Run at the sliders' W=4, said in small print: the race's choice follows Run's
    "auto" box, set by a preset as the page opens or by hand, and the race card says in words what it will run and
    whether a Run would match; picking otherwise on the race's card is said too."""
    page, errors = open_page(browser, f"{classroom}?preset=python")  # a preset with auto settings
    try:
        page.wait_for_function(plan_says("auto settings, measured for this hardware"))
        assert page.is_checked("#ll-run-auto input")
        assert page.get_by_role("radio", name=RACE_AUTO).is_checked()
        page.click("#ll-run-auto input")  # Run's box unticked by hand: the race follows
        page.wait_for_function(plan_says("the sliders' settings: the same as a Run uses now"))
        assert page.get_by_role("radio", name=RACE_SLIDERS).is_checked()
        page.get_by_role("radio", name=RACE_AUTO).click()  # the race's own choice, against Run's
        page.wait_for_function(plan_says("not what a Run uses now"))
        assert not errors
    finally:
        page.close()


def test_every_step_press_steps_however_fast_the_presses_come(classroom, browser):
    """Presses faster than the server answers (three keys, two clicks, then one back) step six times: none waits on
    the one before it (ui/scripts.STEP_BY), and no late answer pulls the slider back to a step it has left.

    Before: the server stepped from the index each press sent, and Gradio skipped a press made while the previous
    one was in flight (trigger_mode "once"): this test ended at step 3, its step 4 never shown."""
    page, errors = open_page(browser, f"{classroom}?preset=python&step=0")
    try:
        wait_for_step(page, 0)
        page.click("h1")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.click("#ll-forward")
        page.click("#ll-forward")
        page.click("#ll-back")
        wait_for_step(page, 4)
        page.wait_for_timeout(1_000)  # a late answer would show by now
        assert caption(page).startswith("Step 4 of")
        assert page.input_value("#ll-step input[type=number]") == "4"
        assert errors == []
    finally:
        page.close()
