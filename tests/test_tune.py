"""The tune map: the prediction on synthetic curves, the report's round trip, the grid's refusals, adopting the
chosen settings, and (heavy) a sweep on a tiny model whose every cell is exact, end to end through the CLI."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import replace
from types import SimpleNamespace

import pytest

from lab import tune_cli
from lab.cli import main
from lab.measure.payoff import Decoded, best, predicted_speedup, relative_cost, within
from lab.measure.tune import MAX_CELLS, TuneGrid, TuneOptions, check_grid, repriced, timed_indices, tuning
from lookahead_core import tuning as auto_tuning
from lookahead_core.config import LookaheadConfig, SettingsError
from lookahead_core.costs import SettledMode
from lookahead_core.records import Busy, Machine, Method, PlannerKind, SchemaError, Spread, StepCostCurve, StepMode
from lookahead_core.records.tune import TUNE_VERSION, HeldOut, TuneCell, TunePlain, TuneReport, read_tune_report
from lookahead_core.request import DecodeRequest
from lookahead_core.tuning import adopt, adopted, choose_settings
from visuals.tune import two_machines_html

from .conftest import assert_same_types, drained
from .tiny import cost_table, tiny_model, tiny_runtime

# ---------------------------------------------------------------- the prediction


PLAIN = Decoded(tokens=64, rows=(1,) * 63, host_seconds=0.0)
NARROW = Decoded(tokens=64, rows=(6,) * 40, host_seconds=0.0)  # a small window: 1.6 tokens a step
WIDE = Decoded(tokens=64, rows=(100,) * 25, host_seconds=0.0)  # a wide one: 2.56 tokens a step


def predicted(per_token: float, cells: list[Decoded]) -> list[float]:
    cost = cost_table(per_token).relative
    return [predicted_speedup(cost, cell, PLAIN, unit=0.01, prefill_seconds=0.0) for cell in cells]


def test_a_flat_curve_picks_the_wide_window():
    speedups = predicted(0.001, [NARROW, WIDE])  # a 100-row step costs 1.1 one-row steps
    assert best(speedups) == 1
    assert speedups[1] > 2.0


def test_a_steep_curve_picks_the_narrow_window():
    speedups = predicted(0.05, [NARROW, WIDE])  # a 100-row step costs 6 one-row steps: the wide window loses
    assert best(speedups) == 0
    assert speedups[1] < 1.0 < speedups[0]


def test_the_host_time_beyond_the_pass_lowers_the_prediction():
    cost = cost_table(0.0).relative
    busy = dataclasses.replace(NARROW, host_seconds=0.4)  # 10 ms a step beyond a 10 ms pass
    quiet = predicted_speedup(cost, NARROW, PLAIN, 0.01, 0.0)
    assert quiet == pytest.approx(63 / 40)
    assert predicted_speedup(cost, busy, PLAIN, 0.01, 0.0) == pytest.approx(0.63 / 0.8)


def test_a_fixed_shape_step_is_priced_at_its_shape_not_the_rows_it_fed():
    """In a fixed-shape step mode every pass runs the shape's T rows, pad rows and all (on an H200's captured step
    prompt lookup fed 9 rows a step into a shape of 21, was priced at 9, and the prediction came out 18% above the
    clock). The same decoding of the eager step (shape 0) is the control."""
    cost = cost_table(0.05).relative
    fixed = dataclasses.replace(NARROW, shape=21)
    assert relative_cost(cost, fixed) == pytest.approx(cost(21)) and relative_cost(cost, NARROW) == pytest.approx(
        cost(6)
    )
    assert predicted_speedup(cost, fixed, PLAIN, 0.01, 0.0) < predicted_speedup(cost, NARROW, PLAIN, 0.01, 0.0)


def test_within_is_a_share_of_the_measured_speedup():
    assert within(1.14, 1.0) and not within(1.16, 1.0) and within(0.86, 1.0)


# ---------------------------------------------------------------- the report


def cell(method: Method, settings: dict, predicted_: float, measured: Spread | None = None) -> TuneCell:
    return TuneCell(
        method=method,
        settings=settings,
        tokens=64,
        steps=40,
        tokens_per_step=1.6,
        acceptance=0.3,
        rows_fed=9.5,
        relative_cost=1.4,
        host_seconds=0.002,
        predicted_speedup=predicted_,
        measured_speedup=measured,
        exact=True,
    )


def report() -> TuneReport:
    curve = dataclasses.asdict(cost_table(0.02).curve())
    machine = Machine(
        model="tiny",
        architecture="llama",
        parameters=1,
        device="cpu",
        device_name="CPU",
        dtype="float32",
        attention="sdpa",
        torch="2",
        transformers="5",
        python="3.11",
        platform="linux",
    )
    cells = [
        cell(Method.LOOKAHEAD, {"window": 2, "ngram": 3, "guesses": 2}, 1.3, Spread(median=1.25, low=1.1, high=1.4)),
        cell(Method.LOOKAHEAD, {"window": 8, "ngram": 5, "guesses": 8}, 0.7),
        cell(Method.PROMPT_LOOKUP, {"ngram": 3, "tokens": 10}, 1.1, Spread(median=0.9, low=0.8, high=1.0)),
    ]
    return TuneReport(
        dataset="humaneval",
        prompts=["a", "b"],
        max_new_tokens=64,
        machine=machine,
        curve=StepCostCurve(**curve),
        planner=PlannerKind.COST_AWARE,
        plain=TunePlain(tokens=128, steps=126, host_seconds=0.001, prefill_seconds=0.5),
        cells=cells,
        chosen={Method.LOOKAHEAD: 0, Method.PROMPT_LOOKUP: 2},
        rounds=3,
        sweep_seconds=100.0,
        busy=Busy(other_cores=1.2, cores=2, seconds=100.0, heavy=True),
        load="load average: 3.00, 3.00, 3.00 (2 cores)",
        ran_at="2026-11-26T06:00:00",
        held_out=HeldOut(
            prompts=["c"],
            chosen={"window": 2, "ngram": 3, "guesses": 2},
            auto={"window": 4, "ngram": 8, "guesses": 4},
            chosen_speedup=Spread(median=1.2, low=1.1, high=1.3),
            auto_speedup=Spread(median=1.1, low=1.0, high=1.2),
            rounds=3,
            seconds=40.0,
        ),
    )


def test_the_report_reads_back_equal_field_for_field():
    written = report()
    read = read_tune_report(written.to_json())
    assert read == written
    assert_same_types(written, read, "report")
    assert json.loads(written.to_json())["tune_version"] == TUNE_VERSION


def test_every_cell_keeps_the_keys_other_tools_read():
    for data in json.loads(report().to_json())["cells"]:
        assert {"method", "settings", "tokens_per_step", "predicted_speedup", "measured_speedup", "exact"} <= set(data)
    assert json.loads(report().to_json())["cells"][1]["measured_speedup"] is None


def test_a_version_1_report_reads_as_one_that_ran_the_eager_step():
    """Version 2 added the step mode: a version 1 report (the CPU maps shipped before it) ran the eager step."""
    data = json.loads(replace(report(), mode=StepMode.CUDA_GRAPH).to_json())
    del data["mode"], data["mode_note"]
    read = read_tune_report(json.dumps(data | {"tune_version": 1}))
    assert read.mode == StepMode.EAGER and read.tune_version == TUNE_VERSION == 2


@pytest.mark.parametrize("version", [None, 0, TUNE_VERSION + 1])
def test_a_report_of_another_version_is_refused_in_words(version):
    data = json.loads(report().to_json())
    data["tune_version"] = version
    with pytest.raises(SchemaError, match="tune report has version"):
        read_tune_report(json.dumps(data))


def test_a_damaged_cell_is_named():
    data = json.loads(report().to_json())
    data["cells"][0]["tokens_per_step"] = "fast"
    with pytest.raises(SchemaError, match=r"cells\[0\].tokens_per_step"):
        read_tune_report(json.dumps(data))


def test_the_timed_cells_are_each_methods_best_and_a_spread_of_the_rest():
    cells = [cell(Method.LOOKAHEAD, {"window": w, "ngram": 3, "guesses": w}, 1.0 + w / 10) for w in range(1, 9)]
    cells.append(cell(Method.PROMPT_LOOKUP, {"ngram": 3, "tokens": 10}, 0.5))
    picked = timed_indices(cells, best=1, sample=3)
    assert picked == [7, 8, 6, 4, 2]  # each method's best predicted, then the rest spread down the ranks


# ---------------------------------------------------------------- the grid's refusals


@pytest.mark.parametrize(
    "grid, words",
    [
        (TuneGrid(windows=(0,), ngrams=(3,)), "window W must be an integer >= 1"),
        (TuneGrid(windows=(2,), ngrams=(1,)), "n-gram size N must be an integer >= 2"),
        (TuneGrid(windows=(40,), ngrams=(9,)), "over the budget"),
        (TuneGrid(windows=(), lookups=((3, 0),), draft_tokens=(), tree_sizes=()), "lookup tokens must be"),
        (TuneGrid(windows=(), lookups=(), draft_tokens=(99,), tree_sizes=()), "at most 64"),
        (TuneGrid(windows=(), lookups=(), draft_tokens=(), tree_sizes=(0,)), "a Medusa tree has 1 to"),
        (TuneGrid(windows=(), lookups=(), draft_tokens=(), tree_sizes=(), suffixes=((0, 1),)), "suffix tree size"),
        (TuneGrid(windows=(), lookups=(), draft_tokens=(), tree_sizes=(), suffixes=()), "nothing to sweep"),
        (TuneGrid(windows=tuple(range(1, 21)), ngrams=(2, 3, 4, 5)), f"at most {MAX_CELLS}"),
    ],
)
def test_a_grid_out_of_range_is_refused_in_words(grid, words):
    with pytest.raises(SettingsError, match=words):
        check_grid(grid)


def test_the_cli_refuses_out_of_range_options_before_loading_a_model(capsys, monkeypatch):
    monkeypatch.setattr(tune_cli, "load_model", lambda *a, **k: pytest.fail("the model loaded"))
    with pytest.raises(SystemExit, match="2"):
        main(["tune", "--dataset", "humaneval", "--windows", "2,x"])
    assert "expected whole numbers separated by commas" in capsys.readouterr().err
    for args, words in [
        (["--limit", "0"], "--limit must be >= 1"),
        (["--rounds", "0"], "--rounds must be >= 1"),
        (["--methods", "greedy"], "tune sweeps lookahead"),
        (["--windows", "0"], "window W must be"),
    ]:
        assert main(["tune", "--dataset", "humaneval", *args]) == 2
        assert words in capsys.readouterr().err


# ---------------------------------------------------------------- adopting the chosen settings


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A tiny model's eager step settled with a steep curve (W=4, N=8 by the regime), in a cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lm = tiny_model("llama")
    return SettledMode(lm, StepMode.EAGER, "", cost_table(0.2))


def test_auto_settings_take_the_adopted_settings_for_this_model_device_and_dtype(cached):
    lm = cached.lm
    assert auto_tuning.auto_settings(lm, cached).config == choose_settings(cost_table(0.2)).config
    adopt(lm, cached.mode, LookaheadConfig(window=3, ngram=4, guesses=3), PlannerKind.FULL, "docs/bench/x.json")
    auto = auto_tuning.auto_settings(lm, cached)
    assert (auto.config, auto.planner, auto.adopted) == (
        LookaheadConfig(3, 4, 3),
        PlannerKind.FULL,
        "docs/bench/x.json",
    )


def test_settings_adopted_for_another_model_or_damaged_are_ignored(cached):
    lm = cached.lm
    path = adopt(lm, cached.mode, LookaheadConfig(window=3, ngram=4, guesses=3), PlannerKind.FULL, "x")
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data | {"model": "another"}))
    assert adopted(lm, cached.mode) is None
    path.write_text(json.dumps(data | {"window": 0}))
    assert adopted(lm, cached.mode) is None
    path.write_text("{not json")
    assert auto_tuning.auto_settings(lm, cached).adopted is None


# ---------------------------------------------------------------- a sweep on a tiny model


@pytest.mark.heavy
def test_every_swept_cell_is_exact_and_the_sweep_says_where_it_is():
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=SimpleNamespace(pad_token_id=0))
    runtime = tiny_runtime(lm, "llama")
    prompts = [("loop", [5, 6, 7, 5, 6, 7, 5, 6, 7, 5]), ("list", [9, 1, 9, 2, 9, 1, 9, 2, 9])]
    grid = TuneGrid(
        windows=(2, 4), ngrams=(3, 5), lookups=((2, 4),), draft_tokens=(2, 3), tree_sizes=(4, 8), suffixes=((4, 1),)
    )
    auto = choose_settings(cost_table(0.05))
    options = TuneOptions(dataset="tiny", rounds=1, best=1, sample=1, held_out=[("held", [3, 4, 3, 4, 3])])
    progress, made = drained(tuning(lm, prompts, grid, DecodeRequest(max_new_tokens=12), runtime, auto, options))
    assert [c.label for c in made.cells][:2] == ["lookahead W=2 N=3 G=2", "lookahead W=2 N=5 G=2"]
    assert len(made.cells) == grid.size and all(c.exact for c in made.cells)
    swept = {Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE, Method.MEDUSA, Method.SUFFIX}
    assert {c.method for c in made.cells} == swept
    assert sum(c.measured_speedup is not None for c in made.cells) == 5 + 1
    assert set(made.chosen) == {c.method for c in made.cells}
    assert made.held_out is not None and made.held_out.rounds == 1
    assert 0 < made.held_out.seconds < made.sweep_seconds
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    # one count of the work from the first wait on: each prompt's reference tokens, then the warm-up, then the rest
    assert {p.total for p in progress} == {progress[0].total} and progress[-1].done < progress[0].total
    assert [p.label for p in progress[:3]] == [
        "greedy generate, the reference tokens: prompt 1 of 2",
        "greedy generate, the reference tokens: prompt 2 of 2",
        "warming up greedy, lookahead, prompt-lookup, speculative, medusa, suffix",
    ]
    assert read_tune_report(made.to_json()) == made


@pytest.mark.heavy
def test_a_sweep_in_the_fixed_shape_step_prices_each_cell_at_its_shape():
    """The fixed step (what CUDA captures) pads every pass to the shape's T: lookahead W=2 N=3 G=2 runs 8 rows a
    step whatever it fed, and its cost is read there. The same sweep in the eager step, each pass its own rows, is
    the control. On a curve that dips past 8 rows (a captured GPU step's) the shape widens to the cheaper size,
    and the cell is priced there."""
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=SimpleNamespace(pad_token_id=0))
    grid = TuneGrid(windows=(2,), ngrams=(3,), lookups=(), draft_tokens=(), tree_sizes=(), suffixes=())
    curve = cost_table(0.05)
    dipping = dataclasses.replace(curve, seconds=[*curve.seconds[:-1], curve.seconds[0] * 1.05])
    options = TuneOptions(dataset="tiny", rounds=1, best=1, sample=0)
    prompts = [("loop", [5, 6, 7, 5, 6, 7, 5, 6, 7, 5])]
    made = {}
    for mode, costs in ((StepMode.FIXED, curve), (StepMode.EAGER, curve), ("dipping", dipping)):
        runtime = dataclasses.replace(
            tiny_runtime(lm, "llama"), mode=StepMode.EAGER if mode == StepMode.EAGER else StepMode.FIXED
        )
        asked = DecodeRequest(max_new_tokens=12)
        _, made[mode] = drained(tuning(lm, prompts, grid, asked, runtime, choose_settings(costs), options))
    (fixed,), (eager,), (widened,) = made[StepMode.FIXED].cells, made[StepMode.EAGER].cells, made["dipping"].cells
    assert made[StepMode.FIXED].mode == StepMode.FIXED and fixed.exact and fixed.rows_fed < 8
    assert fixed.shape == LookaheadConfig(2, 3, 2).tokens_per_step == 8
    assert fixed.relative_cost == pytest.approx(curve.relative(8))
    assert eager.shape == 0 and eager.relative_cost < curve.relative(8)
    assert widened.exact and widened.shape == dipping.sizes[-1] and widened.relative_cost == pytest.approx(1.05)


@pytest.mark.heavy
def test_a_stopped_sweep_resumes_from_its_checkpoint(tmp_path):
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=SimpleNamespace(pad_token_id=0))
    prompts = [("loop", [5, 6, 7, 5, 6, 7, 5, 6, 7, 5])]
    grid = TuneGrid(windows=(2, 3), ngrams=(3,), lookups=((2, 4),), draft_tokens=(), tree_sizes=(), suffixes=())
    auto, asked = choose_settings(cost_table(0.05)), DecodeRequest(max_new_tokens=8)
    calls = []
    stop = lambda: len(calls.append(1) or calls) > 1  # noqa: E731  (stops before the second cell)
    checkpoint = tmp_path / "cells.jsonl"
    options = TuneOptions(dataset="tiny", rounds=1, checkpoint=checkpoint, stop=stop)
    _, partial = drained(tuning(lm, prompts, grid, asked, tiny_runtime(lm, "llama"), auto, options))
    assert len(partial.cells) == 1 and partial.rounds == 0
    resumed = dataclasses.replace(options, stop=lambda: False)
    _, whole = drained(tuning(lm, prompts, grid, asked, tiny_runtime(lm, "llama"), auto, resumed))
    assert len(whole.cells) == 3 and whole.cells[0].tokens_per_step == partial.cells[0].tokens_per_step


def test_a_map_repriced_on_a_flat_curve_pays_where_the_steep_one_lost():
    """The same cells (tokens per step, rows fed) on another machine's curve: a cell that loses where a wide step
    is dear (the report's steep curve) pays where it is nearly free; repriced on the same steep curve it loses
    again (the negative control)."""
    wide = dataclasses.replace(report().cells[1], tokens=64, steps=25, rows_fed=100.0, host_seconds=0.0)
    steep = dataclasses.replace(report(), cells=[wide], chosen={Method.LOOKAHEAD: 0})
    steep.plain.host_seconds = 0.0
    machine = dataclasses.replace(steep.machine, device_name="a flat GPU")
    flat = repriced(steep, cost_table(0.001), 0.01, machine, "recorded elsewhere")
    again = repriced(steep, cost_table(0.05), 0.01, machine, "recorded elsewhere")
    assert flat.cells[0].predicted_speedup > 2.0 > 1.0 > again.cells[0].predicted_speedup
    assert flat.source == "recorded elsewhere" and flat.cells[0].measured_speedup is None and flat.rounds == 0
    assert read_tune_report(flat.to_json()) == flat


@pytest.mark.heavy
def test_the_cli_maps_writes_the_report_and_the_page_and_adopts_the_choice(tmp_path, monkeypatch, capsys):
    """`python -m lab tune` end to end on a tiny model folder: a line per piece of work, the table, the report
    and the page written, and with --adopt the chosen lookahead settings kept where auto settings read them."""
    from lookahead_core.models import load_model

    from .test_bench import char_tokenizer

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "tiny"
    tiny_model("llama").model.save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    prompts = tmp_path / "prompts.jsonl"
    lines = [{"id": "a", "prompt": "a, b, c, a, b, c, a, b"}, {"id": "b", "prompt": "x = 1\ny = 2\nx = 1\n"}]
    prompts.write_text("\n".join(json.dumps(line) for line in lines))
    out, page = tmp_path / "map.json", tmp_path / "map.html"
    args = ["tune", "--dataset", str(prompts), "--limit", "2", "--model", str(folder), "--device", "cpu"]
    args += ["--max-new-tokens", "8", "--windows", "2,3", "--ngrams", "3", "--lookups", "2:4", "--draft-k", ""]
    args += ["--suffixes", ""]
    args += ["--rounds", "1", "--json", str(out), "--html", str(page), "--adopt"]
    assert main(args) == 0
    made = read_tune_report(out.read_text())
    assert made.mode == StepMode.EAGER and made.mode_note == ""  # a CPU runs the eager step by default
    assert [c.label for c in made.cells] == ["lookahead W=2 N=3 G=2", "lookahead W=3 N=3 G=3", "prompt-lookup N=2 k=4"]
    assert all(c.exact for c in made.cells) and "heatmap" in page.read_text()
    captured = capsys.readouterr()
    assert "] lookahead W=3 N=3 G=3" in captured.err and "predicted / measured" in captured.out
    chosen = made.chosen_cell(Method.LOOKAHEAD).settings
    assert adopted(load_model(str(folder), device="cpu"), StepMode.EAGER)[0] == LookaheadConfig(**chosen)


def test_the_shipped_maps_read_back_each_measured_where_it_says():
    from visuals import library

    cpu, gpu = library.recorded_maps()
    assert cpu.source is None and all(c.exact for c in cpu.cells) and cpu.busy is not None
    assert cpu.mode == StepMode.EAGER and cpu.machine.device == "cpu"
    assert gpu.source is None and all(c.exact for c in gpu.cells) and gpu.machine.device_name == "NVIDIA H200"
    assert gpu.mode == StepMode.CUDA_GRAPH and any(c.measured_speedup is not None for c in gpu.cells)
    shown = two_machines_html(cpu, gpu)
    assert all(cpu.cells[i].label in shown for i in cpu.chosen.values()), "every method's choice here is on the card"
    assert "not swept on the NVIDIA H200" in shown  # the CPU's lookahead W=3 is not on the H200's grid
    assert "the 2-core CPU of 2026-11-26" in shown and "the NVIDIA H200 of 2026-11-26" in shown  # named, not "here"
    assert not re.search(r"\b(here|there)\b", shown)
    others = [p for p in library.BENCH.glob("*tune*.json") if p not in (library.CPU_MAP, library.GPU_MAP)]
    assert others and all(read_tune_report(p.read_text()).cells for p in others)  # the 2-thread map among them
