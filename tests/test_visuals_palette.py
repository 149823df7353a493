"""The palette: Okabe-Ito hues, and a legend for each panel that names every colour it uses."""

from __future__ import annotations

from html import escape

from scripts import colour_vision
from visuals import palette


def test_every_legend_names_its_colours():
    for panel, kinds in palette.LEGENDS.items():
        html = palette.legend_html(panel)
        for kind in kinds:
            hue, label, _ = palette.KINDS[kind]
            assert escape(label) in html and hue in html


def test_palette_is_okabe_ito():
    okabe_ito = {"#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442"}
    assert {hue for hue, _, _ in palette.KINDS.values()} - {palette.GREY} <= okabe_ito


def test_window_legend_names_the_trajectory_outline():
    html = palette.legend_html("window")
    assert "harvested column" in html and "accepted trajectory" in html and "ll-swatch-path" in html


# ----------------------------------------------------------------------------------------------
# Never colour alone

MIN_DELTA_E = 10  # CIE76: an obvious difference at a glance


def test_each_pair_of_kinds_in_a_legend_stays_apart_under_three_colour_blindness_simulations():
    """Each pair of kinds one legend shows is told apart, as a protanope, a deuteranope and a tritanope see it,
    by its colour (ΔE at least MIN_DELTA_E) or else by its mark or border."""
    blurred = []
    for panel, kinds in palette.LEGENDS.items():
        for i, a in enumerate(kinds):
            for b in kinds[i + 1 :]:
                for vision in colour_vision.MATRICES:
                    seen = [colour_vision.simulated(palette.colour(kind), vision) for kind in (a, b)]
                    apart = colour_vision.delta_e(*seen)
                    if apart < MIN_DELTA_E and palette.MARKS.get(a) == palette.MARKS.get(b):
                        blurred.append(f"{panel}: {a} and {b} under {vision}, ΔE {apart:.1f}, same mark")
    assert blurred == []


def test_the_token_states_of_verification_and_output_differ_by_a_mark_or_border_too():
    """Accepted, first mismatch, not checked and bonus (and guaranteed, sampled) never rely on colour alone."""
    for panel in ("verification", "output"):
        kinds = palette.LEGENDS[panel]
        assert len({palette.MARKS[kind] for kind in kinds}) == len(kinds), panel


def test_marks_css_draws_each_mark_and_border_on_chips_and_swatches():
    css = palette.marks_css()
    for kind, (mark, style) in palette.MARKS.items():
        assert f".ll-tok.ll-{kind}, .ll-swatch.ll-{kind} {{ border-color:" in css
        assert f"border-style: {style};" in css
        if mark:
            assert f'.ll-tok.ll-{kind}::before, .ll-swatch.ll-{kind}::before {{ content: "{mark}"; }}' in css
    assert 'class="ll-swatch ll-accepted"' in palette.legend_html("verification")


def test_every_chip_border_stands_3_to_1_against_its_fill():
    for kind in palette.MARKS:
        hue = palette.colour(kind)
        assert palette.contrast(palette.border(hue), palette.chip_fill(hue)) >= 3.0, kind


def test_contrast_is_the_wcag_ratio():
    assert round(palette.contrast("#000000", "#FFFFFF"), 2) == 21.0
    assert round(palette.contrast("#767676", "#FFFFFF"), 2) == 4.54  # the classic lightest AA grey on white
