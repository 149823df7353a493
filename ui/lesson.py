"""The guided lesson: a sidebar of steps, each moving the replay to the moment it talks about.

Each step loads its preset's example at its step (no model) and names the panel to outline; the
browser outlines it and scrolls it into view (scripts.HIGHLIGHT; on a phone, above the open sidebar,
which is a sheet over the lower half there). The sidebar starts closed; a lesson link (?lesson=N)
opens it, and so does its arrow, which applies step 1 as ?lesson=1 does.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from visuals import library
from visuals.lesson import LESSON, lesson_text, step_index

from .presets import preset_values


@dataclass(frozen=True)
class LessonBar:
    """The sidebar, its walkthrough, each Back/Next button with the step it goes to, and the panel to outline."""

    bar: gr.Sidebar
    walkthrough: gr.Walkthrough
    moves: list[tuple[int, gr.Button]]
    lit: gr.Textbox


def build_lesson() -> LessonBar:
    moves = []
    with gr.Sidebar(label="Guided lesson", open=False, width=380, elem_id="ll-lesson-bar") as bar:
        gr.Markdown(
            f"## 🎓 Lookahead decoding in {len(LESSON)} steps\nEach step moves the replay to the moment it talks "
            "about and outlines the panel to look at. Leave it any time: the page is yours to explore.",
            elem_id="ll-lesson-intro",
        )
        with gr.Walkthrough(selected=0, elem_id="ll-lesson") as walkthrough:
            for number, item in enumerate(LESSON):
                with gr.Step(item.title, id=number):
                    gr.Markdown(lesson_text(library.example_run(item.preset), item), elem_classes="ll-lesson-text")
                    with gr.Row():
                        if number > 0:
                            moves.append((number - 1, gr.Button("◀ Back", size="sm", elem_id=f"ll-back-{number}")))
                        if number + 1 < len(LESSON):
                            next_button = gr.Button("Next ▶", size="sm", variant="primary", elem_id=f"ll-next-{number}")
                            moves.append((number + 1, next_button))
        lit = gr.Textbox("", visible="hidden", elem_id="ll-lit")
    return LessonBar(bar, walkthrough, moves, lit)


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


def lesson_opened(page, lit: str) -> dict:
    """The sidebar opened with its arrow: step 1 applied as `?lesson=1` applies it, unless a step already was (the
    sidebar closed and opened again: the page stays as the visitor left it, its outlined panel brought back)."""
    if lit:
        return {page.lesson.lit: gr.skip()}
    return lesson_at(page, 0)
