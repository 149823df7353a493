"""The page read from the back row (issue 61), the checks that need no browser: every size in the app's CSS floored
at 14 px (16 in the high-contrast view), the theme's sizes, every chart's fonts and the attention mask's labels at
14 px as drawn, the pool numbered as verification numbers its guesses, and no emoji on a control or in a label
(Debian's chromium draws one as an empty box where no emoji font is installed). tests/browser/test_back_row.py
measures the page as drawn."""

from __future__ import annotations

import re

import pytest
import regex

from tests.test_tune import report
from tests.visual_checks import decode_steps
from visuals import library, pool, race, replay
from visuals.library import ASSETS
from visuals.mask import mask_svg
from visuals.palette import SMALLEST_TEXT
from visuals.progress import tokens_per_step_html
from visuals.tune import curves_figure, method_figure

# A code point drawn in emoji presentation by default, or a pictograph but ▶ and ◀ (the step buttons: DejaVu Sans
# draws them), as tests/browser/test_back_row.py reads the page (regex ships with transformers)
EMOJI = regex.compile(r"[\p{Emoji_Presentation}\uFE0F]|(?![\u25B6\u25C0])\p{Extended_Pictographic}")
SIZES = re.compile(r"font-size:\s*([^;}]+)")


def test_every_font_size_of_the_apps_css_is_floored_at_the_smallest_text():
    """style.css and the export's CSS: each size is max(var(--ll-min), its own), or the parent's (100%)."""
    for name in ("style.css", "export.css"):
        sizes = SIZES.findall((ASSETS / name).read_text())
        assert sizes
        loose = [s for s in sizes if not s.strip().startswith("max(var(--ll-min)") and s.strip() != "100%"]
        assert loose == [], f"{name}: {loose}"
    assert "html { --ll-min: 14px; }" in (ASSETS / "style.css").read_text()
    contrast = (ASSETS / "contrast.css").read_text()
    assert "--ll-min: 16px" in contrast and "--text-sm: 16px" in contrast


def test_the_themes_text_sizes_start_at_14_px():
    from ui.page import READABLE_TEXT

    assert all(float(size.removesuffix("px")) >= SMALLEST_TEXT for size in READABLE_TEXT.expand())


def font_sizes(node) -> list[float]:
    """Every font size set anywhere in a figure's JSON."""
    if isinstance(node, dict):
        sizes = []
        for key, value in node.items():
            if key in ("font", "tickfont", "textfont", "title_font") and isinstance(value, dict) and "size" in value:
                sizes.append(value["size"])
            sizes += font_sizes(value)
        return sizes
    if isinstance(node, list | tuple):
        return [size for item in node for size in font_sizes(item)]
    return []


def assert_readable_figure(figure) -> None:
    """The figure's own font (Plotly's default, 12 px, sets every text it does not size) and every other size."""
    layout = figure.to_plotly_json()["layout"]
    assert layout["font"]["size"] >= SMALLEST_TEXT
    sizes = font_sizes(figure.to_plotly_json())
    assert sizes and min(sizes) >= SMALLEST_TEXT, sizes


def test_the_progress_chart_draws_every_text_at_the_smallest_size_or_larger_at_its_own_size(run):
    """Every label at 14 units, and the SVG never narrower than its viewBox: a unit is a CSS pixel or more as
    drawn."""
    chart = tokens_per_step_html(run)
    width = re.search(r'viewBox="0 0 (\S+) (\S+)"', chart).group(1)
    assert f'style="min-width:{width}px"' in chart
    texts = re.findall(r"<text [^>]*>", chart)
    assert texts and all(re.search(r'font-size="(\d+)"', text) for text in texts)
    assert min(float(s) for s in re.findall(r'font-size="([^"]+)"', chart)) >= SMALLEST_TEXT


def test_the_tune_maps_and_the_race_draw_every_text_at_the_smallest_size_or_larger():
    from lookahead_core.records import Method

    assert_readable_figure(method_figure(report(), Method.LOOKAHEAD))
    assert_readable_figure(curves_figure(report()))
    assert race.LAYOUT["font"]["size"] >= SMALLEST_TEXT and race.LAYOUT["legend"]["font"]["size"] >= SMALLEST_TEXT


def test_a_detailed_mask_is_drawn_at_its_own_size_its_labels_at_14_px(lookahead_run):
    """A unit of the grid is a CSS pixel (its width is the viewBox's), so a label of 14 units is 14 px as drawn;
    scaled to fit its card, the 10-unit labels were drawn at 7 px."""
    trace = lookahead_run.trace
    _, record = max(decode_steps(lookahead_run), key=lambda step: len(step[1].rows))
    svg = mask_svg(record, trace.vocab, len(record.rows))
    width = re.search(r'viewBox="0 0 (\S+) (\S+)"', svg).group(1)
    assert f'class="ll-mask ll-mask-natural" width="{width}"' in svg
    sizes = [float(s) for s in re.findall(r'font-size="([^"]+)"', svg)]
    assert sizes and min(sizes) >= SMALLEST_TEXT


def test_the_pool_lists_its_guesses_by_the_number_verification_gives_them(lookahead_run):
    """The pool once numbered its entries 1 to 3 (oldest first) beside the labels "guess 3", "guess 1", "guess 2":
    now its only numbers are the guesses' (PoolEntry.guess, as recorded), in order, and the rest follow."""
    trace = lookahead_run.trace
    checked = 0
    for _, record in decode_steps(lookahead_run):
        html = pool.pool_html(record, trace.vocab, trace.meta.settings.lookahead.guesses)
        numbers = [int(n) for n in re.findall(r">guess (\d+)", html)]
        assert numbers == sorted(numbers) and "ll-num" not in html
        checked += len(numbers) > 1
    assert checked


@pytest.mark.parametrize("preset", [p["id"] for p in library.load_presets()][:3])
def test_no_panel_or_caption_holds_an_emoji(preset):
    run = library.example_run(preset)
    for index in range(0, replay.last_step(run) + 1, 5):
        for name, html in replay.panels(run, index).items():
            found = EMOJI.findall(re.sub(r"<[^>]+>", "", html))
            assert not found, f"{preset} step {index} {name}: {found}"


def test_no_control_or_label_of_the_page_holds_an_emoji():
    """Every component's label, value and choices as the page is built (Gradio's config)."""
    import app

    shown = []
    for component in app.demo.config["components"]:
        props = component.get("props", {})
        shown += [props.get("label"), props.get("value"), *[c[0] for c in props.get("choices") or []]]
    found = {text for text in shown if isinstance(text, str) and EMOJI.search(re.sub(r"<[^>]+>", "", text))}
    assert found == set()
