"""The replay: the run's summary, the step controls, and the panels of the step shown, read from the session's run.

Replay events (step, scrub, play, tick) read the session's recorded run outside the queue and never
wait for model work; a session that lost its run gets the default example back, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.serve.server import SESSION_SECONDS
from lookahead_core.records import Run
from visuals import library, replay
from visuals.cards import card_head_html
from visuals.progress import tokens_per_step_html
from visuals.summary import notice_html, summary_html

PLAY, PAUSE = "▶ Play", "❚❚ Pause"  # drawn by DejaVu Sans: "⏸" is in no font Debian's chromium has by default
DEFAULT_PRESET = library.load_presets()[0]["id"]


@dataclass(frozen=True)
class Replay:
    """The session's run and the controls that move through it."""

    run: gr.State
    playing: gr.State
    timer: gr.Timer
    summary: gr.HTML
    back: gr.Button
    play: gr.Button
    forward: gr.Button
    step: gr.Slider
    speed: gr.Slider
    link: gr.Button


@dataclass(frozen=True)
class Panels:
    """The step's caption, its panels by name (replay.PANELS, the caption first) and the tokens-per-step chart."""

    shown: dict[str, gr.HTML]
    chart: gr.HTML


def build_replay(first: Run) -> Replay:
    """The row of step controls, and the summary of `first` (built unrendered: the page places it under the panels,
    so that they are on the first screen)."""
    run = gr.State(None, time_to_live=SESSION_SECONDS)
    playing = gr.State(False)
    timer = gr.Timer(replay.play_interval(2), active=False)
    summary = gr.HTML(summary_html(first), elem_id="ll-summary", render=False)
    with gr.Row(equal_height=False, elem_id="ll-replay"):
        back = gr.Button("◀ Step", elem_id="ll-back", size="md", scale=0, min_width=96)
        play = gr.Button(PLAY, elem_id="ll-play", size="md", scale=0, min_width=96)
        forward = gr.Button("Step ▶", elem_id="ll-forward", size="md", scale=0, min_width=96)
        step = gr.Slider(0, replay.last_step(first), value=0, step=1, label="Step", elem_id="ll-step", scale=4)
        speed = gr.Slider(0.5, 8, value=2, step=0.5, label="Speed (steps/s)", scale=1, min_width=200)
        link = gr.Button("Copy link", elem_id="ll-link", size="md", scale=0, min_width=120)
    return Replay(
        run=run,
        playing=playing,
        timer=timer,
        summary=summary,
        back=back,
        play=play,
        forward=forward,
        step=step,
        speed=speed,
        link=link,
    )


def panel_card(name: str, html: dict[str, str]) -> gr.HTML:
    """A panel's card: its heading (title, hint, legend) and the panel itself."""
    gr.HTML(card_head_html(name), elem_classes="ll-card-head")
    return gr.HTML(html[name], elem_id=f"ll-{name}")


# The step's three panels side by side (their tops on the first screen at 1280 × 800), as wide as each other; at
# 300 px at least (narrower, the pool's lines broke a chip a line): a narrower column (the lesson open beside it)
# puts verification under the window and the pool, as wide as both
STEP_CARDS = (("window", 1), ("pool", 1), ("verification", 1))
STEP_CARD_WIDTH = 300


def build_panels(first: Run) -> Panels:
    """The caption and the six panel cards of step 0 of `first`: the window, the pool and verification in one row,
    then the output beside the progress (the chart under it), then the attention mask across the column."""
    html = replay.panels(first, 0)
    shown = {"caption": gr.HTML(html["caption"], elem_id="ll-caption")}
    with gr.Row(equal_height=False, elem_id="ll-step-cards"):
        for name, scale in STEP_CARDS:
            with gr.Column(scale=scale, min_width=STEP_CARD_WIDTH, elem_classes="ll-card"):
                shown[name] = panel_card(name, html)
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, elem_classes="ll-card"):
            shown["output"] = panel_card("output", html)
        with gr.Column(scale=1, elem_classes="ll-card"):
            shown["progress"] = panel_card("progress", html)
            chart = gr.HTML(tokens_per_step_html(first), elem_id="ll-chart")
    with gr.Row(equal_height=False), gr.Column(elem_classes="ll-card"):
        shown["mask"] = panel_card("mask", html)
    return Panels({name: shown[name] for name in replay.PANELS}, chart)


# ----------------------------------------------------------------------------------------------
# Updates: what a replay event changes


def playback(page, playing: bool, steps_per_second=None) -> dict:
    """Play or pause: the state, the timer (at a new speed when given) and the button's words."""
    r = page.replay
    timer = (
        gr.Timer(active=playing)
        if steps_per_second is None
        else gr.Timer(value=replay.play_interval(steps_per_second), active=playing)
    )
    return {r.playing: playing, r.timer: timer, r.play: gr.Button(value=PAUSE if playing else PLAY)}


def shown_step(page, run: Run, index: int) -> dict:
    """The panels of step `index` of `run`."""
    return {page.panels.shown[name]: html for name, html in replay.panels(run, index).items()}


def loaded(page, run: Run, index: int = 0) -> dict:
    """A newly loaded run: its summary and chart, the step slider's range, the panels; playback stops."""
    r = page.replay
    slider = gr.Slider(value=index, maximum=max(replay.last_step(run), 1))
    updates = {r.run: run, r.step: slider, r.summary: summary_html(run), page.panels.chart: tokens_per_step_html(run)}
    return updates | shown_step(page, run, index) | playback(page, False)


def moved(page, run: Run, index: int, asked: float | None = None) -> dict:
    """The same run at step `index`; the step slider moves there unless the page asked for that very step (`asked`,
    the slider's value it sent): written back, it would pull a slider the visitor has moved on since to where it
    was, and undo their later presses."""
    return ({} if index == asked else {page.replay.step: index}) | shown_step(page, run, index)


def expired(page) -> dict:
    """The example again, saying why (replay events run outside the queue, where no toast can be sent)."""
    run = library.example_run(DEFAULT_PRESET)
    notice = notice_html(replay.SESSION_EXPIRED, "Session expired")
    return loaded(page, run) | {page.replay.summary: notice + summary_html(run)}


# ----------------------------------------------------------------------------------------------
# Handlers


def step_back(page, run, index):
    return moved(page, run, replay.step_by(run, index, -1)) if replay.is_run(run) else expired(page)


def step_forward(page, run, index):
    return moved(page, run, replay.step_by(run, index, 1)) if replay.is_run(run) else expired(page)


def scrub(page, run, index):
    return moved(page, run, replay.clamp_step(run, index), index) if replay.is_run(run) else expired(page)


def toggle_play(page, run, index, playing, speed):
    if not replay.is_run(run):
        return expired(page)
    if playing:
        return moved(page, run, replay.clamp_step(run, index)) | playback(page, False)
    return moved(page, run, replay.play_start(run, index)) | playback(page, True, speed)


def tick(page, run, index):
    if not replay.is_run(run):
        return expired(page)
    following, keep_playing = replay.play_tick(run, index)
    return moved(page, run, following) | ({} if keep_playing else playback(page, False))


def set_speed(page, speed):
    return {page.replay.timer: gr.Timer(value=replay.play_interval(speed))}
