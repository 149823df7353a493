"""The tune map, drawn from a TuneReport alone: a heatmap per method (predicted and measured speedup over plain
decoding, the 1.0x break-even contour, the chosen cell marked), the two curves behind it (the step's cost and
the method's tokens per step against rows fed), a table of every cell for screen readers, and the plain-text
table the CLI prints. Every figure says what it was measured on, and how busy the machine was.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from lookahead_core.records import Method
from lookahead_core.records.tune import SHORT, TuneCell, TuneReport

from .caption import plural
from .looks import look
from .markup import escape
from .palette import SMALLEST_TEXT
from .timing import mode_words, share_words, times

WITHIN = 0.15  # a prediction within this share of the measured speedup counts as right
# What each short name in a cell's label ("prompt-lookup N=4 k=20") sets, said under the table that lists them
SHORT_WORDS = {
    "W": "lookahead's window columns",
    "N": "lookahead's n-gram size, or the longest match prompt lookup looks for",
    "G": "lookahead's guesses verified a step",
    "k": "the tokens a step proposes: copied after a match (prompt lookup) or written by a draft",
    "nodes": "suffix decoding's tree size, at most",
    "α": "suffix decoding's nodes per token of the match, at most",
}


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
    if report.source is not None:
        prompts = f"{plural(len(report.prompts), 'prompt')} of {report.dataset}"
        return f"{m.model} on {m.device_name} ({m.dtype}), {prompts}: {report.load}"
    other = (
        ""
        if busy is None or busy.other_cores is None
        else f"; other programs used {busy.other_cores:.1f} of {busy.cores} cores"
    )
    return (
        f"{m.model} on {m.device_name} ({m.dtype}, {mode_words(report.mode, report.mode_note)}), "
        f"{plural(len(report.prompts), 'prompt')} of {report.dataset}, {plural(report.max_new_tokens, 'new token')}; "
        f"{sweep_minutes(report)}; {report.load}{other}"
    )


def sweep_minutes(report: TuneReport) -> str:
    """The sweep's time, and the held-out check's share of it where the report kept it apart."""
    held = report.held_out
    whole = f"{report.sweep_seconds / 60:.1f} min"
    if held is None or held.seconds is None:
        return whole
    the_map = (report.sweep_seconds - held.seconds) / 60
    return f"{whole} ({the_map:.1f} min the map, {held.seconds / 60:.1f} the held-out check)"


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
        f"on {plural(len(held.prompts), 'held-out prompt')}, {plural(held.rounds, 'round')}: the map's choice "
        f"({chosen}) {c.median:.2f}x [{c.low:.2f}-{c.high:.2f}], "
        f"auto ({auto}) {a.median:.2f}x [{a.low:.2f}-{a.high:.2f}]"
    )


def tune_table(report: TuneReport) -> str:
    """Every cell as a plain-text table (predicted / measured speedup over plain decoding), and the verdicts."""
    lines = [
        machine_words(report),
        f"{'cell':<34}{'tok/step':>9}{'rows fed':>9}{'cost':>7}{'accepted':>11}{'exact':>7}  predicted / measured",
    ]
    chosen = set(report.chosen.values())
    for index, cell in enumerate(report.cells):
        accepted = share_words(cell.acceptance) if cell.acceptance is not None else "-"
        mark = " <- chosen" if index in chosen else ""
        lines.append(
            f"{cell.label:<34}{cell.tokens_per_step:>9.2f}{cell.rows_fed:>9.1f}{cell.relative_cost:>6.2f}x"
            f"{accepted:>11}{'yes' if cell.exact else 'NO':>7}  {speedup_text(cell)}{mark}"
        )
    lines += [prediction_words(report), held_out_words(report)]
    return "\n".join(lines)


def method_title(method: Method) -> str:
    return escape(method.value)


# ---------------------------------------------------------------- the figures

# Pale ends, so black text reads on every cell at AA (4.5:1; tests/test_tune_visuals.py measures each stop):
# a loss is a pale vermillion, break-even white, a gain a pale blue. Each cell also says its figure in words.
SCALE = [[0.0, "#F2C4A5"], [0.5, "#FFFFFF"], [1.0, "#A9CDEB"]]
TEXT = "#000000"
LINE = "#333333"


def methods_of(report: TuneReport) -> list[Method]:
    return list(dict.fromkeys(c.method for c in report.cells))


def axes(cells: list[TuneCell]) -> tuple[str, list, str, list]:
    """A method's map axes: lookahead's N across and W down; another method's settings across, one row."""
    if cells[0].method == Method.LOOKAHEAD:
        ngrams = sorted({c.settings["ngram"] for c in cells})
        windows = sorted({c.settings["window"] for c in cells})
        return "N · n-gram size", ngrams, "W · window (G = W)", windows
    labels = [" ".join(f"{SHORT.get(k, k)}={v}" for k, v in c.settings.items()) for c in cells]
    return "settings", labels, "", [""]


def place(cell: TuneCell, x: list, y: list) -> tuple[int, int]:
    """The (row, column) of a cell on its method's map."""
    if cell.method == Method.LOOKAHEAD:
        return y.index(cell.settings["window"]), x.index(cell.settings["ngram"])
    return 0, x.index(" ".join(f"{SHORT.get(k, k)}={v}" for k, v in cell.settings.items()))


def cell_words(cell: TuneCell, measured: bool, chosen: bool = False) -> str:
    """What a map's cell says in text: the speedup with a gain or loss word, the measured one's error, and
    whether it is the chosen cell."""
    if not measured:
        value = cell.predicted_speedup
    elif cell.measured_speedup is None:
        return "not timed"
    else:
        value = cell.measured_speedup.median
    words = f"{value:.2f}× {'gain' if value >= 1 else 'loss'}"
    if measured:
        words += f"<br>error {error(cell):+.0%}"
    return words + ("" if cell.exact else "<br>NOT EXACT") + ("<br><b>chosen</b>" if chosen else "")


def grids(cells: list[TuneCell], x: list, y: list, measured: bool, chosen: TuneCell | None) -> tuple[list, list]:
    """The z values and texts of one map (predicted or measured): None where no cell sits or none was timed."""
    z = [[None] * len(x) for _ in y]
    text = [[""] * len(x) for _ in y]
    for cell in cells:
        row, column = place(cell, x, y)
        if measured:
            z[row][column] = cell.measured_speedup.median if cell.measured_speedup else None
        else:
            z[row][column] = cell.predicted_speedup
        text[row][column] = cell_words(cell, measured, cell is chosen)
    return z, text


def span(cells: list[TuneCell]) -> tuple[float, float]:
    """The colour scale's ends, even around 1.0 so break-even is white on every map: from 0.25 to 1.0 either
    side (a larger gain or loss takes the end's colour; its text says the figure)."""
    values = [c.predicted_speedup for c in cells] + [c.measured_speedup.median for c in cells if c.measured_speedup]
    reach = min(max(max(abs(v - 1) for v in values), 0.25), 1.0)
    return 1 - reach, 1 + reach


PREDICTED, MEASURED = "predicted from the curves", "measured by the clock"


def method_figure(report: TuneReport, method: Method):
    """One method's map: the predicted speedup (left) and the measured one (right) over plain decoding, each
    cell labelled with its figure, the 1.0× break-even contour drawn on lookahead's grid, the chosen cell framed
    and named. Where the sweep timed none of the method's cells the map is the predicted one alone, titled
    "predicted" (an empty clock map sat under "checked by the clock" over a sweep that timed nothing)."""
    cells = [c for c in report.cells if c.method == method]
    x_title, x, y_title, y = axes(cells)
    low, high = span(cells)
    timed = any(c.measured_speedup is not None for c in cells)
    maps = ((1, False), (2, True)) if timed else ((1, False),)
    figure = make_subplots(
        rows=1, cols=len(maps), subplot_titles=(PREDICTED, MEASURED) if timed else (f"{PREDICTED}: no cell was timed",)
    )
    chosen = report.chosen_cell(method)
    for column, measured in maps:
        z, text = grids(cells, x, y, measured, chosen)
        figure.add_trace(speedup_map(z, x, y, text, (low, high), measured, column == len(maps)), row=1, col=column)
        if method == Method.LOOKAHEAD and len(x) > 1 and len(y) > 1:
            figure.add_trace(break_even(z, x, y), row=1, col=column)
        figure.update_xaxes(title_text=x_title, type="category", row=1, col=column)
        figure.update_yaxes(title_text=y_title, type="category", row=1, col=column)
    if chosen is not None:
        frame_chosen(figure, place(chosen, x, y), [column for column, _ in maps])
    figure.update_layout(
        template="none",
        height=300 + 40 * len(y),
        margin={"t": 80, "b": 60},
        title={
            "text": f"{method.value}: speedup over plain decoding" + ("" if timed else ", predicted only"),
            "font": {"size": 16},
        },
        showlegend=False,
        font={"size": 14},
    )
    return figure


def speedup_map(z: list, x: list, y: list, text: list, scale: tuple[float, float], measured: bool, colorbar: bool):
    """One map of speedups over plain decoding, each cell labelled with its figure, on the shared colour `scale`."""
    return go.Heatmap(
        z=z,
        x=[str(v) for v in x],
        y=[str(v) for v in y],
        text=text,
        texttemplate="%{text}",
        textfont={"color": TEXT, "size": SMALLEST_TEXT},
        colorscale=SCALE,
        zmin=scale[0],
        zmax=scale[1],
        showscale=colorbar,
        colorbar={"title": {"text": "× plain"}},
        hoverongaps=False,
        xgap=2,
        ygap=2,
        name="measured" if measured else "predicted",
    )


def frame_chosen(figure, cell: tuple[int, int], columns: list[int]) -> None:
    """A frame around the chosen cell (`cell`: its row and column) of each map, inside its gaps; the cell's text
    says "chosen" too."""
    row, col = cell
    for column in columns:
        figure.add_shape(
            type="rect",
            x0=col - 0.47,
            x1=col + 0.47,
            y0=row - 0.47,
            y1=row + 0.47,
            line={"color": LINE, "width": 4},
            name="chosen",
            row=1,
            col=column,
        )


def break_even(z: list, x: list, y: list):
    """The 1.0× contour over a map: where the method starts to pay, dashed."""
    return go.Contour(
        z=z,
        x=[str(v) for v in x],
        y=[str(v) for v in y],
        contours={"start": 1.0, "end": 1.0, "coloring": "none"},
        line={"color": LINE, "width": 3, "dash": "dash"},
        showscale=False,
        hoverinfo="skip",
        name="1.0× break-even",
        connectgaps=True,
    )


def curves_figure(report: TuneReport):
    """The two curves behind every map: the step's cost against rows fed (the measured curve, and each cell at
    the mean rows its passes ran: fed, or its fixed shape's), and each cell's tokens per step against the rows it
    fed; a marker shape per method."""
    curve = report.curve
    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("the step's cost (in 1-row steps) against rows fed", "tokens per step against rows fed"),
    )
    relative = [s / curve.seconds[0] for s in curve.seconds]
    figure.add_scatter(
        x=curve.sizes,
        y=relative,
        mode="lines+markers",
        name="measured step cost",
        row=1,
        col=1,
        line={"color": LINE},
        marker={"symbol": "x", "color": LINE},
    )
    for method in methods_of(report):
        cells = [c for c in report.cells if c.method == method]
        style = {"symbol": look(method).marker, "size": 10, "color": LINE, "line": {"width": 1}}
        ran, fed = [max(c.rows_fed, c.shape) for c in cells], [c.rows_fed for c in cells]
        for column, x, values in (
            (1, ran, [c.relative_cost for c in cells]),
            (2, fed, [c.tokens_per_step for c in cells]),
        ):
            figure.add_scatter(
                x=x,
                y=values,
                mode="markers",
                marker=style,
                name=method.value,
                text=[c.label for c in cells],
                hoverinfo="text+x+y",
                showlegend=column == 2,
                row=1,
                col=column,
            )
    figure.update_xaxes(title_text="rows fed per step", type="log")
    figure.update_yaxes(rangemode="tozero")
    figure.update_layout(
        template="none",
        height=420,
        font={"size": 14},
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 60},
        title={"text": f"The two curves: {curve.model} on {curve.hardware} ({curve.dtype})", "font": {"size": 16}},
    )
    return figure


def tune_figures(report: TuneReport) -> list:
    """Every figure of a report: a map per method, then the two curves."""
    return [*(method_figure(report, m) for m in methods_of(report)), curves_figure(report)]


# ---------------------------------------------------------------- the table and the page


def measured_cell_html(cell: TuneCell) -> str:
    if cell.measured_speedup is None:
        return "<td>not timed</td><td></td>"
    m = cell.measured_speedup
    return f"<td>{m.median:.2f}× ({m.low:.2f}–{m.high:.2f}×)</td><td>{error(cell):+.0%}</td>"


def short_words() -> str:
    """The cells' short names in words: "W: lookahead's window columns; N: ..."."""
    return "In a cell's name, " + "; ".join(f"{short}: {words}" for short, words in SHORT_WORDS.items()) + "."


def tune_table_html(report: TuneReport) -> str:
    """Every cell in a table (the maps' text alternative): settings, the two curves' figures, the predicted and
    measured speedups with the error, exactness, and which cell was chosen."""
    chosen = set(report.chosen.values())
    rows = []
    for index, cell in enumerate(report.cells):
        accepted = share_words(cell.acceptance) if cell.acceptance is not None else "–"
        rows.append(
            f"<tr><th scope='row'>{escape(cell.label)}{' (chosen)' if index in chosen else ''}</th>"
            f"<td>{cell.tokens_per_step:.2f}</td><td>{cell.rows_fed:.1f}</td><td>{cell.relative_cost:.2f}×</td>"
            f"<td>{accepted}</td><td>{cell.predicted_speedup:.2f}×</td>{measured_cell_html(cell)}"
            f"<td>{'yes' if cell.exact else 'NO'}</td></tr>"
        )
    head = "".join(
        f"<th scope='col'>{h}</th>"
        for h in ("cell", "tokens/step", "rows fed", "step cost", "candidate tokens accepted")
        + ("predicted", "measured", "error", "exact")
    )
    return (
        f'<table class="ll-tune-table"><caption>Every cell of the map: speedup over plain decoding, '
        f"{escape(prediction_words(report))}. {escape(short_words())}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def tune_summary_html(report: TuneReport) -> str:
    """The map in words: in plain words first, what a cell is and how its speed was found; then what the map was
    measured on and how busy the machine was, the chosen cells, the held-out check and the prediction's error."""
    chosen = "; ".join(
        f"{escape(cell.label)}: {speedup_text(cell)}" for cell in (report.chosen_cell(m) for m in report.chosen) if cell
    )
    timed = sum(cell.measured_speedup is not None for cell in report.cells)
    checked = (
        f"{plural(timed, 'cell was', 'cells were')} also timed by the clock, to check the prediction"
        if timed
        else "no cell was timed by the clock in this sweep, so every speedup shown is predicted, not measured"
    )
    plain = (
        f"Each cell is one method at one setting. Its speed against plain decoding is predicted from two curves "
        f"measured on {machine_name(report)}: what a step costs for the rows it feeds, and how many tokens a step "
        f"commits; {checked}."
    )
    shown = "predicted / measured" if timed else "predicted"
    return (
        f'<div class="ll-tune-summary"><p>{escape(plain)}</p><p>{escape(machine_words(report))}</p>'
        f"<p><b>Chosen</b> ({shown} over plain decoding): {chosen or 'none'}</p>"
        f"<p>{escape(prediction_words(report))}. {escape(held_out_words(report))}.</p></div>"
    )


def tune_page(report: TuneReport) -> str:
    """The report as one self-contained page: the words, every map, the curves and the table (plotly inlined)."""
    figures = "".join(
        pio.to_html(figure, full_html=False, include_plotlyjs="inline" if i == 0 else False)
        for i, figure in enumerate(tune_figures(report))
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Lookahead Lab: where each method pays ({escape(report.dataset)})</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}
th[scope=row]{{text-align:left}}caption{{text-align:left;padding:6px 0}}</style></head>
<body><h1>Where each method pays: {escape(report.dataset)}</h1>{tune_summary_html(report)}{figures}
{tune_table_html(report)}</body></html>
"""


# ---------------------------------------------------------------- one method, two machines (the lesson's step)

PROBE = 64  # rows: the step width whose cost the lesson compares across machines (auto settings' probe)
ROW_WORDS = f"one token fed to the step's forward pass, so a {PROBE}-row step feeds {PROBE} tokens at once"


def probe_cost(report: TuneReport) -> float:
    """A PROBE-row step's cost in 1-row steps on the report's curve (linear between its sizes)."""
    sizes, seconds = report.curve.sizes, report.curve.seconds
    for (a, ta), (b, tb) in itertools.pairwise(zip(sizes, seconds, strict=True)):
        if a <= PROBE <= b:
            return (ta + (tb - ta) * (PROBE - a) / (b - a)) / seconds[0]
    return seconds[-1] / seconds[0]


def paired(cpu: TuneReport, gpu: TuneReport) -> list[tuple[TuneCell, TuneCell]]:
    """The cells both maps swept (a method at the same settings), in the first map's order: each machine's grid
    may reach where the other's does not (a GPU's wider windows)."""
    there = {cell.label: cell for cell in gpu.cells}
    return [(here, there[here.label]) for here in cpu.cells if here.label in there]


def turned(cpu: TuneReport, gpu: TuneReport) -> tuple[TuneCell, TuneCell] | None:
    """The cell the two machines disagree on most, as each map has it: a predicted loss here, a predicted gain
    there (None: none)."""
    pairs = [
        (here, there)
        for here, there in paired(cpu, gpu)
        if here.exact and here.predicted_speedup < 1 <= there.predicted_speedup
    ]
    if not pairs:
        return None
    return max(pairs, key=lambda pair: pair[1].predicted_speedup - pair[0].predicted_speedup)


def measured_words(cell: TuneCell | None) -> str:
    """A cell's measured speedup over plain decoding, or that it was not timed."""
    if cell is None or cell.measured_speedup is None:
        return "not timed"
    return times(cell.measured_speedup)


def machine_name(report: TuneReport, dated: bool = True) -> str:
    """A map's machine as a student reads it, from its record: "the NVIDIA H200 of 2026-11-26", "the 2-core CPU of
    2026-11-26" (a CPU's cores as the sweep's load reading counted them); undated, "the NVIDIA H200", "the CPU"."""
    machine, date = report.machine, f" of {report.ran_at[:10]}" if dated else ""
    if machine.device != "cpu":
        return f"the {machine.device_name}{date}"
    cores = f"{report.busy.cores}-core " if report.busy is not None and dated else ""
    return f"the {cores}CPU{date}"


def two_machines_facts(cpu: TuneReport, gpu: TuneReport) -> dict[str, str]:
    """The figures the lesson's step quotes, read from the two maps."""
    pair = turned(cpu, gpu)
    chosen, chosen_there = cpu.chosen_cell(Method.LOOKAHEAD), gpu.chosen_cell(Method.LOOKAHEAD)
    return {
        "cpu_machine": machine_name(cpu),
        "gpu_machine": machine_name(gpu),
        "cpu_short": machine_name(cpu, dated=False),
        "gpu_short": machine_name(gpu, dated=False),
        "cpu_cost": f"{probe_cost(cpu):.2f}×",
        "gpu_cost": f"{probe_cost(gpu):.2f}×",
        "cell": pair[0].label if pair is not None else "",
        "cell_tokens": f"{pair[0].tokens_per_step:.2f}" if pair is not None else "",
        "gpu_tokens": f"{pair[1].tokens_per_step:.2f}" if pair is not None else "",
        "cpu_speedup": f"{pair[0].predicted_speedup:.2f}×" if pair is not None else "",
        "gpu_speedup": f"{pair[1].predicted_speedup:.2f}×" if pair is not None else "",
        "cpu_chosen": chosen.label if chosen is not None else "",
        "gpu_chosen": chosen_there.label if chosen_there is not None else "",
        "gpu_measured": measured_words(chosen_there),
        "gpu_date": gpu.ran_at[:10],
    }


def there_words(gpu: TuneReport, facts: dict[str, str]) -> str:
    """How the second map was made: priced off recorded figures (its `source` says which), or swept on its machine,
    with its chosen lookahead cell's measured speedup."""
    if gpu.source:
        return f"The map of {facts['gpu_machine']}: {gpu.source}."
    return (
        f"The map of {facts['gpu_machine']} was swept on {facts['gpu_date']} (python -m lab tune); it chose "
        f"{facts['gpu_chosen']}, measured at {facts['gpu_measured']} of plain decoding."
    )


def two_machines_html(cpu: TuneReport, gpu: TuneReport | None) -> str:
    """The recorded maps side by side, as the tune card shows them before a sweep, each machine named (in full
    once, with its date): in plain words first, whether the same settings lose on one and pay on the other; then
    what a wide step costs on each, the cell they disagree on most (its tokens per step and predicted speedup on
    each), each method's chosen cell on the first predicted on both (or not swept on the second), and how the
    second map was made. Short: the card, outlined by the lesson, must fit on a screen."""
    if gpu is None:
        return f"<p>The map of {escape(machine_name(cpu))}; the GPU map is owed until a GPU is lent.</p>"
    f = two_machines_facts(cpu, gpu)
    cpu_name, gpu_name = escape(f["cpu_machine"]), escape(f["gpu_machine"])
    words = ""
    if f["cell"]:
        words += (
            f"<p><b>The same settings can lose on one machine and pay on another</b>: {escape(f['cell'])} is "
            f"predicted to be slower than plain decoding on {cpu_name} and faster on {gpu_name}.</p>"
        )
        cpu_name, gpu_name = escape(f["cpu_short"]), escape(f["gpu_short"])  # named in full above
    words += (
        f'<p>On {cpu_name} a <span title="{ROW_WORDS}">{PROBE}-row step</span> costs {f["cpu_cost"]} a 1-row step; '
        f"on {gpu_name} it costs {f['gpu_cost']}. (A row: {ROW_WORDS}.)</p>"
    )
    if f["cell"]:
        words += (
            f"<p>{escape(f['cell'])} commits {f['cell_tokens']} tokens per step on {cpu_name} and {f['gpu_tokens']} "
            f"on {gpu_name}: predicted at {f['cpu_speedup']} of plain decoding's speed on {cpu_name}, "
            f"{f['gpu_speedup']} on {gpu_name}.</p>"
        )
    on_gpu = {cell.label: cell for cell in gpu.cells}
    cells = "; ".join(
        f"{escape(cell.label)}: {cell.predicted_speedup:.2f}× / "
        + (f"{on_gpu[cell.label].predicted_speedup:.2f}×" if cell.label in on_gpu else f"not swept on {gpu_name}")
        for cell in (cpu.cells[i] for i in cpu.chosen.values())
    )
    return (
        f'<div class="ll-tune-two">{words}<p>Each method\'s chosen cell on {cpu_name}, predicted over plain decoding '
        f"on {cpu_name} / on {gpu_name}: {cells} (the map of {cpu_name} chose {escape(f['cpu_chosen'])}).</p>"
        f"<p><small>{escape(there_words(gpu, f))}</small></p></div>"
    )
