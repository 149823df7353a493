"""The model box: the line naming the model in use, and the picker of what the operator lets visitors load.

The picker lists lab.serve.server.ACCESS's models; it takes a typed hub id or folder only where the operator
opened it (docs/deploy.md), and is fixed to the default on a ZeroGPU Space.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.measure.race import ROUNDS
from lab.serve import server
from lab.serve.requests import DTYPE_CHOICES
from lookahead_core.models import DEFAULT_MODEL, GEMMA, resolve_device
from visuals.summary import model_html

GPU = resolve_device("auto") == "cuda"
DTYPE_DEFAULT = "bfloat16" if GPU and not server.ZERO_GPU else "auto"
MODEL_NOTE = (
    "One model is held at a time on this server: another one loads on the next Run or race, for everyone who "
    "picks it. The lab refuses, with the reason, a model it cannot run exactly."
)


@dataclass(frozen=True)
class ModelBox:
    """The model in use (a line of text), the model a Run or race asks for, and its dtype."""

    info: gr.HTML
    choice: gr.Dropdown
    dtype: gr.Radio


def model_choices() -> list[tuple[str, str]]:
    """The models the operator offers (lab.serve.server.ACCESS), named for the picker."""
    names = {DEFAULT_MODEL: f"{DEFAULT_MODEL} (embedded default)", GEMMA: "Gemma 3 270M (base, Gemma terms of use)"}
    return [(names.get(name, name), name) for name in server.ACCESS.offered()]


def build_model_box() -> ModelBox:
    info = gr.HTML(model_html(None, DEFAULT_MODEL))
    with gr.Accordion("Model", open=False, elem_id="ll-model-box"):
        typed = ", or type a Hugging Face id or a local folder" if server.ACCESS.open else ""
        choice = gr.Dropdown(
            model_choices(),
            value=DEFAULT_MODEL,
            allow_custom_value=server.ACCESS.open,
            interactive=not server.ZERO_GPU,
            label=f"Model for Run and the race: pick one{typed}",
            info=MODEL_NOTE,
            elem_id="ll-model",
        )
        dtype = gr.Radio(
            list(DTYPE_CHOICES),
            value=DTYPE_DEFAULT,
            label="dtype: float32 is exact; bfloat16 is faster on a GPU and may flip near-ties; auto keeps the "
            "held model's",
            visible=GPU and not server.ZERO_GPU,
            elem_id="ll-dtype",
        )
    return ModelBox(info, choice, dtype)


def model_in_use() -> str:
    """The line naming the model held now (another visitor may have loaded it), or the one the first Run loads."""
    return model_html(server.MODEL.facts(), DEFAULT_MODEL, server.MODEL.fit(ROUNDS))
