"""The guided lesson: a sidebar of steps, each moving the replay to the moment it talks about.

Each step loads its preset's example at its step (no model) and names the panel to outline; the
browser outlines it and scrolls it into view (scripts.HIGHLIGHT; on a phone, above the open sidebar,
which is a sheet over the lower half there). The sidebar starts closed; a lesson link (?lesson=N)
opens it, and so does its arrow, which applies step 1 as ?lesson=1 does.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.serve.server import SHELF
from visuals import library
from visuals.lesson import LESSON, lesson_text, step_index
from visuals.summary import preset_note

from .presets import PRESET_IDS, PRESETS, preset_values, run_values

OWN_BACK = "Your own prompt, as you left it when the lesson began."


@dataclass(frozen=True)
class LessonBar:
    """The sidebar, its walkthrough, each Back/Next button with the step it goes to, the panel to outline, and the
    visitor's own prompt (and run) the lesson replaced, with the button that brings them back."""

    bar: gr.Sidebar
    walkthrough: gr.Walkthrough
    moves: list[tuple[int, gr.Button]]
    lit: gr.Textbox
    own: gr.State
    back: gr.Button


def build_lesson() -> LessonBar:
    moves = []
    with gr.Sidebar(label="Guided lesson", open=False, width=380, elem_id="ll-lesson-bar") as bar:
        gr.Markdown(
            f"## Lookahead decoding in {len(LESSON)} steps\nEach step moves the replay to the moment it talks "
            "about and outlines the panel to look at. Leave it any time: the page is yours to explore.",
            elem_id="ll-lesson-intro",
        )
        back = gr.Button("Back to your own prompt", size="sm", visible=False, elem_id="ll-lesson-own")
        own = gr.State(None)
        with gr.Walkthrough(selected=0, elem_id="ll-lesson") as walkthrough:
            for number, item in enumerate(LESSON):
                with gr.Step(item.title, id=number):
                    gr.Markdown(lesson_text(library.example_run(item.preset), item), elem_classes="ll-lesson-text")
                    with gr.Row(elem_classes="ll-lesson-moves"):
                        if number > 0:
                            moves.append((number - 1, gr.Button("◀ Back", size="sm", elem_id=f"ll-back-{number}")))
                        if number + 1 < len(LESSON):
                            next_button = gr.Button("Next ▶", size="sm", variant="primary", elem_id=f"ll-next-{number}")
                            moves.append((number + 1, next_button))
        lit = gr.Textbox("", visible="hidden", elem_id="ll-lit")
    return LessonBar(bar, walkthrough, moves, lit, own, back)


def lesson_number(value) -> int:
    """`?lesson=N` as a lesson step, 1 to len(LESSON) (anything else: 1)."""
    try:
        return min(max(int(value), 1), len(LESSON))
    except (TypeError, ValueError):
        return 1


def lesson_at(page, index: int) -> dict:
    """Lesson step `index` (from 0): the walkthrough on it, its preset's run at the step it talks about, and
    the panel to outline."""
    item = LESSON[index]
    step = str(step_index(library.example_run(item.preset), item))
    moved = {page.lesson.walkthrough: gr.Walkthrough(selected=index), page.controls.preset: item.preset}
    return moved | preset_values(page, item.preset, step) | {page.lesson.lit: item.panel}


def lesson_over(page, index: int, preset, prompt, chat, run_id, own) -> dict:
    """Lesson step `index` over what the page shows: the visitor's own prompt (one that is not the shown preset's,
    or any prompt with a run of theirs shown) is kept the first time the lesson replaces it, and the button that
    brings it back is shown (`lesson_at` for the rest)."""
    kept = {}
    theirs = run_id or preset not in PRESET_IDS or library.preset(PRESETS, preset)["prompt"] != prompt
    if own is None and theirs:
        kept = {
            page.lesson.own: {"prompt": prompt, "chat": chat, "run": run_id},
            page.lesson.back: gr.Button(visible=True),
        }
    return lesson_at(page, index) | kept


def lesson_opened(page, lit: str, preset, prompt, chat, run_id, own) -> dict:
    """The sidebar opened with its arrow: step 1 applied as `?lesson=1` applies it, unless a step already was (the
    sidebar closed and opened again: the page stays as the visitor left it, its outlined panel brought back)."""
    if lit:
        return {page.lesson.lit: gr.skip()}
    return lesson_over(page, 0, preset, prompt, chat, run_id, own)


def back_to_own(page, own) -> dict:
    """The visitor's own prompt the lesson replaced, brought back: their run too, where one of theirs was shown
    and the shelf still keeps it (else the prompt alone, the replay left as it is, as an edited prompt leaves it);
    the button hidden until the lesson replaces a prompt of theirs again."""
    if not own:
        return {}
    c = page.controls
    back = {page.lesson.own: None, page.lesson.back: gr.Button(visible=False), c.preset: None, c.chat: own["chat"]}
    run = SHELF.get(own["run"]) if own["run"] else None
    if run is not None:
        return back | run_values(page, run, own["run"], OWN_BACK)
    return back | {c.prompt: own["prompt"], c.preset_note: preset_note(OWN_BACK), page.exports.run_id: ""}
