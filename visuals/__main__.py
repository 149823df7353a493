"""`python -m visuals export RUN.json --html OUT.html [--png OUT.png] [--step K]`

Turns a recorded run (JSON or gzipped JSON, as the app downloads it) into a self-contained HTML
replay that needs no server and no network, opened at step K, and/or a PNG of step K for slides.
The PNG is a screenshot by headless Chromium (Playwright, from requirements-dev.txt) of the HTML
file opened offline. Errors go to stderr as one line, exit 2.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from lookahead_core.records import SchemaError

from . import replay
from .export import standalone_html
from .library import read_run

CHROMIUM = "/usr/bin/chromium"  # Debian's; without it Playwright's own download is tried


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m visuals", description="Replays that need no server.")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="a run as a self-contained HTML replay and/or a PNG of one step")
    export.add_argument("run", metavar="RUN.json", help="a run saved by the app (.json or .json.gz)")
    export.add_argument("--html", metavar="OUT.html", help="write the standalone replay here")
    export.add_argument("--png", metavar="OUT.png", help="write a PNG of step K here")
    export.add_argument("--step", type=int, default=0, metavar="K", help="the step to open at and draw (default 0)")
    return parser


def screenshot(html_path: Path, step: int, png_path: Path) -> None:
    """Step `step` of the replay at `html_path`, drawn by headless Chromium with the network off."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise RuntimeError("--png needs Playwright (pip install -r requirements-dev.txt) and Chromium") from None
    executable = CHROMIUM if Path(CHROMIUM).exists() else None
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable)
            context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=2)
            context.set_offline(True)
            page = context.new_page()
            page.goto(f"{html_path.resolve().as_uri()}#step={step}")
            page.wait_for_selector("body[data-ready]")
            page.locator("#ll-slide").screenshot(path=str(png_path))
            browser.close()
    except Error as error:
        raise RuntimeError(f"Chromium could not draw the PNG: {str(error).splitlines()[0]}") from None


def export(args: argparse.Namespace) -> None:
    if not args.html and not args.png:
        raise ValueError("say what to write: --html OUT.html, --png OUT.png, or both")
    try:
        run = read_run(Path(args.run).read_bytes())
    except SchemaError as error:
        raise ValueError(f"{args.run}: {error}") from None
    if not 0 <= args.step <= replay.last_step(run):
        raise ValueError(f"--step {args.step} is outside this run's steps 0 to {replay.last_step(run)}")
    page = standalone_html(run, args.step)
    with tempfile.TemporaryDirectory() as scratch:
        html_path = Path(args.html) if args.html else Path(scratch) / "replay.html"
        html_path.write_text(page, encoding="utf-8")
        if args.png:
            drawn = Path(scratch) / "step.png"
            screenshot(html_path, args.step, drawn)
            shutil.move(drawn, args.png)
    print(
        f"{args.html or ''}{' ' if args.html and args.png else ''}{args.png or ''}: step {args.step} of "
        f"{replay.last_step(run)}, HTML {len(page.encode()):,} bytes"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        export(args)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
