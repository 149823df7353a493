"""Run: record the chosen method and plain decoding of the visitor's prompt on the model, then replay it.

A question this machine measured a moment ago (the same prompt, model and settings: a class pressing the same
preset) is answered from that measurement, and the page says so; "Measure again" measures it once more and pools
the rounds (lab.serve.questions). Suffix decoding matches the visitor's own store of earlier outputs (lab.serve.stores:
the shipped examples' and their own Runs', never another visitor's; its digest is part of the question), and each
Run's output joins it.

The values arrive as the client sent them; lab.serve.requests checks each one, and a refusal leaves the
replay as it was with a toast and a note under the Run button. The work waits in line for the model (lab.serve.line),
saying its place, and reports its progress up to ten times a second (ui.events.reporting).
"""

from __future__ import annotations

import gradio as gr

from lab.serve import server
from lab.serve.budget import RUN_SECONDS
from lab.serve.questions import answered, question
from lab.serve.stores import Visitor
from lookahead_core.models import DEFAULT_MODEL
from lookahead_core.records import Method
from visuals.sharing import shared_note
from visuals.summary import model_html, notice_html, preset_note

from .events import REFUSALS, announced_load, reporting, warned
from .form import RUN_FORM, VISITOR, form_handler, model_request_of
from .player import loaded

AGAIN = "Measure again"  # the button that measures a Run's question once more
# Under the preset once a Run replaced its example: its description was about the example (the window "has already
# harvested the right n-grams" stood beside a live Run's summary saying none came from the window)
LIVE_RUN = (
    "The panels and the summary now show your Run, measured on this machine. The preset's description was about its "
    "example run: pick the preset again to read it beside that example."
)


def record_run(page, values: dict, progress, again: bool = False):
    """Check the request, answer it (lab.serve.questions: from this machine's fresh measurement of the same question, or
    by recording the method and plain decoding on the model chosen; with `again`, measured once more and pooled),
    and show the run from step 0 (the parameters are the HTTP API's /run, in the page's order). Suffix decoding
    matches the visitor's own store, and every Run's output joins it."""
    unchanged = {page.controls.notice: gr.skip()}  # an update that changes nothing: what a yield during the work sends
    visitor = values["visitor"] if isinstance(values["visitor"], Visitor) else Visitor()
    try:
        request = model_request_of(values, auto=values["auto"], method=values["method"])
        store = visitor.store(request.model)
        key = question("run", request, store if request.decode.method == Method.SUFFIX else None)
        yield from announced_load(request.model, request.dtype, progress, unchanged)
        work = answered(server.ANSWERS, server.LINE, key, RUN_SECONDS, lambda: server.record(request, store), again)
        answer = yield from reporting(work, progress, unchanged)
    except REFUSALS as error:
        yield {page.controls.notice: notice_html(warned(error, "Not run"))}
        return
    run = answer.result
    visitor.keep(run, request.prompt)
    used = notice_html(None, used=answer.seconds, gpu=server.ZERO_GPU) if answer.shared is None else ""
    yield loaded(page, run) | {
        page.controls.preset_note: preset_note(LIVE_RUN),
        page.visitor: visitor,
        page.model_box.info: model_html(run.trace.meta.machine, DEFAULT_MODEL),
        page.exports.run_id: server.SHELF.put(run),
        page.controls.notice: used + shared_note(answer.shared, answer.measurements, run.timing.rounds, AGAIN),
    }


def record_again(page, values: dict, progress):
    """Measure the Run's question once more, whoever measured it before, and pool its rounds with theirs (the
    parameters are the HTTP API's /run_again, as /run's)."""
    yield from record_run(page, values, progress, again=True)


run_model = form_handler((*RUN_FORM, VISITOR), record_run)
run_again = form_handler((*RUN_FORM, VISITOR), record_again)
