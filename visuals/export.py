"""A recorded run as material that needs no server: one self-contained HTML file, and one step as a slide.

The HTML file carries the panels of every step, rendered here by the same functions the app uses
(replay.panels), gzipped and base64-encoded; a few lines of inline JavaScript swap them in (step,
play, slider, keyboard, `#step=K` in the address), draw a PNG of the step, and switch the high-contrast
view (its button, or `?contrast=high` in the address). All CSS and JS are
inline and nothing is fetched, so the file replays the run offline, exactly as the app showed it.
The tokens-per-step chart, the same for every step, sits under the progress panel, as in the app.
"""

from __future__ import annotations

import base64
import gzip
import json

from lookahead_core.records import METHODS, Run

from . import replay
from .cards import CARD_ROWS, card_head_html
from .library import ASSETS
from .markup import escape
from .palette import marks_css
from .progress import tokens_per_step_html
from .summary import plain_name, summary_html

SPEEDS = (0.5, 1, 2, 4, 8)  # steps per second offered by the player; 2 is chosen, as in the app


def page_css() -> str:
    """The export's CSS: the theme colours the app takes from Gradio, the page, the app's own style.css, then
    the marks and borders of each token kind and the high-contrast view (as the app's page has them)."""
    return (ASSETS / "export.css").read_text() + (ASSETS / "style.css").read_text() + marks_css() + contrast_css()


def contrast_css() -> str:
    """The high-contrast view's CSS, rooted at `html.ll-contrast-high`: the app adds it to its page, the export
    inlines it."""
    return (ASSETS / "contrast.css").read_text()


def png_js() -> str:
    """`slidePng(html, css, filename)`: draws a slide's HTML to a PNG download in the browser."""
    return (ASSETS / "png.js").read_text()


def run_title(run: Run) -> str:
    """One line naming what the run shows: the method against plain decoding, on which model and machine."""
    meta = run.trace.meta
    machine = meta.machine
    return (
        f"{METHODS[meta.method].name} against {plain_name(run)} decoding · {machine.model} on {machine.device_name} "
        f"({machine.dtype}) · recorded {meta.recorded_at}"
    )


def slide_html(run: Run, index: int) -> str:
    """Step `index` as one slide: a title line, the caption and the six panel cards, the chart under the progress
    (no controls).

    Element ids are the app's (`ll-caption`, `ll-window`, ...), so a test can compare the two.
    """
    index = replay.clamp_step(run, index)
    shown = replay.panels(run, index)
    chart = {"progress": f'<div id="ll-chart">{tokens_per_step_html(run)}</div>'}
    cards = "".join(
        f'<section class="ll-card"><div class="ll-card-head">{card_head_html(name)}</div>'
        f'<div id="ll-{name}">{shown[name]}</div>{chart.get(name, "")}</section>'
        for row in CARD_ROWS
        for name in row
    )
    return (
        f'<main id="ll-slide" data-step="{index}">'
        f'<div class="ll-slide-title">Lookahead Lab · {escape(run_title(run))}</div>'
        f'<div id="ll-caption" aria-live="polite" aria-atomic="true">{shown["caption"]}</div>'
        f'<div class="ll-cards">{cards}</div></main>'
    )


def packed_panels(run: Run) -> str:
    """Every step's panels as base64 of gzipped JSON {panel: [html of step 0, 1, ...]}.

    Grouped by panel, so that consecutive steps of one panel, which differ little, sit within gzip's
    window of each other: a 64-token run's 1.4 MB of panel HTML packs into about 70 KB.
    """
    steps = [replay.panels(run, index) for index in range(replay.last_step(run) + 1)]
    columns = {name: [shown[name] for shown in steps] for name in replay.PANELS}
    packed = gzip.compress(json.dumps(columns, separators=(",", ":")).encode(), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def controls_html(run: Run, index: int) -> str:
    last = replay.last_step(run)
    speeds = "".join(f'<option value="{s}"{" selected" if s == 2 else ""}>{s}</option>' for s in SPEEDS)
    return (
        '<div class="ll-controls"><button id="ll-back">◀ Step</button><button id="ll-play">▶ Play</button>'
        '<button id="ll-forward">Step ▶</button>'
        f'<input type="range" id="ll-step" min="0" max="{last}" value="{index}" aria-label="Step">'
        f'<span id="ll-step-number">step {index} of {last}</span>'
        f'<label>Speed (steps/s) <select id="ll-speed">{speeds}</select></label>'
        '<button id="ll-png" title="Download this step as a PNG for slides">PNG of this step</button>'
        '<button id="ll-contrast" aria-pressed="false">◐ High contrast</button></div>'
        '<p id="ll-problem" class="ll-note"></p>'
    )


def standalone_html(run: Run, index: int = 0) -> str:
    """A self-contained HTML document replaying `run` from step `index`, offline.

    It needs no server and fetches nothing: every style, script and step is inline. Without
    JavaScript it still shows step `index`.
    """
    index = replay.clamp_step(run, index)
    names = escape(json.dumps(list(replay.PANELS)))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Lookahead Lab · {escape(METHODS[run.trace.meta.method].name)}</title>"
        f'<style id="ll-css">{page_css()}</style></head>\n'
        '<body class="ll-page"><h1>Lookahead Lab</h1>'
        f"<p>{escape(run_title(run))}. A replay exported from Lookahead Lab: it needs no server and no network. "
        "Keys: ← → step, space plays.</p>"
        f'<div id="ll-summary">{summary_html(run)}</div>{controls_html(run, index)}{slide_html(run, index)}\n'
        f'<script type="application/octet-stream" id="ll-steps" data-names="{names}">{packed_panels(run)}</script>\n'
        f"<script>{png_js()}\n{(ASSETS / 'export.js').read_text()}</script>\n</body></html>\n"
    )
