"""What every event handler shares: binding a handler to the page, refusals, progress, and unreadable requests.

A handler is a module-level function whose first parameter is the page; `bound` fixes it, keeping the
rest of the signature (the names Gradio publishes as the HTTP API's parameters) and its type hints.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Iterator

import gradio as gr

from lab.access import AccessError
from lab.budget import BudgetError
from lab.requests import InputError
from lab.server import MODEL
from lookahead_core.attention import UnsupportedModel
from lookahead_core.config import SettingsError
from lookahead_core.decoding import DecodingError
from lookahead_core.models import ModelLoadError, PromptError
from lookahead_core.records import Progress
from visuals.markup import escape
from visuals.summary import progress_fraction, progress_words

LOG = logging.getLogger("lookahead_lab")
PROGRESS = gr.Progress()  # Gradio passes it in place of this default, bound to the event being served
REFUSALS = (
    InputError,
    AccessError,
    SettingsError,
    DecodingError,
    ModelLoadError,
    UnsupportedModel,
    PromptError,
    BudgetError,
)


def bound(handler, page):
    """`handler` with its first parameter fixed to `page`, as a function Gradio can read: the same remaining
    parameters (the API's names and defaults), type hints (gr.Request) and kind (a generator stays one)."""
    signature = inspect.signature(handler)
    rest = signature.replace(parameters=list(signature.parameters.values())[1:])
    if inspect.isgeneratorfunction(handler):

        @functools.wraps(handler)
        def event(*args, **kwargs):
            yield from handler(page, *args, **kwargs)
    else:

        @functools.wraps(handler)
        def event(*args, **kwargs):
            return handler(page, *args, **kwargs)

    event.__signature__ = rest
    return event


def warned(error: Exception, title: str) -> str:
    """A refused request's message: shown in a toast (Gradio draws a toast's text as HTML), and written on one
    line of the log with what only the operator may read (a model's load error in the library's words)."""
    message, detail = str(error), getattr(error, "detail", "")
    LOG.info("%s: %s%s", title, message, f" ({detail})" if detail else "")
    gr.Warning(escape(message), title=title)
    return message


def reporting(work: Iterator, progress: gr.Progress, unchanged: dict) -> Iterator[dict]:
    """Show model work's Progress in Gradio's progress bar, yielding `unchanged` (an update that changes nothing)
    after each forward pass: a yield is where Gradio stops work whose visitor left, pressed Stop or cancelled.
    Returns the work's result."""
    for item in work:
        if not isinstance(item, Progress):
            return item
        progress(progress_fraction(item), desc=progress_words(item))
        yield unchanged
    raise RuntimeError("model work ended without a result")


def announced_load(choice: str, dtype: str, progress: gr.Progress, unchanged: dict) -> Iterator[dict]:
    """Before model work that must load `choice` first, say so in the progress bar (one yield of `unchanged`)."""
    if MODEL.loading(choice, dtype):
        progress(
            0,
            desc=f"Loading {choice}: this server holds one model at a time, and a model's first load takes "
            "seconds to minutes (a hub model is downloaded, a GGUF dequantized once); the runs after it reuse it",
        )
        yield unchanged


class LabBlocks(gr.Blocks):
    """Gradio's Blocks, except that a request Gradio cannot read (too few values, a file that is no file) is
    refused with the lab's message and one log line, not a traceback and an empty error."""

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error:
            raise
        except Exception as error:  # noqa: BLE001 - whatever Gradio's reading raised, the client sent it
            name = block_fn.api_name or block_fn.name
            LOG.info("Not accepted: /%s got values it cannot read (%s)", name, type(error).__name__)
            count = len(block_fn.inputs)
            message = (
                f"Not accepted: /{name} takes {count} value{'s' if count != 1 else ''} of the types its API page "
                "lists, and this request sent something else."
            )
            raise gr.Error(message, title="Not accepted", print_exception=False) from None
