"""Draw the shipped Medusa heads' or EAGLE layer's loss curve as an SVG for docs/, from its training record.

Usage: python scripts/medusa_loss_plot.py [--eagle] [--record PATH] [--out PATH]
(defaults: the shipped heads' record and docs/medusa-loss.svg; with --eagle, the shipped EAGLE layer's
record and docs/eagle-loss.svg). The curve is the mean of every 50 steps' batch losses (Medusa-1's
weighted sum over the heads; EAGLE's feature loss plus its weighted token loss); plain SVG with its
numbers as text, so it needs no plotting package and reads on a projector.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.train.heads import SHIPPED_EAGLE_RECORD, SHIPPED_RECORD  # noqa: E402

EVERY = 50
WIDTH, HEIGHT, MARGIN = 640, 320, 56
INK = "#1F2937"  # 14.7:1 on white
LINE = "#0072B2"  # 5.1:1 on white


def means(losses: list[float], every: int = EVERY) -> list[tuple[int, float]]:
    """(the last step of each block, the block's mean loss)."""
    return [
        (i + len(block), sum(block) / len(block))
        for i in range(0, len(losses), every)
        if (block := losses[i : i + every])
    ]


def accuracy_words(record: dict) -> str:
    """The held-out top-1 line: each Medusa head's, or the EAGLE layer's first guess."""
    accuracy = record["accuracy"]
    if isinstance(accuracy, dict):
        return f"first guess {accuracy['top1']:.0%}, top-5 {accuracy['top5']:.0%}"
    return ", ".join(f"head {a['head']} {a['top1']:.0%}" for a in accuracy)


def loss_svg(record: dict, name: str = "Medusa heads") -> str:
    points = means(record["loss"])
    top = max(loss for _, loss in points)
    steps = points[-1][0]
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def x(step: int) -> float:
        return MARGIN + plot_w * step / steps

    def y(loss: float) -> float:
        return MARGIN + plot_h * (1 - loss / top)

    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
    tick = 5 if top >= 10 else 0.5
    ticks = "".join(
        f'<text x="{MARGIN - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>'
        f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#D1D5DB"/>'
        for v in (i * tick for i in range(int(top / tick) + 1))
    )
    steps_ticks = "".join(
        f'<text x="{x(s):.1f}" y="{HEIGHT - MARGIN + 18}" text-anchor="middle">{s}</text>'
        for s in range(0, steps + 1, max(500, steps // 8 // 500 * 500))
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'font-family="sans-serif" font-size="12" fill="{INK}" role="img" '
        f'aria-label="{name} training loss, from {points[0][1]:.1f} to {points[-1][1]:.1f} in {steps} steps">'
        f'<rect width="100%" height="100%" fill="white"/>{ticks}{steps_ticks}'
        f'<polyline points="{line}" fill="none" stroke="{LINE}" stroke-width="2.5"/>'
        f'<text x="{MARGIN}" y="24" font-size="14" font-weight="bold">{name} for {record["model"]}: '
        f"training loss (mean of {EVERY} steps)</text>"
        f'<text x="{MARGIN}" y="40">held-out top-1: {accuracy_words(record)}</text>'
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle">step</text>'
        "</svg>\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eagle", action="store_true", help="the EAGLE layer's record, not the heads'")
    parser.add_argument("--record", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    record = args.record or (SHIPPED_EAGLE_RECORD if args.eagle else SHIPPED_RECORD)
    out = args.out or ROOT / "docs" / ("eagle-loss.svg" if args.eagle else "medusa-loss.svg")
    out.write_text(loss_svg(json.loads(record.read_text()), "EAGLE layer" if args.eagle else "Medusa heads"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
