"""The race: greedy, lookahead, prompt lookup, a draft model, Medusa and suffix decoding on one prompt, timed, then
played back.

The race decodes with nothing drawn and the device synchronised; the playback shows each method's text
growing at the speed it was measured at, and the charts show tokens against time and each step's cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import gradio as gr

from lab.measure.race import ROUNDS
from lab.serve import server
from lab.serve.budget import RACE_SECONDS
from lab.serve.questions import answered, question
from lab.serve.stores import Visitor
from lookahead_core.records import RaceRecord
from visuals.markup import escape
from visuals.race import cost_figure, playback_html, race_figure, race_html
from visuals.sharing import shared_note
from visuals.summary import notice_html

from .controls import feed
from .events import REFUSALS, announced_load, reporting, warned
from .form import RACE_FORM, VISITOR, form_handler, model_request_of

RACE_AUTO, RACE_SLIDERS = "auto: measured for this hardware", "the sliders' W, N, G"
SETTINGS_LABEL = "Lookahead's settings in the race (they follow Run's “auto” box unless you pick here)"
RACE_INTRO = (
    '<div class="ll-budget">The race decodes your prompt with greedy decoding, lookahead, prompt lookup, '
    "speculative decoding (a bfloat16 copy of the model as the draft), where heads ship for the model Medusa "
    "heads, and suffix decoding (matching your prompt, the shipped examples' outputs and your own Runs' outputs; a "
    "race adds nothing to them), on the model loaded here, each warmed up first, then in interleaved rounds (all "
    "of them, then all "
    f"again: up to {ROUNDS}, as many as fit its time), "
    "timed with the device synchronised and nothing drawn. Each speed is the median over the rounds, with its "
    "range; it names a winner only when the ranges say so, and says what else used the machine meanwhile. Then "
    "it plays one round back side by side at the measured speed: what this hardware really gains, and why. "
    f"{'' if server.ZERO_GPU else f'It may hold the model for {RACE_SECONDS:.0f} s at most (see the note under Run).'}"
    "</div>"
)


@dataclass(frozen=True)
class RaceCard:
    """The race's card: its settings and buttons, the playback, the verdict and the two charts."""

    result: gr.State
    settings: gr.Radio
    plan: gr.HTML  # what the next race will run lookahead with, in words, against what a Run would
    run: gr.Button
    stop: gr.Button
    restart: gr.Button
    slow: gr.Checkbox
    playback: gr.HTML
    summary: gr.HTML
    chart: gr.Plot
    costs: gr.Plot


def race_choice(auto) -> str:
    """The race's settings choice that matches Run's "auto" box."""
    return RACE_AUTO if auto is True else RACE_SLIDERS


def plan_html(choice, auto, window, ngram, guesses) -> str:
    """What the next race will run lookahead with, in a sentence a student reads, and whether a Run would use the
    same (the race once ran auto's W=8 N=6 G=8 beside a Run at the sliders' W=4 N=5 G=4, said only in small print)."""
    raced_auto = choice != RACE_SLIDERS
    what = (
        "auto settings, measured for this hardware when the race starts"
        if raced_auto
        else f"W={escape(str(window))} N={escape(str(ngram))} G={escape(str(guesses))}, the sliders' settings"
    )
    same = raced_auto == (auto is True)
    run = "the same as a Run uses now" if same else "not what a Run uses now: Run's “auto” box says otherwise"
    return f'<p class="ll-settings-line">The race will run lookahead with {what}: {run}.</p>'


def build_race(session_seconds: int, auto: bool, window: int, ngram: int, guesses: int) -> RaceCard:
    with gr.Column(elem_classes="ll-card", elem_id="ll-race"):
        gr.HTML(
            "<h2>7 · The race: greedy, lookahead, prompt lookup, a draft model, Medusa heads and suffix decoding, timed"
            "<small>same prompt, same model, one after the other, played back side by side</small></h2>",
            elem_classes="ll-card-head",
        )
        result = gr.State(None, time_to_live=session_seconds)
        with gr.Row(equal_height=False):
            choice = race_choice(auto)
            settings = gr.Radio([RACE_AUTO, RACE_SLIDERS], value=choice, label=SETTINGS_LABEL, scale=3)
            run = gr.Button("Race on the model", variant="primary", elem_id="ll-race-run", scale=1, size="md")
            stop = gr.Button("■ Stop", interactive=False, elem_id="ll-race-stop", scale=0, size="md", min_width=80)
        plan = gr.HTML(plan_html(choice, auto, window, ngram, guesses), elem_id="ll-race-plan")
        with gr.Row(equal_height=False):
            restart = gr.Button("↺ Restart playback", size="sm", scale=0, min_width=150, elem_id="ll-restart")
            slow = gr.Checkbox(False, label="Slow down ×0.25", scale=0, min_width=190, elem_id="ll-slow")
        playback = gr.HTML(visible=False, elem_id="ll-race-playback")
        summary = gr.HTML(RACE_INTRO, elem_id="ll-race-summary")
        with gr.Row(equal_height=False):
            chart = gr.Plot(show_label=False, container=False, visible=False)
            costs = gr.Plot(show_label=False, container=False, visible=False)
    return RaceCard(
        result=result,
        settings=settings,
        plan=plan,
        run=run,
        stop=stop,
        restart=restart,
        slow=slow,
        playback=playback,
        summary=summary,
        chart=chart,
        costs=costs,
    )


# ----------------------------------------------------------------------------------------------
# Handlers


def run_race(page, values: dict, progress):
    """Check the request, race every method on the model chosen (suffix decoding matching the visitor's own store
    less this prompt's earlier outputs, to which a race adds nothing), and show the playback, the verdict and the
    curves (the parameters are the HTTP API's /race, in the page's order)."""
    card = page.race
    unchanged = {card.summary: gr.skip()}  # an update that changes nothing: what a yield during the work sends
    try:
        request = model_request_of(values, auto=values["settings"] != RACE_SLIDERS)
        yield from announced_load(request.model, request.dtype, progress, unchanged)
        visitor = values["visitor"] if isinstance(values["visitor"], Visitor) else Visitor()
        store = visitor.race_store(request.model, request.prompt)
        key = question("race", request, store)
        work = answered(server.ANSWERS, server.LINE, key, RACE_SECONDS, lambda: server.timed_race(request, store))
        answer = yield from reporting(work, progress, unchanged)
    except REFUSALS as error:
        yield {card.summary: notice_html(warned(error, "Not raced"), "Not raced")}
        return
    result = answer.result
    used = answer.seconds if answer.shared is None else None
    shared = shared_note(answer.shared, answer.measurements, result.timing.rounds)
    yield {
        card.summary: shared + race_html(result, used=used, gpu=server.ZERO_GPU),
        card.result: result,
        card.playback: gr.HTML(playback_html(result, take=time.monotonic_ns()), visible=True),
        card.chart: gr.Plot(race_figure(result), visible=True),
        card.costs: gr.Plot(cost_figure(result), visible=True),
    }


race_model = form_handler((*RACE_FORM, VISITOR), run_race)


def follow_run(page, auto):
    """Run's "auto" box changed (by hand or by a preset): the race takes the same choice."""
    return {page.race.settings: race_choice(auto)}


def planned(page, choice, auto, window, ngram, guesses):
    """The race's choice or the form changed: what one step of W, N, G feeds, under the form, and what the next race
    will run lookahead with, in words."""
    return {**feed(page, window, ngram, guesses), page.race.plan: plan_html(choice, auto, window, ngram, guesses)}


def replay_race(page, result, slow):
    """The race's playback from the start again, at the measured speed or slowed down."""
    if not isinstance(result, RaceRecord):
        return {page.race.playback: gr.skip()}
    return {page.race.playback: gr.HTML(playback_html(result, bool(slow), take=time.monotonic_ns()), visible=True)}
