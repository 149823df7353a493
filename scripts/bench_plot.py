"""Draw the README's bench figure from the JSON reports in docs/bench.

Usage: python scripts/bench_plot.py [--out assets/bench.png]
Each docs/bench/*.json is a `python -m lab bench --json` report (or one written by
scripts/gpu_check.py). The overview of the newest greedy float32 report of each set and machine is
photographed with Debian's headless chromium into --out. (A full HTML report of one bench: `bench
--html`; at about 5 MB with plotly.js inside, those are not kept in the repo.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lookahead_core.models import DEFAULT_MODEL  # noqa: E402
from lookahead_core.records import BenchReport  # noqa: E402
from scripts.serving import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from visuals.bench import overview_figure  # noqa: E402

BENCH = ROOT / "docs" / "bench"


def label(report: BenchReport) -> str:
    machine = report.machine
    where = "CPU, 2 cores" if machine.device == "cpu" else machine.device_name.replace(" 80GB HBM3", "")
    return f"{report.settings.dataset}<br>{where}, {machine.dtype}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "bench.png")
    args = parser.parse_args()
    texts = [path.read_text() for path in sorted(BENCH.glob("*.json"))]
    reports = [BenchReport.from_json(text) for text in texts if "tune_version" not in json.loads(text)]  # not maps
    greedy = [r for r in reports if r.machine.dtype == "float32" and r.settings.sampling is None]
    newest_last = sorted((r for r in greedy if r.machine.model == DEFAULT_MODEL), key=lambda r: r.settings.ran_at)
    chosen = {label(r): r for r in newest_last}  # per set and machine, the newest greedy float32 bench
    page_html = overview_figure(chosen).to_html(include_plotlyjs="inline", full_html=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 920, "height": 440})
        page.set_content(page_html)
        page.wait_for_selector(".main-svg")
        page.locator(".js-plotly-plot").screenshot(path=str(args.out))
        browser.close()
    print(f"wrote {args.out} from {len(chosen)} reports")


if __name__ == "__main__":
    main()
