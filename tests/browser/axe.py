"""axe-core, pinned inside axe-playwright-python (requirements-dev.txt), run on a page in Chromium: the serious and
critical violations of a state the page is in, for the accessibility tests and the lesson's walk."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser.chromium import RESTING_FRAMES

axe_playwright = pytest.importorskip("axe_playwright_python.sync_playwright", reason="make test installs it")

BLOCKING = ("serious", "critical")
AXE = axe_playwright.Axe()
REPORTS = Path(__file__).resolve().parents[2] / "out" / "axe"


def with_axe(page) -> None:
    """axe-core on `page`, injected once a page (the script is half a megabyte)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.axe_script)


def audited(page, state: str, within: list[str] | None = None, drawn: bool = False) -> dict[str, int]:
    """The serious and critical violations axe finds on `page`, as {rule id: elements that break it}, printed
    under the name of the state; axe's full report of them is written to out/axe/STATE.json (git-ignored). `within`:
    the CSS selectors of the parts audited (default: the whole page). `drawn`: the caller has just waited until the
    parts audited had drawn every chart for RESTING_FRAMES frames (the lesson's walk, at each step's rest)."""
    # While the page loads, Gradio draws a not-yet-filled chart as a div named "Empty value" (an aria-label
    # axe refuses on a plain div): the audit is of the page once drawn, none left for RESTING_FRAMES frames in a
    # row (a chart the page fills later, such as the tune card's recorded maps, may show one after another is gone)
    if not drawn:
        page.evaluate("() => { window.llDrawnFrames = 0; }")
        page.wait_for_function(
            "frames => (window.llDrawnFrames = document.querySelector('.empty[aria-label]') ? 0"
            " : window.llDrawnFrames + 1) >= frames",
            arg=RESTING_FRAMES,
            polling="raf",
        )
    with_axe(page)
    context = {"include": [[selector] for selector in within]} if within else None
    report = page.evaluate("c => axe.run(c === null ? document : c, {resultTypes: ['violations']})", context)
    found = [v for v in report["violations"] if v["impact"] in BLOCKING]
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{re.sub(r'[^a-z0-9]+', '-', state.lower()).strip('-')}.json").write_text(json.dumps(found, indent=1))
    counts = {v["id"]: len(v["nodes"]) for v in found}
    print(f"\naxe {state}: {sum(counts.values())} serious or critical {counts or ''}")
    return counts
