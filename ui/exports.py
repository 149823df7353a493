"""Exports and import: a run leaves the server as JSON, a standalone HTML replay or a PNG, and comes back.

A download is written once under a name made of the run's method and content (the same run, the same
file) and clicked by the browser once written; the PNG is drawn in the browser from the slide's HTML.
A run file a visitor opens is checked by visuals.library.read_run before anything of it is drawn.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from lab.serve.server import SESSION_SECONDS, SHELF
from lookahead_core.records import Run, SchemaError
from visuals import library, replay
from visuals.export import slide_html, standalone_html
from visuals.summary import notice_html

from .presets import run_values

OPENED_RUN = "A run opened from a file: it replays exactly as it was recorded, on the machine its summary names."
EXPORTS = Path(tempfile.mkdtemp(prefix="lookahead-lab-exports-"))  # files a visitor downloads, by content


@dataclass(frozen=True)
class Exports:
    """The row of share buttons, the hidden files and slide they fill, and the key of the run on the shelf."""

    json: gr.Button
    html: gr.Button
    png: gr.Button
    upload: gr.UploadButton
    notice: gr.HTML
    json_file: gr.DownloadButton
    html_file: gr.DownloadButton
    slide: gr.Textbox
    run_id: gr.Textbox


def build_exports() -> Exports:
    with gr.Row(equal_height=False, elem_id="ll-share"):
        # not pressable until the page's opening event has filled the session's run (links.opened, exportable):
        # before it an export would find no run, and its notice would speak of an expired session
        shut = {"size": "sm", "scale": 0, "interactive": False}
        json_button = gr.Button("Download JSON", min_width=130, elem_id="ll-json", **shut)
        html_button = gr.Button("Download HTML replay (offline)", min_width=180, elem_id="ll-html", **shut)
        png_button = gr.Button("PNG of this step", min_width=150, elem_id="ll-png", **shut)
        upload = gr.UploadButton(
            "Open a run (JSON)",
            file_types=[".json", ".gz"],
            type="binary",
            size="sm",
            scale=0,
            min_width=170,
            elem_id="ll-open",
        )
        notice = gr.HTML("", elem_id="ll-share-notice", scale=1)
        json_file = gr.DownloadButton(visible="hidden", elem_id="ll-json-file")
        html_file = gr.DownloadButton(visible="hidden", elem_id="ll-html-file")
        slide = gr.Textbox(visible="hidden", elem_id="ll-slide-source")
        run_id = gr.Textbox("", visible="hidden", elem_id="ll-run-id")
    return Exports(
        json=json_button,
        html=html_button,
        png=png_button,
        upload=upload,
        notice=notice,
        json_file=json_file,
        html_file=html_file,
        slide=slide,
        run_id=run_id,
    )


def export_file(run: Run, suffix: str, text: str) -> str:
    """`text` written once under a name made of the run's method and content (the same run, the same file)."""
    for old in EXPORTS.iterdir():  # a session's worth of downloads is kept, no more
        if old.stat().st_mtime < time.time() - SESSION_SECONDS:
            old.unlink(missing_ok=True)
    digest = hashlib.sha256(run.to_json().encode()).hexdigest()[:12]
    path = EXPORTS / f"lookahead-lab-{run.trace.meta.method.value}-{digest}{suffix}"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return str(path)


def exportable(page) -> dict:
    """The export buttons made pressable: the opening event's, once the session holds its run."""
    e = page.exports
    return {button: gr.Button(interactive=True) for button in (e.json, e.html, e.png)}


def expired_notice(what: str) -> str:
    """Why there is nothing to export: the session expired, so there is no run."""
    return notice_html(replay.SESSION_EXPIRED, what)


# ----------------------------------------------------------------------------------------------
# Handlers


def json_export(page, run):
    """The run as JSON, for the download button (nothing, saying why, once the session expired)."""
    e = page.exports
    if not replay.is_run(run):
        return {e.json_file: None, e.notice: expired_notice("Nothing to download")}
    return {e.json_file: export_file(run, ".json", run.to_json()), e.notice: ""}


def html_export(page, run, index):
    """The run as a self-contained HTML replay opening at the step shown."""
    e = page.exports
    if not replay.is_run(run):
        return {e.html_file: None, e.notice: expired_notice("Nothing to download")}
    index = replay.clamp_step(run, index)
    return {e.html_file: export_file(run, f"-step{index}.html", standalone_html(run, index)), e.notice: ""}


def step_slide(page, run, index):
    """The step shown as a slide's HTML, which the browser draws into a PNG."""
    e = page.exports
    if not replay.is_run(run):
        return {e.slide: "", e.notice: expired_notice("Nothing to draw")}
    return {e.slide: slide_html(run, replay.clamp_step(run, index)), e.notice: ""}


def opened_file(page, data):
    """A run file a visitor chose: shown from step 0 and kept for links; the page is left as it was, saying
    why, for a file that is not a run of this schema version."""
    try:
        run = library.read_run(data if isinstance(data, bytes) else b"")
    except SchemaError as error:
        return {page.exports.notice: notice_html(f"This file cannot be opened: {error}.", "Not opened")}
    return {page.controls.preset: None} | run_values(page, run, SHELF.put(run), OPENED_RUN) | {page.exports.notice: ""}
