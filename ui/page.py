"""The page: its parts built in page order, then every event wired to its handler.

Replay events (step, scrub, play, preset, lesson, exports) skip the queue: they never wait behind
model work and a full queue never refuses them. Run and Race wait in a bounded queue for the one
model slot. Every handler checks the raw values a client sent (preprocess=False), so a wrong type gets
the lab's message; only the upload needs Gradio's preprocessing, to read the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from lab.serve.line import CAPACITY as LINE_CAPACITY
from lab.serve.server import SESSION_SECONDS
from lab.serve.stores import Visitor
from visuals import library
from visuals.cards import terms_html
from visuals.palette import marks_css
from visuals.summary import notice_html

from . import classroom, player, race, run, scripts, tune
from . import controls as controls_events
from . import exports as export_events
from .classroom import ClassBox, build_classroom
from .controls import Controls, build_controls
from .events import LabBlocks, bound
from .exports import Exports, build_exports
from .form import RACE_FORM, RUN_FORM, VISITOR, inputs
from .lesson import LessonBar, back_to_own, build_lesson, lesson_opened, lesson_over
from .links import opened
from .model_box import ModelBox, build_model_box
from .player import Panels, Replay, build_panels, build_replay
from .presets import DEFAULT, PRESETS, choose_preset
from .race import RaceCard, build_race
from .tune import TUNE_FORM, TuneCard, build_tune

# Model work's requests served at once: each waits in lab.serve.line's line for the model (which holds LINE.capacity,
# saying each its place), or is answered from a shared measurement without waiting (lab.serve.questions); past this,
# Gradio's own queue holds MAX_WAITING more, and the next is told the lab is busy.
MODEL_REQUESTS = LINE_CAPACITY + 16
MAX_WAITING = LINE_CAPACITY
# How long Gradio's queue sleeps between looks while it has nothing to start (its own: 1 ms off Windows, 50 ms on it).
# At 1 ms the idle app took 6.6 to 8.6% of a core (a class's shared machine, a student's laptop) and 64 greedy tokens on
# two threads beside it 914 ms against 849 ms with no server (a 2-layer SmolLM2, medians of 4); at 10 ms 1.9 to 3.4% (in
# four readings) and 865 ms (the 2-core AMD EPYC (Zen 3), 2026-12-07). A queued event (model work, not a step: replaying
# bypasses the queue) starts at most 10 ms later.
QUEUE_IDLE_SECONDS = 0.01
# The theme's text sizes start at 14 px (Soft's start at 9): its labels, slider ends and info lines were 12 px, too
# small for a class reading a projector from the back row (assets/style.css floors the app's own sizes the same way).
READABLE_TEXT = gr.themes.Size(
    name="ll_readable", xxs="14px", xs="14px", sm="14px", md="16px", lg="18px", xl="22px", xxl="26px"
)
# Soft's light greys and mid blues fall below WCAG AA (4.5:1) for small text: a projector washes them out first.
# Its subdued text is darkened to slate 600 (7.2:1 on the page) and its blues to blue 700 (6.7:1 under white).
THEME = gr.themes.Soft(
    primary_hue="blue",
    neutral_hue="slate",
    font=["ui-sans-serif", "system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    text_size=READABLE_TEXT,
).set(
    body_text_color_subdued="*neutral_600",
    block_label_text_color="*primary_700",
    block_title_text_color="*primary_700",
    button_primary_background_fill="*primary_700",
    button_primary_background_fill_hover="*primary_800",
    checkbox_label_background_fill_selected="*primary_700",
)
# The only file the app takes is a run to open (library.read_run refuses more than MAX_RUN_BYTES with its own
# message); Gradio's upload route refuses anything larger still.
LAUNCH_OPTIONS = {
    "theme": THEME,
    "css": marks_css(),
    "css_paths": [library.ASSETS / "style.css"],
    "js": scripts.ON_LOAD,
    "max_file_size": 2 * library.MAX_RUN_BYTES,
    "max_threads": 2 * MODEL_REQUESTS,  # each request waiting in line holds a thread a moment at a time; replays too
}
# Short: the step's panels must fit under it on the first screen at 1280 × 800 (the rest is in HOW_IT_WORKS)
TITLE = (
    "# Lookahead Lab\nWatch **lookahead decoding** (Fu et al., ICML 2024) on a real model, one forward pass at "
    "a time; the output stays exactly what greedy decoding would write. Keys: ← → step, space plays. "
    "New here? Open the **guided lesson** (the arrow at the top left, or [this link](?lesson=1))."
)
HOW_IT_WORKS = """
In short: the Jacobi window guesses n-grams, the pool keeps them, verification accepts the ones the model agrees
with, and the output stays exactly what greedy decoding would write.

1. Each **step** is one forward pass of the unmodified model. It feeds the current token **c**, the **2D Jacobi
   window** (N−1 levels × W columns of guessed future tokens) and up to G **guesses** from the **n-gram pool**.
2. The row of c gives the **guaranteed** next token: exactly what greedy decoding would emit.
3. The window's top level gets a **Jacobi update** (each row's argmax); each column, read upwards, is a fresh
   n-gram that goes into the pool, keyed by its first token.
4. **Verification**: each guess whose key is c is checked token by token against the model's own predictions in
   the same pass, and so are the window's own Jacobi trajectories (they cost nothing extra: the pass computed
   their rows anyway). The longest match is **accepted**, plus the **bonus** token predicted after it.
5. So one pass commits 1 to N tokens, and the output is token for token the greedy output.
6. The **compression ratio** (tokens per step) is the speedup when a wide step costs what a narrow one does
   (a GPU); on a CPU each extra token fed costs time, so the clock can disagree.
"""


@dataclass(frozen=True)
class Page:
    """Every part of the page, by name: what handlers address their updates to."""

    lesson: LessonBar
    visitor: gr.State  # this visitor's own earlier outputs, which their suffix runs match (lab.serve.stores.Visitor)
    contrast: gr.Checkbox
    controls: Controls
    model_box: ModelBox
    replay: Replay
    exports: Exports
    panels: Panels
    race: RaceCard
    tune: TuneCard
    classroom: ClassBox

    def shown_run(self) -> list:
        """What a newly shown run updates, in the order the HTTP API's replay endpoints return it."""
        r = self.replay
        return [r.run, r.step, r.summary, self.panels.chart, *self.panels.shown.values(), r.playing, r.timer, r.play]

    def preset_outputs(self) -> list:
        """What a preset fills, in the order the HTTP API's /preset returns it."""
        c = self.controls
        settings = [c.prompt, c.chat, c.window, c.ngram, c.guesses, c.max_new_tokens, c.method, c.lookup_tokens]
        return [*settings, c.draft_tokens, c.preset_note, *self.shown_run(), c.notice, *c.sampling.inputs()] + [
            self.exports.run_id,
            c.auto,
        ]

    def model_buttons(self) -> list:
        c = self.controls
        return [c.run, c.again, self.race.run, self.tune.run, c.stop, self.race.stop, self.tune.stop]


def build_page() -> Page:
    """Every part, in page order: at 1280 × 800 the first screen holds the preset, the prompt and Run beside the
    step controls, the caption and the window, pool and verification panels; the run's summary, the terms, the
    exports and how it works follow the panels."""
    first = library.example_run(DEFAULT["id"])
    lesson = build_lesson()
    visitor = gr.State(Visitor(), time_to_live=SESSION_SECONDS)  # empty: Gradio gives each session its own copy
    with gr.Row(equal_height=False, elem_id="ll-head"):
        gr.Markdown(TITLE, elem_id="ll-title")
        contrast = gr.Checkbox(False, label="High contrast (for a projector)", elem_id="ll-contrast", container=False)
    class_box = build_classroom()
    with gr.Row(equal_height=False, elem_id="ll-main"):
        with gr.Column(scale=1, min_width=260, elem_id="ll-controls"):
            controls = build_controls(PRESETS)
            model_box = build_model_box()
        with gr.Column(scale=4):
            replay = build_replay(first)
            panels = build_panels(first)
            replay.summary.render()
            gr.HTML(terms_html(), elem_id="ll-terms")
            exports = build_exports()
            with gr.Accordion("How lookahead decoding works, in six lines", open=False):
                gr.Markdown(HOW_IT_WORKS)
            first_settings = (DEFAULT.get("auto", False), DEFAULT["window"], DEFAULT["ngram"], DEFAULT["guesses"])
            race_card = build_race(SESSION_SECONDS, *first_settings)
            tune_card = build_tune()
    return Page(
        lesson=lesson,
        visitor=visitor,
        contrast=contrast,
        controls=controls,
        model_box=model_box,
        replay=replay,
        exports=exports,
        panels=panels,
        race=race_card,
        tune=tune_card,
        classroom=class_box,
    )


def build_demo() -> tuple[gr.Blocks, Page]:
    """The whole app, wired and queued, and its parts."""
    with LabBlocks(title="Lookahead Lab", delete_cache=(3600, SESSION_SECONDS)) as demo:
        page = build_page()
        opening = wire_replay(demo, page)
        wire_classroom(page, opening)
        wire_exports(page)
        wire_model_work(page)
    demo.queue(max_size=MAX_WAITING)
    demo._queue.sleep_when_free = max(demo._queue.sleep_when_free, QUEUE_IDLE_SECONDS)
    return demo, page


# ----------------------------------------------------------------------------------------------
# Events

REPLAYING = {"queue": False, "show_progress": "hidden", "preprocess": False}
MODEL_WORK = {
    "concurrency_limit": MODEL_REQUESTS,
    "concurrency_id": "model",
    "show_progress": "full",
    "preprocess": False,
}
PRIVATE = {"api_visibility": "private"}
STOPPED = (
    "the Run ended before its answer, so nothing was measured. The replay and its summary still show the run that "
    "was shown before; the prompt and settings are as you left them: Run again when you are ready."
)


def wire_replay(demo: gr.Blocks, page: Page):
    """Opening a link, the lesson, the form, the step controls and playback; the page's opening event, for what must
    follow it."""
    c, lesson = page.controls, page.lesson
    opening = [lesson.walkthrough, c.preset, *page.preset_outputs(), page.model_box.info, lesson.lit, lesson.bar]
    opening += [page.contrast, page.exports.json, page.exports.html, page.exports.png]
    opening_event = demo.load(bound(opened, page), None, opening, **PRIVATE, **REPLAYING).then(
        None, lesson.lit, None, js=scripts.HIGHLIGHT
    )
    wire_lesson(page)
    wire_form(page)
    wire_player(page)
    return opening_event


def wire_lesson(page: Page) -> None:
    """The lesson's steps, its bar opened, and Back to the visitor's own prompt; each step outlines its panel."""
    c, lesson, filled = page.controls, page.lesson, page.preset_outputs()
    lessoned = [lesson.walkthrough, c.preset, *filled, lesson.lit, lesson.own, lesson.back]
    shown_now = [c.preset, c.prompt, c.chat, page.exports.run_id, lesson.own]  # what the lesson may keep
    for target, button in lesson.moves:
        button.click(partial(lesson_over, page, target), shown_now, lessoned, **PRIVATE, **REPLAYING).then(
            None, lesson.lit, None, js=scripts.HIGHLIGHT
        )
    lesson.bar.expand(bound(lesson_opened, page), [lesson.lit, *shown_now], lessoned, **PRIVATE, **REPLAYING).then(
        None, lesson.lit, None, js=scripts.HIGHLIGHT
    )
    lesson.back.click(
        bound(back_to_own, page), lesson.own, [lesson.own, lesson.back, c.preset, *filled], **PRIVATE, **REPLAYING
    )


def wire_form(page: Page) -> None:
    """The high contrast view, the prompt, presets, the method and its settings, and what they feed."""
    c = page.controls
    filled = page.preset_outputs()
    page.contrast.change(None, page.contrast, None, js=scripts.CONTRAST, **PRIVATE)
    c.prompt.input(bound(controls_events.own_prompt, page), None, [c.preset, c.preset_note], **PRIVATE, **REPLAYING)
    c.preset.input(bound(choose_preset, page), c.preset, filled, api_name="preset", **REPLAYING)
    method_settings = [*[part for parts in controls_events.grouped(c).values() for part in parts], c.method_note]
    c.method.change(bound(controls_events.method_chosen, page), c.method, method_settings, **PRIVATE, **REPLAYING)
    # One `always_last` event per trigger: as each of two on one trigger ends, Gradio's page sends the whole trigger
    # again, and the two restart each other forever (a core burnt by every page whose W or N a preset or the lesson
    # had set; tests/test_wiring.py). So one event answers the feed and the race's plan, on every change they read
    # (the last reads the race's choice after Auto moved it), and Auto moves the race's choice once per change.
    sliders = [c.window, c.ngram, c.guesses]
    c.auto.change(
        bound(race.follow_run, page), c.auto, page.race.settings, trigger_mode="multiple", **PRIVATE, **REPLAYING
    )
    gr.on(
        [page.race.settings.change, c.auto.change, *(slider.change for slider in sliders)],
        bound(race.planned, page),
        [page.race.settings, c.auto, *sliders],
        [c.feed, page.race.plan],
        **PRIVATE,
        **REPLAYING,
    )


def wire_player(page: Page) -> None:
    """The link to this step, the step controls, playback and its speed."""
    r, c, shown = page.replay, page.controls, page.shown_run()
    r.link.click(None, [c.preset, r.step, page.exports.run_id], None, js=scripts.COPY_LINK, **PRIVATE)
    # A step press moves the slider in the browser at once and the slider's input event draws its step: no press
    # waits on the one before it (scripts.STEP_BY). The HTTP API keeps its step endpoints, with no button behind them.
    r.back.click(None, None, None, js=scripts.STEP_BY % -1, **PRIVATE)
    r.forward.click(None, None, None, js=scripts.STEP_BY % 1, **PRIVATE)
    gr.on([], bound(player.step_back, page), [r.run, r.step], shown, api_name="step_back", **REPLAYING)
    gr.on([], bound(player.step_forward, page), [r.run, r.step], shown, api_name="step_forward", **REPLAYING)
    r.step.input(
        bound(player.scrub, page), [r.run, r.step], shown, api_name="scrub", trigger_mode="always_last", **REPLAYING
    )
    r.play.click(
        bound(player.toggle_play, page), [r.run, r.step, r.playing, r.speed], shown, api_name="play", **REPLAYING
    )
    r.timer.tick(bound(player.tick, page), [r.run, r.step], shown, trigger_mode="always_last", **PRIVATE, **REPLAYING)
    r.speed.change(bound(player.set_speed, page), r.speed, r.timer, **PRIVATE, **REPLAYING)


def wire_classroom(page: Page, opening) -> None:
    """A class, after the page's opening event (ui.classroom): a class's link joins it, Open a class opens one; a
    driving page publishes each change of its replay and race, a following page polls the board, steps away by
    moving its own replay (a step, a preset, the lesson, a file, its own Run or race) and follows again. The page
    is marked opened (scripts.OPENED) once it shows the class."""
    box, r, c, card = page.classroom, page.replay, page.controls, page.race
    followed = [*box.bar(), c.preset, *page.preset_outputs(), card.summary, card.result, card.playback, card.chart]
    followed.append(card.costs)
    opening.then(bound(classroom.class_opened, page), r.run, followed, **PRIVATE, **REPLAYING).then(
        None, None, None, js=scripts.DROP_KEY
    ).then(None, None, None, js=scripts.OPENED)
    shown = [c.preset, page.exports.run_id, r.step, card.result]
    box.open.click(
        bound(classroom.open_class, page), shown, [*box.bar(), box.share, box.drive], **PRIVATE, **REPLAYING
    ).then(None, [box.share, box.drive], [box.share, box.drive], js=scripts.CLASS_LINKS)
    changes = [r.step.change, page.exports.run_id.change, c.preset.change, card.summary.change]
    gr.on(changes, None, None, None, js=scripts.PUBLISH, **PRIVATE)
    publishing = {**PRIVATE, **REPLAYING, "trigger_mode": "always_last"}
    box.publish.click(bound(classroom.published, page), [box.seat, *shown], box.bar(), **publishing)
    box.poll.tick(
        bound(classroom.wait_for_news, page), box.seat, box.news, trigger_mode="once", **PRIVATE, **REPLAYING
    ).then(bound(classroom.apply_news, page), [box.seat, box.news, r.run], followed, **PRIVATE, **REPLAYING)
    own = [r.back.click, r.forward.click, r.step.input, r.play.click, c.preset.input, c.run.click, c.again.click]
    own.append(card.run.click)
    own += [button.click for _, button in page.lesson.moves] + [page.lesson.bar.expand, page.exports.upload.upload]
    gr.on(own, None, None, None, js=scripts.STEP_AWAY, **PRIVATE)
    box.stop.click(bound(classroom.stop_following, page), box.seat, box.bar(), **PRIVATE, **REPLAYING)
    box.follow.click(bound(classroom.follow_again, page), [box.seat, r.run], followed, **PRIVATE, **REPLAYING)


def wire_exports(page: Page) -> None:
    """The downloads (written by the server, then clicked by the browser), the PNG and opening a run file."""
    e, step, state = page.exports, page.replay.step, page.replay.run
    e.json.click(
        bound(export_events.json_export, page), state, [e.json_file, e.notice], api_name="json", **REPLAYING
    ).then(None, e.json_file, None, js=scripts.CLICK_DOWNLOAD % "ll-json-file", **PRIVATE)
    e.html.click(
        bound(export_events.html_export, page), [state, step], [e.html_file, e.notice], api_name="html", **REPLAYING
    ).then(None, e.html_file, None, js=scripts.CLICK_DOWNLOAD % "ll-html-file", **PRIVATE)
    e.png.click(
        bound(export_events.step_slide, page), [state, step], [e.slide, e.notice], api_name="slide", **REPLAYING
    ).then(None, [e.slide, step], None, js=scripts.DRAW_PNG, **PRIVATE)
    reading = {**REPLAYING, "preprocess": True}  # the upload: Gradio reads the file
    opened_outputs = [page.controls.preset, *page.preset_outputs(), e.notice]
    e.upload.upload(bound(export_events.opened_file, page), e.upload, opened_outputs, api_name="open", **reading)


def working(page: Page) -> dict:
    """While model work waits or runs: Run, Race and the map off, Stop on."""
    stops = (page.controls.stop, page.race.stop, page.tune.stop)
    return {button: gr.Button(interactive=button in stops) for button in page.model_buttons()}


def waiting(page: Page) -> dict:
    """No model work: Run, Race and the map on, Stop off."""
    runs = (page.controls.run, page.controls.again, page.race.run, page.tune.run)
    return {button: gr.Button(interactive=button in runs) for button in page.model_buttons()}


def run_stopped(page: Page) -> dict:
    """Stop under Run: the buttons back, and the note says what stopped and what the replay still shows."""
    return waiting(page) | {page.controls.notice: notice_html(STOPPED, refused="Stopped")}


def run_ended(page: Page, notice: str) -> dict:
    """A Run ended (done, refused, failed or stopped): the buttons back, and the note under Run as it stands."""
    return waiting(page) | {page.controls.notice: notice}


def wire_model_work(page: Page) -> None:
    """Run, Race and the map: the buttons off while the work waits or runs, Stop on; every ending gives them back."""
    c, card, buttons = page.controls, page.race, page.model_buttons()
    busy, idle = bound(working, page), bound(waiting, page)
    shown_run = [*page.shown_run(), c.preset_note, page.model_box.info, page.exports.run_id, c.notice, page.visitor]
    ran, measured = (
        button.click(busy, None, buttons, **PRIVATE, **REPLAYING).then(
            bound(handler, page),
            inputs((*RUN_FORM, VISITOR), page),
            shown_run,
            api_name=name,
            show_progress_on=c.notice,
            **MODEL_WORK,
        )
        for button, handler, name in ((c.run, run.run_model, "run"), (c.again, run.run_again, "run_again"))
    )
    raced = card.run.click(busy, None, buttons, **PRIVATE, **REPLAYING).then(
        bound(race.race_model, page),
        inputs((*RACE_FORM, VISITOR), page),
        [card.summary, card.result, card.playback, card.chart, card.costs],
        api_name="race",
        show_progress_on=card.summary,
        **MODEL_WORK,
    )
    mapped = page.tune.run.click(busy, None, buttons, **PRIVATE, **REPLAYING).then(
        bound(tune.tune_model, page),
        inputs(TUNE_FORM, page),
        page.tune.outputs(),
        api_name="tune",
        show_progress_on=page.tune.summary,
        **MODEL_WORK,
    )
    for finished in (raced, mapped):  # done, refused, failed or cancelled: the buttons come back
        finished.then(idle, None, buttons, **PRIVATE, **REPLAYING)
    # A Run's ending also writes the note under Run back as it stands: a Run that Stop cancelled ends on Gradio's
    # error status, drawn over the note as "Error" in place of Stop's words when it came after them (1 Stop in 8 on
    # the 2-core Xeon ended so, and 1 more showed it first)
    for finished in (ran, measured):
        finished.then(bound(run_ended, page), c.notice, [*buttons, c.notice], **PRIVATE, **REPLAYING)
    every = [ran, measured, raced, mapped]
    c.stop.click(bound(run_stopped, page), None, [*buttons, c.notice], cancels=every, **PRIVATE, **REPLAYING)
    gr.on([card.stop.click, page.tune.stop.click], idle, None, buttons, cancels=every, **PRIVATE, **REPLAYING)
    gr.on(
        [card.restart.click, card.slow.change],
        bound(race.replay_race, page),
        [card.result, card.slow],
        card.playback,
        api_name="race_playback",
        **REPLAYING,
    )
