"""Photograph the app for the README: one step of the default example, in Debian's headless chromium.

Usage: python scripts/screenshot.py [--step N] [--out PATH]
       python scripts/screenshot.py --race [--out PATH]
Serves the app on a free localhost port (no model is loaded: the shipped example is replayed),
steps to step N of the default preset's example (default: the first step that committed the most
tokens) and writes the whole page to assets/screenshot.png. With --race it loads the embedded model,
races every method at the page's defaults on this machine (a minute or two: the race is measured,
so run it on a quiet machine) and writes the race's card, playback ended, to assets/race.png. Needs
playwright and /usr/bin/chromium, as the browser test does, and drives the page with the same code
(scripts/serving.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lookahead_core.models import load_model  # noqa: E402
from lookahead_core.records import Run  # noqa: E402
from scripts.serving import CHROMIUM, chromium_page, race_to_end, running_app, screenshot_step  # noqa: E402
from visuals import library  # noqa: E402


def busiest_step(run: Run) -> int:
    """The first step of the lookahead trace that committed the most tokens."""
    steps = run.trace.steps
    return max(range(len(steps)), key=lambda i: (len(steps[i].committed), -i))


def race_screenshot(out: Path) -> list:
    """Race every method at the page's defaults on the embedded model; its card, playback ended, into `out`.
    The JavaScript errors the page raised."""
    with running_app(load_model()) as url, chromium_page(url) as (page, errors):
        lanes = race_to_end(page)
        page.mouse.move(0, 0)
        out.parent.mkdir(parents=True, exist_ok=True)
        page.locator("#ll-race").screenshot(path=str(out))
    print(f"a race of {len(lanes)} lanes -> {out} ({out.stat().st_size // 1024} KB)")
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, help="the step to photograph (default: the busiest step)")
    parser.add_argument("--race", action="store_true", help="race on the model and photograph the race instead")
    parser.add_argument("--out", type=Path, help="the PNG to write (default: assets/screenshot.png or race.png)")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (needs root)")
    if args.race:
        errors = race_screenshot(args.out or ROOT / "assets" / "race.png")
        if errors:
            sys.exit(f"the page raised JavaScript errors: {errors}")
        return
    args.out = args.out or ROOT / "assets" / "screenshot.png"
    default = library.load_presets()[0]
    run = library.load_run(library.example_path(default))
    step = busiest_step(run) if args.step is None else args.step
    if not 0 <= step < len(run.trace.steps):
        parser.error(f"--step must be between 0 and {len(run.trace.steps) - 1}")
    with running_app() as url, chromium_page(url) as (page, errors):
        screenshot_step(page, args.out, step)
    if errors:
        sys.exit(f"the page raised JavaScript errors: {errors}")
    print(f"step {step} of the {default['id']} example -> {args.out} ({args.out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
