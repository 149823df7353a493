"""Run: record the chosen method and plain decoding of the visitor's prompt on the model, then replay it.

Suffix decoding matches the visitor's own store of earlier outputs (lab.stores: the shipped examples' and their
own Runs', never another visitor's), and each Run's output joins it.

The values arrive as the client sent them; lab.requests checks each one, and a refusal leaves the
replay as it was with a toast and a note under the Run button. The work waits in the queue for the
one model slot and reports its progress after every forward pass.
"""

from __future__ import annotations

import gradio as gr

from lab import server
from lab.stores import Visitor
from lookahead_core.models import DEFAULT_MODEL
from visuals.summary import model_html, notice_html

from .events import REFUSALS, announced_load, reporting, warned
from .form import RUN_FORM, VISITOR, form_handler, model_request_of
from .player import loaded


def record_run(page, values: dict, progress):
    """Check the request, record the method and plain decoding on the model chosen, and show the new run from
    step 0 (the parameters are the HTTP API's /run, in the page's order). Suffix decoding matches the visitor's
    own store, and every Run's output joins it."""
    unchanged = {page.controls.notice: gr.skip()}  # an update that changes nothing: what a yield during the work sends
    visitor = values["visitor"] if isinstance(values["visitor"], Visitor) else Visitor()
    try:
        request = model_request_of(values, auto=values["auto"], method=values["method"])
        yield from announced_load(request.model, request.dtype, progress, unchanged)
        store = visitor.store(request.model)
        run, seconds = yield from reporting(server.record(request, store), progress, unchanged)
    except REFUSALS as error:
        yield {page.controls.notice: notice_html(warned(error, "Not run"))}
        return
    visitor.keep(run, request.prompt)
    yield loaded(page, run) | {
        page.visitor: visitor,
        page.model_box.info: model_html(run.trace.meta.machine, DEFAULT_MODEL),
        page.exports.run_id: server.SHELF.put(run),
        page.controls.notice: notice_html(None, used=seconds, gpu=server.ZERO_GPU),
    }


run_model = form_handler((*RUN_FORM, VISITOR), record_run)
