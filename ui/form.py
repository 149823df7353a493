"""The request form of Run and race: one definition of what each sends, in order, and of its handler's parameters.

A form is a tuple of fields: each names an HTTP API parameter, the component that sends it, and its default
(the model and dtype have one, so a call may leave them out). The inputs Gradio passes and the handler's
parameters are both read from the same tuple, so they cannot drift apart: reorder a field and the page and
the API move together (tests/test_api.py holds the API's shape).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lab.serve import server
from lab.serve.requests import ModelRequest, model_request
from lookahead_core.config import SUFFIX
from lookahead_core.models import DEFAULT_MODEL
from lookahead_core.records import Method

from .events import PROGRESS

NO_DEFAULT = inspect.Parameter.empty


@dataclass(frozen=True)
class Field:
    """One value a form sends: the API's parameter `name`, the `component` of the page that holds it, and its
    `default` (NO_DEFAULT: the client must send it)."""

    name: str
    component: Callable  # page -> the component
    default: object = NO_DEFAULT


MODEL_FIELDS = (  # the model and dtype, last in every form that does model work
    Field("choice", lambda page: page.model_box.choice, DEFAULT_MODEL),
    Field("dtype", lambda page: page.model_box.dtype, "auto"),
)
SENT_FIRST = (  # the prompt and lookahead's settings
    Field("prompt", lambda page: page.controls.prompt),
    Field("chat", lambda page: page.controls.chat),
    Field("window", lambda page: page.controls.window),
    Field("ngram", lambda page: page.controls.ngram),
    Field("guesses", lambda page: page.controls.guesses),
    Field("max_new_tokens", lambda page: page.controls.max_new_tokens),
)
SUFFIX_FIELDS = (  # suffix decoding's settings, last: a gradio_client call that leaves them out gets the defaults
    Field("suffix_tree_size", lambda page: page.controls.suffix_tree_size, SUFFIX.tree_size),
    Field("suffix_alpha", lambda page: page.controls.suffix_alpha, SUFFIX.alpha),
)
SENT_LAST = (  # the other methods' settings, sampling and the model
    Field("lookup_tokens", lambda page: page.controls.lookup_tokens),
    Field("draft_tokens", lambda page: page.controls.draft_tokens),
    Field("sample", lambda page: page.controls.sampling.sample),
    Field("temperature", lambda page: page.controls.sampling.temperature),
    Field("top_k", lambda page: page.controls.sampling.top_k),
    Field("top_p", lambda page: page.controls.sampling.top_p),
    Field("seed", lambda page: page.controls.sampling.seed),
    *MODEL_FIELDS,
    *SUFFIX_FIELDS,
)
RUN_FORM = (
    *SENT_FIRST,
    Field("auto", lambda page: page.controls.auto),
    Field("method", lambda page: page.controls.method),
    *SENT_LAST,
)
RACE_FORM = (*SENT_FIRST, Field("settings", lambda page: page.race.settings), *SENT_LAST)
# The visitor's session state, sent after a form's fields: Gradio keeps a State out of the HTTP API (a client's call
# gets its own session's), so the API's parameters stay the form's; a direct call may leave it out (None)
VISITOR = Field("visitor", lambda page: page.visitor, None)


def inputs(form: tuple[Field, ...], page) -> list:
    """The components a form sends, in its order: Gradio's inputs of its event."""
    return [field.component(page) for field in form]


def form_handler(form: tuple[Field, ...], work: Callable[..., Iterator]) -> Callable[..., Iterator]:
    """`work(page, values, progress)` as an event handler whose parameters are the page, the form's fields in
    order (the API's names and defaults) and Gradio's progress; `values` maps each field's name to what was sent."""
    fields = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default) for f in form]
    signature = inspect.Signature(
        [
            inspect.Parameter("page", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            *fields,
            inspect.Parameter("progress", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=PROGRESS),
        ]
    )

    def handler(*args, **kwargs):
        sent = signature.bind(*args, **kwargs)
        sent.apply_defaults()
        values = dict(sent.arguments)
        page, progress = values.pop("page"), values.pop("progress")
        yield from work(page, values, progress)

    handler.__signature__ = signature
    handler.__name__, handler.__qualname__, handler.__doc__ = work.__name__, work.__qualname__, work.__doc__
    return handler


def model_request_of(values: dict, *, auto, method: str = Method.LOOKAHEAD.value) -> ModelRequest:
    """A form's values checked as one ModelRequest (lab.serve.requests raises for the first bad value); Run sends its
    method and auto switch, the race races every method with lookahead's settings or auto's."""
    return model_request(
        prompt=values["prompt"],
        chat=values["chat"],
        window=values["window"],
        ngram=values["ngram"],
        guesses=values["guesses"],
        max_new_tokens=values["max_new_tokens"],
        sampling=(values["sample"], values["temperature"], values["top_k"], values["top_p"], values["seed"]),
        auto=auto,
        lookup_tokens=values["lookup_tokens"],
        draft_tokens=values["draft_tokens"],
        model=(values["choice"], values["dtype"]),
        access=server.ACCESS,
        cap=server.CAP,
        method=method,
        suffix=(values["suffix_tree_size"], values["suffix_alpha"]),
    )
