"""The palette: Okabe-Ito hues, and a legend for each panel that names every colour it uses."""

from __future__ import annotations

from html import escape

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
