"""The tune card: where each method pays on this server's hardware and the visitor's prompts, swept on the model.

Its values arrive as the client sent them; lab.serve.tune_server checks each in words (a refusal leaves the card as
it was, with a toast and a note). The sweep waits in the queue for the one model slot, shows a progress bar
per piece of work (each cell decoded, then each timed round), stops with Stop or at the time this server gives
a sweep, and ends with a map per method, the two curves behind them, and the table of every cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.measure.tune import SWEPT, TuneProgress
from lab.serve import server, tune_server
from lab.serve.questions import in_line
from lookahead_core.records import METHODS
from lookahead_core.records.tune import TuneReport
from visuals import library
from visuals.markup import scroll_region
from visuals.summary import notice_html
from visuals.tune import (
    curves_figure,
    method_figure,
    methods_of,
    tune_summary_html,
    tune_table_html,
    two_machines_html,
)

from .events import REFUSALS, announced_load, reporting, warned
from .form import MODEL_FIELDS, Field, form_handler

INTRO = (
    '<div class="ll-budget">Every cell decodes every prompt once; its speedup is predicted from this hardware\'s '
    "step-cost curve, then the best cells and a few others are timed against plain decoding. "
    f"At most {tune_server.TUNE_CELLS} cells and {tune_server.TUNE_SECONDS:.0f} s a sweep here.</div>"
)


@dataclass(frozen=True)
class TuneCard:
    """The tune card: the prompts, the grid, Run and Stop, the words, a map per method, the curves, the table."""

    source: gr.Radio
    prompts: gr.Textbox
    count: gr.Slider
    max_new_tokens: gr.Slider
    methods: gr.CheckboxGroup
    windows: gr.Textbox
    ngrams: gr.Textbox
    run: gr.Button
    stop: gr.Button
    summary: gr.HTML
    maps: tuple[gr.Plot, ...]  # one per method of SWEPT, in its order
    curves: gr.Plot
    table: gr.HTML

    def outputs(self) -> list:
        return [self.summary, *self.maps, self.curves, self.table]


def build_tune() -> TuneCard:
    with gr.Column(elem_classes="ll-card", elem_id="ll-tune"):
        gr.HTML(
            "<h2>8 · Where each method pays here<small>a map of settings, predicted from two curves; the cells a "
            "sweep has time to time are checked by the clock, and the map says which</small></h2>",
            elem_classes="ll-card-head",
        )
        with gr.Row(equal_height=False):
            source = gr.Radio([*tune_server.SETS, tune_server.OWN], value="humaneval", label="Prompts", scale=2)
            # 180 px at least: at Gradio's 160 a slider's "10" and "64" were cut to "1" and "6" at its right edge
            count = gr.Slider(
                1, tune_server.MOST_PROMPTS, value=3, step=1, label="How many prompts", scale=1, min_width=180
            )
            tokens = gr.Slider(
                1, tune_server.MOST_TOKENS, value=32, step=1, label="New tokens each", scale=1, min_width=180
            )
        with gr.Accordion(
            "Your own prompts, the methods and lookahead's W and N", open=False, elem_id="ll-tune-settings"
        ):
            prompts = gr.Textbox(
                "",
                lines=2,
                max_lines=8,
                label=f"Your prompts (with 'your prompts'): a line of {tune_server.SEPARATOR} between two",
                elem_id="ll-tune-prompts",
            )
            with gr.Row(equal_height=False):
                methods = gr.CheckboxGroup(
                    [(METHODS[m].name, m.value) for m in SWEPT], value=["lookahead", "prompt-lookup"], label="Methods"
                )
                windows = gr.Textbox("2, 4, 8", label="Lookahead's windows W (G = W)", elem_id="ll-tune-windows")
                ngrams = gr.Textbox("3, 5", label="Lookahead's n-gram sizes N", elem_id="ll-tune-ngrams")
        with gr.Row(equal_height=False):
            run = gr.Button("Map where each method pays", variant="primary", elem_id="ll-tune-run", scale=3)
            stop = gr.Button("■ Stop", interactive=False, elem_id="ll-tune-stop", scale=0, min_width=80)
        summary = gr.HTML(INTRO, elem_id="ll-tune-summary")
        maps = tuple(gr.Plot(show_label=False, container=False, visible=False) for _ in SWEPT)
        curves = gr.Plot(show_label=False, container=False, visible=False)
        table = gr.HTML(recorded_html(), elem_id="ll-tune-table")
    return TuneCard(
        source=source,
        prompts=prompts,
        count=count,
        max_new_tokens=tokens,
        methods=methods,
        windows=windows,
        ngrams=ngrams,
        run=run,
        stop=stop,
        summary=summary,
        maps=maps,
        curves=curves,
        table=table,
    )


def recorded_html() -> str:
    """What the card shows before a sweep: the lab's recorded maps, one machine beside another (none: nothing)."""
    maps = library.recorded_maps()
    return two_machines_html(*maps) if maps is not None else ""


# ----------------------------------------------------------------------------------------------
# Handlers


def shown(card: TuneCard, report: TuneReport, seconds: float) -> dict:
    """The finished map: the words, a map per method swept (the others hidden), the curves, the table."""
    swept = methods_of(report)
    maps = {
        plot: gr.Plot(method_figure(report, method), visible=True) if method in swept else gr.Plot(visible=False)
        for plot, method in zip(card.maps, SWEPT, strict=True)
    }
    used = notice_html(None, used=seconds, gpu=server.ZERO_GPU)
    return maps | {
        card.summary: tune_summary_html(report) + used,
        card.curves: gr.Plot(curves_figure(report), visible=bool(report.cells)),
        card.table: scroll_region(tune_table_html(report), "every cell of the map"),  # wider than a phone
    }


def tune_bar(item: TuneProgress) -> tuple[float, str]:
    """A sweep's progress as the bar shows it: the pieces of work done, and the one that runs now."""
    return item.done / max(item.total, 1), f"{item.done + 1}/{item.total}: {item.label}"


def map_tune(page, values: dict, progress):
    """Check the sweep, run it on the model chosen with a progress bar per piece of work, and show the map (the
    parameters are the HTTP API's /tune: the card's values in its order, then the model box's)."""
    card = page.tune
    unchanged = {card.summary: gr.skip()}  # an update that changes nothing: what a yield during the work sends
    try:
        request = tune_server.tune_request(**values)
        yield from announced_load(request.model, request.dtype, progress, unchanged)
        size = (tune_server.TUNE_SECONDS, 1)  # the sweep as one piece: its pace is a sweep's seconds
        work = in_line(server.LINE, "map", size, lambda: tune_server.mapping(request))
        report, seconds = yield from reporting(work, progress, unchanged, kind=TuneProgress, bar=tune_bar)
    except REFUSALS as error:
        yield {card.summary: notice_html(warned(error, "Not mapped"), "Not mapped") + INTRO}
        return
    yield shown(card, report, seconds)


TUNE_FORM = (
    Field("source", lambda page: page.tune.source),
    Field("text", lambda page: page.tune.prompts),
    Field("count", lambda page: page.tune.count),
    Field("max_new_tokens", lambda page: page.tune.max_new_tokens),
    Field("methods", lambda page: page.tune.methods),
    Field("windows", lambda page: page.tune.windows),
    Field("ngrams", lambda page: page.tune.ngrams),
    *MODEL_FIELDS,
)
tune_model = form_handler(TUNE_FORM, map_tune)
