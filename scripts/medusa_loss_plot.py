"""Draw the shipped Medusa heads' loss curve as an SVG for docs/medusa.md, from their training record.

Usage: python scripts/medusa_loss_plot.py [--record assets/heads/SmolLM2-135M-Instruct.training.json]
                                          [--out docs/medusa-loss.svg]
The curve is the mean of every 50 steps' batch losses (the weighted sum over the heads, Medusa-1's
loss); plain SVG with its numbers as text, so it needs no plotting package and reads on a projector.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.heads import SHIPPED_RECORD  # noqa: E402

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


def loss_svg(record: dict) -> str:
    points = means(record["loss"])
    top = max(loss for _, loss in points)
    steps = points[-1][0]
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def x(step: int) -> float:
        return MARGIN + plot_w * step / steps

    def y(loss: float) -> float:
        return MARGIN + plot_h * (1 - loss / top)

    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
    ticks = "".join(
        f'<text x="{MARGIN - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>'
        f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#D1D5DB"/>'
        for v in range(0, int(top) + 1, 5)
    )
    steps_ticks = "".join(
        f'<text x="{x(s):.1f}" y="{HEIGHT - MARGIN + 18}" text-anchor="middle">{s}</text>'
        for s in range(0, steps + 1, max(500, steps // 8 // 500 * 500))
    )
    heads = ", ".join(f"head {a['head']} {a['top1']:.0%}" for a in record["accuracy"])
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'font-family="sans-serif" font-size="12" fill="{INK}" role="img" '
        f'aria-label="Medusa heads training loss, from {points[0][1]:.1f} to {points[-1][1]:.1f} in {steps} steps">'
        f'<rect width="100%" height="100%" fill="white"/>{ticks}{steps_ticks}'
        f'<polyline points="{line}" fill="none" stroke="{LINE}" stroke-width="2.5"/>'
        f'<text x="{MARGIN}" y="24" font-size="14" font-weight="bold">Medusa heads for {record["model"]}: '
        f"training loss (mean of {EVERY} steps)</text>"
        f'<text x="{MARGIN}" y="40">held-out top-1: {heads}</text>'
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle">step</text>'
        "</svg>\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, default=SHIPPED_RECORD)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "medusa-loss.svg")
    args = parser.parse_args()
    args.out.write_text(loss_svg(json.loads(args.record.read_text())))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
