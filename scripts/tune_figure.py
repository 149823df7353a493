"""Photograph a tune report's page: its words, the lookahead map and the curves, for the docs.

Usage: python scripts/tune_figure.py REPORT.json OUT.png [--html OUT.html]
Draws the report with visuals.tune.tune_page (no model), opens it in Debian's headless chromium (as the browser
tests do, scripts/serving.py) and writes the top of the page down to the first map and the curves.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lookahead_core.records.tune import read_tune_report  # noqa: E402
from scripts.serving import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from visuals.tune import tune_page  # noqa: E402

WIDTH = 1250


def photograph(page_html: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        path = Path(folder) / "map.html"
        path.write_text(page_html)
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport={"width": WIDTH, "height": 900})
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .heatmaplayer")
        plots = page.locator(".js-plotly-plot")
        last = plots.nth(plots.count() - 1).bounding_box()
        first = plots.nth(0).bounding_box()
        page.screenshot(
            path=str(out), full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": first["y"] + first["height"]}
        )
        page.screenshot(
            path=str(out.with_name(out.stem + "-curves.png")), full_page=True, clip={**last, "x": 0, "width": WIDTH}
        )
        chromium.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("out")
    parser.add_argument("--html")
    args = parser.parse_args()
    page_html = tune_page(read_tune_report(Path(args.report).read_text()))
    if args.html:
        Path(args.html).write_text(page_html)
    photograph(page_html, Path(args.out))


if __name__ == "__main__":
    main()
