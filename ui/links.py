"""What a link opens: a lesson step (?lesson=4), a run kept here (?run=ID&step=4), or a preset at a step
(?preset=python&step=17); else the default example at step 0. `&contrast=high` opens the high-contrast view.

A run's link works while the shelf keeps the run; after that the page says so and opens the preset.
Everything a link carries is a visitor's text: it is quoted back only through the escaped preset note.
"""

from __future__ import annotations

import gradio as gr

from lab.serve.requests import short
from lab.serve.server import SESSION_SECONDS, SHELF
from visuals import library
from visuals.summary import example_note, preset_note

from .exports import exportable
from .lesson import lesson_at, lesson_number
from .model_box import model_in_use
from .presets import DEFAULT, PRESET_IDS, PRESETS, preset_values, run_values

RUN_GONE = (
    f"The run this link names is no longer kept (the server keeps a recorded run {SESSION_SECONDS // 3600} hours, "
    f"and at most {SHELF.capacity} runs, and forgets them all when it restarts): here is a preset instead."
)
KEPT_RUN = "A run recorded here and opened from its link: it replays exactly as it was recorded."


def opened(page, request: gr.Request) -> dict:
    """A new page: what its link names, the model in use now (another visitor may have loaded it), and the
    lesson's panel to outline, if a lesson step was named."""
    query = request.query_params if request is not None else {}
    shown = {page.model_box.info: model_in_use(), page.lesson.lit: "", page.contrast: query.get("contrast") == "high"}
    shown |= exportable(page)
    step = query.get("step", "0")
    if "lesson" in query:
        return shown | lesson_at(page, lesson_number(query["lesson"]) - 1) | {page.lesson.bar: gr.Sidebar(open=True)}
    if "run" in query:
        kept = SHELF.get(query["run"])
        if kept is not None:
            return shown | {page.controls.preset: None} | run_values(page, kept, query["run"], KEPT_RUN, step)
    preset_id = query.get("preset", DEFAULT["id"])
    if preset_id in PRESET_IDS:
        shown |= preset_values(page, preset_id, step)
    else:
        preset_id = DEFAULT["id"]
        shown |= preset_values(page, preset_id)
        if "preset" in query:
            unknown = f"No preset is called {short(query['preset'])}: here is {DEFAULT['label']!r}."
            shown[page.controls.preset_note] = preset_note(unknown)
    if "run" in query:
        caption = library.preset(PRESETS, preset_id)["caption"]
        shown[page.controls.preset_note] = preset_note(RUN_GONE) + example_note(caption, library.example_run(preset_id))
    return shown | {page.controls.preset: preset_id}
