"""Colour as people with the three dichromacies see it: the simulation matrices, and a colour difference.

The matrices are Machado, Oliveira and Fernandes (2009) at severity 1.0, applied to linear RGB. The same
matrices drive an SVG feColorMatrix filter (whose default colour space is linear RGB), so a page can be
photographed as a deuteranope would see it (`filter_css`). The difference is CIE76 ΔE in CIELAB (D65):
about 2.3 is just noticeable, 10 is an obvious difference at a glance. Used by the palette test and the
accessibility screenshots.
"""

from __future__ import annotations

MATRICES: dict[str, tuple[tuple[float, float, float], ...]] = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.01182, 0.04294, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.3089)),
}


def linear(hue: str) -> list[float]:
    """`#RRGGBB` as linear-light RGB, each 0 to 1."""
    channels = [int(hue[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]


def simulated(hue: str, vision: str) -> list[float]:
    """`hue` in linear RGB as seen with `vision` (a key of MATRICES), clipped to the displayable range."""
    rgb = linear(hue)
    return [min(max(sum(m * c for m, c in zip(row, rgb, strict=True)), 0.0), 1.0) for row in MATRICES[vision]]


def lab(rgb: list[float]) -> tuple[float, float, float]:
    """Linear RGB (sRGB primaries) as CIELAB under D65."""
    r, g, b = rgb
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def delta_e(a: list[float], b: list[float]) -> float:
    """CIE76 ΔE between two linear-RGB colours."""
    return sum((x - y) ** 2 for x, y in zip(lab(a), lab(b), strict=True)) ** 0.5


def filter_css(vision: str, selector: str = "html") -> str:
    """CSS that draws `selector` as seen with `vision`: an inline SVG feColorMatrix filter."""
    rows = " ".join(" ".join(f"{m:.6f}" for m in row) + " 0 0" for row in MATRICES[vision]) + " 0 0 0 1 0"
    svg = (
        "<svg xmlns='http://www.w3.org/2000/svg'><filter id='v'>"
        f"<feColorMatrix type='matrix' values='{rows}'/></filter></svg>"
    )
    return f'{selector} {{ filter: url("data:image/svg+xml;utf8,{svg}#v"); }}'
