"""`python scripts/gpu_check.py --device cpu`: the GPU check's smoke test on this CPU, so the one command a lent GPU
runs cannot break unseen. One prompt, a few tokens, one round, every entrant of the bench (hf-static included);
float32, so every output must equal greedy `generate`'s. It runs in `make test` (CI), in the test's own process
(`gpu_check.main`, as the command line calls it): a process of its own imported torch, transformers and the app again
(about 8 s of its 36 s on the 2-core AMD EPYC (Zen 3), quiet), and its Run and race took three rounds where what they
show is the check's to test, not their timing. Its last part, a Run and a race through the app's server functions, is
written as files the app opens. The check drives the app's model (the real one's first layers,
tests.conftest.app_model): what is tested is the check's own path, and the whole model's exactness is
tests/test_fixed_shape.py's and tests/test_engine_default_model.py's (the whole model took the test 32 s alone, the
app's 11 s: the 2-core AMD EPYC (Zen 3))."""

from __future__ import annotations

import json

import torch

from lookahead_core.config import LookaheadConfig
from lookahead_core.records import Method, RaceRecord, StepMode
from lookahead_core.request import DecodeRequest
from visuals.library import read_run


def test_the_gpu_check_runs_on_the_cpu_and_its_methods_are_exact(app_model, one_round, tmp_path, capsys, monkeypatch):
    """The whole check, end to end, on three methods (every method took 3 minutes of make test on the 2-core AMD CPU:
    each method's bench is test_bench's, its exactness on the real model test_fixed_shape's, its split this module's
    on a tiny model) and MT-Bench's first prompt (53 tokens: HumanEval's 125 were prefilled about 50 times); the app's
    Run and race as a visitor's, one round each. A part that fails prints FAILED and the check goes on: none may."""
    from lab.serve import server
    from lab.serve.holding import ModelHolder
    from scripts import gpu_check

    monkeypatch.setattr(gpu_check, "load_model", lambda device, dtype: app_model)
    monkeypatch.setattr(server, "MODEL", ModelHolder())  # the check puts its model in the server: not for later tests
    command = ["--device", "cpu", "--dtypes", "float32", "--sets", "mtbench", "--limit", "1", "--max-new-tokens", "8"]
    command += ["--repeats", "1", "--out", str(tmp_path), "--app-tokens", "4"]
    command += ["--methods", "greedy,lookahead,hf-static"]
    gpu_check.main(command)
    printed = capsys.readouterr()
    assert "FAILED" not in printed.out, printed.err[-2000:]
    report = json.loads((tmp_path / "mtbench-float32.json").read_text())
    assert "hf-static" in report["summary"] and report["settings"]["static_compiled"] is False
    assert all(row["exact"] == 1 for row in report["summary"].values()), printed.out
    assert "| over baseline | over hf-static |" in printed.out
    run = read_run((tmp_path / "run-float32.json").read_bytes())  # what the app's Open does with a file
    assert run.trace.meta.mode == StepMode.EAGER and len(run.trace.summary.new_token_ids) == 4
    assert run.timing is not None and run.timing.rounds >= 1
    race = RaceRecord.from_json((tmp_path / "race-float32.json").read_text())
    assert race.mode == StepMode.EAGER and len(race.lanes) >= 4
    assert "app Run float32 eager: lookahead" in printed.out and "app race float32 eager:" in printed.out
    assert "Issue 45's targets (on CUDA), as this run measured them on cpu:" in printed.out


def test_quick_is_the_check_one_lease_fits_whatever_else_is_asked():
    from scripts import gpu_check

    args, methods = gpu_check.arguments(["--quick", "--limit", "10", "--dtypes", "float16"])
    assert (args.dtypes, args.limit, args.modes, args.half_sets) == (
        ["float32", "bfloat16"],
        4,
        ["cuda-graph"],
        ["humaneval"],
    )
    assert args.sets == ["humaneval", "gsm8k", "mtbench"] and args.gemms and args.app_tokens == 64
    assert [m.value for m in methods] == [
        "greedy",
        "lookahead",
        "prompt-lookup",
        "medusa",
        "eagle",
        "suffix",
        "hf-static",
    ]
    plain, _ = gpu_check.arguments(["--limit", "10"])
    assert plain.limit == 10 and plain.half_sets is None and not plain.gemms  # without it, the options as given


def test_the_split_times_each_resident_methods_step_with_its_state_on_the_device_and_on_the_host(capsys):
    """What a lease prints in a captured mode (here the fixed step, uncaptured, on a tiny model): lookahead's,
    prompt lookup's, Medusa's, EAGLE's and greedy's steps split twice; greedy's and lookahead's once more over the whole
    cache (before spans)."""
    import dataclasses

    from scripts import gpu_check

    from .tiny import tiny_model, tiny_runtime

    lm = tiny_model("llama")
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED)
    for method in (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.MEDUSA, Method.EAGLE):
        request = DecodeRequest(method=method, lookahead=LookaheadConfig(4, 4, 3), max_new_tokens=12)
        gpu_check.print_split(lm, [3, 1, 4, 1, 5, 9, 2, 6], request, runtime, profile=False)
    lines = [line for line in capsys.readouterr().out.splitlines() if "split" in line]
    assert [line.split(":")[0].strip() for line in lines] == [
        "split greedy (state on the device)",
        "split greedy (state on the host)",
        "split greedy (every pass over the whole cache)",
        "split lookahead (state on the device)",
        "split lookahead (state on the host)",
        "split lookahead (every pass over the whole cache)",
        "split prompt-lookup (state on the device)",
        "split prompt-lookup (state on the host)",
        "split medusa (state on the device)",
        "split medusa (state on the host)",
        "split eagle (state on the device)",
        "split eagle (state on the host)",
    ]
    assert all("its prefill step" in line and "outside its steps" in line for line in lines)
    from lookahead_core.device import fixed, products

    assert lm.model in fixed.STEPS and lm.model in products.VIEWS
    warmed = []

    def warm():
        warmed.append((products.LEVERS["siblings"], lm.model in fixed.STEPS))

    with gpu_check.lever_off(lm, "siblings", warm):  # on CUDA a split of its own: the engine made anew without it
        assert not products.LEVERS["siblings"] and warmed == [(False, False)]
    assert products.LEVERS["siblings"] and warmed == [(False, False), (True, False)]  # nothing without it kept


def test_the_targets_table_says_which_of_issue_45s_targets_a_run_met(capsys):
    """Each target with what the run measured for it, met or NOT met (each way here), "-" where it measured
    nothing; an uncaptured mode's figures are not read against a captured step's targets."""
    from scripts import gpu_check

    graph, eager = StepMode.CUDA_GRAPH, StepMode.EAGER
    rows = [
        ("humaneval", "float32", graph, "lookahead", 500.0, 2.0, 2.10, 2.8, 6.0, "4/4", 1.0),
        ("gsm8k", "float32", graph, "lookahead", 285.2, 1.06, 1.11, 2.08, 7.3, "4/4", 1.0),
        ("mtbench", "float32", eager, "lookahead", 90.0, 1.5, 1.6, 1.7, 20.0, "4/4", 1.0),
        ("humaneval", "float32", graph, "greedy", 260.4, 1.0, 0.96, 1.0, 3.8, "4/4", 1.0),
    ]
    found = gpu_check.Findings(
        curves={("float32", graph): {1: 1.0, 16: 1.2, 64: 1.25, 128: 1.35, 256: 2.0}, ("bfloat16", eager): {}},
        host={("float32", graph, Method.LOOKAHEAD): 0.02, ("float32", graph, Method.MEDUSA): 0.3},
        runs={"float32": (0.92, False), "bfloat16": (1.22, True)},
        notes={"bfloat16": "the capture probe failed"},
    )
    gpu_check.print_targets(rows, found, "cuda")
    table = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    said = {cells[1].strip(): cells[3].strip() for cells in table[1:]}
    assert said == {
        "lookahead >= 2.0x hf-static, humaneval, float32 captured": "met",
        "lookahead >= 1.3x hf-static, gsm8k, float32 captured": "NOT met",
        "lookahead >= 1.15x hf-static, mtbench, float32 captured": "-",  # only an eager run of it
        "our plain step >= 1.0x hf-static, float32 captured": "NOT met",
        "a wide pass <= 1.3x a 1-row pass, float32 cuda-graph": "NOT met",  # 128 rows at 1.35x
        "host's share of a lookahead step <= 0.25 ms, float32 cuda-graph": "met",
        "host's share of a medusa step <= 0.25 ms, float32 cuda-graph": "NOT met",
        "the app's Run: lookahead faster than greedy, its verdict saying so, float32": "NOT met",
        "the app's Run: lookahead faster than greedy, its verdict saying so, bfloat16": "met",
        "float32 runs captured with no fallback note": "met",
        "bfloat16 runs captured with no fallback note": "NOT met",
    }


def test_the_gemm_and_attention_tables_print_each_width_with_the_fused_products_beside(capsys):
    """--gemms on a tiny llama (on this CPU, no cuBLASLt): a line per row count, and the fused products are the
    same numbers as the separate ones (a fused matrix of the wrong products, or in another order, is caught)."""
    from scripts import gpu_check

    from .tiny import tiny_model

    lm = tiny_model("llama")
    gpu_check.print_gemms(lm)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# body GEMMs")]
    assert len(lines) == len(gpu_check.GEMM_ROWS) and all("fused (8)" in line for line in lines)
    layer, x = lm.model.model.layers[0], torch.randn(3, lm.model.config.hidden_size)
    qkv, o, gate_up, down = gpu_check.fused_weights(lm)[:4]
    separate = [layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj]
    assert torch.allclose(x @ qkv.T, torch.cat([p(x) for p in separate], dim=1), atol=1e-6)
    assert torch.allclose(x @ gate_up.T, torch.cat([layer.mlp.gate_proj(x), layer.mlp.up_proj(x)], dim=1), atol=1e-6)
    assert o is layer.self_attn.o_proj.weight and down is layer.mlp.down_proj.weight
    gpu_check.print_attention(lm, keys=64)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# attention")]
    assert len(lines) == len(gpu_check.ATTENTION_ROWS) and all("efficient -," in line for line in lines)  # CUDA's
    assert all(" ms" in line.split("math")[1] for line in lines)
