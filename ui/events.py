"""What every event handler shares: binding a handler to the page, refusals, progress, and unreadable requests.

A handler is a module-level function whose first parameter is the page; `bound` fixes it, keeping the
rest of the signature (the names Gradio publishes as the HTTP API's parameters) and its type hints.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterator

import gradio as gr

from lab.serve.access import AccessError
from lab.serve.budget import BudgetError
from lab.serve.questions import Waiting
from lab.serve.requests import InputError
from lab.serve.server import MODEL, ZERO_GPU
from lookahead_core.config import SettingsError
from lookahead_core.models import ModelLoadError, PromptError
from lookahead_core.records import Progress
from lookahead_core.step.decoding import DecodingError
from lookahead_core.tree.attention import UnsupportedModel
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
    parameters (the API's names and defaults), type hints (gr.Request) and kind (a generator or coroutine stays
    one)."""
    signature = inspect.signature(handler)
    rest = signature.replace(parameters=list(signature.parameters.values())[1:])
    if inspect.isgeneratorfunction(handler):

        @functools.wraps(handler)
        def event(*args, **kwargs):
            yield from handler(page, *args, **kwargs)
    elif inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def event(*args, **kwargs):
            return await handler(page, *args, **kwargs)
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


# The least time between two updates of a model work's progress bar: a forward pass of a small model (milliseconds)
# is shorter than Gradio's turn to send its page an update (0.05 to 0.3 s measured beside other work), and an update
# after every pass made a race on a tiny model take 6 to 9 s in the page for its 0.7 s of work (1.2 s with this
# pause, the 2-core AMD EPYC (Zen 3), 2026-12-07). Ten updates a second still move the bar smoothly.
PROGRESS_SECONDS = 0.1


def run_bar(item: Progress) -> tuple[float, str]:
    """A Run's or a race's Progress as the bar shows it: how much is done, and what runs now."""
    return progress_fraction(item), progress_words(item)


def reporting(
    work: Iterator, progress: gr.Progress, unchanged: dict, kind: type = Progress, bar: Callable = run_bar
) -> Iterator[dict]:
    """Show model work's place in the line (each Waiting) and then its progress in Gradio's progress bar: each item of
    `kind` as `bar` reads it (a fraction done and words), one ending PROGRESS_SECONDS or more after the last update's
    turn ended (those between are not shown), yielding `unchanged` (an update that changes nothing) after each
    update: a yield is where Gradio stops work whose visitor left, pressed Stop or cancelled, so the work stops at the
    first item ending PROGRESS_SECONDS after the last update. Returns the work's result (what it yields last)."""
    sent = -PROGRESS_SECONDS  # when the last update's turn ended (time.perf_counter)
    for item in work:
        if isinstance(item, kind) and time.perf_counter() - sent < PROGRESS_SECONDS:
            continue
        if isinstance(item, Waiting):
            progress(None, desc=item.words())
        elif isinstance(item, kind):
            fraction, words = bar(item)
            progress(fraction, desc=words)
        else:
            return item
        yield unchanged
        sent = time.perf_counter()
    raise RuntimeError("model work ended without a result")


# The two steps of a model's first load that the progress bar names: MODEL.get reads the weights (a hub model is
# downloaded, a GGUF dequantized once), then, off ZeroGPU, warms the model up and prices its steps on this machine
LOAD_STEPS = ("reading its weights", "warming it up and timing its steps here")
LOAD_NEWS_SECONDS = 0.5  # how often the progress bar's words are renewed while a model loads


def announced_load(choice: str, dtype: str, progress: gr.Progress, unchanged: dict) -> Iterator[dict]:
    """Before model work that must load `choice` first: load it, the progress bar saying which step of the load
    runs and for how long so far, then raise what the load raised, if anything, or yield `unchanged` (a yield
    would restart the bar's timer, so none is made while the load runs: Stop takes effect once it is done, as
    it did when the load ran inside the work). On ZeroGPU the load stays in the work's GPU slot: the bar says so
    once."""
    if not MODEL.loading(choice, dtype):
        return
    if ZERO_GPU:
        progress((0, 1), desc=f"Loading {choice} (seconds to minutes); the runs after it reuse it", unit="loads")
        yield unchanged
        return
    failed: list[Exception] = []

    def load() -> None:
        try:
            MODEL.get(choice, dtype)
        except Exception as error:  # noqa: BLE001 - raised again below, in the request's own thread
            failed.append(error)

    loader = threading.Thread(target=load, name=f"load {choice}", daemon=True)
    loader.start()
    while loader.is_alive():  # the bar's own timer counts the seconds
        step = 1 if MODEL.loading(choice, dtype) else 2
        progress(
            (step - 1, len(LOAD_STEPS)),
            desc=f"Loading {choice}, step {step} of {len(LOAD_STEPS)}: {LOAD_STEPS[step - 1]} (a first load takes "
            "seconds to minutes; the runs after it reuse the model)",
            unit="steps done",
        )
        loader.join(LOAD_NEWS_SECONDS)
    if failed:
        raise failed[0]
    yield unchanged  # where Gradio stops work whose visitor pressed Stop or left meanwhile


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
