"""The lab's command line on a tiny random model: bench end to end with its report (a BenchReport record,
written as JSON with the keys other tools read), its interleaved rounds and their medians, generate, the auto
settings' choice, and `python -m lab` itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from lab.cli import asked_settings, build_parser, labelled, main, summary_table
from lab.measure import bench as bench_module
from lab.measure.bench import ENTRANTS, Timed, check_methods
from lookahead_core import costs as cost_module
from lookahead_core.config import LookaheadConfig
from lookahead_core.device import fixed
from lookahead_core.methods.eagle import eagle_for, save_eagle
from lookahead_core.methods.medusa import heads_for, save_heads
from lookahead_core.records import (
    BenchMethod,
    BenchReport,
    Busy,
    LookaheadSettings,
    Method,
    PlannerKind,
    Regime,
    SamplingRecord,
    Spread,
    StepCostCurve,
)
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.tuning import choose_settings

from .conftest import assert_same_types
from .tiny import TINY_VOCAB, cost_table, tiny_model

SUMMARY_KEYS = {
    "prompts",
    "tokens",
    "steps",
    "tokens_per_step",
    "seconds",
    "tokens_per_second",
    "speedup",
    "exact",
    "acceptance",
    "round_tokens",
    "round_seconds",
    "rate",
    "speedup_interval",
    "over_static",
}
RESULT_KEYS = {
    "tokens",
    "steps",
    "tokens_per_step",
    "seconds",
    "tokens_per_second",
    "exact",
    "offered",
    "accepted",
    "speedup",
    "draws",
    "divergence",
}


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One id per printable ASCII character and newline: TINY_VOCAB ids, nothing to download."""
    chars = [chr(code) for code in range(32, 127)] + ["\n"]
    assert len(chars) == TINY_VOCAB
    vocab = {char: index for index, char in enumerate(chars)}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab=vocab, merges=[])), eos_token="~")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-llama")
    model = tiny_model("llama").model
    model.save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    save_heads(heads_for(model, str(folder)), folder / "heads.safetensors")  # untrained: they guess the model's row
    save_eagle(eagle_for(model, str(folder)), folder / "eagle.safetensors")  # untrained: exact all the same
    prompts = folder / "prompts.jsonl"
    lines = [
        {"id": "loop", "prompt": "for i in range(10):\n    for j in range(10):\n        print(i, j)\n"},
        {"id": "list", "prompt": "a, b, c, a, b, c, a, b, c, a, b"},
        {"id": "unused", "prompt": "not benchmarked: --limit 2 stops before it"},
    ]
    prompts.write_text("\n".join(json.dumps(line) for line in lines))
    return folder


def bench(folder, tmp_path, *extra) -> BenchReport:
    """`bench --json` on the tiny model, one round unless `extra` asks for more: the report it wrote, read back."""
    out = tmp_path / "report.json"
    args = ["bench", "--dataset", str(folder / "prompts.jsonl"), "--limit", "2", "--model", str(folder)]
    args += ["--device", "cpu", "--max-new-tokens", "24", "--repeats", "1", "--json", str(out), *extra]
    assert main(args) == 0
    return BenchReport.from_json(out.read_text())


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_bench_runs_every_method_end_to_end(tiny_folder, tmp_path, capsys):
    html = tmp_path / "report.html"
    heads, eagle = str(tiny_folder / "heads.safetensors"), str(tiny_folder / "eagle.safetensors")
    report = bench(
        tiny_folder,
        tmp_path,
        "--window",
        "3",
        "--ngram",
        "4",
        "--guesses",
        "3",
        "--html",
        str(html),
        "--heads",
        heads,
        "--eagle",
        eagle,
    )
    assert list(report.summary) == list(ENTRANTS) == list(BenchMethod)
    by_method = report.settings.by_method  # every entrant's, hf-assisted's draft speculative's
    assert by_method.medusa.heads == "heads.safetensors" and by_method.medusa.tree_size >= 1
    assert by_method.eagle.model == "eagle: eagle.safetensors" and by_method.speculative.model == "bf16-self"
    for method, row in report.summary.items():
        assert row.prompts == 2 and row.exact == 2, method
    assert report.settings.baseline == BenchMethod.HF_GREEDY
    assert report.summary[BenchMethod.HF_GREEDY].speedup == pytest.approx(1.0)
    assert [row.id for row in report.prompts] == ["loop", "list"]
    assert all(list(row.methods) == list(ENTRANTS) for row in report.prompts)
    assert by_method.lookahead == LookaheadSettings(window=3, ngram=4, guesses=3)
    page = html.read_text()
    assert page.startswith("<!doctype html>") and "Plotly.newPlot" in page and "src=" not in page.split("<body>")[0]
    out = capsys.readouterr().out
    assert "lookahead" in out and "vs hf-static" in out and "hf-static: generate with a static cache, uncompiled" in out
    assert report.settings.static_compiled is False  # transformers compiles a static cache's step on CUDA only
    assert report.summary[BenchMethod.HF_STATIC].over_static.median == pytest.approx(1.0)
    assert all(row.over_static is not None for row in report.summary.values())


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_without_heads_for_the_model_the_bench_leaves_medusa_out_unless_it_is_asked_for(tiny_folder, tmp_path, capsys):
    report = bench(tiny_folder, tmp_path)  # every method by default
    assert BenchMethod.MEDUSA not in report.summary and report.settings.by_method.medusa is None
    assert BenchMethod.EAGLE not in report.summary and report.settings.by_method.eagle is None
    notes = capsys.readouterr().err
    assert "note: medusa left out: Medusa needs heads trained for" in notes
    assert "note: eagle left out: EAGLE needs a layer trained for" in notes
    args = [
        "bench",
        "--dataset",
        str(tiny_folder / "prompts.jsonl"),
        "--model",
        str(tiny_folder),
        "--methods",
        "medusa",
    ]
    assert main(args) == 2
    assert "Medusa needs heads trained for" in capsys.readouterr().err


def test_the_bench_json_keeps_the_keys_other_tools_read(tiny_folder, tmp_path):
    """The record writes the report's JSON as the string-keyed dicts earlier lab versions wrote (plus its version),
    each method's settings keyed by method since schema 14."""
    bench(tiny_folder, tmp_path, "--methods", "greedy,lookahead,hf-greedy", "--window", "3")
    written = json.loads((tmp_path / "report.json").read_text())
    assert set(written) == {"summary", "prompts", "machine", "settings", "busy", "schema_version"}
    assert list(written["summary"]) == ["greedy", "lookahead", "hf-greedy"]
    assert all(set(row) == SUMMARY_KEYS for row in written["summary"].values())
    assert all(set(result) == RESULT_KEYS for row in written["prompts"] for result in row["methods"].values())
    lookahead = written["settings"]["by_method"]["lookahead"]  # the trace's LookaheadSettings: W, N, G, the planner
    assert [method for method, held in written["settings"]["by_method"].items() if held] == ["lookahead"]
    assert {key: lookahead[key] for key in ("window", "ngram", "guesses", "planner")} == {
        "window": 3,
        "ngram": 5,
        "guesses": 7,
        "planner": "full",
    }
    assert written["settings"]["methods"] == ["greedy", "lookahead", "hf-greedy"]


def test_a_bench_report_reads_back_equal_field_for_field(tiny_folder, tmp_path):
    report = bench(tiny_folder, tmp_path, "--methods", "greedy,lookahead,prompt-lookup,hf-greedy")
    read = BenchReport.from_json(report.to_json())
    assert read == report
    assert_same_types(report, read, "report")
    assert report.summary[BenchMethod.PROMPT_LOOKUP].acceptance is not None


def test_the_rounds_are_interleaved_every_method_once_per_round(tiny_folder, tmp_path, monkeypatch):
    """After one warm-up each (this engine's methods by trace.warm_up, the request's budget and so its shapes; the
    peers on 8 tokens), prompt by prompt: round 1 runs every method in order, then round 2 does again."""
    calls, warmed = [], []
    real, real_warm_up = bench_module.run_method, bench_module.warm_up

    def recording(lm, method, prompt_ids, *rest):
        calls.append((tuple(prompt_ids), method))
        return real(lm, method, prompt_ids, *rest)

    def warming(lm, prompt_ids, request, runtime, methods):
        warmed.append((tuple(prompt_ids), request.max_new_tokens, list(methods)))
        return real_warm_up(lm, prompt_ids, request, runtime, methods)

    monkeypatch.setattr(bench_module, "run_method", recording)
    monkeypatch.setattr(bench_module, "warm_up", warming)
    methods = [BenchMethod.GREEDY, BenchMethod.LOOKAHEAD, BenchMethod.HF_GREEDY]
    report = bench(tiny_folder, tmp_path, "--methods", ",".join(methods), "--max-new-tokens", "6", "--repeats", "2")
    assert [(tokens, names) for _, tokens, names in warmed] == [(6, [Method.GREEDY, Method.LOOKAHEAD])]
    assert [method for _, method in calls[:1]] == [BenchMethod.HF_GREEDY]  # the peer's warm-up
    timed = calls[1:]
    prompts = list(dict.fromkeys(prompt for prompt, _ in timed))
    assert warmed[0][0] == prompts[0]
    assert timed == [(prompt, method) for prompt in prompts for _ in range(2) for method in methods]
    assert len(prompts) == 2 and report.settings.repeats == 2
    for row in report.summary.values():
        assert len(row.round_tokens) == len(row.round_seconds) == 2
        assert row.rate.low <= row.tokens_per_second == row.rate.median <= row.rate.high
    read = BenchReport.from_json(report.to_json(indent=1))
    assert read == report
    assert_same_types(report, read, "report")


# Each method's seconds on every prompt, round by round: round 2 was slow for hf-greedy, round 3 for lookahead.
ROUND_SECONDS = {BenchMethod.HF_GREEDY: [1.0, 2.0, 1.2], BenchMethod.LOOKAHEAD: [0.5, 0.4, 1.0]}
TOKENS = 10


def test_the_speedup_is_the_ratio_of_the_rounds_median_rates(tiny_folder, tmp_path, monkeypatch, capsys):
    """Two prompts of 10 tokens: hf-greedy's rounds run at 10, 5 and 8.33 tok/s, lookahead's at 20, 25 and 10:
    the ratio of medians is 20 / 8.33 = 2.4 (the median of per-round ratios would be 2, the ratio of totals 2.21)."""
    runs = {method: 0 for method in ROUND_SECONDS}

    def injected(lm, method, prompt_ids, *rest):
        runs[method] += 1  # the first run is the warm-up; then prompt by prompt, 3 rounds each
        seconds = ROUND_SECONDS[method][(runs[method] - 2) % 3]
        return Timed(new_token_ids=[5] * TOKENS, steps=TOKENS, seconds=seconds)

    class LoadedMachine:
        def reading(self) -> Busy:
            return Busy(other_cores=1.4, cores=2, seconds=9.0, heavy=True)

    monkeypatch.setattr(bench_module, "run_method", injected)
    monkeypatch.setattr(bench_module, "CpuWatch", LoadedMachine)
    report = bench(tiny_folder, tmp_path, "--methods", "lookahead,hf-greedy", "--repeats", "3")
    lookahead, baseline = report.summary[BenchMethod.LOOKAHEAD], report.summary[BenchMethod.HF_GREEDY]
    assert baseline.round_seconds == pytest.approx([2.0, 4.0, 2.4]) and baseline.round_tokens == [20, 20, 20]
    assert baseline.rate == Spread(median=pytest.approx(20 / 2.4), low=pytest.approx(5.0), high=pytest.approx(10.0))
    assert baseline.speedup_interval == Spread(median=1.0, low=1.0, high=1.0)
    assert lookahead.rate == Spread(median=pytest.approx(20.0), low=pytest.approx(10.0), high=pytest.approx(25.0))
    assert lookahead.speedup == lookahead.speedup_interval.median == pytest.approx(2.4)
    assert lookahead.speedup_interval.low <= 2.4 <= lookahead.speedup_interval.high
    assert lookahead.seconds == pytest.approx(1.0) and lookahead.tokens_per_second == pytest.approx(20.0)
    shown = report.prompts[0].methods  # each prompt shows its median round
    assert (shown[BenchMethod.LOOKAHEAD].seconds, shown[BenchMethod.HF_GREEDY].seconds) == (0.5, 1.2)
    assert shown[BenchMethod.LOOKAHEAD].speedup == pytest.approx(2.4)
    assert report.busy == Busy(other_cores=1.4, cores=2, seconds=9.0, heavy=True)
    out = capsys.readouterr().out
    assert "20.00 (10.00–25.00)" in out and "2.40× (" in out and "3 interleaved rounds per prompt" in out
    assert "about 140% of one core" in out and "less reliable" in out


def test_the_summary_of_a_report_from_before_rounds_says_it_was_timed_once():
    path = Path(__file__).resolve().parent.parent / "docs" / "bench" / "cpu-humaneval-float32.json"
    table = summary_table(BenchReport.from_json(path.read_text()))
    assert "timed once per prompt" in table and "–" not in table and "this bench" not in table
    lookahead = next(line for line in table.splitlines() if line.startswith("lookahead "))
    assert "32.80" in lookahead and "1.95x" in lookahead  # docs/bench.md's figures, as they were


def test_bench_methods_are_the_engine_methods_and_the_peers():
    assert {m.method for m in BenchMethod} == {*Method, None}
    assert all(m.method.value == m.value for m in BenchMethod if m.method is not None)
    assert [m for m in BenchMethod if m.method is None] == ["hf-greedy", "hf-static", "hf-prompt-lookup", "hf-assisted"]
    assert check_methods(["lookahead", "hf-greedy"]) == [BenchMethod.LOOKAHEAD, BenchMethod.HF_GREEDY]


def test_a_sampled_bench_says_so_counts_acceptance_and_compares_no_outputs(tiny_folder, tmp_path, capsys):
    report = bench(tiny_folder, tmp_path, "--methods", "lookahead,hf-greedy", "--temperature", "0.8", "--seed", "5")
    assert report.settings.sampling == SamplingRecord(temperature=0.8, top_k=0, top_p=1.0, seed=5)
    assert all(row.exact is None for row in report.summary.values())
    summary = report.summary
    assert 0 <= summary[BenchMethod.LOOKAHEAD].acceptance <= 1 and summary[BenchMethod.HF_GREEDY].acceptance is None
    out = capsys.readouterr().out
    assert "SAMPLED at T=0.8" in out and "accepted" in out and "exact" not in out.splitlines()[1]


def test_sampled_generate_seeds_prompt_k_with_s_plus_k(tiny_folder, capsys):
    prompts = ["--prompts-file", str(tiny_folder / "prompts.jsonl"), "--temperature", "1.0", "--seed", "7"]
    rows = generated(capsys, tiny_folder, *prompts, "--window", "3", "--ngram", "4", "--guesses", "3")
    assert [row["seed"] for row in rows] == [7, 8, 9]
    again = generated(capsys, tiny_folder, *prompts, "--window", "3", "--ngram", "4", "--guesses", "3")
    assert [row["new_token_ids"] for row in rows] == [row["new_token_ids"] for row in again]
    text = json.loads((tiny_folder / "prompts.jsonl").read_text().splitlines()[0])["prompt"]
    alone = generated(capsys, tiny_folder, "--prompt", text, "--temperature", "1.0", "--seed", "7", "--window", "3")
    file_first = generated(capsys, tiny_folder, *prompts, "--window", "3")
    assert file_first[0]["new_token_ids"] == alone[0]["new_token_ids"]


def test_auto_picks_a_smaller_window_when_wide_steps_are_expensive():
    flat, steep = choose_settings(cost_table(0.002)), choose_settings(cost_table(0.05))
    assert (flat.regime, flat.planner) == (Regime.FLAT, PlannerKind.FULL)
    assert (steep.regime, steep.planner) == (Regime.STEEP, PlannerKind.COST_AWARE)
    assert steep.config.window < flat.config.window
    assert flat.ratio == pytest.approx(1.126) and steep.ratio == pytest.approx(4.15)
    settings = steep.settings()  # what a trace records: the choice and the curve behind it
    assert (settings.planner, settings.regime, settings.probe_tokens) == (PlannerKind.COST_AWARE, Regime.STEEP, 64)
    assert settings.probe_ratio == steep.ratio and settings.step_costs.seconds == cost_table(0.05).seconds


def test_bench_auto_reports_what_it_chose_and_why(tiny_folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cost_module, "measure_step_costs", lambda lm, **_: cost_table(0.05))
    report = bench(tiny_folder, tmp_path, "--auto", "--methods", "greedy,lookahead")
    auto = report.settings.by_method.lookahead  # what lookahead ran: the auto choice, with the curve behind it
    chosen = choose_settings(cost_table(0.05)).config
    assert auto.planner == PlannerKind.COST_AWARE and (auto.window, auto.ngram) == (chosen.window, chosen.ngram)
    assert auto.regime == Regime.STEEP and auto.probe_ratio == pytest.approx(4.15)
    assert type(auto.step_costs) is StepCostCurve and auto.step_costs.seconds == cost_table(0.05).seconds
    assert report.summary[BenchMethod.LOOKAHEAD].exact == 2
    assert "auto: W=" in capsys.readouterr().err


@pytest.mark.parametrize(
    "bad",
    [
        ["--methods", "greedy,beam"],
        ["--limit", "0"],
        ["--repeats", "0"],
        ["--window", "0"],
        ["--json", "/no/such/folder/report.json"],
    ],
)
def test_bench_refuses_bad_arguments_in_one_line(tiny_folder, tmp_path, capsys, bad):
    args = ["bench", "--dataset", str(tiny_folder / "prompts.jsonl"), "--model", str(tiny_folder), *bad]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("prompt", "message"),
    [("   ", "the prompt is empty"), ("caf\udcc3 au lait", "character 4 is a lone surrogate (U+DCC3)")],
    ids=["blank", "invalid-utf8"],
)
def test_generate_refuses_an_unusable_prompt_in_one_line(tiny_folder, capsys, prompt, message):
    """Invalid UTF-8 on the command line reaches Python as lone surrogates: a message, not a traceback."""
    assert main(["generate", "--prompt", prompt, "--model", str(tiny_folder), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_prompts_file_with_a_null_prompt_is_refused_with_its_line(tiny_folder, tmp_path, capsys):
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"id": "a", "prompt": "fine"}\n{"id": "b", "prompt": null}\n')
    assert main(["generate", "--prompts-file", str(path), "--model", str(tiny_folder), "--device", "cpu"]) == 2
    assert "line 2" in capsys.readouterr().err


def generated(capsys, folder, *extra) -> list[dict]:
    """`generate --json` on the tiny model: one parsed JSON object per prompt."""
    args = ["generate", "--model", str(folder), "--device", "cpu", "--max-new-tokens", "20", "--json", *extra]
    assert main(args) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_generate_prints_one_json_line_per_prompt_and_lookahead_equals_greedy(tiny_folder, capsys):
    prompts = ["--prompts-file", str(tiny_folder / "prompts.jsonl")]
    lookahead = generated(capsys, tiny_folder, *prompts, "--window", "3", "--ngram", "4", "--guesses", "3")
    greedy = generated(capsys, tiny_folder, *prompts, "--method", "greedy")
    keys = {
        "id",
        "method",
        "window",
        "ngram",
        "guesses",
        "lookup_ngram",
        "lookup_tokens",
        "draft_model",
        "draft_tokens",
        "prompt_token_ids",
        "new_token_ids",
        "text",
        "steps",
        "seconds",
        "plain_seconds",
        "plain_tokens",
        "temperature",
        "top_k",
        "top_p",
        "seed",
    }
    assert all(set(row) == keys for row in lookahead + greedy)
    assert [row["id"] for row in lookahead] == ["loop", "list", "unused"]
    assert [row["new_token_ids"] for row in lookahead] == [row["new_token_ids"] for row in greedy]
    assert [row["steps"] for row in greedy] == [len(row["new_token_ids"]) for row in greedy]
    assert (lookahead[0]["window"], lookahead[0]["ngram"], lookahead[0]["guesses"]) == (3, 4, 3)
    assert greedy[0]["window"] is None and greedy[0]["method"] == "greedy"
    # plain decoding timed beside each prompt: transformers' generate, the same tokens as greedy's
    assert all(row["plain_tokens"] == len(row["new_token_ids"]) and row["plain_seconds"] > 0 for row in greedy)
    unplain = generated(capsys, tiny_folder, *prompts, "--method", "greedy", "--no-plain")
    assert all(row["plain_seconds"] is None and row["plain_tokens"] is None for row in unplain)


@pytest.mark.heavy
def test_generate_with_prompt_lookup_or_a_draft_equals_greedy(tiny_folder, capsys):
    prompts = ["--prompts-file", str(tiny_folder / "prompts.jsonl")]
    greedy = generated(capsys, tiny_folder, *prompts, "--method", "greedy")
    lookup = generated(capsys, tiny_folder, *prompts, "--method", "prompt-lookup", "--lookup-tokens", "6")
    drafted = generated(capsys, tiny_folder, *prompts, "--method", "speculative", "--draft-tokens", "3")
    for rows in (lookup, drafted):
        assert [row["new_token_ids"] for row in rows] == [row["new_token_ids"] for row in greedy]
    assert (lookup[0]["lookup_tokens"], lookup[0]["draft_model"]) == (6, None)
    assert (drafted[0]["draft_model"], drafted[0]["draft_tokens"], drafted[0]["window"]) == ("bf16-self", 3, None)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_generate_takes_the_step_mode_and_decodes_the_same_in_each(tiny_folder, capsys, monkeypatch):
    """--mode reaches the engine (a spy on the fixed-shape step's buffers); the output is the eager step's."""
    taken = []
    acquired = fixed.acquired
    monkeypatch.setattr(fixed, "acquired", lambda *args: taken.append(args[1]) or acquired(*args))
    prompts = ["--prompts-file", str(tiny_folder / "prompts.jsonl")]
    eager = generated(capsys, tiny_folder, *prompts, "--mode", "eager")
    assert not taken
    for mode in ("fixed", "cuda-graph"):  # no CUDA here: cuda-graph runs the fixed-shape step uncaptured
        shown = generated(capsys, tiny_folder, *prompts, "--mode", mode)
        assert [d["new_token_ids"] for d in shown] == [d["new_token_ids"] for d in eager] and taken
    with pytest.raises(SystemExit):
        main(["generate", "hi", "--mode", "warp"])
    assert "argument --mode: invalid choice: 'warp'" in capsys.readouterr().err


def test_a_draft_that_cannot_be_used_is_refused_in_one_line(tiny_folder, tmp_path, capsys):
    base = ["generate", "--model", str(tiny_folder), "--device", "cpu", "--prompt", "hi", "--method", "speculative"]
    assert main([*base, "--draft-model", str(tmp_path / "no-such-folder")]) == 2
    assert main([*base, "--draft-tokens", "0"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 2
    assert "no such folder" in errors[0] and "draft tokens k must be an integer >= 1" in errors[1]


def test_generate_without_json_prints_the_prompt_the_continuation_and_a_summary_line(tiny_folder, capsys):
    args = ["generate", "--prompt", "a, b, a, b, a,", "--model", str(tiny_folder), "--device", "cpu"]
    assert main([*args, "--max-new-tokens", "12", "--window", "2", "--ngram", "3", "--guesses", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- prompt ---\nPrompt: a, b, a, b, a,\nContinuation:")
    assert re.search(r"\n\[lookahead W=2 N=3 G=2\] \d+ tokens in \d+ steps \(\d\.\d\d tokens/step\)", out)
    assert main([*args, "--max-new-tokens", "4", "--method", "greedy"]) == 0
    assert "\n[greedy] 4 tokens in" in capsys.readouterr().out  # once: it read '[greedy greedy]'


def test_generate_takes_the_prompt_as_its_one_positional_argument_as_a_newcomer_types_it(tiny_folder, capsys):
    """`python -m lab generate "def fib(n):"` decodes what `--prompt "def fib(n):"` does and labels both parts."""
    typed = ["generate", "def fib(n):", "--model", str(tiny_folder), "--device", "cpu", "--max-new-tokens", "12"]
    assert main(typed) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:2] == ["--- prompt ---", "Prompt: def fib(n):"] and lines[2].startswith("Continuation:")
    # no W, N or G given: lookahead runs the auto settings, as the app's race does, and the line names their plan
    assert re.search(r"\n\[lookahead W=\d+ N=\d+ G=\d+, [\w-]+ plan\] 12 tokens in \d+ steps", out)
    assert re.search(r"\n\[plain decoding, transformers generate\] 12 tokens in [\d.]+ s", out)
    (positional,) = generated(capsys, tiny_folder, "def fib(n):")
    (flagged,) = generated(capsys, tiny_folder, "--prompt", "def fib(n):")
    del positional["seconds"], flagged["seconds"], positional["plain_seconds"], flagged["plain_seconds"]
    assert positional == flagged


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["def fib(n):", "--prompt", "def fib(n):"], "argument --prompt: not allowed with argument PROMPT"),
        (
            ["def fib(n):", "--prompts-file", "prompts.jsonl"],
            "argument --prompts-file: not allowed with argument PROMPT",
        ),
        ([], "one of the arguments PROMPT --prompt --prompts-file is required"),
    ],
    ids=["both", "prompt-and-file", "neither"],
)
def test_generate_wants_exactly_one_prompt_source(capsys, given, message):
    with pytest.raises(SystemExit) as exit_:
        main(["generate", *given])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_positional_prompt_that_is_blank_is_refused_like_a_blank_prompt_option(tiny_folder, capsys):
    assert main(["generate", "   ", "--model", str(tiny_folder), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the prompt is empty") and err.count("\n") == 1


@pytest.mark.parametrize("command", ["generate", "bench", "tune"])
def test_help_gives_each_options_default(capsys, command):
    """Every option with a default says it in --help (a flag's default, off, goes without saying)."""
    parser = build_parser()._subparsers._group_actions[0].choices[command]
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.option_strings and action.default not in (None, False, "==SUPPRESS=="):
            assert "default" in formatter._get_help_string(action), action.dest
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    if command == "generate":
        assert "--max-new-tokens M new tokens at most (default: 128)" in shown
        assert (
            "--window W window W (columns) (default: auto settings, as the app's; 7 where W, N or G is given)" in shown
        )


@pytest.mark.parametrize(
    "given, settings",
    [
        ([], None),  # the app's auto settings
        (["--window", "3"], LookaheadConfig(window=3, ngram=5, guesses=7)),
        (["--ngram", "4", "--guesses", "2"], LookaheadConfig(window=7, ngram=4, guesses=2)),
        (["--auto", "--window", "3"], None),
    ],
)
def test_lookahead_runs_the_auto_settings_unless_w_n_or_g_is_given(given, settings):
    assert asked_settings(build_parser().parse_args(["generate", "hi", *given])) == settings


def test_a_continuation_that_opens_a_new_line_starts_under_its_label():
    assert labelled("Prompt", "def fib(n):") == "Prompt: def fib(n):"
    assert labelled("Continuation", "\n    return n") == "Continuation:\n    return n"
    assert labelled("Continuation", " Paris.") == "Continuation:  Paris."  # verbatim: the model's own space kept


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_python_m_lab_runs_and_lists_its_commands():
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-m", "lab", "--help"], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "python -m lab" in result.stdout and "generate" in result.stdout and "bench" in result.stdout


def test_an_output_that_leaves_greedy_generate_is_explained_at_its_first_token(
    tiny_folder, tmp_path, monkeypatch, capsys
):
    """Lookahead's output is injected one token off at token 4: the report keeps where, with the two candidates'
    logits from a real pass of the tiny model, and the table says it (an exact method says nothing)."""
    plain = [5] * 10

    def injected(lm, method, prompt_ids, *rest):
        tokens = plain[:3] + [7] + plain[4:] if method == BenchMethod.LOOKAHEAD else plain
        return Timed(new_token_ids=tokens, steps=10, seconds=1.0)

    monkeypatch.setattr(bench_module, "run_method", injected)
    report = bench(tiny_folder, tmp_path, "--methods", "greedy,lookahead,hf-greedy")
    results = report.prompts[0].methods
    parted = results[BenchMethod.LOOKAHEAD].divergence
    assert results[BenchMethod.LOOKAHEAD].exact is False and results[BenchMethod.GREEDY].divergence is None
    assert (parted.index, parted.plain_token, parted.other_token, parted.dtype) == (3, 5, 7, "float32")
    assert parted.plain_text == "%" and parted.other_text == "'"  # the char tokenizer: id i is chr(32 + i)
    out = capsys.readouterr().out
    assert "loop: output differs from greedy generate from new token 4: greedy generate chose “%”, lookahead “'”" in out


@pytest.mark.parametrize("compiles", [True, False])
def test_where_hf_static_compiles_its_warm_up_asks_for_the_largest_cache_the_rounds_will(compiles, monkeypatch):
    """transformers compiles generate's static step for the largest cache asked for so far: warmed on a short
    prompt with 8 tokens, the first timed round would compile again (the GPU check's first rounds ran 7x slower).
    Negative control: where it does not compile (a CPU), the peers warm on the first prompt's first 8 tokens."""
    lm = tiny_model("llama")
    monkeypatch.setattr(bench_module, "compiles_static", lambda lm: compiles)
    asked = []
    monkeypatch.setattr(bench_module, "run_method", lambda lm, m, ids, req, rt: asked.append((m, len(ids), req)))
    encoded = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [11, 12]]
    methods = [BenchMethod.HF_GREEDY, BenchMethod.HF_STATIC]
    bench_module.warm_up_all(lm, methods, encoded, DecodeRequest(max_new_tokens=30), Runtime())
    warmed = {method: (length, request.max_new_tokens) for method, length, request in asked}
    assert warmed[BenchMethod.HF_GREEDY] == (3, 8)
    assert warmed[BenchMethod.HF_STATIC] == ((7, 30) if compiles else (3, 8))


def test_a_warm_suffix_store_holds_the_earlier_prompts_outputs_never_a_prompts_own(tiny_folder, tmp_path, monkeypatch):
    """The bench's store grows prompt by prompt: prompt k's suffix rounds see the outputs of prompts 1..k-1 only
    (never its own, which a later round would copy); --suffix-store cold gives each prompt its own text alone."""
    from lookahead_core.methods import suffix as suffix_module

    seen = []
    real = suffix_module.SuffixProposer.__init__

    def spy(self, config, sequence, prompt_length, store, vocabulary):
        real(self, config, sequence, prompt_length, store, vocabulary)
        seen.append([t.name for t in self.earlier])

    monkeypatch.setattr(suffix_module.SuffixProposer, "__init__", spy)
    warm = bench(tiny_folder, tmp_path, "--methods", "hf-greedy,suffix", "--repeats", "2")
    assert warm.settings.suffix_warm is True and warm.settings.by_method.suffix.store == []
    assert [names for names in seen if names] and all(names in ([], ["loop"]) for names in seen)
    assert seen[-1] == ["loop"]  # the second prompt's rounds matched the first's output
    assert all(row.exact == 2 for row in warm.summary.values())
    seen.clear()
    cold = bench(tiny_folder, tmp_path, "--methods", "hf-greedy,suffix", "--suffix-store", "cold")
    assert cold.settings.suffix_warm is False and all(names == [] for names in seen)


def test_every_entrant_is_an_engine_method_or_a_peer_of_the_table_and_the_bench_calls_each_peer():
    from lab.measure.bench import GENERATE_ARGUMENTS
    from lookahead_core.records import METHODS, PEERS, Needs, entrant_needs

    for entrant in BenchMethod:
        assert (entrant.method in METHODS) != (entrant in PEERS), entrant
    assert set(GENERATE_ARGUMENTS) == set(PEERS)
    assert entrant_needs(BenchMethod.HF_ASSISTED) == entrant_needs(BenchMethod.SPECULATIVE) == Needs.DRAFT
    assert entrant_needs(BenchMethod.EAGLE) == Needs.LAYER and entrant_needs(BenchMethod.HF_STATIC) == Needs.NOTHING
