"""The tune map, drawn from a TuneReport alone: a heatmap per method (predicted and measured speedup over plain
decoding, the 1.0x break-even contour, the chosen cell marked), the two curves behind it (the step's cost and
the method's tokens per step against rows fed), a table of every cell for screen readers, and the plain-text
table the CLI prints. Every figure says what it was measured on, and how busy the machine was.
"""

from __future__ import annotations

from lookahead_core.records import Method
from lookahead_core.records.tune import TuneCell, TuneReport

from .markup import escape

WITHIN = 0.15  # a prediction within this share of the measured speedup counts as right


def error(cell: TuneCell) -> float | None:
    """The prediction's error as a share of the measured speedup (None: not timed)."""
    if cell.measured_speedup is None:
        return None
    return cell.predicted_speedup / cell.measured_speedup.median - 1


def prediction_words(report: TuneReport) -> str:
    """How many timed cells the prediction got within WITHIN of the clock, and the largest miss."""
    errors = [e for e in (error(c) for c in report.cells) if e is not None]
    if not errors:
        return "no cell was timed: every speedup shown is predicted"
    near = sum(abs(e) <= WITHIN for e in errors)
    worst = max(errors, key=abs)
    return (
        f"predicted within {WITHIN:.0%} of measured on {near} of {len(errors)} timed cells "
        f"({near / len(errors):.0%}); the largest miss {worst:+.0%}"
    )


def machine_words(report: TuneReport) -> str:
    """What the map was measured on, and how busy the machine was meanwhile."""
    m, busy = report.machine, report.busy
    other = (
        ""
        if busy is None or busy.other_cores is None
        else f"; other programs used {busy.other_cores:.1f} of {busy.cores} cores"
    )
    return (
        f"{m.model} on {m.device_name} ({m.dtype}), {len(report.prompts)} prompts of {report.dataset}, "
        f"{report.max_new_tokens} new tokens; {report.sweep_seconds / 60:.1f} min; {report.load}{other}"
    )


def speedup_text(cell: TuneCell) -> str:
    measured = cell.measured_speedup
    shown = f"{cell.predicted_speedup:.2f}x"
    if measured is not None:
        shown += f" / {measured.median:.2f}x [{measured.low:.2f}-{measured.high:.2f}]"
    return shown


def held_out_words(report: TuneReport) -> str:
    held = report.held_out
    if held is None:
        return "held-out prompts: not run"
    c, a = held.chosen_speedup, held.auto_speedup
    chosen = " ".join(f"{k}={v}" for k, v in held.chosen.items())
    auto = " ".join(f"{k}={v}" for k, v in held.auto.items())
    return (
        f"on {len(held.prompts)} held-out prompts, {held.rounds} rounds: the map's choice ({chosen}) "
        f"{c.median:.2f}x [{c.low:.2f}-{c.high:.2f}], auto ({auto}) {a.median:.2f}x [{a.low:.2f}-{a.high:.2f}]"
    )


def tune_table(report: TuneReport) -> str:
    """Every cell as a plain-text table (predicted / measured speedup over plain decoding), and the verdicts."""
    lines = [
        machine_words(report),
        f"{'cell':<34}{'tok/step':>9}{'rows fed':>9}{'cost':>7}{'accepted':>9}{'exact':>7}  predicted / measured",
    ]
    chosen = set(report.chosen.values())
    for index, cell in enumerate(report.cells):
        accepted = f"{cell.acceptance:.0%}" if cell.acceptance is not None else "-"
        mark = " <- chosen" if index in chosen else ""
        lines.append(
            f"{cell.label:<34}{cell.tokens_per_step:>9.2f}{cell.rows_fed:>9.1f}{cell.relative_cost:>6.2f}x"
            f"{accepted:>9}{'yes' if cell.exact else 'NO':>7}  {speedup_text(cell)}{mark}"
        )
    lines += [prediction_words(report), held_out_words(report)]
    return "\n".join(lines)


def method_title(method: Method) -> str:
    return escape(method.value)
